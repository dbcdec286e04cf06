"""Parameter sweeps measured into the store: every point stored as it is taken.

A sweep is a run in the store (campaign ``sweep|KEY``, ``KEY`` the spec's
hash): its configuration is the run's config and each point a layer
measurement named by ``point_name`` (method 'profiler'). An interrupted sweep
resumes at the first missing point; a finished one with the same settings on
the same system is reused. The spec, the result and the naming are data in
``nnperf.measure.sweep``; a stored sweep is read back by
``nnperf.prediction.steps.load_sweep``.
"""

from __future__ import annotations

from collections.abc import Callable

from nnperf.campaign._campaign import Campaign, Progress, no_progress, open_campaign
from nnperf.campaign._items import ItemRunner, Measurer, SweepPointItem, runner_for
from nnperf.ir import Network
from nnperf.measure import HarnessConfig, Method, Timing
from nnperf.measure.sweep import Sweep, SweepSpec, point_name, profiling_network
from nnperf.prediction.steps import SWEEP_CAMPAIGN, load_sweep
from nnperf.store import Store


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
