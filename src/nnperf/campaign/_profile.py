"""A profiling campaign: one network on one backend, whole and layer by layer, into the store.

Each measurement is committed as soon as it is taken (the profiler's passes
chunk by chunk); an interrupted campaign (same system, model and settings)
resumes and skips what is stored, and with
``reuse`` a finished one is read back instead of measured again. A sentinel
layer timed at the start and at the end detects a machine whose speed drifted
during the campaign.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from nnperf.campaign._campaign import Campaign, Progress, no_progress, open_campaign
from nnperf.campaign._items import Item, ItemRunner, LayerItem, ProfilerItem, WholeItem
from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, Network, OpType, network_to_dict
from nnperf.measure import (
    HarnessConfig,
    LayerMeasurement,
    Method,
    NetworkMeasurement,
    Timer,
    Timing,
    fixed_timing,
    fused_sum_s,
    measure,
    relative_change,
)
from nnperf.measure.backends import Backend
from nnperf.measure.power import PowerMeter, measure_energy, min_duration_s
from nnperf.store import Store

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
    ``profiler_runs`` whole-network runs feed the profiler (PreVIous averaged 50);
    they run in chunks (:func:`profiler_chunk`), each stored as it ends.
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
    """What a campaign measured (including what an earlier, interrupted session stored).

    ``reused`` is True when a finished campaign was read back instead of measured.
    """

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
    reused: bool = False

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


def profile_network(network: Network, backend: Backend | ItemRunner, store: Store,
                    config: ProfileConfig = ProfileConfig(), meter: PowerMeter | None = None,
                    progress: Progress | None = None, model: str | None = None, reuse: bool = False) -> ProfileReport:
    """Measures ``network`` on ``backend`` and stores every measurement as it is taken.

    With ``reuse`` a finished campaign of the same model, network and settings
    on this system is read back instead (``ProfileReport.reused``); without it
    (the default) the network is measured again in a new run.

    ``backend`` may be an :class:`ItemRunner` (a fleet of machines of one
    system): the layers, the profiler passes and the whole network are then
    measured as items (:func:`_measure_items`) into the same run, under the same
    campaign key, as in this process.
    """
    if meter is not None and isinstance(backend, ItemRunner):
        raise NnperfError("energy is measured in this process only: profile without --energy on a fleet")
    model = model or network.name
    system = backend.system()
    method = config.per_layer
    fingerprint = network_hash(network)
    with open_campaign(store, system, config.campaign_key(model, fingerprint), model, fingerprint, method,
                       {"per_layer": method, "harness": asdict(config.harness)}, reuse=reuse) as campaign:
        if campaign.reused:
            net = _stored_whole(store, campaign, model)
        elif isinstance(backend, ItemRunner):
            net = _measure_items(network, backend, campaign, config, progress or no_progress)
        else:
            net = _measure(network, backend, campaign, config, meter, progress or no_progress)
    unattributed = {k.removeprefix(UNATTRIBUTED_PREFIX): v for k, v in net.extra.items()
                    if k.startswith(UNATTRIBUTED_PREFIX)}
    layers = () if method == "none" else tuple(
        r.measurement() for r in store.layer_measurements(run_id=campaign.run.id, method=method))
    drift = net.extra.get("drift")
    return ProfileReport(system.label, system.key, campaign.run.id, campaign.resumed, net,
                         _in_order(network, layers), method, len(campaign.done), unattributed, drift,
                         _drift_warnings(net.extra, config.drift_threshold), campaign.reused)


UNATTRIBUTED_PREFIX = "unattributed:"
"""The prefix of a whole-network measurement's extras that hold framework nodes outside the IR (seconds)."""


def _measure(network: Network, backend: Backend, campaign: Campaign, config: ProfileConfig,
             meter: PowerMeter | None, report: Progress) -> NetworkMeasurement:
    """Times the sentinel, the layers not yet stored, the whole network and the sentinel again; stores them."""
    method = config.per_layer
    sentinel_start = measure_sentinel(backend, config.harness)
    unattributed: dict[str, float] = {}
    if method == "isolated":
        _isolated(network, backend, campaign, config, meter, report)
    elif method == "profiler":
        unattributed = _profiler(network, backend, campaign, config.profiler_runs, report)
    report("whole network", 0, 1)
    whole_timer = backend.network_timer(network)
    whole = measure(whole_timer, config.harness)
    sentinel_end = measure_sentinel(backend, config.harness)
    drift = relative_change(sentinel_start, sentinel_end)
    energy_j, meter_name = _energy(whole_timer, whole, meter, config.energy_samples)
    extra = {"sentinel_start_s": sentinel_start, "sentinel_end_s": sentinel_end, "drift": drift}
    extra.update({f"{UNATTRIBUTED_PREFIX}{k}": v for k, v in unattributed.items()})
    net = NetworkMeasurement(whole, energy_j, meter_name, extra)
    campaign.add_network(net)
    report("whole network", 1, 1)
    return net


