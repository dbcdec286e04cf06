"""Parameter sweeps: one layer parameter varied inside the profiling network, every point stored as taken.

A sweep is a run in the store (campaign ``sweep|...``): its configuration
(kind, parameter, values, fixed parameters, surround width, harness, rounds)
is the run's config, and each point is a layer measurement named
``PARAM=VALUE`` (method 'profiler'). An interrupted sweep resumes at the first
missing point; a finished one with the same settings on the same system is
reused.

With ``rounds`` > 1 the sweep passes over its values that many times, one
whole pass after the other (round k's points are named ``PARAM=VALUE#k``), and
a point's latency is the median of its rounds. On a shared machine a burst of
contention or a slow allocation lands on one round of a few neighbouring
points, and the interleaved passes vote it out, where measuring one point
longer would not: the harness's confidence interval describes one round only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from nnperf.errors import NnperfError
from nnperf.measure._harness import HarnessConfig
from nnperf.measure._types import LayerMeasurement, Method, Timing
from nnperf.measure.backends._base import Backend
from nnperf.measure.sweep._config import LayerConfig, SweepInputError, check_parameter
from nnperf.measure.sweep._network import UNDER_TEST, profiling_network, time_in_context

if TYPE_CHECKING:
    from nnperf.store import Store
    from nnperf.store._records import RunRecord

Progress = Callable[[str, int, int], None]

SWEEP_FORMAT = ("nnperf-sweep", 1)

SWEEP_HARNESS = HarnessConfig(warmup_s=0.02, target_ci=0.01, min_samples=10, max_samples=100, budget_s=1.0)
"""Per point: a 1% confidence interval of the median, at most 1 s of profiled runs."""


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep measures: ``parameter`` of ``base`` over ``values``, the surround width, the harness and
    the number of interleaved ``rounds`` (passes over the values)."""

    base: LayerConfig
    parameter: str
    values: tuple[int, ...]
    surround: int
    harness: HarnessConfig = field(default_factory=lambda: SWEEP_HARNESS)
    rounds: int = 1

    def __post_init__(self) -> None:
        check_parameter(self.base.kind, self.parameter)
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise SweepInputError(f"a sweep needs at least one round, got {self.rounds!r}")
        if not self.values:
            raise SweepInputError("the sweep range is empty")
        if len(set(self.values)) != len(self.values):
            raise SweepInputError("the sweep range repeats a value")
        object.__setattr__(self, "values", tuple(sorted(self.values)))
        for value in self.values:  # not only the ends: an even kernel can fail where odd ones around it fit
            self.config_at(value)

    def config_at(self, value: int) -> LayerConfig:
        return self.base.with_value(self.parameter, value)

    @property
    def fixed(self) -> tuple[tuple[str, int], ...]:
        """The parameters held constant."""
        return tuple((k, v) for k, v in self.base.params if k != self.parameter)

    def to_dict(self) -> dict[str, object]:
        return {"format": SWEEP_FORMAT[0], "version": SWEEP_FORMAT[1], "kind": self.base.kind,
                "parameter": self.parameter, "values": list(self.values), "fixed": dict(self.fixed),
                "surround": self.surround, "harness": asdict(self.harness),
                **({"rounds": self.rounds} if self.rounds > 1 else {})}  # one round: the keys of version 1

    @property
    def label(self) -> str:
        fixed = ",".join(f"{k}={v}" for k, v in self.fixed)
        return f"{self.base.kind}:{self.parameter}[{fixed}]"

    def key(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Sweep:
    """A measured sweep: the points (parameter value, in-context timing of the layer under test).

    ``repeats[i]`` holds point i's timing in every round measured; ``timings[i]`` is the round whose median
    is the median of those (the lower middle one for an even count), so ``latency_s`` is the median over
    rounds and the confidence interval shown with it is that round's.
    """

    spec: SweepSpec
    run_id: int
    system_id: int
    system_label: str
    timings: tuple[Timing, ...]
    reused: bool = False
    resumed: bool = False
    repeats: tuple[tuple[Timing, ...], ...] = ()

    @property
    def x(self) -> np.ndarray:
        return np.array(self.spec.values[:len(self.timings)], dtype=int)

    @property
    def latency_s(self) -> np.ndarray:
        """The median time of every point (seconds)."""
        return np.array([t.stats.median_s for t in self.timings])

    @property
    def complete(self) -> bool:
        """Every point measured in every round."""
        return len(self.timings) == len(self.spec.values) and all(len(r) == self.spec.rounds for r in self.repeats)


def point_name(parameter: str, value: int, round_: int = 1) -> str:
    """A point's layer name: ``PARAM=VALUE``, with ``#ROUND`` from the second round on."""
    return f"{parameter}={value}" if round_ == 1 else f"{parameter}={value}#{round_}"


def median_round(timings: tuple[Timing, ...]) -> Timing:
    """The timing whose median is the median of ``timings``' medians (the lower middle one for an even count)."""
    ordered = sorted(timings, key=lambda t: t.stats.median_s)
    return ordered[(len(ordered) - 1) // 2]


def run_sweep(backend: Backend, store: Store, spec: SweepSpec, progress: Progress | None = None,
              fresh: bool = False) -> Sweep:
    """Measures every point of ``spec`` on ``backend`` and stores each as it is taken.

    Reuses a finished sweep with the same settings on this system unless
    ``fresh``; resumes an interrupted one.
    """
    system = store.add_system(backend.system())
    campaign = f"sweep|{spec.key()}"
    finished = None if fresh else store.finished_run(system.id, campaign)
    if finished is not None:
        return load_sweep(store, finished.id, reused=True)
    run = store.start_run(system.id, campaign, spec.label, spec.key(), Method.PROFILER.value, spec.to_dict())
    done = {layer for layer, _ in store.done_layers(run.id)}
    report = progress or (lambda what, done_, total: None)
    total = len(spec.values) * spec.rounds
    try:
        for round_ in range(1, spec.rounds + 1):
            for i, value in enumerate(spec.values):
                name = point_name(spec.parameter, value, round_)
                report(name.replace("#", " round "), (round_ - 1) * len(spec.values) + i, total)
                if name in done:
                    continue
                network = profiling_network(spec.config_at(value), spec.surround)
                timing = time_in_context(backend, network, spec.harness)
                store.add_layer_measurement(run.id, LayerMeasurement(name, spec.base.kind, Method.PROFILER, timing,
                                                                     UNDER_TEST))
        report("done", total, total)
        store.finish_run(run.id, "done")
    except BaseException:
        store.finish_run(run.id, "failed")
        raise
    return load_sweep(store, run.id, resumed=run.resumed)


def spec_from_dict(document: dict[str, object]) -> SweepSpec:
    """The :class:`SweepSpec` stored as a sweep run's config."""
    if document.get("format") != SWEEP_FORMAT[0]:
        raise NnperfError("this run is not a sweep")
    if int(document.get("version", 0)) > SWEEP_FORMAT[1]:  # type: ignore[call-overload]
        from nnperf.errors import FormatVersionError

        raise FormatVersionError(f"sweep format version {document['version']} is newer than this nnperf reads "
                                 f"({SWEEP_FORMAT[1]}); upgrade nnperf")
    fixed = dict(document["fixed"])  # type: ignore[call-overload]
    values = tuple(int(v) for v in document["values"])  # type: ignore[attr-defined]
    parameter = str(document["parameter"])
    base = LayerConfig.of(str(document["kind"]), {**fixed, parameter: values[0]})
    return SweepSpec(base, parameter, values, int(document["surround"]),  # type: ignore[call-overload]
                     HarnessConfig(**document["harness"]),  # type: ignore[arg-type]
                     int(document.get("rounds", 1)))  # type: ignore[call-overload]


def sweep_runs(store: Store, system_id: int | None = None) -> list[RunRecord]:
    """The stored sweep runs, oldest first."""
    return [r for r in store.runs(system_id=system_id) if r.campaign.startswith("sweep|")]


def load_sweep(store: Store, run_id: int, reused: bool = False, resumed: bool = False) -> Sweep:
    """A stored sweep (complete or not) by run id; raises :class:`NnperfError` when the run is not a sweep."""
    runs = [r for r in store.runs() if r.id == run_id]
    if not runs or not runs[0].campaign.startswith("sweep|"):
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

