"""Measurement: backends that run IR networks, the timing harness, power meters and profiling campaigns.

Everything here measures; nothing is modelled except by the ``fake`` backend,
which exists to test the harness and never produces a reported figure.
"""

from nnperf.measure._campaign import SENTINEL, ProfileConfig, ProfileReport, network_hash, profile_network
from nnperf.measure._harness import HarnessConfig, MeasurementError, Timer, calibrate_block_size, measure
from nnperf.measure._host import host_info
from nnperf.measure._stats import fixed_timing, summarize
from nnperf.measure._trace_energy import attach_trace
from nnperf.measure._types import (
    HostInfo,
    LayerMeasurement,
    Method,
    NetworkMeasurement,
    SystemSpec,
    Timing,
    TimingStats,
)

__all__ = [
    "SENTINEL", "HarnessConfig", "HostInfo", "LayerMeasurement", "MeasurementError", "Method", "NetworkMeasurement",
    "ProfileConfig", "ProfileReport", "SystemSpec", "Timer", "Timing", "TimingStats", "attach_trace",
    "calibrate_block_size", "fixed_timing", "host_info", "measure", "network_hash", "profile_network", "summarize",
]