def _measure_items(network: Network, runner: ItemRunner, campaign: Campaign, config: ProfileConfig,
                   report: Progress) -> NetworkMeasurement:
    """The campaign's work as items on ``runner``: each layer not stored yet (isolated), the profiler passes not
    stored yet, and the whole network between two sentinel readings unless the run holds it; each result is
    stored as it comes back.

    The profiler's passes are one item (a worker lost in them loses them all, and they are profiled again); its
    layer times are merged with those stored as in :func:`_profiler`. The whole network of a profiler campaign
    is stored once the profiler's unattributed nodes are in, so a run that holds its whole network holds
    everything; the drift is the sentinel's change around the whole network on the machine that measured it.
    """
    method = config.per_layer
    total = len(network.layers)
    items: list[Item] = []
    if method == "isolated":
        items += [LayerItem(layer, config.harness, config.gap_s) for layer in network.layers
                  if layer.name not in campaign.done]
    times = {name: list(t.times_s) for name, t in campaign.done.items()}
    profiled_before = max((len(t) for t in times.values()), default=0)
    if method == "profiler":
        missing = config.profiler_runs - profiled_before
        items.append(ProfilerItem(network, missing if missing > 0 else profiler_chunk(config.profiler_runs)))
    stored = campaign.store.network_measurements(run_id=campaign.run.id)
    whole = stored[-1].measurement() if stored else None
    if whole is None:
        items.append(WholeItem(network, config.harness))
    unattributed: dict[str, float] = {}
    arrived = len(campaign.done)
    for index, result in runner.run(items):
        item = items[index]
        if isinstance(item, LayerItem):
            campaign.add_layer(result)
            arrived += 1
            report(item.label, min(arrived, total), total)
        elif isinstance(item, ProfilerItem):
            unattributed = dict(result.unattributed_s)
            if profiled_before < config.profiler_runs:
                campaign.add_layers([replace(m, timing=fixed_timing(times.get(m.layer, []) + list(m.timing.times_s)))
                                     for m in result.layers])
            report("profiler runs", config.profiler_runs, config.profiler_runs)
        else:
            whole = result
            if method != "profiler":
                campaign.add_network(result)
            report("whole network", 1, 1)
    if whole is None:
        raise NnperfError(f"the fleet gave no whole-network measurement of {network.name}")
    if method == "profiler" and not stored:
        extra = dict(whole.extra)
        extra.update({f"{UNATTRIBUTED_PREFIX}{k}": v for k, v in unattributed.items()})
        whole = replace(whole, extra=extra)
        campaign.add_network(whole)
    return whole


def measure_whole_with_sentinel(backend: Backend, network: Network, harness: HarnessConfig) -> NetworkMeasurement:
    """The whole network timed between two sentinel readings, the sentinel times and their drift in the extras
    (no energy): the whole-network item of a campaign on a fleet."""
    start = measure_sentinel(backend, harness)
    whole = measure(backend.network_timer(network), harness)
    end = measure_sentinel(backend, harness)
    return NetworkMeasurement(whole, None, "", {"sentinel_start_s": start, "sentinel_end_s": end,
                                                "drift": relative_change(start, end)})


def measure_isolated_layer(backend: Backend, layer: Layer, harness: HarnessConfig, meter: PowerMeter | None = None,
                           energy_samples: int = 50, gap_s: float = 0.0) -> LayerMeasurement:
    """One layer timed alone on its real input shapes (and its energy, with a meter), then ``gap_s`` idle."""
    timer = backend.layer_timer(layer)
    timing = measure(timer, harness)
    energy_j, meter_name = _energy(timer, timing, meter, energy_samples)
    if gap_s:
        time.sleep(gap_s)
    return LayerMeasurement(layer.name, layer.op.value, Method.ISOLATED, timing, layer.name, 1, energy_j, meter_name)


def _stored_whole(store: Store, campaign: Campaign, model: str) -> NetworkMeasurement:
    """The whole-network measurement of a reused finished run (the latest, when there are several)."""
    wholes = store.network_measurements(run_id=campaign.run.id)
    if not wholes:
        raise NnperfError(f"run {campaign.run.id} of {model} has no whole-network measurement")
    return wholes[-1].measurement()


def _drift_warnings(extra: Mapping[str, float], threshold: float) -> tuple[str, ...]:
    """A warning when the sentinel's time moved by more than ``threshold`` (a fraction) over the campaign."""
    start, end, drift = (extra.get(k) for k in ("sentinel_start_s", "sentinel_end_s", "drift"))
    if start is None or end is None or drift is None or not abs(drift) > threshold:
        return ()
    return ((f"the machine's speed drifted during the campaign: the sentinel layer took "
             f"{start * 1e3:.3f} ms at the start and {end * 1e3:.3f} ms at the end "
             f"({drift:+.1%}); close other programs and measure again"),)


