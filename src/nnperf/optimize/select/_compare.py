"""Comparing selections end to end, judged by paired rounds: the programs compared timed in the same rounds.

Mulder et al. (4.3, Fig. 7) judge a selection by running the selected network against the framework default,
the best uniform choice and the profiled optimum. On this project's shared 2-core VM the machine's speed moves
by 6-50% within an hour, and a ratio of two medians taken one after the other measures that drift as much as
the programs: the first selection benchmark, which timed each program for 1 s in turn, saw (a) over (b) move
from -23.7% to +2.7% between rounds on ResNet-34. Under the ``interleaved`` protocol (the default)
:func:`compare_selections` times every program once per round, in a fresh random order each round
(:func:`nnperf.measure.measure_interleaved`), and each comparison is the median of the per-round ratios with its
bootstrap interval (:meth:`nnperf.measure.Rounds.ratio`): what slows a round slows both sides of its ratio. The
``sequential`` protocol is the old way: each program measured with the harness to its stopping rule, one after
the other, and a comparison the ratio of the two medians.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nnperf.ir import Network
from nnperf.measure import (
    IN_PROCESS_PROTOCOLS,
    ComparisonProtocol,
    HarnessConfig,
    PairedRatio,
    Rounds,
    RoundsConfig,
    Timer,
    measure_comparison,
    resolve_protocol,
)
from nnperf.measure.backends import LoopTimer
from nnperf.optimize.select._execute import DEFAULT_HARNESS, _inputs, build_selected
from nnperf.optimize.select._graph import Selection, SelectionError

SELECTED = "selected"
DEFAULT = "default"
BEST_UNIFORM = "best uniform"
PROFILED = "profiled optimum"
"""The names the API and ``nnperf select`` give the programs they compare (the bench uses its own)."""

SELECTION_PROTOCOLS = IN_PROCESS_PROTOCOLS
"""The protocols selections are compared under. The duet protocol runs two workloads at once on two cores;
selection compares up to four programs, so it is not offered."""

SELECTION_ROUNDS = RoundsConfig(min_rounds=10, max_rounds=60, min_block_s=0.02, warmup_s=0.2, target_ci=0.01,
                                budget_s=20.0)
"""The paired rounds of a comparison: 10 to 60 rounds, each program timed for at least 20 ms per round (one
inference of most zoo networks), until every ratio to the first program is known within 1% (half-width of its
95% interval) or 20 s of rounds have passed (VGG-11's four programs take about 0.55 s a round on a 2-vCPU shared VM)."""


class SelectionProtocolError(SelectionError):
    """A comparison protocol selection does not take (unknown, or duet)."""


def check_protocol(protocol: str | ComparisonProtocol) -> ComparisonProtocol:
    """``protocol`` as one of :data:`SELECTION_PROTOCOLS`; a :class:`SelectionProtocolError` naming them
    otherwise; ``auto`` (the default) is the protocol the machine check recommends
    (:func:`nnperf.measure.resolve_protocol`)."""
    return resolve_protocol(protocol, SELECTION_PROTOCOLS, "selection", SelectionProtocolError).protocol


@dataclass(frozen=True)
class SelectionComparison:
    """Programs of one network timed under one protocol.

    ``rounds`` holds every program's per-inference times (seconds), by name, the first being the one the
    interleaved stopping rule judges the others against. :meth:`speedup` and :meth:`ratio` read ratios out of
    them: round by round (median and bootstrap interval at ``confidence``) when paired, the ratio of the medians
    (interval from resampling each side on its own) when sequential.
    """

    rounds: Rounds
    confidence: float = 0.95

    @property
    def protocol(self) -> ComparisonProtocol:
        return self.rounds.protocol

    @property
    def names(self) -> tuple[str, ...]:
        return self.rounds.names

    def ratio(self, numerator: str, denominator: str) -> PairedRatio:
        """Program ``numerator``'s time over ``denominator``'s (above 1: ``numerator`` is slower)."""
        self._check(numerator, denominator)
        return self.rounds.ratio(numerator, denominator, self.confidence)

    def speedup(self, program: str, over: str) -> PairedRatio:
        """How many times faster ``program`` ran than ``over``: ``over``'s time over ``program``'s."""
        return self.ratio(over, program)

    def median_s(self, name: str) -> float:
        """Program ``name``'s median time per inference (seconds) in this comparison."""
        self._check(name)
        return self.rounds.median_s(name)

    def _check(self, *names: str) -> None:
        for name in names:
            if name not in self.rounds.names:
                raise SelectionError(f"no program named {name!r} was compared; compared: "
                                     f"{', '.join(self.rounds.names)}")

    def to_dict(self) -> dict[str, Any]:
        """The protocol, the rounds (how many, seconds of timing) and every program's median (seconds)."""
        return {"protocol": self.protocol.value, "rounds": self.rounds.rounds, "wall_s": self.rounds.wall_s,
                "confidence": self.confidence, "median_s": {name: self.median_s(name) for name in self.names}}


def compare_timers(timers: Mapping[str, Timer], protocol: str | ComparisonProtocol = ComparisonProtocol.INTERLEAVED,
                   *, rounds: RoundsConfig = SELECTION_ROUNDS, harness: HarnessConfig = DEFAULT_HARNESS,
                   confidence: float = 0.95, clock: Callable[[], float] = time.perf_counter) -> SelectionComparison:
    """Times the programs of ``timers`` (two or more) under ``protocol``.

    ``interleaved`` (default): every program once per round in random order, under ``rounds``
    (:data:`SELECTION_ROUNDS` by default); ``sequential``: each program measured to ``harness``'s stopping rule
    (the harness defaults, as :func:`~nnperf.optimize.select.measure_selected` times a network), one after the
    other in the order given. ``clock`` (seconds) decides only when to stop; a fake one makes this testable
    without waiting.
    """
    chosen = check_protocol(protocol)
    if len(timers) < 2:
        raise SelectionError(f"a comparison needs two or more programs, got {len(timers)}")
    return SelectionComparison(measure_comparison(timers, chosen, rounds=rounds, harness=harness, clock=clock),
                               confidence)


def compare_selections(network: Network, selections: Mapping[str, Selection | Mapping[str, str]],
                       protocol: str | ComparisonProtocol = ComparisonProtocol.INTERLEAVED, *,
                       rounds: RoundsConfig = SELECTION_ROUNDS, harness: HarnessConfig = DEFAULT_HARNESS,
                       confidence: float = 0.95, seed: int = 0, threads: int = 1) -> SelectionComparison:
    """Runs ``network`` under each of ``selections`` (name -> a :class:`Selection` or node name -> label, as
    :func:`~nnperf.optimize.select.build_selected` takes) end to end in torch and times them against each other
    under ``protocol`` (see :func:`compare_timers`), on the same seeded inputs, with torch on ``threads`` threads
    (restored afterwards).

    Every selected network is built (and so checked) before any is timed, so a selection that cannot run fails
    at once and a round times the networks alone, not their preparation.
    """
    import torch

    chosen = check_protocol(protocol)
    if len(selections) < 2:
        raise SelectionError(f"a comparison needs two or more selections, got {len(selections)}")
    inputs = _inputs(network, seed)
    timers: dict[str, Timer] = {
        name: LoopTimer(functools.partial(build_selected(network, selection, seed, threads), *inputs))
        for name, selection in selections.items()}
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return compare_timers(timers, chosen, rounds=rounds, harness=harness, confidence=confidence)
    finally:
        torch.set_num_threads(before)
