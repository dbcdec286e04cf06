"""Interleaved rounds in which each workload stays only until its ratio to the reference is known well enough.

The cost models learn a configuration's primitives' times relative to one another, so what a round buys is
precision on each workload's median per-round ratio to the reference (the first workload). The rounds of
``nnperf.measure.measure_interleaved`` run every workload until every ratio is known within the target, so the
noisiest one decides how long all of them run. Here each workload leaves the rounds once the standard error of its
median ratio (:func:`ratio_standard_error`) is at most :attr:`RatioStopping.target_se`, after ``min_rounds`` and by
``max_rounds`` at the latest; the reference stays while any other workload does, or until the budget is spent. A
workload that left has the first rounds only: round ``r`` of every workload that has one was still taken in the
same round, so its ratio to the reference pairs its rounds with the reference's first ones.

Before the rounds, each workload is warmed up and its block size chosen as ``measure_interleaved`` does, except
that a slow workload is calibrated from its warm-up: one whose warm-up calls (at least two) all lasted the block
length with margin (``SLOW_CALL_MARGIN``) runs one call per block, without the calibration blocks and the three
estimate blocks, which cost a slow primitive three calls more than the rounds' own.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nnperf.errors import NnperfError
from nnperf.measure import HarnessConfig, MeasurementError, RoundsConfig, Timer, calibrate_block_size, time_round

MAD_TO_SD = 1.4826
"""The median absolute deviation of normal data times this is its standard deviation."""

MEDIAN_SE = math.sqrt(math.pi / 2)
"""A median of n normal samples has a standard error of this many standard deviations over sqrt(n) (1.2533)."""

SLOW_CALL_MARGIN = 1.2
"""A workload whose first call after the warm-up lasts this many block lengths runs one call per block (the
calibration aims 20% past the block length too)."""

JUDGED_CALLS = 2
"""The fewest warm-up calls a workload's speed is judged from (the least of them)."""

ESTIMATE_BLOCKS = 3
"""Blocks timed after a calibration to estimate one call (the least is kept), as ``measure_interleaved`` does."""


@dataclass(frozen=True)
class RatioStopping:
    """When a workload leaves a configuration's interleaved rounds: once the standard error of its median
    per-round ratio to the reference is at most ``target_se`` (a fraction of the ratio), past the fewest rounds and
    by the most rounds the harness allows (``min_samples`` and ``max_samples``).

    The default, 1%, is what the rounds of the earlier rule asked of every ratio (a 95% interval of 2%, about 1.96
    standard errors), and puts a perfect model's error from it at 0.67% (the median absolute value of a normal
    error is 0.674 standard deviations): a quarter of the 3% goal of the cost models.
    """

    target_se: float = 0.01

    def __post_init__(self) -> None:
        if not (self.target_se > 0 and math.isfinite(self.target_se)):
            raise NnperfError(f"the target standard error of a ratio must be a positive fraction, got "
                              f"{self.target_se!r}")


DATASET_STOPPING = RatioStopping()
"""The rule a primitive dataset's configurations are profiled under (``nnperf.campaign.profile_primitives``)."""


def ratio_standard_error(ratios: Sequence[float]) -> float:
    """The standard error of the median of per-round ``ratios``, as a fraction of it: the median absolute deviation
    of their logarithms as a standard deviation (robust to a round that a neighbour's work slowed), times
    :data:`MEDIAN_SE`, over the square root of their number; inf for fewer than two."""
    if len(ratios) < 2:
        return math.inf
    logs = np.log(np.asarray(ratios, dtype=float))
    deviation = float(np.median(np.abs(logs - np.median(logs))))
    return MEDIAN_SE * MAD_TO_SD * deviation / math.sqrt(len(ratios))


@dataclass(frozen=True)
class RatioRounds:
    """What :func:`measure_ratio_rounds` measured: per workload (``names``, the reference first) its per-call
    times in the rounds it took part in (the first ``len(times_s[i])`` rounds), its block size, the standard error
    of its ratio to the reference when it left (nan for the reference) and why it left ('converged', 'max_samples'
    or 'budget'); ``wall_s`` the rounds' length."""

    names: tuple[str, ...]
    times_s: tuple[tuple[float, ...], ...]
    block_sizes: tuple[int, ...]
    standard_errors: tuple[float, ...]
    stop_reasons: tuple[str, ...]
    wall_s: float

    @property
    def rounds(self) -> int:
        """The rounds the configuration took: the reference's."""
        return len(self.times_s[0]) if self.times_s else 0

    def ratios(self, name: str) -> np.ndarray:
        """``name``'s per-round ratios to the reference, over the rounds it took part in."""
        own = np.asarray(self.times_s[self.names.index(name)])
        return own / np.asarray(self.times_s[0][:len(own)])


