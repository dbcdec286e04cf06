"""What a cost model learns for each column: its log time, or its log time relative to a reference column.

Absolute targets are Mulder et al.'s (3.3): column j learns z_j = log t_j. Relative targets keep that for one
reference column r and give every other column its log ratio to the reference on the same row:

    z_r = log t_r,    z_j = log(t_j / t_r)    (j != r),    and back: log t_r = z_r, log t_j = z_r + z_j.

Why: the dataset times all primitives of one configuration together in interleaved rounds, so a primitive's
ratio to the reference holds to about 3% between repeats where its absolute time moves 7-10% with the shared
machine's speed (bench/primitive_noise.py). A model of the ratios learns the part
of the data that is exact, the reference's column carries the drift once, and selecting a primitive needs the
ratios alone. A row without the reference's time has no ratio: its other entries are left out (NaN), as an
untimed entry is (the masked loss of 3.3 ignores them).

The same encoding serves layout transformations, with one transformation of an activation as the reference:
they are timed in the same rounds too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction._enums import TextEnum


class TargetKind(TextEnum):
    """How a cost model's columns are learnt (stored and chosen on the command line by their text)."""

    ABSOLUTE = "absolute"
    """Each column's log time (Mulder et al. 3.3)."""
    RELATIVE = "relative"
    """The reference column's log time and every other column's log ratio to it (see the module docstring)."""


TARGET_KINDS: tuple[str, ...] = TargetKind.values()
"""The target kinds' names."""


def reference_index(columns: Sequence[str], reference: str | None) -> int | None:
    """The position of ``reference`` among ``columns`` (None for absolute targets); a name that is not a column
    raises an error naming the columns."""
    if reference is None:
        return None
    if reference not in columns:
        raise NnperfError(f"the reference {reference!r} is not among the columns fitted: {', '.join(columns)}")
    return list(columns).index(reference)


def choose_reference(columns: Sequence[str], counts: Mapping[str, int], preferred: str | None = None) -> str:
    """The reference column: ``preferred`` when it is one of ``columns``, else the column timed on the most rows
    (the first of them in ``columns``' order on a tie), so that the fewest ratios are lost."""
    if not columns:
        raise NnperfError("relative targets need at least one column to be the reference")
    if preferred is not None and preferred in columns:
        return preferred
    return max(columns, key=lambda name: (counts.get(name, 0), -list(columns).index(name)))


def encode(log_t: np.ndarray, reference: int | None) -> np.ndarray:
    """(n, m) targets from (n, m) log times (NaN where untimed): a copy for absolute targets (``reference``
    None), else the reference's log time and every other column's log ratio to it (NaN where either is)."""
    z = np.array(log_t, dtype=float)
    if reference is None:
        return z
    others = np.arange(z.shape[1]) != reference
    z[:, others] -= z[:, [reference]]
    return z


def decode(z: np.ndarray, reference: int | None) -> np.ndarray:
    """(n, m) log times from targets: the inverse of :func:`encode` where every target is present."""
    log_t = np.array(z, dtype=float)
    if reference is None:
        return log_t
    others = np.arange(log_t.shape[1]) != reference
    log_t[:, others] += log_t[:, [reference]]
    return log_t
