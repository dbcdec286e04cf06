"""Parameter sweeps as data: what a sweep measures (:class:`SweepSpec`) and what it measured (:class:`Sweep`).

A sweep varies one layer parameter inside the profiling network. Measuring
one into the store, resuming and reusing it is ``nnperf.campaign.run_sweep``:
its configuration (kind, parameter, values, fixed parameters, surround width,
harness, rounds) is the run's config (:meth:`SweepSpec.to_dict`, read back by
:func:`spec_from_dict`), and each point is a layer measurement named
``PARAM=VALUE`` (:func:`point_name`, method 'profiler').

With ``rounds`` > 1 the sweep passes over its values that many times, one
whole pass after the other (round k's points are named ``PARAM=VALUE#k``), and
a point's latency is the median of its rounds (:func:`median_round`). On a
shared machine a burst of contention or a slow allocation lands on one round
of a few neighbouring points, and the interleaved passes vote it out, where
measuring one point longer would not: the harness's confidence interval
describes one round only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

import numpy as np

from nnperf.errors import NnperfError
from nnperf.measure._harness import HarnessConfig
from nnperf.measure._types import Timing
from nnperf.measure.sweep._config import LayerConfig, SweepInputError, check_parameter

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
