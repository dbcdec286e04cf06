"""Comparisons that hold on a shared machine: workloads timed in randomized interleaved rounds, judged by the
distribution of their per-round ratios.

On a shared VM the machine's speed moves by 6-50% within an hour, so a ratio of two medians taken minutes apart
measures the drift as much as the workloads. Timing every workload once in each round, in a fresh random order,
puts each pair of readings minutes closer together than a sequential comparison can, and judging the per-round
ratios (not the ratio of the medians) cancels what a round shares (randomized multiple interleaved trials, Abedi
and Brecht, ICPE 2017). :func:`measure_interleaved` does that in this process; :func:`measure_sequential` is the
old way (each workload measured to convergence, one after the other), kept for the benchmarks that show the
difference; ``nnperf.measure.measure_duet`` runs two workloads at the same time on two cores.

Each :class:`Rounds` holds the per-execution times of every workload in every round; :meth:`Rounds.ratio` gives a
:class:`PairedRatio`: the median per-round ratio with a bootstrap confidence interval.
"""

from __future__ import annotations

import enum
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nnperf.errors import NnperfError
from nnperf.measure._harness import (
    Clock,
    HarnessConfig,
    MeasurementError,
    Timer,
    calibrate_block_size,
    measure,
    warm_up,
)
from nnperf.measure._stats import fixed_timing, median_ci_rel
from nnperf.measure._types import Timing


class ComparisonProtocol(str, enum.Enum):
    """How the sides of a comparison are timed; the value is what ``--protocol`` takes."""

    SEQUENTIAL = "sequential"
    """Each side measured to convergence, one after the other (a ratio of medians; drifts with the machine)."""
    INTERLEAVED = "interleaved"
    """Every side once per round, in random order, in this process; judged by per-round ratios."""
    DUET = "duet"
    """Two sides at the same time on two pinned cores; judged by per-pair ratios (Bulej et al., ICPE 2020)."""


IN_PROCESS_PROTOCOLS = (ComparisonProtocol.SEQUENTIAL, ComparisonProtocol.INTERLEAVED)
"""The protocols that time their workloads in this process (:func:`measure_comparison`); the duet protocol builds
each side again in a process of its own (``nnperf.measure.measure_duet``)."""


def parse_protocol(text: str | ComparisonProtocol,
                   allowed: Sequence[ComparisonProtocol] = tuple(ComparisonProtocol),
                   what: str = "this comparison", error: type[NnperfError] = NnperfError) -> ComparisonProtocol:
    """``text`` as one of the ``allowed`` protocols; an ``error`` naming them otherwise (``what`` names the
    comparison that does not take a protocol, e.g. 'selection')."""
    choices = ", ".join(p.value for p in allowed)
    try:
        parsed = ComparisonProtocol(text)
    except ValueError:
        raise error(f"unknown comparison protocol {text!r}; use one of {choices}") from None
    if parsed not in allowed:
        raise error(f"{what} cannot compare its programs under the {parsed.value} protocol; use one of {choices}")
    return parsed


@dataclass(frozen=True)
class RoundsConfig:
    """How many rounds to time and how long each timed block lasts.

    A block of each workload lasts at least ``min_block_s``; rounds go on until every workload's median
    per-round ratio to the first workload is known within ``target_ci`` (half-width of its 95% interval over the
    median), past ``min_rounds`` and up to ``max_rounds`` or ``budget_s`` seconds of timing.
    """

    min_rounds: int = 10
    max_rounds: int = 60
    min_block_s: float = 0.02
    """Seconds a timed block of one workload lasts at least (20 ms: long against the clock, short against drift)."""
    warmup_s: float = 0.2
    """Seconds each workload runs before its first round (caches, thread pools, allocator)."""
    target_ci: float = 0.01
    budget_s: float = 30.0
    seed: int = 0
    """Seeds the random order of the workloads in each round (repeatable runs)."""

    def __post_init__(self) -> None:
        if self.min_rounds < 2 or self.max_rounds < self.min_rounds:
            raise MeasurementError(f"need 2 <= min_rounds <= max_rounds, got {self.min_rounds}, {self.max_rounds}")
        for name in ("min_block_s", "budget_s"):
            if not getattr(self, name) > 0:
                raise MeasurementError(f"rounds setting {name} must be positive, got {getattr(self, name)!r}")
        for name in ("warmup_s", "target_ci"):
            if not getattr(self, name) >= 0:
                raise MeasurementError(f"rounds setting {name} must be >= 0, got {getattr(self, name)!r}")

    def harness(self) -> HarnessConfig:
        """The harness settings of one workload's warm-up and block size."""
        return HarnessConfig(warmup_s=self.warmup_s, min_block_s=self.min_block_s)


