"""Small regularised corrections fitted on a target platform's log residuals (transfer with few samples).

A source model's prediction on the target platform is off by a residual r_ij = log(measured) - log(predicted)
per row i (a configuration or an activation) and column j (a primitive or a transformation). The residual has
two parts, fitted apart:

- **the row's level** l_i, the median of the row's residuals over its columns: what every column of the row
  shares. On a platform uniformly slower it is that platform's factor; on a shared machine it also carries how
  fast the machine ran while that row was timed, which moves every column of the row alike (its primitives are
  timed in the same interleaved rounds) and is noise to a model: about 0.3 in log time on shared 2-vCPU VMs.
- **each column's own part** d_ij = r_ij - l_i: how the column moved against the others of its row. The rounds
  make these ratios exact to a few percent, so a column that changed (a vendor library capped to an older ISA)
  shows it from a handful of rows, and one that did not stays near 0.

Each part gets g(x) = b + (d(x) - mean(d)) . beta on a design row d(x) (the standardised features, or a
network's last hidden layer), the level on every row, each column's part on the rows that timed it. The
correction of column j is the level's fit plus its own; a column the sample never timed gets the level's alone,
so a platform uniformly slower moves every column while one odd column moves only itself.

Both fits choose among no change at all, a bias and a bias with slopes by the median absolute leave-one-out
error (ridge regression gives the left-out errors in closed form, e_i / (1 - H_ii)), so nothing is held out:

- the bias is a median, not a mean; a column's is shrunk toward 0 as by k rows of residual 0 (b = median_i r_i
  * n / (n + k)), the level's is not (a platform 50 times faster is that from its first row on); one row keeps
  its bias, and from two rows on "no change" competes, so a column (or a level) whose residuals scatter around
  0 keeps the source's predictions;
- slopes need :data:`MIN_ROWS_FOR_SLOPES` rows, with penalties among :data:`ALPHAS` times the design's mean
  squared singular value;
- residuals further than :data:`CLIP_MADS` scaled median absolute deviations from their median are clipped to
  that distance first. A source model's errors on another machine have a long tail (bench/primitive_transfer.py
  on an AMD EPYC capped to SSE4.1, per primitive: a median of -0.01 to +0.09, a mean of +0.08 to +0.18 in log
  time), and a least-squares fit follows the tail where the models are judged by the median (MdRAE).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnperf.prediction.primitives._arrays import decode_array, encode_array

SHRINK_ROWS = 2.0
"""k: a bias is shrunk toward 0 as if this many rows of residual 0 came with the column's own."""

MIN_ROWS_FOR_SLOPES = 10
"""Fewer rows fit a bias alone, the level's as a column's: with 5 rows of this CPU capped to SSE4.1, the
leave-one-out error chose slopes on the 27 features that put the transferred model 31% off, against 17% for
the source model used directly and 18% for the biases alone (median over primitives)."""

CLIP_MADS = 3.0
"""Residuals are clipped to their median plus or minus this many scaled median absolute deviations."""

MIN_ROWS_TO_CLIP = 5
"""Fewer residuals of a column (or levels) are not clipped: their median absolute deviation says little."""

ALPHAS = (10.0, 1.0, 0.1, 0.01)
"""The ridge penalties tried (besides the bias alone), in units of the centred design's mean squared singular
value: from nearly the bias alone to a nearly free fit."""


