"""Small regularised corrections fitted on a target platform's log residuals (transfer with few samples).

A source model's prediction on the target platform is off by a residual r = log(measured) - log(predicted)
per column (a primitive or a transformation). :func:`fit_residuals` fits, per column j,

    g_j(x) = b_j + (d(x) - mean_j(d)) . beta_j

on the rows where column j was timed, with d(x) a design row (the standardised features, or a network's last
hidden layer), minimising

    sum_i (r_ij - g_j(x_i))^2 + k (b_j - prior_j)^2 + lambda_j |beta_j|^2.

- The bias is shrunk toward ``prior``, the median over the columns of their mean residual (the all-column
  bias, robust to a few odd columns): with n_j rows b_j = (sum_i r_ij + k prior) / (n_j + k). A column the
  sample never timed gets the prior, so a platform that is uniformly slower moves every column while one odd
  column does not move the others.
- The slopes need :data:`MIN_ROWS_FOR_SLOPES` rows; lambda_j is chosen per column among :data:`ALPHAS` times the
  design's mean squared singular value by leave-one-out error, which ridge regression gives in closed form
  (e_i / (1 - H_ii)), so nothing is held out and one configuration is enough (then only the bias moves).
- Before the columns' own slopes, the slopes they share are fitted the same way on each row's median column
  residual (:func:`shared_slopes`): moving from a CPU to a GPU, whose small kernels all cost about a launch,
  flattens every primitive's growth with the layer's size, and a few configurations of all columns show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnperf.prediction.primitives._arrays import decode_array, encode_array

SHRINK_ROWS = 2.0
"""k: the prior counts as this many rows of a column's own residuals."""

MIN_ROWS_FOR_SLOPES = 6
"""Fewer rows of a column fit its bias alone."""

MIN_ROWS_FOR_SHARED_SLOPES = 3
"""Fewer configurations (or activations) fit no shared slope: the slopes every column shares rest on all their
times, so fewer rows pin them down than a column's own."""

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
    """The regularisation of :func:`fit_residuals`: ``shrink_rows`` (k), the rows a column needs for slopes,
    the penalties tried (``alphas``; empty: the bias alone) and whether the columns first fit the slopes they
    share (:func:`shared_slopes`)."""

    shrink_rows: float = SHRINK_ROWS
    min_rows_for_slopes: int = MIN_ROWS_FOR_SLOPES
    alphas: tuple[float, ...] = ALPHAS
    shared: bool = True
    min_rows_for_shared: int = MIN_ROWS_FOR_SHARED_SLOPES


DEFAULT_RESIDUALS = ResidualSettings()
"""The settings :func:`fit_residuals` and the transfer methods use unless told otherwise."""


def all_column_bias(residual: np.ndarray) -> float:
    """The median over the columns with a residual of their mean residual (0 when none has one)."""
    present = ~np.isnan(residual)
    timed = present.any(axis=0)
    if not timed.any():
        return 0.0
    means = np.nansum(residual[:, timed], axis=0) / present[:, timed].sum(axis=0)
    return float(np.median(means))


Basis = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A column's centred design as (centre, U, s, V^T): its mean row and singular value decomposition."""


def _basis(design: np.ndarray) -> Basis:
    centre = design.mean(axis=0)
    u, s, vt = np.linalg.svd(design - centre, full_matrices=False)
    return centre, u, s, vt


def _solve(basis: Basis | None, r: np.ndarray, settings: ResidualSettings) -> tuple[float, np.ndarray | None]:
    """(bias, beta) of one column's residuals ``r`` (already less its prior); ``basis`` None: the bias alone
    (beta None)."""
    n = len(r)
    bias = float(r.sum() / (n + settings.shrink_rows))
    if basis is None:
        return bias, None
    centre, u, s, vt = basis
    h0 = 1.0 / (n + settings.shrink_rows)
    rest = r - bias
    best, beta = float(np.mean((rest / (1 - h0)) ** 2)), None
    scale = float(np.mean(s ** 2)) if len(s) else 0.0
    projected = u.T @ rest
    for alpha in settings.alphas:
        penalty = alpha * scale + 1e-300
        shrink = s ** 2 / (s ** 2 + penalty)
        loo = (rest - u @ (shrink * projected)) / np.maximum(1 - h0 - (u ** 2) @ shrink, 1e-9)
        score = float(np.mean(loo ** 2))
        if score < best:
            best, beta = score, vt.T @ (s / (s ** 2 + penalty) * projected)
    return (bias, None) if beta is None else (bias - float(centre @ beta), beta)


def shared_slopes(design: np.ndarray, residual: np.ndarray, settings: ResidualSettings) -> np.ndarray:
    """(d,) the slopes every column shares: the ridge fit (penalty by leave-one-configuration-out error) of
    each row's median over its columns of their residual less the column's mean, on the design rows; zero with
    fewer than ``settings.min_rows_for_shared`` rows. The median keeps one odd column's slope its own."""
    present = ~np.isnan(residual)
    means = np.nansum(residual, axis=0) / np.maximum(present.sum(axis=0), 1)
    rows = present.any(axis=1)
    if rows.sum() < settings.min_rows_for_shared or design.shape[-1] == 0 or not settings.alphas:
        return np.zeros(design.shape[-1])
    typical = np.nanmedian(np.where(present, residual - means, np.nan)[rows], axis=1)
    _, beta = _solve(_basis(design[rows]), typical, settings)
    return np.zeros(design.shape[-1]) if beta is None else beta


def fit_residuals(design: np.ndarray, residual: np.ndarray,
                  settings: ResidualSettings = DEFAULT_RESIDUALS) -> Correction:
    """The :class:`Correction` of residuals ``residual`` (n, m; NaN where a column was not timed) on ``design``
    rows: (n, d) shared by the columns or (m, n, d) one per column (NN1's networks); see the module docstring.

    With a shared design the slopes come in two parts: :func:`shared_slopes` first, which every column gets
    (a platform that scales differently with the layer's size does so for most primitives, and the rows of all
    columns pin it down long before one column's do), then each column's own fit of what they leave. Columns
    timed on the same rows share one singular value decomposition."""
    m, width = residual.shape[1], design.shape[-1]
    common = shared_slopes(design, residual, settings) if design.ndim == 2 and settings.shared else np.zeros(width)
    if design.ndim == 2:
        residual = residual - (design @ common)[:, None]
    prior = all_column_bias(residual)
    bias, coef = np.full(m, prior), np.tile(common[:, None], (1, m))
    bases: dict[bytes, Basis] = {}
    for j in range(m):
        rows = ~np.isnan(residual[:, j])
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
        b, beta = _solve(basis, residual[rows, j] - prior, settings)
        bias[j] += b
        if beta is not None:
            coef[:, j] += beta
    return Correction(bias, coef)
