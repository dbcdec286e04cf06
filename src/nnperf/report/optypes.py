"""Time by op type: per-layer times summed per operator type, with each type's share of the total.

The same view as torch.profiler's ``key_averages()`` and ONNX Runtime's per-op summary, on nnperf's layers: pass
(op type, seconds) pairs from a profile, a stored run or a prediction. A fused group is the caller's to count once
(give its time with the first member and 0 with the others).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class OpTime:
    """One op type's total time (seconds), its share of all layers' time (0-1) and how many layers it has."""

    op: str
    total_s: float
    share: float
    layers: int


def time_by_op(times: Iterable[tuple[str, float]]) -> tuple[OpTime, ...]:
    """(op type, seconds) pairs summed per op type, the largest total first (ties by name).

    ``share`` is the type's total over the sum of all the times (0.0 when that sum is 0); the shares add up to 1.
    """
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for op, seconds in times:
        totals[op] = totals.get(op, 0.0) + seconds
        counts[op] = counts.get(op, 0) + 1
    grand = sum(totals.values())
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    return tuple(OpTime(op, total, total / grand if grand > 0 else 0.0, counts[op]) for op, total in ranked)
