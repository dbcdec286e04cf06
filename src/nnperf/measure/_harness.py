"""The timing harness: warm-up, block-size calibration, adaptive repetition.

Follows pyperf and torch.utils.benchmark: warm up first; grow the number of
executions per timed block until a block is long enough for the clock; then
time blocks until the 95% confidence interval of the median is within
``target_ci`` of it, or the time budget is spent (Osterwind 3.3.1 measures
"until we are sure the mean of the samples is close enough"). The clock is a
parameter so a fake clock makes the harness testable without waiting.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from nnperf.errors import NnperfError
from nnperf.measure._stats import median_ci_rel, summarize
from nnperf.measure._types import Timing


class MeasurementError(NnperfError):
    """A measurement that cannot be taken (a timer that reports no time, a bad setting)."""


class Timer(Protocol):
    """Runs something ``n`` times back to back and returns the elapsed seconds.

    A backend implements this with its own clock (``time.perf_counter``, CUDA
    events); a fake backend returns modelled times and advances a fake clock.
    """

    def time_block(self, n: int) -> float: ...


Clock = Callable[[], float]
"""Seconds from an arbitrary origin; the harness uses it for budgets only."""


@dataclass(frozen=True)
class HarnessConfig:
    """How hard to try for one measurement.

    Defaults suit CPU layers of 10 us to 100 ms on a noisy 2-core VM.
    """

    warmup_s: float = 0.05
    """Run for at least this long (seconds) before timing."""
    warmup_runs: int = 2
    """... and at least this many executions."""
    min_block_s: float = 0.002
    """A timed block lasts at least this long (seconds), so clock resolution and call overhead vanish."""
    target_ci: float = 0.02
    """Stop when the median's confidence-interval half-width is within this fraction of the median."""
    confidence: float = 0.95
    min_samples: int = 10
    max_samples: int = 200
    budget_s: float = 3.0
    """Stop after this many seconds of timing (warm-up and calibration excluded), converged or not."""
    max_block_size: int = 1_000_000

    def __post_init__(self) -> None:
        for name in ("warmup_s", "target_ci", "budget_s"):
            if getattr(self, name) < 0 or not math.isfinite(getattr(self, name)):
                raise MeasurementError(f"harness setting {name} must be a non-negative number, got "
                                       f"{getattr(self, name)!r}")
        if self.min_block_s <= 0:
            raise MeasurementError(f"harness setting min_block_s must be positive, got {self.min_block_s!r}")
        if not 0 < self.confidence < 1:
            raise MeasurementError(f"harness setting confidence must be in (0, 1), got {self.confidence!r}")
        if self.min_samples < 2 or self.max_samples < self.min_samples:
            raise MeasurementError(f"need 2 <= min_samples <= max_samples, got {self.min_samples}, "
                                   f"{self.max_samples}")


def calibrate_block_size(timer: Timer, config: HarnessConfig) -> int:
    """The number of executions per block that makes one block last at least ``min_block_s``."""
    n = 1
    while True:
        elapsed = timer.time_block(n)
        if elapsed >= config.min_block_s or n >= config.max_block_size:
            return n
        # aim 20% past the target, grow at most 10x per step (the first runs can be slow outliers)
        wanted = config.min_block_s * 1.2 / elapsed if elapsed > 0 else 10.0
        n = min(config.max_block_size, max(n + 1, math.ceil(n * min(wanted, 10.0))))


def timer_clock(timer: Timer) -> Clock:
    """The clock that ``timer``'s seconds pass on: its own ``clock`` where it has one (a fake backend's modelled
    time), else ``time.perf_counter``."""
    clock = getattr(timer, "clock", None)
    return clock if callable(clock) else time.perf_counter


def warm_up(timer: Timer, config: HarnessConfig, clock: Clock | None = None) -> int:
    """Runs ``timer`` for at least ``warmup_runs`` executions and ``warmup_s`` seconds (on ``clock``, by default
    the timer's) and returns the executions run: in blocks that double, never much past the time left, so that a
    layer of microseconds warms up without a Python call per execution."""
    clock = clock or timer_clock(timer)
    start, runs, n = clock(), 0, 1
    while runs < config.warmup_runs or clock() - start < config.warmup_s:
        per_run_s = timer.time_block(n) / n
        runs += n
        left_s = config.warmup_s - (clock() - start)
        fits = math.ceil(left_s / per_run_s) if per_run_s > 0 and left_s > 0 else 1
        n = max(1, min(2 * n, max(fits, config.warmup_runs - runs), config.max_block_size))
    return runs


def measure(timer: Timer, config: HarnessConfig = HarnessConfig(), clock: Clock | None = None,
            wall_clock: Clock = time.time) -> Timing:
    """One adaptive measurement of ``timer``: warm-up, block-size calibration, repetition to the stopping rule.
    Budgets count on ``clock``, by default the timer's (:func:`timer_clock`)."""
    clock = clock or timer_clock(timer)
    start = clock()
    warm_up(timer, config, clock)
    block = calibrate_block_size(timer, config)
    times: list[float] = []
    began, began_wall = clock(), wall_clock()  # the wall-clock window is for power traces: keep it tight
    reason = "max_samples"
    while len(times) < config.max_samples:
        elapsed = timer.time_block(block)
        if not elapsed > 0:
            raise MeasurementError(f"the timer reported {elapsed!r} s for {block} executions")
        times.append(elapsed / block)
        if len(times) >= config.min_samples and median_ci_rel(times, config.confidence) <= config.target_ci:
            reason = "converged"
            break
        if clock() - began >= config.budget_s:
            reason = "budget"
            break
    ended_wall = wall_clock()
    return Timing(
        times_s=tuple(times),
        block_size=block,
        stats=summarize(times, config.confidence),
        stop_reason=reason,
        wall_s=clock() - start,
        started_at=began_wall,
        ended_at=ended_wall,
    )
