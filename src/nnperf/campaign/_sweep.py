"""Stored parameter sweeps: every point measured into a campaign as it is taken, and read back.

A sweep is a run in the store (campaign ``sweep|KEY``, ``KEY`` the spec's
hash): its configuration is the run's config and each point a layer
measurement named by ``point_name`` (method 'profiler'). An interrupted sweep
resumes at the first missing point; a finished one with the same settings on
the same system is reused. The spec, the result and the naming are data in
``nnperf.measure.sweep``.
"""

from __future__ import annotations

from collections.abc import Callable

from nnperf.campaign._campaign import Campaign, Progress, no_progress, open_campaign
from nnperf.campaign._items import ItemRunner, SweepPointItem
from nnperf.errors import NnperfError
from nnperf.ir import Network
from nnperf.measure import HarnessConfig, LayerMeasurement, Method, Timing
from nnperf.measure.backends import Backend
from nnperf.measure.sweep import (
    UNDER_TEST,
    Sweep,
    SweepSpec,
    median_round,
    point_name,
    profiling_network,
    spec_from_dict,
    time_in_context,
)
from nnperf.store import RunRecord, Store

SWEEP_CAMPAIGN = "sweep|"
"""The prefix of a parameter sweep's campaign key."""


def run_sweep(backend: Backend | ItemRunner, store: Store, spec: SweepSpec, progress: Progress | None = None,
              fresh: bool = False) -> Sweep:
    """Measures every point of ``spec`` on ``backend`` and stores each as it is taken.

    Reuses a finished sweep with the same settings on this system unless
    ``fresh``; resumes an interrupted one. ``backend`` may be an
    :class:`ItemRunner` (a fleet of one system): every point not stored yet is
    then an item, all rounds at once, stored as it comes back.
    """
    key = spec.key()
    with open_campaign(store, backend.system(), f"{SWEEP_CAMPAIGN}{key}", spec.label, key, Method.PROFILER.value,
                       spec.to_dict(), reuse=not fresh) as campaign:
        if not campaign.reused and isinstance(backend, ItemRunner):
            _measure_points(campaign, backend, spec, progress or no_progress)
        elif not campaign.reused:
            measure_rounds(campaign, backend, spec.base.kind, spec.parameter, spec.values, spec.rounds,
                           lambda value: profiling_network(spec.config_at(value), spec.surround), spec.harness,
                           progress)
    return load_sweep(store, campaign.run.id, reused=campaign.reused, resumed=campaign.resumed)


def measure_rounds(campaign: Campaign, backend: Backend, kind: str, parameter: str, values: tuple[int, ...],
                   rounds: int, network_at: Callable[[int], Network], harness: HarnessConfig,
                   progress: Progress | None = None) -> dict[int, list[Timing]]:
    """Times the layer under test of ``network_at(value)`` for every value in ``rounds`` interleaved passes.

    Each point (named ``point_name(parameter, value, round)``) is stored in
    ``campaign`` as it is taken; a point the campaign already holds is read
    back instead. Returns every value's timings, one per round, in round order.
    """
    report = progress or no_progress
    total = len(values) * rounds
    timings: dict[int, list[Timing]] = {value: [] for value in values}
    for round_ in range(1, rounds + 1):
        for i, value in enumerate(values):
            name = point_name(parameter, value, round_)
            report(name.replace("#", " round "), (round_ - 1) * len(values) + i, total)
            timing = campaign.done.get(name)
            if timing is None:
                timing = time_in_context(backend, network_at(value), harness)
                campaign.add_layer(LayerMeasurement(name, kind, Method.PROFILER, timing, UNDER_TEST))
            timings[value].append(timing)
    report("done", total, total)
    return timings


def _measure_points(campaign: Campaign, runner: ItemRunner, spec: SweepSpec, report: Progress) -> None:
    """Every point of every round that ``campaign`` does not hold, as items on ``runner``, each stored as it
    comes back."""
    total = len(spec.values) * spec.rounds
    items = [SweepPointItem(name, spec.base.kind, profiling_network(spec.config_at(value), spec.surround),
                            spec.harness)
             for round_ in range(1, spec.rounds + 1) for value in spec.values
             if (name := point_name(spec.parameter, value, round_)) not in campaign.done]
    done = total - len(items)
    for index, result in runner.run(items):
        campaign.add_layer(result)
        done += 1
        report(items[index].label, done, total)
    report("done", total, total)


def sweep_runs(store: Store, system_id: int | None = None) -> list[RunRecord]:
    """The stored sweep runs, oldest first."""
    return [r for r in store.runs(system_id=system_id) if r.campaign.startswith(SWEEP_CAMPAIGN)]


def load_sweep(store: Store, run_id: int, reused: bool = False, resumed: bool = False) -> Sweep:
    """A stored sweep (complete or not) by run id; raises :class:`NnperfError` when the run is not a sweep."""
    runs = [r for r in store.runs() if r.id == run_id]
    if not runs or not runs[0].campaign.startswith(SWEEP_CAMPAIGN):
        known = ", ".join(str(r.id) for r in sweep_runs(store)) or "none"
        raise NnperfError(f"{store.path}: run {run_id} is not a stored sweep (sweeps: {known})")
    run = runs[0]
    spec = spec_from_dict(run.config)
    by_name = {r.layer: r.timing for r in store.layer_measurements(run_id=run_id)}
    repeats: list[tuple[Timing, ...]] = []
    for value in spec.values:  # the measured prefix (of the first round); a resumed sweep fills the rest
        rounds = tuple(t for r in range(1, spec.rounds + 1)
                       if (t := by_name.get(point_name(spec.parameter, value, r))) is not None)
        if not rounds:
            break
        repeats.append(rounds)
    system = store.system(run.system_id)
    return Sweep(spec, run.id, system.id, system.label, tuple(median_round(r) for r in repeats), reused, resumed,
                 tuple(repeats))
