"""The roles a system's model gives out come from the predictor classes, not their names; the model kinds are
enumerations whose members are the text stored and offered on the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nnperf.ir import ConvKind
from nnperf.prediction import (
    PREDICTORS,
    CalibrationSet,
    Composition,
    MacsModel,
    NetworkInput,
    NetworkPredictor,
    PreviousModel,
    SharedKey,
    SystemModel,
)
from nnperf.prediction._model import LayerPrediction, NetworkPrediction
from nnperf.prediction.kernel import CONV_KINDS, REGRESSORS, ConvKernel, Regressor, StoredRegressor
from nnperf.prediction.primitives import KINDS, PAPER_HYPERPARAMETERS, CostModelKind, PrimitiveCostModel


def _prediction(totals: dict[str, float]) -> NetworkPrediction:
    return NetworkPrediction("net", "system", (LayerPrediction("a", "conv", "conv", 1e-3),), totals, 0.9)


def test_the_prediction_comes_from_the_lowest_primary_rank_present() -> None:
    both = _prediction({"macs": 3e-3, "previous": 2e-3, "composed": 1e-3})
    assert (both.method, both.latency_s) == ("composed", 1e-3)
    assert (both.previous_latency_s, both.composed_latency_s) == (2e-3, 1e-3)
    assert (both.layer_sum_method, both.fusion_method) == ("previous", "composed")
    without = _prediction({"macs": 3e-3, "previous": 2e-3})
    assert (without.method, without.composed_latency_s) == ("previous", None)
    assert _prediction({"macs": 3e-3, "unregistered": 1.0}).method == "macs"  # no primary: the first fitted


class Halved(NetworkPredictor):
    """A third party's predictor that claims the first rank: half the summed layer predictions."""

    name = "halved"
    label = "sum / 2"
    description = "test: half the summed per-layer predictions"
    primary_rank = -1

    def fit(self, calibration: CalibrationSet) -> Halved:
        self.factor_ = 0.5
        return self

    def predict(self, x: NetworkInput) -> float:
        return self.factor_ * float(sum(x.layer_latency_s.values()))

    def fitted_state(self) -> dict[str, Any]:
        return {"factor": self.factor_}

    def load_fitted_state(self, state: dict[str, Any]) -> None:
        self.factor_ = float(state["factor"])


@pytest.fixture
def halved() -> Iterator[None]:
    PREDICTORS.register(Halved.name, lambda: Halved)  # type: ignore[arg-type, return-value]
    yield
    PREDICTORS.unregister(Halved.name)


def test_a_registered_predictor_takes_a_role_by_declaring_it(halved: None) -> None:
    assert _prediction({"previous": 2e-3, "composed": 1e-3, "halved": 5e-4}).method == "halved"


def test_the_system_model_finds_its_predictors_by_role_and_type() -> None:
    composition = Composition.of(2e-6)
    model = SystemModel("k", "label", {}, {"any-name": PreviousModel.of(1.25), "other": composition,
                                           "third": MacsModel()})
    assert model.coefficient_c == 1.25 and model.layer_sum_predictor is model.predictors["any-name"]
    assert model.composition is composition and model.fusion_predictor is composition
    assert model.macs is model.predictors["third"] and model.roofline is None
    assert [type(p) for p in model.ordered_predictors] == [PreviousModel, Composition, MacsModel]
    assert SystemModel("k", "label", {}, {}).coefficient_c is None


def test_model_kinds_are_the_text_they_store() -> None:
    assert KINDS == CostModelKind.values() == ("lin", "nn1", "nn2", "gb", "ens")
    assert REGRESSORS == Regressor.values() == ("ridge", "boosting", "forest", "mlp")
    assert CONV_KINDS == ("conv:standard", "conv:pointwise", "conv:depthwise", "conv:grouped")
    assert [ConvKernel.of(kind) for kind in ConvKind] == list(ConvKernel)
    assert (SharedKey.ELTWISE, SharedKey.GENERIC) == ("eltwise", "generic")
    for member in (CostModelKind.NN2, Regressor.FOREST, ConvKernel.DEPTHWISE, SharedKey.GENERIC):
        assert f"{member}" == str(member) == member.value and json.dumps(member) == json.dumps(member.value)
        assert {member.value: 1}[member] == 1
    assert PAPER_HYPERPARAMETERS["nn2"] is PAPER_HYPERPARAMETERS[CostModelKind.NN2]
    assert PrimitiveCostModel().get_params()["kind"] == "nn2"
    stored = StoredRegressor("ridge", (0.0,), (1.0,), {"coef": [1.0], "intercept": 0.0})  # type: ignore[arg-type]
    assert stored.kind is Regressor.RIDGE and stored.to_dict()["kind"] == "ridge"
    assert type(stored.to_dict()["kind"]) is str
