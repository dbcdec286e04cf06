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
from nnperf.campaign._items import ItemRunner, Measurer, SweepPointItem, runner_for
from nnperf.errors import NnperfError
from nnperf.ir import Network
from nnperf.measure import HarnessConfig, Method, Timing
from nnperf.measure.sweep import (
    Sweep,
    SweepSpec,
    median_round,
    point_name,
    profiling_network,
    spec_from_dict,
)
from nnperf.store import RunRecord, Store

SWEEP_CAMPAIGN = "sweep|"
"""The prefix of a parameter sweep's campaign key."""


def run_sweep(measurer: Measurer, store: Store, spec: SweepSpec, progress: Progress | None = None,
              fresh: bool = False) -> Sweep:
    """Measures every point of ``spec`` on ``measurer`` (a backend, or a runner such as a fleet of one system)
    and stores each as it comes back.

    Reuses a finished sweep with the same settings on this system unless
    ``fresh``; resumes an interrupted one.
    """
    runner = runner_for(measurer)
    key = spec.key()
    with open_campaign(store, runner.system(), f"{SWEEP_CAMPAIGN}{key}", spec.label, key, Method.PROFILER.value,
                       spec.to_dict(), reuse=not fresh) as campaign:
        if not campaign.reused:
            measure_rounds(campaign, runner, spec.base.kind, spec.parameter, spec.values, spec.rounds,
                           lambda value: profiling_network(spec.config_at(value), spec.surround), spec.harness,
                           progress)
    return load_sweep(store, campaign.run.id, reused=campaign.reused, resumed=campaign.resumed)


def measure_rounds(campaign: Campaign, runner: ItemRunner, kind: str, parameter: str, values: tuple[int, ...],
                   rounds: int, network_at: Callable[[int], Network], harness: HarnessConfig,
                   progress: Progress | None = None) -> dict[int, list[Timing]]:
    """Times the layer under test of ``network_at(value)`` for every value in ``rounds`` interleaved passes.

    Each point (named ``point_name(parameter, value, round)``) not in
    ``campaign`` is an item on ``runner`` (in round order, the values
    interleaved within a round), stored as it comes back; a point the campaign
    already holds is read back instead. Returns every value's timings, one per
    round, in round order.
    """
    report = progress or no_progress
    total = len(values) * rounds
    names = {(value, round_): point_name(parameter, value, round_)
             for round_ in range(1, rounds + 1) for value in values}
    timings = {name: campaign.done[name] for name in names.values() if name in campaign.done}
    items = [SweepPointItem(name, kind, network_at(value), harness)
             for (value, _), name in names.items() if name not in timings]
    for index, result in runner.run(items):
        campaign.add_layer(result)
        timings[result.layer] = result.timing
        report(items[index].label, len(timings), total)
    report("done", total, total)
    return {value: [timings[names[value, round_]] for round_ in range(1, rounds + 1)] for value in values}


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
