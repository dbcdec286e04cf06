"""Robust statistics of repeated timings: median, IQR and the median's confidence interval."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

import numpy as np

from nnperf.measure._types import Timing, TimingStats


@lru_cache(maxsize=4096)
def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) of the sorted sample that bound the median at ``confidence``.

    Distribution free: the number of samples below the median is Binomial(n, 1/2),
    so [x_(lo), x_(hi)] covers the median with probability >= ``confidence``.
    None when ``n`` is too small for any interval to reach that confidence
    (n < 6 at 95%). Cached: the harness asks after every timed block.

    The binomial tail is summed exactly in integers rather than with SciPy: the
    stopping rule runs inside the measured window, and SciPy's first import
    (about 1 s) would be charged to the first measurement's budget. It gives
    the ranks ``scipy.stats.binom.ppf`` gave (the tests compare them), in about
    20 us at n = 200.
    """
    if n < 1:
        return None
    tail = Fraction(1.0 - confidence) / 2
    # x_(k) (1-based) is the lower bound for the largest k with P(B <= k - 1) < alpha / 2, that is
    # C(n, 0) + ... + C(n, k - 1) < alpha / 2 * 2^n; both sides scaled by the tail's denominator to stay integers
    bound = tail.numerator << n
    k, below, term = 0, 0, 1  # below = C(n, 0) + ... + C(n, k - 1); term = C(n, k)
    while k < n and (below + term) * tail.denominator < bound:
        below += term
        k += 1
        term = term * (n - k + 1) // k
    if k < 1:
        return None
    return k - 1, n - k


def median_ci_rel(times_s: Sequence[float], confidence: float = 0.95) -> float:
    """Half-width of the median's confidence interval over the median (inf when n is too small).

    The same interval as :func:`summarize`, computed in a few microseconds so the
    harness can check its stopping rule after every block without widening the
    measured time window.
    """
    x = sorted(times_s)
    n = len(x)
    ranks = median_ci_ranks(n, confidence)
    if ranks is None:
        return math.inf
    median = (x[(n - 1) // 2] + x[n // 2]) / 2
    return (x[ranks[1]] - x[ranks[0]]) / 2 / median if median > 0 else math.inf


def summarize(times_s: Sequence[float], confidence: float = 0.95) -> TimingStats:
    """Statistics of per-execution times (seconds); the interval is the full range when n is too small."""
    if not times_s:
        raise ValueError("no times to summarize")
    x = np.sort(np.asarray(times_s, dtype=float))
    n = len(x)
    q1, median, q3 = (float(v) for v in np.percentile(x, [25, 50, 75]))
    ranks = median_ci_ranks(n, confidence)
    lo, hi = (float(x[0]), float(x[-1])) if ranks is None else (float(x[ranks[0]]), float(x[ranks[1]]))
    iqr = q3 - q1
    outliers = int(np.sum((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)))
    return TimingStats(
        n=n,
        median_s=median,
        q1_s=q1,
        q3_s=q3,
        mean_s=float(x.mean()),
        std_s=float(x.std(ddof=1)) if n > 1 else 0.0,
        min_s=float(x[0]),
        max_s=float(x[-1]),
        ci_low_s=lo,
        ci_high_s=hi,
        confidence=confidence,
        n_outliers=outliers,
    )


def relative_change(before: float, after: float) -> float:
    """(after - before) / before; inf when ``before`` is not positive."""
    return (after - before) / before if before > 0 else math.inf


def fixed_timing(times_s: Sequence[float]) -> Timing:
    """A Timing for times taken one run each over a fixed number of runs (profiler and per-run samples)."""
    times = tuple(float(t) for t in times_s)
    return Timing(times, 1, summarize(times), "fixed_runs", sum(times))
