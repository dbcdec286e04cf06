"""A profiling campaign: one network on one backend, whole and layer by layer, into the store.

Each measurement is committed as soon as it is taken; an interrupted campaign
(same system, model and settings) resumes and skips what is stored. A sentinel
layer timed at the start and at the end detects a machine whose speed drifted
during the campaign.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, Network, OpType, network_to_dict
from nnperf.measure._harness import HarnessConfig, Timer, measure
from nnperf.measure._stats import relative_change
from nnperf.measure._types import LayerMeasurement, Method, NetworkMeasurement, Timing, fused_sum_s
from nnperf.measure.backends._base import Backend
from nnperf.measure.power import PowerMeter, measure_energy, min_duration_s

if TYPE_CHECKING:
    from nnperf.store import Store

Progress = Callable[[str, int, int], None]
"""Called with (what is being measured, done, total)."""

SENTINEL = Layer("sentinel", OpType.CONV, ("x",), ((1, 32, 28, 28),), (1, 32, 28, 28),
                 ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))
"""The drift sentinel: a mid-sized 3x3 convolution (7.2 M MACs), timed at the start and end of a campaign."""

SENTINEL_WARMUP_S = 0.5
"""Warm-up before each sentinel measurement (seconds)."""

SENTINEL_READINGS = 3
"""Sentinel measurements at each end of a campaign; the least is compared."""


@dataclass(frozen=True)
class ProfileConfig:
    """What a campaign measures and how hard it tries.

    ``per_layer`` is 'isolated' (each layer alone, PreVIous IV-C2), 'profiler'
    (the framework's per-node times in whole-network runs) or 'none'.
    ``profiler_runs`` whole-network runs feed the profiler (PreVIous averaged 50).
    ``gap_s`` idles between layers so an external power trace separates them
    (PreVIous used 300 ms).
    """

    per_layer: str = "isolated"
    harness: HarnessConfig = field(default_factory=HarnessConfig)
    profiler_runs: int = 50
    drift_threshold: float = 0.05
    energy_samples: int = 50
    """A layer is looped for at least this many power-meter counter updates."""
    gap_s: float = 0.0

    def __post_init__(self) -> None:
        if self.per_layer not in ("isolated", "profiler", "none"):
            raise NnperfError(f"per-layer method must be isolated, profiler or none, got {self.per_layer!r}")
        if self.profiler_runs < 2:
            raise NnperfError(f"profiler runs must be at least 2, got {self.profiler_runs}")
        if self.gap_s < 0:
            raise NnperfError(f"the gap between layers must be >= 0 s, got {self.gap_s}")

    def campaign_key(self, model: str, network_hash: str) -> str:
        settings = json.dumps({"per_layer": self.per_layer, "harness": asdict(self.harness),
                               "profiler_runs": self.profiler_runs, "gap_s": self.gap_s}, sort_keys=True)
        return f"{model}|{network_hash}|{hashlib.sha256(settings.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class ProfileReport:
    """What a campaign measured (including what an earlier, interrupted session stored)."""

    system_label: str
    system_key: str
    run_id: int
    resumed: bool
    network: NetworkMeasurement
    layers: tuple[LayerMeasurement, ...]
    method: str
    skipped: int = 0
    unattributed_s: dict[str, float] = field(default_factory=dict)
    drift: float | None = None
    warnings: tuple[str, ...] = ()

    @property
    def layer_sum_s(self) -> float:
        """Sum of per-layer medians, each fused group once, plus unattributed framework nodes."""
        return fused_sum_s(self.layers, self.unattributed_s)

    @property
    def sum_ratio(self) -> float:
        """Sum of layer times over whole-network time (PreVIous' coefficient c, Eq. 6, for isolated times)."""
        whole = self.network.timing.stats.median_s
        return self.layer_sum_s / whole if whole > 0 else math.nan


def network_hash(network: Network) -> str:
    """A fingerprint of the network's structure (layers, shapes, attributes)."""
    return hashlib.sha256(json.dumps(network_to_dict(network), sort_keys=True).encode()).hexdigest()[:16]


def profile_network(network: Network, backend: Backend, store: Store, config: ProfileConfig = ProfileConfig(),
                    meter: PowerMeter | None = None, progress: Progress | None = None,
                    model: str | None = None) -> ProfileReport:
    """Measures ``network`` on ``backend`` and stores every measurement as it is taken."""
    model = model or network.name
    system = backend.system()
    system_rec = store.add_system(system)
    method = config.per_layer
    fingerprint = network_hash(network)
    run = store.start_run(system_rec.id, config.campaign_key(model, fingerprint), model, fingerprint, method,
                          {"per_layer": method, "harness": asdict(config.harness)})
    warnings: list[str] = []
    report = _noop if progress is None else progress
    try:
        sentinel_start = _sentinel(backend, config)
        done = {layer for layer, m in store.done_layers(run.id) if m == method}
        skipped = len(done)
        unattributed: dict[str, float] = {}
        if method == "isolated":
            _isolated(network, backend, store, run.id, config, meter, done, report)
        elif method == "profiler" and not done:
            report("profiler runs", 0, 1)
            result = backend.profile(network, config.profiler_runs)
            for m in result.layers:
                store.add_layer_measurement(run.id, m)
            unattributed = dict(result.unattributed_s)
            report("profiler runs", 1, 1)
        report("whole network", 0, 1)
        whole_timer = backend.network_timer(network)
        whole = measure(whole_timer, config.harness)
        sentinel_end = _sentinel(backend, config)
        drift = relative_change(sentinel_start, sentinel_end)
        if abs(drift) > config.drift_threshold:
            warnings.append(f"the machine's speed drifted during the campaign: the sentinel layer took "
                            f"{sentinel_start * 1e3:.3f} ms at the start and {sentinel_end * 1e3:.3f} ms at the end "
                            f"({drift:+.1%}); close other programs and measure again")
        energy_j, meter_name = _energy(whole_timer, whole, meter, config)
        extra = {"sentinel_start_s": sentinel_start, "sentinel_end_s": sentinel_end, "drift": drift}
        extra.update({f"unattributed:{k}": v for k, v in unattributed.items()})
        net = NetworkMeasurement(whole, energy_j, meter_name, extra)
        store.add_network_measurement(run.id, net)
        report("whole network", 1, 1)
        store.finish_run(run.id, "done")
    except BaseException:
        store.finish_run(run.id, "failed")
        raise
    layers = () if method == "none" else tuple(
        r.measurement() for r in store.layer_measurements(run_id=run.id, method=method))
    return ProfileReport(system.label, system.key, run.id, run.resumed, net, _in_order(network, layers), method,
                         skipped, unattributed, drift, tuple(warnings))


def _sentinel(backend: Backend, config: ProfileConfig) -> float:
    """The sentinel's time: the least of ``SENTINEL_READINGS`` medians, after a warm-up for a cold thread pool.

    One short reading lands on either of two levels 1.5-1.8x apart on this VM
    (bench/measure_backends.py), and with a short warm-up the first sentinel of
    a 2-thread campaign read 1.7x the last: both showed as false drift.
    """
    timer = backend.layer_timer(SENTINEL)
    first = measure(timer, replace(config.harness, warmup_s=max(config.harness.warmup_s, SENTINEL_WARMUP_S)))
    rest = [measure(timer, config.harness) for _ in range(SENTINEL_READINGS - 1)]
    return min(t.stats.median_s for t in [first, *rest])


def _isolated(network: Network, backend: Backend, store: Store, run_id: int, config: ProfileConfig,
              meter: PowerMeter | None, done: set[str], report: Progress) -> None:
    total = len(network.layers)
    for i, layer in enumerate(network.layers):
        report(layer.name, i, total)
        if layer.name in done:
            continue
        timer = backend.layer_timer(layer)
        timing = measure(timer, config.harness)
        energy_j, meter_name = _energy(timer, timing, meter, config)
        store.add_layer_measurement(run_id, LayerMeasurement(layer.name, layer.op.value, Method.ISOLATED, timing,
                                                             layer.name, 1, energy_j, meter_name))
        if config.gap_s:
            time.sleep(config.gap_s)
    report("layers", total, total)


def _energy(timer: Timer, timing: Timing, meter: PowerMeter | None,
            config: ProfileConfig) -> tuple[float | None, str]:
    """Energy per execution from a counter meter, the block looped over many counter updates."""
    if meter is None:
        return None, ""
    executions = max(1, math.ceil(min_duration_s(meter, config.energy_samples) / timing.stats.median_s))
    reading = measure_energy(meter, timer.time_block, executions)
    return reading.energy_per_execution_j, meter.name


def _in_order(network: Network, layers: Sequence[LayerMeasurement]) -> tuple[LayerMeasurement, ...]:
    index = {layer.name: i for i, layer in enumerate(network.layers)}
    return tuple(sorted(layers, key=lambda m: index.get(m.layer, len(index))))


def _noop(what: str, done: int, total: int) -> None:
    return None
