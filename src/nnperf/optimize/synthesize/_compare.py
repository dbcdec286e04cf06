"""Table I's speed-ups, judged by paired rounds: the baseline and the programs compared timed in the same rounds.

A speed-up is the baseline's time over a program's. On this project's shared 2-core VM the machine's speed moves
by 6-50% within an hour, and synthesis used to time the baseline once, minutes before the programs it is
compared with: ResNet-18's final program measured 13.38x in one run and 8.32x in the next, because the baseline
measured 64.35 ms and then 40.07 ms. Under the ``interleaved`` protocol (the default) :func:`compare_programs`
times the baseline and every program once per round, in a fresh random order each round
(:func:`nnperf.measure.measure_interleaved`), and each speed-up is the median of the per-round ratios
baseline / program with its bootstrap interval (:meth:`nnperf.measure.Rounds.ratio`): what slows a round slows
both sides of its ratio. The ``sequential`` protocol is the old way, a ratio of medians taken one after the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nnperf.measure import (
    IN_PROCESS_PROTOCOLS,
    ComparisonProtocol,
    HarnessConfig,
    PairedRatio,
    Rounds,
    RoundsConfig,
    Timer,
    Timing,
    measure_comparison,
    resolve_protocol,
)
from nnperf.optimize.synthesize._errors import SynthesisError

PROTOCOLS = IN_PROCESS_PROTOCOLS
"""The protocols synthesis compares its programs under (the duet protocol runs two workloads at once on two
cores; synthesis compares up to seven programs, some of which use both cores, so it is not offered)."""

SYNTHESIS_HARNESS = HarnessConfig(warmup_s=0.1, budget_s=1.0)
"""Each candidate of the search is timed for about a second (median of blocks); so is each program of a
sequential comparison."""
CHECK_ROUNDS = RoundsConfig(min_rounds=10, max_rounds=40, min_block_s=0.01, warmup_s=0.1, target_ci=0.01,
                            budget_s=8.0)
"""The paired rounds a search decides in (at most 8 s): the fp32 programs of each runtime, the border model's
probes with fp32, the searched programs against their predictions, weights per channel against per tensor."""
SYNTHESIS_ROUNDS = RoundsConfig(min_rounds=10, max_rounds=60, min_block_s=0.02, warmup_s=0.2, target_ci=0.01,
                                budget_s=20.0)
"""The paired rounds of Table I: 10 to 60 rounds, each program timed for at least 20 ms per round, until every
speed-up's 95% interval is within 1% of it or 20 s of rounds have passed (ResNet-18's six programs take about
0.2 s a round on a 2-vCPU shared VM)."""


def check_protocol(protocol: str | ComparisonProtocol) -> ComparisonProtocol:
    """``protocol`` as one of :data:`PROTOCOLS`; a :class:`SynthesisError` naming them otherwise; ``auto`` (the default) is the protocol the machine check recommends
    (:func:`nnperf.measure.resolve_protocol`)."""
    return resolve_protocol(protocol, PROTOCOLS, "synthesis", SynthesisError).protocol


@dataclass(frozen=True)
class Comparison:
    """The baseline and the programs compared with it, under one protocol.

    ``rounds`` holds every program's per-execution times (seconds), the baseline's first; ``speedups`` holds the
    baseline over each other program (a :class:`~nnperf.measure.PairedRatio`, in the order of ``rounds.names``):
    the median per-round ratio with its bootstrap interval when paired, the ratio of the medians when
    sequential.
    """

    protocol: ComparisonProtocol
    rounds: Rounds
    speedups: tuple[PairedRatio, ...]
    confidence: float = 0.95

    @property
    def baseline(self) -> str:
        return self.rounds.names[0]

    def speedup(self, name: str) -> PairedRatio:
        """The baseline over program ``name`` (1 with an empty interval for the baseline itself)."""
        if name == self.baseline:
            return PairedRatio(name, name, 1.0, 1.0, 1.0, self.confidence, (), self.rounds.paired)
        for ratio in self.speedups:
            if ratio.denominator == name:
                return ratio
        raise SynthesisError(f"no program named {name!r} was compared; compared: {', '.join(self.rounds.names)}")

    def ratio(self, numerator: str, denominator: str) -> PairedRatio:
        """Program ``numerator``'s time over ``denominator``'s, from the same rounds."""
        return self.rounds.ratio(numerator, denominator, self.confidence)

    def median_s(self, name: str) -> float:
        """Program ``name``'s median time per execution (seconds) in this comparison."""
        return self.rounds.median_s(name)

    def to_dict(self) -> dict[str, Any]:
        return {"protocol": self.protocol.value, "baseline": self.baseline, "rounds": self.rounds.rounds,
                "wall_s": self.rounds.wall_s, "confidence": self.confidence,
                "programs": {name: self.median_s(name) for name in self.rounds.names}}


def _judged(rounds: Rounds, confidence: float) -> Comparison:
    baseline = rounds.names[0]
    return Comparison(rounds.protocol, rounds, tuple(rounds.ratio(baseline, name, confidence)
                                                     for name in rounds.names[1:]), confidence)


def compare_programs(timers: Mapping[str, Timer], protocol: str | ComparisonProtocol = ComparisonProtocol.INTERLEAVED,
                     *, rounds: RoundsConfig = SYNTHESIS_ROUNDS, harness: HarnessConfig = SYNTHESIS_HARNESS,
                     confidence: float = 0.95, clock: Callable[[], float] = time.perf_counter) -> Comparison:
    """Times the programs of ``timers`` (the first is the baseline) and judges the baseline over each.

    ``interleaved`` (default): every program once per round in random order, under ``rounds``
    (:data:`SYNTHESIS_ROUNDS` by default); ``sequential``: each program measured to the ``harness``'s stopping
    rule (:data:`SYNTHESIS_HARNESS` by default, as the search times a candidate), one after the other. ``clock``
(seconds) decides only when to stop; a fake one makes this testable without waiting.
    """
    chosen = check_protocol(protocol)
    if len(timers) < 2:
        raise SynthesisError(f"a comparison needs the baseline and at least one program, got {len(timers)}")
    return _judged(measure_comparison(timers, chosen, rounds=rounds, harness=harness, clock=clock), confidence)


def compare_timings(timings: Mapping[str, Timing], confidence: float = 0.95) -> Comparison:
    """The sequential comparison of timings already taken (the first is the baseline's): each speed-up the ratio
    of two medians, its interval from resampling each side's blocks on its own. Nothing is measured again."""
    if len(timings) < 2:
        raise SynthesisError(f"a comparison needs the baseline and at least one program, got {len(timings)}")
    names = tuple(timings)
    rounds = Rounds(ComparisonProtocol.SEQUENTIAL, names, tuple(timings[n].times_s for n in names),
                    tuple(timings[n].block_size for n in names), sum(timings[n].wall_s for n in names))
    return _judged(rounds, confidence)
