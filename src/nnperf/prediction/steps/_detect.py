"""Automatic detection of the global step depth d and fluctuation period r from one sweep.

The paper reads d and r off the plot by eye (3.3.3). nnperf searches for them:

1. **Candidates.** Linear; a staircase of depth d in ceil and floor form;
   Eq. 3.1-3.3 with depth d and period r, with the paper's selector and
   nnperf's 'aligned' one (see :mod:`._model`; where the two split the
   sweep's grid alike, as r = 4 on an even grid does, 'aligned' is kept). d runs over the integers from twice
   the sweep's sampling step to a third of its span (at least three steps in
   view), r from twice the sampling step to a quarter of the span (each half
   period holds a sample; four periods in view), both capped (``max_depth``,
   ``max_period``).
2. **Fit.** Every candidate's lines are fitted by relative least squares
   (weights 1/T^2), all candidates at once as matrix products.
3. **Select** by an information criterion:
   ``n ln(RSS/n) + k ln(n) + 2 ln(N_family)``: BIC for the k continuous
   variables (2 per line) plus the risk-inflation penalty (Foster and George,
   1994) for having searched N_family discrete candidates (d, or d and r). The
   search penalty keeps noise on a straight line from being read as a
   staircase: the best of many candidate depths always fits noise a little.
4. **Outliers.** A timing disturbed by another program is a spike upwards.
   Before the search, points further than ``outlier_z`` robust standard
   deviations (1.4826 x MAD) from the running median of five neighbours are
   left out (a running median keeps step edges); after it, points that far
   from the chosen model, and the selection runs again. At most
   ``max_outlier_share`` of the points are left out.
5. **Confidence.** The selection is repeated on ``resamples`` random halves
   of the points; the confidence is the share of halves that choose the same
   kind, d and r (1.0: every half agrees). ``evidence`` is the criterion's
   margin between the chosen model and the best model of another kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from nnperf.prediction.steps._model import (
    StepModel,
    StepModelError,
    StepShape,
    fit_lines,
    on_upper,
    quantised,
)

TIE_ORDER = ("aligned", "half")
"""The selectors in the order candidates are listed: of two that fit a grid identically, the first is kept."""

MAX_DEPTH = 512
MAX_PERIOD = 64


@dataclass(frozen=True)
class DetectionConfig:
    """Settings of :func:`detect_steps` (defaults documented in the module)."""

    max_depth: int = MAX_DEPTH
    max_period: int = MAX_PERIOD
    outlier_z: float = 5.0
    max_outlier_share: float = 0.10
    resamples: int = 60
    resample_share: float = 0.5
    seed: int = 0


@dataclass(frozen=True)
class StepDetection:
    """The detected global shape of one sweep, with its fitted lines and how sure the detection is.

    ``confidence`` is the share of random half-samples that choose the same
    shape; ``evidence`` the criterion margin over the best model of another
    kind (larger is clearer; about 10 is strong); ``rss_share`` the chosen
    model's residual sum of squares over the linear model's (lower: steps
    explain more). ``outliers`` lists the x values left out as outliers.
    """

    shape: StepShape
    model: StepModel
    confidence: float
    evidence: float
    rss_share: float
    outliers: tuple[int, ...]
    candidates: int
    scores: dict[str, float] = field(default_factory=dict)
    """The best criterion value of each kind."""

    @property
    def is_linear(self) -> bool:
        return self.shape.kind == "linear"


@dataclass(frozen=True)
class _Candidates:
    """Every candidate model as matrices over the points: branch masks and step-function arguments.

    Row i of ``upper_mask``/``upper_q`` is candidate i's first line (its only
    one unless fluctuating); the ``lower_*`` rows are the fluctuating
    candidates' second lines, in order. q is zero off the line; qq is q^2.
    """

    shapes: tuple[StepShape, ...]
    upper_mask: np.ndarray
    upper_q: np.ndarray
    upper_qq: np.ndarray
    lower_mask: np.ndarray
    lower_q: np.ndarray
    lower_qq: np.ndarray
    family: np.ndarray  # 0 linear, 1 staircase, 2 fluctuating
    family_size: tuple[int, int, int]


def _candidates(x: np.ndarray, config: DetectionConfig) -> _Candidates:
    spacing = int(np.min(np.diff(x))) if len(x) > 1 else 1
    span = int(x[-1] - x[0])
    depths = range(max(2, 2 * spacing), min(config.max_depth, span // 3) + 1)
    periods = range(max(2, 2 * spacing), min(config.max_period, span // 4) + 1)
    shapes: list[StepShape] = [StepShape("linear")]
    up_m, up_q, lo_m, lo_q = [np.ones_like(x)], [x.copy()], [np.zeros_like(x)], [np.zeros_like(x)]
    ones, zeros = np.ones_like(x), np.zeros_like(x)
    for d in depths:
        for form in ("ceil", "floor"):
            shapes.append(StepShape("staircase", d, None, form))
            up_m.append(ones)
            up_q.append(quantised(x, d, form))
            lo_m.append(zeros)
            lo_q.append(zeros)
    n_stairs = len(shapes) - 1
    # aligned first: where both selectors split the grid alike (r = 4 on an even grid), the tie keeps the
    # aligned reading, a fast path at multiples of r, which is how a CPU kernel's vector width shows
    upper_masks = {(r, sel): on_upper(x, r, sel).astype(float) for r in periods for sel in TIE_ORDER}
    for d in depths:
        floor_q, ceil_q = quantised(x, d, "floor"), quantised(x, d, "ceil")
        for (r, sel), upper in upper_masks.items():
            shapes.append(StepShape("fluctuating", d, r, selector=sel))
            up_m.append(upper)
            up_q.append(floor_q)
            lo_m.append(1.0 - upper)
            lo_q.append(ceil_q)
    n_fluct = len(shapes) - 1 - n_stairs
    family = np.array([0] + [1] * n_stairs + [2] * n_fluct)
    upper_mask, lower_mask = np.array(up_m), np.array(lo_m)[family == 2]
    upper_q, lower_q = upper_mask * np.array(up_q), lower_mask * np.array(lo_q)[family == 2]
    return _Candidates(tuple(shapes), upper_mask, upper_q, upper_q * upper_q, lower_mask, lower_q,
                       lower_q * lower_q, family, (1, n_stairs, n_fluct))


def _branch_rss(mask: np.ndarray, q: np.ndarray, qq: np.ndarray, w: np.ndarray,
                y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted residual sum of squares of a line fit per candidate (rows) and weight vector (columns).

    ``mask`` is 0/1 (the branch's points), ``q`` the step argument (zero off
    the branch). Returns (rss, valid): a branch is valid with at least 3
    weighted points and two distinct step arguments among them.
    """
    wy, wyy = w * y[:, None], w * (y * y)[:, None]
    s0, s1, s2 = mask @ w, q @ w, qq @ w
    t1, t2, p = mask @ wy, mask @ wyy, q @ wy
    count = mask @ (w > 0).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        var_q = s2 - s1 * s1 / s0
        cov = p - s1 * t1 / s0
        var_y = t2 - t1 * t1 / s0
        rss = var_y - cov * cov / var_q
    scale = np.maximum(s2, 1e-300)
    valid = (count >= 3) & (var_q > 1e-9 * scale)
    return np.where(valid, np.maximum(rss, 0.0), np.inf), valid


