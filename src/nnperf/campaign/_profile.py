"""A profiling campaign: one network on one system, whole and layer by layer, into the store.

The campaign is a list of items (``_items.py``) run by one runner, in this
process or on a fleet, and each measurement is committed as soon as it comes
back (the profiler's passes chunk by chunk); an interrupted campaign (same
system, model and settings) resumes and skips what is stored, and with
``reuse`` a finished one is read back instead of measured again. A sentinel
layer timed at the start and after the whole network (on a fleet: before and
after the whole network, on the node that measures it) detects a machine whose
speed drifted while it was measured.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from nnperf.campaign._campaign import Campaign, Progress, no_progress, open_campaign
from nnperf.campaign._items import (
    Item,
    ItemRunner,
    LayerItem,
    Measurer,
    ProfilerItem,
    SentinelItem,
    WholeItem,
    runner_for,
)
from nnperf.campaign._measuring import ENERGY_SAMPLES
from nnperf.errors import NnperfError
from nnperf.ir import Network, network_to_dict
from nnperf.measure import (
    HarnessConfig,
    LayerMeasurement,
    NetworkMeasurement,
    fixed_timing,
    fused_sum_s,
    relative_change,
)
from nnperf.measure.backends import ProfileResult
from nnperf.measure.power import PowerMeter
from nnperf.store import Store


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
    energy_samples: int = ENERGY_SAMPLES
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


def profile_network(network: Network, measurer: Measurer, store: Store,
                    config: ProfileConfig = ProfileConfig(), meter: PowerMeter | None = None,
                    progress: Progress | None = None, model: str | None = None, reuse: bool = False) -> ProfileReport:
    """Measures ``network`` on ``measurer`` (a backend, or a runner such as a fleet of one system) and stores every
    measurement as it is taken.

    With ``reuse`` a finished campaign of the same model, network and settings
    on this system is read back instead (``ProfileReport.reused``); without it
    (the default) the network is measured again in a new run. ``meter`` measures
    the energy of each isolated layer and of the whole network, in this process only.
    """
    runner = runner_for(measurer, meter)
    model = model or network.name
    system = runner.system()
    method = config.per_layer
    fingerprint = network_hash(network)
    with open_campaign(store, system, config.campaign_key(model, fingerprint), model, fingerprint, method,
                       {"per_layer": method, "harness": asdict(config.harness)}, reuse=reuse) as campaign:
        if campaign.reused:
            net = _stored_whole(store, campaign, model)
        else:
            net = _measure(network, runner, campaign, config, progress or no_progress)
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


def _measure(network: Network, runner: ItemRunner, campaign: Campaign, config: ProfileConfig,
             report: Progress) -> NetworkMeasurement:
    """The campaign's work as items on ``runner``, each result stored as it comes back: each layer not stored yet
    (isolated), the profiler passes not stored yet in chunks, and the whole network between two sentinel readings
    unless the run holds it.

    After each profiler chunk every layer's stored timing is replaced by its
    times so far (stored and new, one transaction for all layers), so a kill
    loses the chunks under way only; a resumed campaign counts the passes
    stored (the most times any layer holds: a layer the profiler missed in a
    pass has fewer) and profiles the rest, so a finished layer holds exactly
    ``profiler_runs`` times. Unattributed framework nodes belong to no layer and
    have no row: they are the run-weighted mean of the per-chunk medians of the
    chunks this session profiled, and a session that finds every pass stored
    profiles one chunk more for them alone (its layer times are not stored).
    The whole network of a profiler campaign is stored once those nodes are
    in, so a run that holds its whole network holds everything.
    """
    results = _Results(campaign, config, report, len(network.layers))
    items = _items(network, campaign, config, results.passes)
    stored = campaign.store.network_measurements(run_id=campaign.run.id)
    results.whole = stored[-1].measurement() if stored else None
    # on one machine the sentinel is read at the campaign's start, so its drift covers every item; a fleet's
    # nodes read it around the whole network only (one node's sentinel says nothing of another's)
    over_campaign = runner.one_machine and results.whole is None
    if over_campaign:
        items.insert(0, SentinelItem(config.harness))
    if results.whole is None:
        items.append(WholeItem(network, config.harness, config.energy_samples, sentinel_before=not over_campaign))
    for index, result in runner.run(items):
        results.take(items[index], result)
    whole = results.whole
    if whole is None:
        raise NnperfError(f"the runner gave no whole-network measurement of {network.name}")
    if config.per_layer == "profiler" and not stored:
        whole = replace(whole, extra={**whole.extra, **results.unattributed()})
        campaign.add_network(whole)
    return whole


def _items(network: Network, campaign: Campaign, config: ProfileConfig, passes: int) -> list[Item]:
    """The layers not stored yet (isolated) or the profiler chunks still to run after ``passes`` stored."""
    if config.per_layer == "isolated":
        return [LayerItem(layer, config.harness, config.gap_s, config.energy_samples) for layer in network.layers
                if layer.name not in campaign.done]
    if config.per_layer == "profiler":
        return [ProfilerItem(network, n) for n in profiler_chunks(config.profiler_runs, passes)]
    return []


class _Results:
    """What comes back from a campaign's items, stored as it arrives, with what the campaign's end needs: the
    sentinel's first reading, the whole network, and the profiler's unattributed nodes."""

    def __init__(self, campaign: Campaign, config: ProfileConfig, report: Progress, total: int) -> None:
        self.campaign, self.config, self.report, self.total = campaign, config, report, total
        self.times = {name: list(t.times_s) for name, t in campaign.done.items()}
        self.passes = max((len(t) for t in self.times.values()), default=0)
        self.arrived = len(campaign.done)
        self.start_s: float | None = None
        self.whole: NetworkMeasurement | None = None
        self.node_s: dict[str, float] = {}
        self.profiled = 0

    def take(self, item: Item, result: Any) -> None:
        """Stores ``result``, the measurement of ``item``, and reports the progress."""
        if isinstance(item, SentinelItem):
            self.start_s = result
        elif isinstance(item, LayerItem):
            self.campaign.add_layer(result)
            self.arrived += 1
            self.report(item.label, min(self.arrived, self.total), self.total)
        elif isinstance(item, ProfilerItem):
            self._take_profiled(item, result)
        else:
            self.whole = _with_start(result, self.start_s)
            if self.config.per_layer != "profiler":
                self.campaign.add_network(result)
            self.report("whole network", 1, 1)

    def _take_profiled(self, item: ProfilerItem, result: ProfileResult) -> None:
        """A profiler chunk: its unattributed nodes counted, and (unless it is the chunk for those alone) every
        layer's stored timing replaced by its times so far."""
        runs = self.config.profiler_runs
        for node, seconds in result.unattributed_s.items():
            self.node_s[node] = self.node_s.get(node, 0.0) + seconds * item.runs
        self.profiled += item.runs
        if self.passes < runs:  # not the chunk for the unattributed nodes alone
            merged = []
            for m in result.layers:
                self.times[m.layer] = self.times.get(m.layer, []) + list(m.timing.times_s)
                merged.append(replace(m, timing=fixed_timing(self.times[m.layer])))
            self.campaign.add_layers(merged)
            self.passes += item.runs
        self.report("profiler runs", min(self.passes, runs), runs)

    def unattributed(self) -> dict[str, float]:
        """The unattributed nodes' mean seconds per run, as a whole-network measurement's extras."""
        return {f"{UNATTRIBUTED_PREFIX}{node}": seconds / self.profiled for node, seconds in self.node_s.items()}


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