BOOTSTRAP_SAMPLES = 2000
"""Resamples of the per-round ratios behind a :class:`PairedRatio`'s interval."""


@dataclass(frozen=True)
class PairedRatio:
    """``numerator`` over ``denominator``, judged round by round.

    ``ratios`` are the per-round (or per-pair) ratios; ``median`` is their median and [``ci_low``, ``ci_high``]
    its bootstrap interval at ``confidence``. For a sequential comparison the sides were not paired: ``ratios``
    is empty, ``median`` is the ratio of the two medians and the interval resamples each side on its own.
    """

    numerator: str
    denominator: str
    median: float
    ci_low: float
    ci_high: float
    confidence: float
    ratios: tuple[float, ...]
    paired: bool

    @property
    def ci_rel(self) -> float:
        """Half-width of the interval over the median."""
        return (self.ci_high - self.ci_low) / 2 / self.median if self.median > 0 else math.inf

    @property
    def iqr_rel(self) -> float:
        """The per-round ratios' interquartile range over their median (nan for an unpaired ratio)."""
        if not self.ratios:
            return math.nan
        q1, q3 = np.percentile(self.ratios, [25, 75])
        return float(q3 - q1) / self.median if self.median > 0 else math.inf

    def to_dict(self) -> dict[str, object]:
        return {"numerator": self.numerator, "denominator": self.denominator, "median": self.median,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "confidence": self.confidence,
                "paired": self.paired, "rounds": len(self.ratios)}


@dataclass(frozen=True)
class Rounds:
    """Per-execution times (seconds) of named workloads measured under one protocol.

    ``times_s[i][r]`` is workload ``names[i]`` in round ``r`` (one timed block of ``block_sizes[i]`` executions,
    divided by them). Under the interleaved and duet protocols round ``r`` of every workload was taken in the
    same round; under the sequential protocol the rows are independent samples and need not be of equal length.
    """

    protocol: ComparisonProtocol
    names: tuple[str, ...]
    times_s: tuple[tuple[float, ...], ...]
    block_sizes: tuple[int, ...]
    wall_s: float

    def __post_init__(self) -> None:
        if len(set(self.names)) != len(self.names):
            raise MeasurementError(f"workload names must differ, got {', '.join(self.names)}")

    @property
    def paired(self) -> bool:
        return self.protocol is not ComparisonProtocol.SEQUENTIAL

    @property
    def rounds(self) -> int:
        return min(len(t) for t in self.times_s) if self.times_s else 0

    def times(self, name: str) -> tuple[float, ...]:
        """Workload ``name``'s per-round times (seconds)."""
        try:
            return self.times_s[self.names.index(name)]
        except ValueError:
            raise NnperfError(f"no workload named {name!r} was measured; measured: {', '.join(self.names)}") from None

    def median_s(self, name: str) -> float:
        return float(np.median(self.times(name)))

    def timing(self, name: str) -> Timing:
        """Workload ``name``'s round times as a :class:`Timing` (what a store keeps)."""
        return fixed_timing(self.times(name))

    def ratio(self, numerator: str, denominator: str, confidence: float = 0.95, seed: int = 0) -> PairedRatio:
        """``numerator`` over ``denominator``: round by round when paired, else the ratio of medians."""
        a, b = np.asarray(self.times(numerator)), np.asarray(self.times(denominator))
        rng = np.random.default_rng(seed)
        tail = (1 - confidence) / 2 * 100
        if self.paired:
            ratios = a / b
            median = float(np.median(ratios))
            boot = np.median(rng.choice(ratios, (BOOTSTRAP_SAMPLES, len(ratios))), axis=1)
            low, high = np.percentile(boot, [tail, 100 - tail])
            return PairedRatio(numerator, denominator, median, float(low), float(high), confidence,
                               tuple(float(r) for r in ratios), True)
        boot_a = np.median(rng.choice(a, (BOOTSTRAP_SAMPLES, len(a))), axis=1)
        boot_b = np.median(rng.choice(b, (BOOTSTRAP_SAMPLES, len(b))), axis=1)
        low, high = np.percentile(boot_a / boot_b, [tail, 100 - tail])
        return PairedRatio(numerator, denominator, float(np.median(a) / np.median(b)), float(low), float(high),
                           confidence, (), False)


RoundProgress = Callable[[int, int], None]
"""Called with (rounds done, the most rounds there will be)."""


