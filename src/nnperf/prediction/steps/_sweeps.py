"""Stored parameter sweeps read back: what the step models are fitted on (``nnperf.campaign.run_sweep`` measures
them into the store).

A sweep is a run in the store (campaign ``sweep|KEY``, ``KEY`` the spec's hash): its configuration is the run's
config and each point a layer measurement named by ``point_name`` (method 'profiler').
"""

from __future__ import annotations

from nnperf.errors import NnperfError
from nnperf.measure import Timing
from nnperf.measure.sweep import Sweep, median_round, point_name, spec_from_dict
from nnperf.store import RunRecord, Store

SWEEP_CAMPAIGN = "sweep|"
"""The prefix of a parameter sweep's campaign key."""


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
