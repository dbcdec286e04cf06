"""Regressors a kernel model chooses from by cross-validation, each stored as plain numbers (JSON, never a pickle).

Every regressor learns ``log(latency)`` from standardised ``log(1 + feature)`` columns, so a layer's error is
relative wherever it lies on the six decades a layer's time spans, and predicts with NumPy alone:

- ``ridge``: a power law (Ridge on the log columns, alpha 1);
- ``boosting``: scikit-learn's gradient-boosted regression trees;
- ``forest``: scikit-learn's random forest (nn-Meter's choice per kernel);
- ``mlp``: a small multi-layer perceptron (two hidden layers of 32 ReLU units).

scikit-learn fits; :func:`export` keeps the fitted numbers (tree arrays, weight matrices) and :class:`Stored`
predicts from them, so a stored model needs no scikit-learn and no pickle.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction._enums import TextEnum


class Regressor(TextEnum):
    """The regressors a kernel kind chooses from, simplest first (see the module docstring)."""

    RIDGE = "ridge"
    BOOSTING = "boosting"
    FOREST = "forest"
    MLP = "mlp"

    @classmethod
    def named(cls, name: str) -> Regressor:
        """The regressor called ``name``; an unknown name lists the known ones."""
        try:
            return cls(name)
        except ValueError:
            raise NnperfError(f"unknown regressor {name!r}; use one of {', '.join(REGRESSORS)}") from None


REGRESSORS: tuple[str, ...] = Regressor.values()
"""The candidates' names, simplest first: the order near-ties are broken in."""

TIE = 0.01
"""A candidate within this much cross-validated median relative error of the best (one percentage point, well
inside the 5-20% pass-to-pass noise of a layer's time here) counts as tied with it; the simplest tied one is
chosen."""

MIN_SAMPLES_TO_CHOOSE = 12
"""Below this many samples a group gets the power law: too few to cross-validate a tree or a network."""


