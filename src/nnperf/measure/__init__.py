"""Measurement: backends that run IR networks, the timing harness, power meters and the measured data.

Everything here measures; nothing is modelled except by the ``fake`` backend,
which exists to test the harness and never produces a reported figure. Nothing
here stores: campaigns that measure into the store are ``nnperf.campaign``.
"""

from nnperf.measure._attribution import FUSED_SUCCESSORS, FUSION_ROLES, FusionRole
from nnperf.measure._check import (
    CHECK_FORMAT,
    CHECK_VERSION,
    BusyProcess,
    Finding,
    Level,
    MachineCheck,
    NoiseStats,
    check_machine,
    measure_noise,
)
from nnperf.measure._duet import TimerFactory, backend_timer, backend_timer_factory, duet_placement, measure_duet
from nnperf.measure._harness import HarnessConfig, MeasurementError, Timer, calibrate_block_size, measure
from nnperf.measure._host import host_info
from nnperf.measure._interference import (
    INJECTORS,
    CpuHog,
    Interference,
    InterferenceError,
    MemoryHog,
    PeriodicSlowdown,
    injector,
    interference_availability,
)
from nnperf.measure._interleave import (
    ComparisonProtocol,
    PairedRatio,
    Rounds,
    RoundsConfig,
    measure_interleaved,
    measure_sequential,
    parse_protocol,
)
from nnperf.measure._reference import (
    REFERENCE,
    REFERENCE_CANDIDATES,
    ReferenceWorkload,
    SpeedReading,
    SumTimer,
    read_reference,
    reference_timer,
    reference_workload,
)
from nnperf.measure._stats import fixed_timing, relative_change, summarize
from nnperf.measure._types import (
    HostInfo,
    LayerMeasurement,
    Method,
    NetworkMeasurement,
    SystemSpec,
    Timing,
    TimingStats,
    fused_sum_s,
)

__all__ = [
    "CHECK_FORMAT",
    "CHECK_VERSION",
    "FUSED_SUCCESSORS",
    "FUSION_ROLES",
    "INJECTORS",
    "REFERENCE",
    "REFERENCE_CANDIDATES",
    "BusyProcess",
    "ComparisonProtocol",
    "CpuHog",
    "Finding",
    "FusionRole",
    "HarnessConfig",
    "HostInfo",
    "Interference",
    "InterferenceError",
    "LayerMeasurement",
    "Level",
    "MachineCheck",
    "MeasurementError",
    "MemoryHog",
    "Method",
    "NetworkMeasurement",
    "NoiseStats",
    "PairedRatio",
    "PeriodicSlowdown",
    "ReferenceWorkload",
    "Rounds",
    "RoundsConfig",
    "SpeedReading",
    "SumTimer",
    "SystemSpec",
    "Timer",
    "TimerFactory",
    "Timing",
    "TimingStats",
    "backend_timer",
    "backend_timer_factory",
    "calibrate_block_size",
    "check_machine",
    "duet_placement",
    "fixed_timing",
    "fused_sum_s",
    "host_info",
    "injector",
    "interference_availability",
    "measure",
    "measure_duet",
    "measure_interleaved",
    "measure_noise",
    "measure_sequential",
    "parse_protocol",
    "read_reference",
    "reference_timer",
    "reference_workload",
    "relative_change",
    "summarize",
]