@dataclass(frozen=True, eq=False)
class Correction:
    """An additive correction of the (n, m) target-space predictions: ``bias`` (m,) plus ``design @ coef``
    (coef (d, m)); in log space, so it multiplies the predicted times."""

    bias: np.ndarray
    coef: np.ndarray

    def shift(self, design: np.ndarray) -> np.ndarray:
        return self.bias[None, :] + np.asarray(design, dtype=float) @ self.coef

    def plus(self, other: Correction | None) -> Correction:
        """This correction followed by ``other`` (their sum)."""
        if other is None:
            return self
        return Correction(self.bias + other.bias, self.coef + other.coef)

    def to_dict(self) -> dict[str, Any]:
        return {"bias": encode_array(self.bias), "coef": encode_array(self.coef)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Correction:
        bias, coef = decode_array(data["bias"]), decode_array(data["coef"])
        if bias.ndim != 1 or coef.ndim != 2 or coef.shape[1] != len(bias):
            raise ValueError(f"a stored correction has bias {bias.shape} and coefficients {coef.shape}")
        return cls(bias, coef)


@dataclass(frozen=True)
class ResidualSettings:
    """The regularisation of :func:`fit_residuals`: ``shrink_rows`` (k), the rows a part needs for slopes, the
    penalties tried (``alphas``; empty: biases alone), whether the level may have slopes (``shared``) and the
    clipping (``clip_mads``; 0: none)."""

    shrink_rows: float = SHRINK_ROWS
    min_rows_for_slopes: int = MIN_ROWS_FOR_SLOPES
    alphas: tuple[float, ...] = ALPHAS
    shared: bool = True
    clip_mads: float = CLIP_MADS


DEFAULT_RESIDUALS = ResidualSettings()
"""The settings :func:`fit_residuals` and the transfer methods use unless told otherwise."""


def row_levels(residual: np.ndarray) -> np.ndarray:
    """(n,) each row's median residual over the columns that have one (NaN for a row with none)."""
    present = ~np.isnan(residual)
    levels = np.full(residual.shape[0], np.nan)
    rows = present.any(axis=1)
    if rows.any():
        levels[rows] = np.nanmedian(residual[rows], axis=1)
    return levels


def clipped(values: np.ndarray, mads: float) -> np.ndarray:
    """``values`` (1-D, no NaN) clipped to their median plus or minus ``mads`` scaled median absolute deviations
    (unchanged with fewer than :data:`MIN_ROWS_TO_CLIP` values, a deviation of 0 or ``mads`` 0)."""
    if mads <= 0 or len(values) < MIN_ROWS_TO_CLIP:
        return values
    centre = float(np.median(values))
    spread = 1.4826 * float(np.median(np.abs(values - centre)))
    return values if spread == 0 else np.clip(values, centre - mads * spread, centre + mads * spread)


Basis = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A column's centred design as (centre, U, s, V^T): its mean row and singular value decomposition."""


def _basis(design: np.ndarray) -> Basis:
    centre = design.mean(axis=0)
    u, s, vt = np.linalg.svd(design - centre, full_matrices=False)
    return centre, u, s, vt


def _score(errors: np.ndarray) -> float:
    """How far a fit's left-out errors are: their median absolute value (the models are judged by a median)."""
    return float(np.median(np.abs(errors)))


def _median_bias(r: np.ndarray, shrink_rows: float) -> float:
    """The median of ``r`` shrunk toward 0 as by ``shrink_rows`` rows: median * n / (n + k)."""
    return float(np.median(r)) * len(r) / (len(r) + shrink_rows)


def _left_out_biases(r: np.ndarray, shrink_rows: float) -> np.ndarray:
    """(n,) each row's bias from the other rows (:func:`_median_bias` of ``r`` without it), from one sort: the
    k-th of the others in order is the k-th of all, or the next one from the left-out row's rank on."""
    n = len(r)
    order = np.sort(r)
    rank = np.empty(n, dtype=int)
    rank[np.argsort(r, kind="stable")] = np.arange(n)
    low, high = (n - 2) // 2, (n - 1) // 2  # the middle positions among n - 1 values (one when n - 1 is odd)
    median = (order[low + (low >= rank)] + order[high + (high >= rank)]) / 2
    return median * (n - 1) / (n - 1 + shrink_rows)


def _solve(basis: Basis | None, r: np.ndarray, settings: ResidualSettings,
           shrink_rows: float) -> tuple[float, np.ndarray | None]:
    """(bias, beta) of one part's residuals ``r``: no change, the median bias (:func:`_median_bias`) or that
    bias with ridge slopes on ``basis`` (None: no slopes), whichever has the least median absolute
    leave-one-out error (the models are judged by a median); one row keeps its bias."""
    n = len(r)
    bias = _median_bias(r, shrink_rows)
    if n < 2:
        return bias, None
    best, choice = _score(r), (0.0, None)
    score = _score(r - _left_out_biases(r, shrink_rows))
    if score < best:
        best, choice = score, (bias, None)
    if basis is None:
        return choice
    centre, u, s, vt = basis
    scale = float(np.mean(s ** 2)) if len(s) else 0.0
    for alpha in settings.alphas:
        shrink = s ** 2 / (s ** 2 + alpha * scale + 1e-300)
        # the slopes fitted around the median, then the median of what they leave, and the slopes again
        intercept = _median_bias(r - u @ (shrink * (u.T @ (r - bias))), shrink_rows)
        rest = r - intercept
        projected = u.T @ rest
        loo = (rest - u @ (shrink * projected)) / np.maximum(1 - (u ** 2) @ shrink, 1e-9)
        score = _score(loo)
        if score < best:
            beta = vt.T @ (shrink / np.where(s > 0, s, 1.0) * projected)
            best, choice = score, (intercept - float(centre @ beta), beta)
    return choice


def level_fit(design: np.ndarray, levels: np.ndarray, settings: ResidualSettings) -> tuple[float, np.ndarray]:
    """(bias, beta (d,)) of the rows' ``levels`` (:func:`row_levels`; NaN for a row without one), clipped, the
    bias unshrunk: slopes only on a shared design (n, d) with ``settings.shared`` and at least
    ``settings.min_rows_for_slopes`` rows."""
    rows = ~np.isnan(levels)
    width = design.shape[-1]
    if not rows.any():
        return 0.0, np.zeros(width)
    values = clipped(levels[rows], settings.clip_mads)
    slopes = (design.ndim == 2 and settings.shared and width > 0 and settings.alphas
              and len(values) >= settings.min_rows_for_slopes)
    bias, beta = _solve(_basis(design[rows]) if slopes else None, values, settings, 0.0)
    return bias, np.zeros(width) if beta is None else beta


def fit_residuals(design: np.ndarray, residual: np.ndarray,
                  settings: ResidualSettings = DEFAULT_RESIDUALS) -> Correction:
    """The :class:`Correction` of residuals ``residual`` (n, m; NaN where a column was not timed) on ``design``
    rows: (n, d) shared by the columns or (m, n, d) one per column (NN1's networks); see the module docstring.
    The level's slopes need a shared design. Columns timed on the same rows share one singular value
    decomposition."""
    m, width = residual.shape[1], design.shape[-1]
    levels = row_levels(residual)
    level_bias, level_beta = level_fit(design, levels, settings)
    own = residual - levels[:, None]
    bias, coef = np.full(m, level_bias), np.tile(level_beta[:, None], (1, m))
    bases: dict[bytes, Basis] = {}
    for j in range(m):
        rows = ~np.isnan(own[:, j])
        if not rows.any():
            continue
        basis = None
        if rows.sum() >= settings.min_rows_for_slopes and width > 0 and settings.alphas:
            key = rows.tobytes()
            if design.ndim == 3:
                basis = _basis(design[j][rows])
            elif key in bases:
                basis = bases[key]
            else:
                basis = bases[key] = _basis(design[rows])
        b, beta = _solve(basis, clipped(own[rows, j], settings.clip_mads), settings, settings.shrink_rows)
        bias[j] += b
        if beta is not None:
            coef[:, j] += beta
    return Correction(bias, coef)