def _estimator(name: str, seed: int) -> Any:
    """The unfitted scikit-learn estimator of regressor ``name`` (a :class:`Regressor` or its name)."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import Ridge
    from sklearn.neural_network import MLPRegressor

    regressor = Regressor.named(name)

    if regressor is Regressor.RIDGE:
        return Ridge(alpha=1.0)
    if regressor is Regressor.BOOSTING:
        return GradientBoostingRegressor(n_estimators=80, max_depth=3, learning_rate=0.15, subsample=0.8,
                                         random_state=seed)
    if regressor is Regressor.FOREST:
        return RandomForestRegressor(n_estimators=30, min_samples_leaf=2, random_state=seed)
    return MLPRegressor(hidden_layer_sizes=(32, 32), solver="lbfgs", alpha=1e-2, max_iter=400, random_state=seed)


@dataclass(frozen=True)
class Stored:
    """A fitted regressor as numbers: the column standardisation, the fitted ``state`` of its ``kind`` and
    ``floor_s``, the least latency it predicts (the fastest sample it was fitted on; 0 for one stored before)."""

    kind: Regressor
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    state: Mapping[str, Any]
    floor_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Regressor.named(self.kind))

    def predict_s(self, features: np.ndarray) -> np.ndarray:
        """Latency (seconds) for rows of raw features (n x p), never below ``floor_s``: a power law or a network
        can extrapolate a layer unlike any it was fitted on to almost nothing (a multi-layer perceptron put
        stride-2 depthwise layers at under 0.1 µs where they take 5-10 µs), and no layer of a kind runs faster
        than every layer of it measured."""
        z = (np.log1p(np.maximum(np.atleast_2d(features), 0.0)) - np.asarray(self.mean)) / np.asarray(self.scale)
        return np.maximum(np.exp(_predict_log(self.kind, self.state, z)), self.floor_s)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "mean": list(self.mean), "scale": list(self.scale),
                "state": dict(self.state), "floor_s": self.floor_s}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Stored:
        if d.get("kind") not in REGRESSORS:
            raise NnperfError(f"a stored kernel regressor has unknown kind {d.get('kind')!r}")
        return cls(Regressor(d["kind"]), tuple(map(float, d["mean"])), tuple(map(float, d["scale"])),
                   dict(d["state"]), float(d.get("floor_s", 0.0)))


def fit(name: str, features: np.ndarray, latency_s: Sequence[float], seed: int = 0, floored: bool = True) -> Stored:
    """Fits regressor ``name`` (a :class:`Regressor` or its name) on raw feature rows and latencies (seconds,
    > 0) and exports it, its floor the fastest latency (none where not ``floored``: cross-validation judges the
    regressors unfloored, so the floor never changes which one is chosen)."""
    regressor = Regressor.named(name)
    x = np.log1p(np.maximum(np.asarray(features, dtype=float), 0.0))
    y = np.log(np.asarray(latency_s, dtype=float))
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    # one BLAS/OpenMP thread: these fits are small, and on a busy machine BLAS threads waiting for a core made a
    # perceptron's fit 55x slower (126 s against 2.3 s for 1,500 samples, load average 9 on 2 cores)
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore", ConvergenceWarning)  # lbfgs stopping at max_iter still fits well here
        estimator = _estimator(regressor, seed).fit((x - mean) / scale, y)
    return Stored(regressor, tuple(map(float, mean)), tuple(map(float, scale)), export(regressor, estimator),
                  float(np.min(latency_s)) if floored else 0.0)


def choose(features: np.ndarray, latency_s: Sequence[float], candidates: Sequence[str] = REGRESSORS,
           folds: int = 5, seed: int = 0) -> tuple[Stored, dict[str, float]]:
    """The candidate with the least cross-validated median relative error (``folds`` folds; the first of
    ``candidates`` within :data:`TIE` of it), fitted on every sample, and each candidate's error. Fewer than
    :data:`MIN_SAMPLES_TO_CHOOSE` samples: the power law, unscored."""
    x = np.asarray(features, dtype=float)
    y = np.asarray(latency_s, dtype=float)
    if len(y) < MIN_SAMPLES_TO_CHOOSE:
        return fit(Regressor.RIDGE, x, y, seed), {}
    scores = _cross_validated(x, y, candidates, folds, seed)
    least = min(scores.values())
    best = next(name for name in candidates if scores[name] <= least + TIE)
    return fit(best, x, y, seed), scores


def _cross_validated(x: np.ndarray, y: np.ndarray, candidates: Sequence[str], folds: int, seed: int,
                     extra: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, float]:
    """Each candidate's median relative error on ``folds`` held-out folds of ``x``, ``y``, trained on the other
    folds (and every ``extra`` sample, which is never held out)."""
    from sklearn.model_selection import KFold

    splits = list(KFold(n_splits=min(folds, len(y)), shuffle=True, random_state=seed).split(x))
    scores: dict[str, float] = {}
    for name in candidates:
        errors = []
        for train, test in splits:
            train_x = x[train] if extra is None else np.vstack([x[train], extra[0]])
            train_y = y[train] if extra is None else np.concatenate([y[train], extra[1]])
            predicted = fit(name, train_x, train_y, seed, floored=False).predict_s(x[test])
            errors.extend(np.abs(predicted - y[test]) / y[test])
        scores[name] = float(np.median(errors))
    return scores


@dataclass(frozen=True)
class Chosen:
    """What :func:`choose_with_extra` chose: the fitted regressor, each candidate's cross-validated error (a
    candidate fitted with the extra samples is named ``"<regressor>+extra"``) and whether the extra samples
    joined."""

    regressor: Stored
    scores: dict[str, float]
    extra: bool


def choose_with_extra(features: np.ndarray, latency_s: Sequence[float], extra_features: np.ndarray,
                      extra_latency_s: Sequence[float], candidates: Sequence[str] = REGRESSORS, folds: int = 5,
                      seed: int = 0) -> Chosen:
    """As :func:`choose`, with samples of a second, less trusted source (``extra_*``) that join the fit only where
    they help: every candidate is cross-validated on the first source's samples, trained on the other folds
    alone and with every extra sample, and scored on the held-out fold of the first source only. The least error
    wins, the extra samples first on a tie (within :data:`TIE`). Where the first source has fewer than
    :data:`MIN_SAMPLES_TO_CHOOSE` samples, nothing judges the extra ones, and both sources join :func:`choose`."""
    x, y = np.asarray(features, dtype=float), np.asarray(latency_s, dtype=float)
    x_extra, y_extra = np.asarray(extra_features, dtype=float), np.asarray(extra_latency_s, dtype=float)
    if len(y_extra) == 0 or len(y) < MIN_SAMPLES_TO_CHOOSE:
        both_x = x if len(y_extra) == 0 else x_extra if len(y) == 0 else np.vstack([x, x_extra])
        regressor, scores = choose(both_x, np.concatenate([y, y_extra]), candidates, folds, seed)
        return Chosen(regressor, scores, len(y_extra) > 0)
    with_extra = _cross_validated(x, y, candidates, folds, seed, (x_extra, y_extra))
    scores = {**{f"{name}+extra": error for name, error in with_extra.items()},
              **_cross_validated(x, y, candidates, folds, seed)}
    least = min(scores.values())
    best = next(key for key in scores if scores[key] <= least + TIE)
    extra = best.endswith("+extra")
    train_x, train_y = (np.vstack([x, x_extra]), np.concatenate([y, y_extra])) if extra else (x, y)
    return Chosen(fit(best.removesuffix("+extra"), train_x, train_y, seed), scores, extra)


def export(name: str, estimator: Any) -> dict[str, Any]:
    """The numbers a fitted scikit-learn ``estimator`` of regressor ``name`` predicts with."""
    regressor = Regressor.named(name)
    if regressor is Regressor.RIDGE:
        return {"coef": list(map(float, estimator.coef_)), "intercept": float(estimator.intercept_)}
    if regressor is Regressor.BOOSTING:
        return {"init": float(estimator.init_.constant_.ravel()[0]), "rate": float(estimator.learning_rate),
                "trees": [_tree(t[0]) for t in estimator.estimators_]}
    if regressor is Regressor.FOREST:
        return {"trees": [_tree(t) for t in estimator.estimators_]}
    return {"weights": [w.tolist() for w in estimator.coefs_], "biases": [b.tolist() for b in estimator.intercepts_]}


def _tree(tree: Any) -> dict[str, list[float] | list[int]]:
    t = tree.tree_
    return {"left": t.children_left.tolist(), "right": t.children_right.tolist(), "feature": t.feature.tolist(),
            "threshold": t.threshold.tolist(), "value": t.value[:, 0, 0].tolist()}


def _predict_tree(tree: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
    left, right = np.asarray(tree["left"]), np.asarray(tree["right"])
    feature, threshold = np.asarray(tree["feature"]), np.asarray(tree["threshold"])
    node = np.zeros(len(z), dtype=int)
    rows = np.arange(len(z))
    while True:
        inner = left[node] >= 0
        if not inner.any():
            return np.asarray(tree["value"])[node]
        go_left = z[rows, np.maximum(feature[node], 0)] <= threshold[node]
        node = np.where(inner, np.where(go_left, left[node], right[node]), node)


def _predict_log(name: str, state: Mapping[str, Any], z: np.ndarray) -> np.ndarray:
    kind = Regressor.named(name)
    if kind is Regressor.RIDGE:
        return np.asarray(state["intercept"]) + z @ np.asarray(state["coef"])
    if kind is Regressor.BOOSTING:
        return state["init"] + state["rate"] * sum(_predict_tree(t, z) for t in state["trees"])
    if kind is Regressor.FOREST:
        return np.mean([_predict_tree(t, z) for t in state["trees"]], axis=0)
    h = z
    weights, biases = state["weights"], state["biases"]
    for i, (w, b) in enumerate(zip(weights, biases)):
        h = h @ np.asarray(w) + np.asarray(b)
        if i < len(weights) - 1:
            h = np.maximum(h, 0.0)
    return h.ravel()