def _scores(cands: _Candidates, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The criterion of every candidate (rows) under every weight vector (columns of ``w``)."""
    rss_u, ok_u = _branch_rss(cands.upper_mask, cands.upper_q, cands.upper_qq, w, y)
    two_lines = cands.family == 2
    rss_l, ok_l = _branch_rss(cands.lower_mask, cands.lower_q, cands.lower_qq, w, y)
    rss = rss_u.copy()
    rss[two_lines] = rss_u[two_lines] + rss_l
    valid = ok_u.copy()
    valid[two_lines] &= ok_l
    n = (w > 0).sum(axis=0).astype(float)
    k = np.where(two_lines, 4.0, 2.0)[:, None]
    search = np.array([2 * math.log(max(size, 1)) for size in cands.family_size])[cands.family][:, None]
    with np.errstate(divide="ignore"):
        score = n * np.log(np.maximum(rss, 1e-300) / n) + k * np.log(n) + search
    return np.where(valid, score, np.inf)


def _weights(y: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return np.where(keep, 1.0 / (y * y), 0.0)


def detect_steps(x: Sequence[int] | np.ndarray, latency_s: Sequence[float] | np.ndarray,
                 config: DetectionConfig = DetectionConfig(), parameter: str = "x",
                 fixed: tuple[tuple[str, int], ...] = ()) -> StepDetection:
    """The step shape (linear, staircase d, or fluctuating d and r) of one sweep, with its confidence.

    ``x`` are the swept parameter values (integers), ``latency_s`` the
    measured latencies (seconds). Needs at least 8 points. Raises
    :class:`StepModelError` for too few, non-positive or unsorted input.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(latency_s, dtype=float)
    if xs.ndim != 1 or xs.shape != ys.shape:
        raise StepModelError("need one latency per parameter value")
    if len(xs) < 8:
        raise StepModelError(f"need at least 8 sweep points to detect steps, got {len(xs)}")
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    if np.any(np.diff(xs) <= 0):
        raise StepModelError("the sweep repeats a parameter value")
    if np.any(xs != np.round(xs)) or xs[0] < 1:
        raise StepModelError("sweep parameter values must be positive integers")
    if np.any(~np.isfinite(ys)) or np.any(ys <= 0):
        raise StepModelError("sweep latencies must be positive and finite")
    cands = _candidates(xs, config)
    keep = ~_spikes(ys, config)
    best, scores = _select(cands, ys, keep)
    model = fit_lines(cands.shapes[best], xs[keep], ys[keep], parameter, fixed)
    far = _far(ys, model.predict(xs), config.outlier_z)
    if np.any(far & keep) and (far | ~keep).sum() <= config.max_outlier_share * len(xs):
        keep &= ~far
        best, scores = _select(cands, ys, keep)
        model = fit_lines(cands.shapes[best], xs[keep], ys[keep], parameter, fixed)
    shape = cands.shapes[best]
    confidence = _stability(cands, ys, keep, best, config)
    by_family = {name: float(np.min(scores[cands.family == i])) for i, name in
                 enumerate(("linear", "staircase", "fluctuating")) if np.any(cands.family == i)}
    others = [s for name, s in by_family.items() if name != shape.kind and math.isfinite(s)]
    evidence = (min(others) - by_family[shape.kind]) if others else math.inf
    linear = fit_lines(StepShape("linear"), xs[keep], ys[keep])
    rss = float(np.sum(((ys[keep] - model.predict(xs[keep])) / ys[keep]) ** 2))
    rss_linear = float(np.sum(((ys[keep] - linear.predict(xs[keep])) / ys[keep]) ** 2))
    return StepDetection(shape, model, confidence, float(evidence), rss / rss_linear if rss_linear > 0 else 1.0,
                         tuple(int(v) for v in xs[~keep]), len(cands.shapes), by_family)


def _far(y: np.ndarray, reference: np.ndarray, z: float) -> np.ndarray:
    """Points whose relative deviation from ``reference`` exceeds ``z`` robust standard deviations."""
    relative = y / reference - 1.0
    sigma = 1.4826 * float(np.median(np.abs(relative - np.median(relative))))
    return np.abs(relative) > z * sigma if sigma > 0 else np.zeros(len(y), dtype=bool)


def _spikes(y: np.ndarray, config: DetectionConfig) -> np.ndarray:
    """Isolated spikes: far from the running median of five neighbours, which keeps step edges.

    At most ``max_outlier_share`` of the points, the furthest first.
    """
    padded = np.pad(y, 2, mode="edge")
    running = np.median(np.lib.stride_tricks.sliding_window_view(padded, 5), axis=1)
    far = _far(y, running, config.outlier_z)
    limit = int(config.max_outlier_share * len(y))
    if far.sum() > limit:
        worst = np.argsort(-np.abs(y / running - 1.0))[:limit]
        far = np.zeros(len(y), dtype=bool)
        far[worst] = True
    return far


def _select(cands: _Candidates, y: np.ndarray, keep: np.ndarray) -> tuple[int, np.ndarray]:
    scores = _scores(cands, y, _weights(y, keep)[:, None])[:, 0]
    if not np.any(np.isfinite(scores)):
        raise StepModelError("no step model can be fitted to this sweep (too few distinct points)")
    return int(np.argmin(scores)), scores


def _stability(cands: _Candidates, y: np.ndarray, keep: np.ndarray, best: int, config: DetectionConfig) -> float:
    """Share of random half-samples whose selection equals the full sample's (the same shape)."""
    if config.resamples < 1:
        return math.nan
    rng = np.random.default_rng(config.seed)
    kept = np.flatnonzero(keep)
    size = max(8, round(config.resample_share * len(kept)))
    columns = np.zeros((len(y), config.resamples), dtype=bool)
    for b in range(config.resamples):
        columns[rng.choice(kept, size=min(size, len(kept)), replace=False), b] = True
    w = np.where(columns, (1.0 / (y * y))[:, None], 0.0)
    agree = int(np.sum(np.argmin(_scores(cands, y, w), axis=0) == best))
    return agree / config.resamples
