"""Standardised Ridge regression per layer type (PreVIous Eq. 4, lambda = 1), stored as plain numbers.

scikit-learn fits (a StandardScaler then Ridge); the fitted model keeps only
the scaler's means and scales and the coefficients, so predicting needs NumPy
alone and a model file is JSON, never a pickle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnperf.errors import NnperfError


@dataclass(frozen=True)
class RidgeModel:
    """y = intercept + sum(coef * (x - mean) / scale), for one layer type and one target.

    ``n_samples`` calibration layers fitted it; ``r2`` is the fit's coefficient
    of determination on them; ``y_min``/``y_max`` bound the responses seen.
    """

    key: str
    target: str  # 'latency_s' or 'energy_j'
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    n_samples: int
    r2: float
    y_min: float
    y_max: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predictions for rows of predictors ``x`` (n x p), floored at zero (a layer never takes negative time)."""
        z = (np.atleast_2d(x) - np.asarray(self.mean)) / np.asarray(self.scale)
        return np.maximum(self.intercept + z @ np.asarray(self.coef), 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "target": self.target, "mean": list(self.mean), "scale": list(self.scale),
                "coef": list(self.coef), "intercept": self.intercept, "n_samples": self.n_samples,
                "r2": self.r2, "y_min": self.y_min, "y_max": self.y_max}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RidgeModel:
        try:
            return cls(str(d["key"]), str(d["target"]), tuple(map(float, d["mean"])), tuple(map(float, d["scale"])),
                       tuple(map(float, d["coef"])), float(d["intercept"]), int(d["n_samples"]), float(d["r2"]),
                       float(d["y_min"]), float(d["y_max"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise NnperfError(f"a stored regression model is malformed: {exc}") from exc


def fit_ridge(key: str, target: str, x: Sequence[Sequence[float]] | np.ndarray, y: Sequence[float] | np.ndarray,
              alpha: float = 1.0) -> RidgeModel:
    """Fits a standardised Ridge model (predictors scaled to zero mean, unit variance; penalty ``alpha``).

    A predictor that is constant over the samples gets scale 1 (it then only
    shifts the intercept), as scikit-learn's StandardScaler does.
    """
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 2 or len(x) != len(y) or len(y) < 1:
        raise NnperfError(f"layer type {key!r}: need matching predictors and responses, got {x.shape} and {y.shape}")
    scaler = StandardScaler().fit(x)
    ridge = Ridge(alpha=alpha).fit(scaler.transform(x), y)
    r2 = float(ridge.score(scaler.transform(x), y)) if len(y) > 1 and np.ptp(y) > 0 else 1.0
    return RidgeModel(key, target, tuple(map(float, scaler.mean_)), tuple(map(float, scaler.scale_)),
                      tuple(map(float, ridge.coef_)), float(ridge.intercept_), len(y), r2, float(y.min()),
                      float(y.max()))
