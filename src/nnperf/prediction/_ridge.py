"""Standardised Ridge regression per layer type (PreVIous Eq. 4, lambda = 1), stored as plain numbers.

scikit-learn fits (a StandardScaler then Ridge); the fitted model keeps only
the scaler's means and scales and the coefficients, so predicting needs NumPy
alone and a model file is JSON, never a pickle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction._base import FittedOn, Predictor, PredictorCategory, register_predictor

if TYPE_CHECKING:
    from typing import Self


@register_predictor
class RidgeModel(Predictor):
    """y = intercept + sum(coef * (x - mean) / scale), for one layer type and one target.

    Parameters
    ----------
    key : str
        The layer type it models (see ``model_key``), for messages.
    target : str, default 'latency_s'
        What it predicts: 'latency_s' (seconds) or 'energy_j' (joules).
    alpha : float, default 1.0
        The Ridge penalty lambda on the standardised predictors (PreVIous used 1).

    After ``fit``: ``mean_`` and ``scale_`` of the predictors, ``coef_`` and
    ``intercept_``, ``n_samples_`` (calibration layers fitted), ``r2_`` (the
    coefficient of determination on them), ``y_min_``/``y_max_`` (the range of
    the responses seen).
    """

    name = "ridge"
    description = "PreVIous: standardised Ridge regression of one layer type on n(W), #OPs and #memOPs (Eq. 4)"
    category = PredictorCategory.LAYER

    def __init__(self, key: str = "", target: str = "latency_s", alpha: float = 1.0) -> None:
        self.key = key
        self.target = target
        self.alpha = alpha

    def fit(self, x: Sequence[Sequence[float]] | np.ndarray, y: Sequence[float] | np.ndarray) -> Self:
        """Fits on predictor rows ``x`` (n x p) and responses ``y`` (n).

        A predictor that is constant over the samples gets scale 1 (it then only
        shifts the intercept), as scikit-learn's StandardScaler does.
        """
        from sklearn.linear_model import Ridge
        from sklearn.preprocessing import StandardScaler

        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if x.ndim != 2 or len(x) != len(y) or len(y) < 1:
            raise NnperfError(f"layer type {self.key!r}: need matching predictors and responses, got {x.shape} "
                              f"and {y.shape}")
        scaler = StandardScaler().fit(x)
        ridge = Ridge(alpha=self.alpha).fit(scaler.transform(x), y)
        self.mean_ = tuple(map(float, scaler.mean_))
        self.scale_ = tuple(map(float, scaler.scale_))
        self.coef_ = tuple(map(float, ridge.coef_))
        self.intercept_ = float(ridge.intercept_)
        self.n_samples_ = len(y)
        self.r2_ = float(ridge.score(scaler.transform(x), y)) if len(y) > 1 and np.ptp(y) > 0 else 1.0
        self.y_min_, self.y_max_ = float(y.min()), float(y.max())
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predictions for rows of predictors ``x`` (n x p), floored at zero (a layer never takes negative time)."""
        self.check_fitted()
        z = (np.atleast_2d(x) - np.asarray(self.mean_)) / np.asarray(self.scale_)
        return np.maximum(self.intercept_ + z @ np.asarray(self.coef_), 0.0)

    def summary(self) -> str:
        self.check_fitted()
        return (f"{self.key or 'layer'} {self.target}: R^2 = {self.r2_:.3f} on {self.n_samples_} samples "
                f"from {self.y_min_:.4g} to {self.y_max_:.4g}")

    def fitted_on(self) -> FittedOn:
        self.check_fitted()
        return FittedOn(self.n_samples_, "layers")

    def fitted_state(self) -> dict[str, Any]:
        return {"mean": list(self.mean_), "scale": list(self.scale_), "coef": list(self.coef_),
                "intercept": self.intercept_, "n_samples": self.n_samples_, "r2": self.r2_,
                "y_min": self.y_min_, "y_max": self.y_max_}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.mean_ = tuple(map(float, state["mean"]))
        self.scale_ = tuple(map(float, state["scale"]))
        self.coef_ = tuple(map(float, state["coef"]))
        self.intercept_ = float(state["intercept"])
        self.n_samples_ = int(state["n_samples"])
        self.r2_ = float(state["r2"])
        self.y_min_, self.y_max_ = float(state["y_min"]), float(state["y_max"])


def fit_ridge(key: str, target: str, x: Sequence[Sequence[float]] | np.ndarray, y: Sequence[float] | np.ndarray,
              alpha: float = 1.0) -> RidgeModel:
    """``RidgeModel(key, target, alpha).fit(x, y)``."""
    return RidgeModel(key, target, alpha).fit(x, y)
