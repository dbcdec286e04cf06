"""PreVIous' network prediction: one coefficient c times the sum of per-layer predictions (Eq. 6)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction._base import CalibrationSet, NetworkInput, NetworkPredictor, register_predictor

if TYPE_CHECKING:
    from typing import Self


@register_predictor
class PreviousModel(NetworkPredictor):
    """T = c x the sum of the per-layer predictions, c fitted on the calibration networks (PreVIous Eq. 6).

    After ``fit``: ``coefficient_c_``, the least-squares slope through the
    origin of the measured whole-network times on the summed predictions.
    """

    name = "previous"
    label = "PreVIous (c)"
    description = "PreVIous: c x the sum of per-layer predictions (Eq. 6)"
    display_order = 10
    primary_rank = 1
    scales_layer_sum = True

    @classmethod
    def of(cls, coefficient_c: float) -> PreviousModel:
        """The model with this c."""
        model = cls()
        model.coefficient_c_ = float(coefficient_c)
        return model

    def fit(self, calibration: CalibrationSet) -> Self:
        sums = [float(sum(p.values())) for p in calibration.predicted_layer_s]
        self.coefficient_c_ = fit_coefficient(sums, calibration.measured_s)
        return self

    def predict(self, x: NetworkInput) -> float:
        self.check_fitted()
        return self.coefficient_c_ * float(sum(x.layer_latency_s.values()))

    def layer_sum_coefficient(self) -> float:
        self.check_fitted()
        return float(self.coefficient_c_)

    def summary(self) -> str:
        return f"c = {self.layer_sum_coefficient():.3f}"

    def fitted_state(self) -> dict[str, Any]:
        return {"coefficient_c": self.coefficient_c_}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.coefficient_c_ = float(state["coefficient_c"])


def fit_coefficient(layer_sums: list[float], measured: list[float]) -> float:
    """c of Eq. 6: the least-squares slope through the origin of measured totals on summed predictions."""
    s, y = np.asarray(layer_sums, dtype=float), np.asarray(measured, dtype=float)
    denominator = float(s @ s)
    if denominator <= 0:
        raise NnperfError("cannot fit the network coefficient c: the summed layer predictions are all zero")
    return float(s @ y) / denominator
