"""The measuring functions of every campaign: what an item does on a backend, in this process or on a fleet's
node (both runners call these and nothing else).

Each function measures and returns its measurement; none stores anything (the campaign that made the item stores
what comes back).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

from nnperf.ir import ConvAttrs, Layer, Network, OpType
from nnperf.measure import (
    HarnessConfig,
    LayerMeasurement,
    Method,
    NetworkMeasurement,
    Timer,
    Timing,
    measure,
    relative_change,
)
from nnperf.measure.backends import Backend
from nnperf.measure.power import PowerMeter, measure_energy, min_duration_s

SENTINEL = Layer("sentinel", OpType.CONV, ("x",), ((1, 32, 28, 28),), (1, 32, 28, 28),
                 ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))
"""The drift sentinel: a mid-sized 3x3 convolution (7.2 M MACs), timed before and after a whole network."""

SENTINEL_WARMUP_S = 0.5
"""Warm-up before each sentinel measurement (seconds)."""

SENTINEL_READINGS = 3
"""Sentinel measurements at each reading; the least is kept."""

ENERGY_SAMPLES = 50
"""A layer or network is looped for at least this many power-meter counter updates."""


def measure_sentinel(backend: Backend, harness: HarnessConfig, warm: bool = False) -> float:
    """The sentinel's time: the least of ``SENTINEL_READINGS`` medians, after a warm-up for a cold thread pool
    (``warm``: the backend has just been measuring, so the harness's own warm-up is enough).

    One short reading lands on either of two levels 1.5-1.8x apart on a 2-vCPU shared VM
    (bench/measure_backends.py), and with a short warm-up the first sentinel of
    a 2-thread campaign read 1.7x the last: both showed as false drift.
    """
    timer = backend.layer_timer(SENTINEL)
    first = measure(timer, harness if warm else replace(harness, warmup_s=max(harness.warmup_s, SENTINEL_WARMUP_S)))
    rest = [measure(timer, harness) for _ in range(SENTINEL_READINGS - 1)]
    return min(t.stats.median_s for t in [first, *rest])


def measure_isolated_layer(backend: Backend, layer: Layer, harness: HarnessConfig, meter: PowerMeter | None = None,
                           energy_samples: int = ENERGY_SAMPLES, gap_s: float = 0.0) -> LayerMeasurement:
    """One layer timed alone on its real input shapes (and its energy, with a meter), then ``gap_s`` idle."""
    timer = backend.layer_timer(layer)
    timing = measure(timer, harness)
    energy_j, meter_name = measure_block_energy(timer, timing, meter, energy_samples)
    if gap_s:
        time.sleep(gap_s)
    return LayerMeasurement(layer.name, layer.op.value, Method.ISOLATED, timing, layer.name, 1, energy_j, meter_name)


def measure_whole_with_sentinel(backend: Backend, network: Network, harness: HarnessConfig,
                                meter: PowerMeter | None = None, energy_samples: int = ENERGY_SAMPLES,
                                sentinel_before: bool = True) -> NetworkMeasurement:
    """The whole network timed between two sentinel readings (and its energy, with a meter), the sentinel times
    and their drift in the extras; without ``sentinel_before`` only the reading after it (``sentinel_end_s``:
    the campaign read the start itself)."""
    start = measure_sentinel(backend, harness) if sentinel_before else None
    timer = backend.network_timer(network)
    whole = measure(timer, harness)
    end = measure_sentinel(backend, harness, warm=True)
    energy_j, meter_name = measure_block_energy(timer, whole, meter, energy_samples)
    extra = {"sentinel_end_s": end}
    if start is not None:
        extra.update(sentinel_start_s=start, drift=relative_change(start, end))
    return NetworkMeasurement(whole, energy_j, meter_name, extra)


def measure_block_energy(timer: Timer, timing: Timing, meter: PowerMeter | None,
                         energy_samples: int = ENERGY_SAMPLES) -> tuple[float | None, str]:
    """Energy per execution from a counter meter, the block looped over at least ``energy_samples`` updates;
    (None, "") without a meter."""
    if meter is None:
        return None, ""
    executions = max(1, math.ceil(min_duration_s(meter, energy_samples) / timing.stats.median_s))
    reading = measure_energy(meter, timer.time_block, executions)
    return reading.energy_per_execution_j, meter.name