def measure_sentinel(backend: Backend, harness: HarnessConfig, warm: bool = False) -> float:
    """The sentinel's time: the least of ``SENTINEL_READINGS`` medians, after a warm-up for a cold thread pool
    (``warm``: the backend has just been measuring, so the harness's own warm-up is enough).

    One short reading lands on either of two levels 1.5-1.8x apart on this VM
    (bench/measure_backends.py), and with a short warm-up the first sentinel of
    a 2-thread campaign read 1.7x the last: both showed as false drift.
    """
    timer = backend.layer_timer(SENTINEL)
    first = measure(timer, harness if warm else replace(harness, warmup_s=max(harness.warmup_s, SENTINEL_WARMUP_S)))
    rest = [measure(timer, harness) for _ in range(SENTINEL_READINGS - 1)]
    return min(t.stats.median_s for t in [first, *rest])


def _isolated(network: Network, backend: Backend, campaign: Campaign, config: ProfileConfig,
              meter: PowerMeter | None, report: Progress) -> None:
    total = len(network.layers)
    for i, layer in enumerate(network.layers):
        report(layer.name, i, total)
        if layer.name in campaign.done:
            continue
        campaign.add_layer(measure_isolated_layer(backend, layer, config.harness, meter, config.energy_samples,
                                                  config.gap_s))
    report("layers", total, total)


PROFILER_CHUNKS = 5
"""The profiler passes run in about this many chunks, each stored when it ends (a kill loses one chunk at most)."""

PROFILER_MIN_CHUNK = 5
"""The fewest passes in one chunk (each chunk warms the network up again)."""


def profiler_chunk(runs: int) -> int:
    """Profiler passes per chunk for ``runs`` passes in all: ceil(runs / PROFILER_CHUNKS), at least PROFILER_MIN_CHUNK."""
    return max(PROFILER_MIN_CHUNK, -(-runs // PROFILER_CHUNKS))


def _profiler(network: Network, backend: Backend, campaign: Campaign, runs: int,
              report: Progress) -> dict[str, float]:
    """Profiles the passes of ``runs`` not stored yet, chunk by chunk; returns the unattributed nodes (seconds).

    After each chunk every layer's stored timing is replaced by its times so
    far (stored and new, one transaction for all layers), so a kill loses the
    chunk under way only; a resumed campaign counts the passes stored (the
    most times any layer holds: a layer the profiler missed in a pass has
    fewer) and profiles the rest, so a finished layer holds exactly ``runs``
    times. Unattributed framework nodes belong to no layer and have no row:
    they are the run-weighted mean of the per-chunk medians of the chunks this
    session profiled, and a session that finds every pass stored profiles one
    chunk more for them alone (its layer times are not stored).
    """
    times = {name: list(t.times_s) for name, t in campaign.done.items()}
    done = max((len(t) for t in times.values()), default=0)
    chunk = profiler_chunk(runs)
    node_s: dict[str, float] = {}
    profiled = 0
    while done < runs or not profiled:
        report("profiler runs", min(done, runs), runs)
        n = min(chunk, runs - done) if done < runs else chunk
        result = backend.profile(network, n)
        for node, seconds in result.unattributed_s.items():
            node_s[node] = node_s.get(node, 0.0) + seconds * n
        profiled += n
        if done >= runs:  # every pass was stored before: this chunk was for the unattributed nodes only
            break
        merged = []
        for m in result.layers:
            times[m.layer] = times.get(m.layer, []) + list(m.timing.times_s)
            merged.append(replace(m, timing=fixed_timing(times[m.layer])))
        campaign.add_layers(merged)
        done += n
    report("profiler runs", runs, runs)
    return {node: total / profiled for node, total in node_s.items()}


def _energy(timer: Timer, timing: Timing, meter: PowerMeter | None,
            energy_samples: int) -> tuple[float | None, str]:
    """Energy per execution from a counter meter, the block looped over at least ``energy_samples`` updates."""
    if meter is None:
        return None, ""
    executions = max(1, math.ceil(min_duration_s(meter, energy_samples) / timing.stats.median_s))
    reading = measure_energy(meter, timer.time_block, executions)
    return reading.energy_per_execution_j, meter.name


def _in_order(network: Network, layers: Sequence[LayerMeasurement]) -> tuple[LayerMeasurement, ...]:
    index = {layer.name: i for i, layer in enumerate(network.layers)}
    return tuple(sorted(layers, key=lambda m: index.get(m.layer, len(index))))