def measure_interleaved(timers: Mapping[str, Timer], config: RoundsConfig = RoundsConfig(),
                        progress: RoundProgress | None = None, clock: Clock = time.perf_counter) -> Rounds:
    """Times every workload of ``timers`` once per round, in a fresh random order each round.

    The first workload is the one the stopping rule judges the others against (a reference, or the baseline
    of the comparison). Each workload is warmed up and its block size calibrated first, in random order too.
    """
    names = tuple(timers)
    if len(names) < 2:
        raise MeasurementError(f"an interleaved comparison needs two or more workloads, got {len(names)}")
    rng = random.Random(config.seed)
    harness = config.harness()
    blocks = {}
    for name in rng.sample(names, len(names)):
        blocks[name] = _warm(timers[name], harness, clock)
    times: dict[str, list[float]] = {name: [] for name in names}
    began = clock()
    for done in range(1, config.max_rounds + 1):
        time_round(timers, blocks, names, rng, times)
        if progress is not None:
            progress(done, config.max_rounds)
        if _enough(times, names, config, clock() - began):
            break
    return Rounds(ComparisonProtocol.INTERLEAVED, names, tuple(tuple(times[n]) for n in names),
                  tuple(blocks[n] for n in names), clock() - began)


DEFAULT_ROUNDS = RoundsConfig()
DEFAULT_HARNESS = HarnessConfig()


def measure_sequential(timers: Mapping[str, Timer], harness: HarnessConfig = DEFAULT_HARNESS,
                       clock: Clock = time.perf_counter) -> Rounds:
    """Each workload measured to the harness's stopping rule, one after the other (the unpaired protocol)."""
    names = tuple(timers)
    began = clock()
    timings = [measure(timers[name], harness, clock=clock) for name in names]
    return Rounds(ComparisonProtocol.SEQUENTIAL, names, tuple(t.times_s for t in timings),
                  tuple(t.block_size for t in timings), clock() - began)


WARM_ESTIMATES = 3
"""Blocks timed after the calibration to estimate one execution's time (the least of them is kept)."""


def measure_comparison(timers: Mapping[str, Timer], protocol: str | ComparisonProtocol, *,
                       rounds: RoundsConfig = DEFAULT_ROUNDS, harness: HarnessConfig = DEFAULT_HARNESS,
                       clock: Clock = time.perf_counter) -> Rounds:
    """Times ``timers`` in this process under ``protocol``: in ``rounds`` of interleaved blocks, or each to
    ``harness``'s stopping rule one after the other (sequential). ``clock`` (seconds) decides only when to stop;
    a fake one makes a caller testable without waiting."""
    chosen = parse_protocol(protocol, IN_PROCESS_PROTOCOLS, "an in-process comparison", MeasurementError)
    if chosen is ComparisonProtocol.INTERLEAVED:
        return measure_interleaved(timers, rounds, clock=clock)
    return measure_sequential(timers, harness, clock=clock)


def time_round(timers: Mapping[str, Timer], blocks: Mapping[str, int], names: Sequence[str], rng: random.Random,
               times: Mapping[str, list[float]]) -> None:
    """One round: each of ``names`` timed once for its block, in an order ``rng`` shuffles, its per-execution
    seconds appended to ``times``; a :class:`MeasurementError` for a timer that reports no time."""
    for name in rng.sample(list(names), len(names)):
        elapsed = timers[name].time_block(blocks[name])
        if not elapsed > 0:
            raise MeasurementError(f"the timer of {name!r} reported {elapsed!r} s for {blocks[name]} executions")
        times[name].append(elapsed / blocks[name])


def _warm(timer: Timer, harness: HarnessConfig, clock: Clock) -> int:
    """Runs ``timer`` for the warm-up and returns the number of executions that lasts about ``min_block_s`` on an
    undisturbed machine.

    The least of a few blocks estimates one execution, so that every workload's block lasts about as long
    whatever the machine did during the calibration: a busy process sharing the core takes the CPU in slices
    of a few milliseconds, and blocks of unequal length catch unequal shares of them.
    """
    warm_up(timer, harness, clock)
    block = calibrate_block_size(timer, harness)
    least_s = min(timer.time_block(block) / block for _ in range(WARM_ESTIMATES))
    return max(1, math.ceil(harness.min_block_s * 1.2 / least_s)) if least_s > 0 else block


def _enough(times: Mapping[str, Sequence[float]], names: Sequence[str], config: RoundsConfig, elapsed_s: float) -> bool:
    """The stopping rule of the rounds: past ``min_rounds``, every workload's per-round ratio to the first is known
    within ``target_ci``, or ``budget_s`` seconds of rounds have passed."""
    if len(times[names[0]]) < config.min_rounds:
        return False
    if elapsed_s >= config.budget_s:
        return True
    first = np.asarray(times[names[0]])
    return all(median_ci_rel(list(np.asarray(times[n]) / first)) <= config.target_ci for n in names[1:])