def warm_block(timer: Timer, harness: HarnessConfig, clock: Callable[[], float] = time.perf_counter) -> int:
    """Warms ``timer`` up for ``harness.warmup_s`` (at least :data:`JUDGED_CALLS` calls) and returns its block size:
    one call when the least of the warm-up's calls lasted :data:`SLOW_CALL_MARGIN` block lengths, else the
    calibrated size refined by the least of :data:`ESTIMATE_BLOCKS` blocks (what ``measure_interleaved`` does for
    every workload).

    The least call, not the last: on a shared machine any one call of a fast workload may have waited milliseconds
    for the core, and a fast workload timed one call per block is timed with its call's overhead (a 0.03 ms
    convolution read 0.1 ms so). A workload whose first call lasted the whole warm-up (20 ms for the dataset) is
    judged by it and one more.
    """
    start = clock()
    calls_s: list[float] = []
    while clock() - start < harness.warmup_s or len(calls_s) < JUDGED_CALLS:
        calls_s.append(timer.time_block(1))
    if min(calls_s) >= SLOW_CALL_MARGIN * harness.min_block_s:
        return 1
    block = calibrate_block_size(timer, harness)
    least_s = min(timer.time_block(block) / block for _ in range(ESTIMATE_BLOCKS))
    return max(1, math.ceil(harness.min_block_s * SLOW_CALL_MARGIN / least_s)) if least_s > 0 else block


def measure_ratio_rounds(timers: Mapping[str, Timer], rounds: RoundsConfig, stopping: RatioStopping,
                         clock: Callable[[], float] = time.perf_counter) -> RatioRounds:
    """Times ``timers`` (the first is the reference) in rounds, each workload once per round in a fresh random
    order (seeded by ``rounds.seed``), until every other workload has left (:class:`RatioStopping`), ``max_rounds``
    or ``budget_s`` seconds of rounds (past ``min_rounds``). Warm-up and block sizes as :func:`warm_block`; a timer
    that raises stops the rounds (the caller times the others again without it)."""
    names = tuple(timers)
    if len(names) < 2:
        raise MeasurementError(f"rounds of ratios need two or more workloads, got {len(names)}")
    rng = random.Random(rounds.seed)
    blocks: dict[str, int] = {}
    for name in rng.sample(names, len(names)):
        blocks[name] = warm_block(timers[name], rounds.harness(), clock)
    times: dict[str, list[float]] = {name: [] for name in names}
    errors = {name: math.nan for name in names}
    reasons: dict[str, str] = {}
    active = list(names)
    began = clock()
    for done in range(1, rounds.max_rounds + 1):
        time_round(timers, blocks, active, rng, times)
        if done < rounds.min_rounds:
            continue
        active = _still_needed(active, times, errors, reasons, stopping.target_se)
        if len(active) == 1:
            reasons[names[0]] = "converged"
            break
        if clock() - began >= rounds.budget_s:  # as in measure_interleaved, never before the fewest rounds
            reasons.update((name, "budget") for name in active)
            break
    reasons.update((name, "max_samples") for name in active if name not in reasons)
    return RatioRounds(names, tuple(tuple(times[n]) for n in names), tuple(blocks[n] for n in names),
                       tuple(errors[n] for n in names), tuple(reasons[n] for n in names), clock() - began)


def _still_needed(active: Sequence[str], times: Mapping[str, Sequence[float]], errors: dict[str, float],
                  reasons: dict[str, str], target_se: float) -> list[str]:
    """The reference and each other ``active`` workload whose ratio's standard error is still over
    ``target_se``; each one's standard error is noted in ``errors``, and why a leaving one left in ``reasons``."""
    reference = np.asarray(times[active[0]])
    kept = [active[0]]
    for name in active[1:]:
        errors[name] = ratio_standard_error(np.asarray(times[name]) / reference)
        if errors[name] <= target_se:
            reasons[name] = "converged"
        else:
            kept.append(name)
    return kept