PROFILER_CHUNKS = 5
"""The profiler passes run in about this many chunks, each stored when it ends (a kill loses one chunk at most)."""

PROFILER_MIN_CHUNK = 5
"""The fewest passes in one chunk (each chunk warms the network up again)."""


def profiler_chunk(runs: int) -> int:
    """Profiler passes per chunk for ``runs`` passes in all: ceil(runs / PROFILER_CHUNKS), at least PROFILER_MIN_CHUNK."""
    return max(PROFILER_MIN_CHUNK, -(-runs // PROFILER_CHUNKS))


def _with_start(whole: NetworkMeasurement, start_s: float | None) -> NetworkMeasurement:
    """``whole`` with the sentinel reading of the campaign's start and the drift from it to the reading after
    the whole network (as measured when the campaign read no start)."""
    if start_s is None:
        return whole
    end_s = whole.extra["sentinel_end_s"]
    return replace(whole, extra={**whole.extra, "sentinel_start_s": start_s, "drift": relative_change(start_s, end_s)})


def profiler_chunks(runs: int, stored: int) -> list[int]:
    """The profiler chunks still to run for ``runs`` passes when ``stored`` are stored: the missing passes in
    chunks of :func:`profiler_chunk`, or one chunk for the unattributed nodes alone when none is missing."""
    missing = runs - stored
    if missing <= 0:
        return [profiler_chunk(runs)]
    size = profiler_chunk(runs)
    return [min(size, missing - start) for start in range(0, missing, size)]


def _in_order(network: Network, layers: Sequence[LayerMeasurement]) -> tuple[LayerMeasurement, ...]:
    index = {layer.name: i for i, layer in enumerate(network.layers)}
    return tuple(sorted(layers, key=lambda m: index.get(m.layer, len(index))))
