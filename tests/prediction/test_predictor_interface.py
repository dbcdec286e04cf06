"""The conformance suite every registered predictor passes (as scikit-learn's ``check_estimator``), and the
evaluation picking up a newly registered network predictor without being told about it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from harness_presets import SHORT_HARNESS
from networks import residual_conv_net
from nnperf.campaign import measure_networks
from nnperf.errors import FormatVersionError, NnperfError
from nnperf.ir.metrics import layer_metrics
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.measure.sweep import LayerConfig
from nnperf.prediction import (
    PREDICTORS,
    CalibrationSet,
    Composition,
    MacsModel,
    NetworkInput,
    NetworkPredictor,
    NotFittedError,
    Predictor,
    PredictorCategory,
    PreviousModel,
    RidgeModel,
    RooflineModel,
    fit_system_model,
    network_predictor_classes,
    network_predictor_names,
    predictor_class,
)
from nnperf.prediction.evaluation import evaluate, method_label
from nnperf.prediction.kernel import KernelModel
from nnperf.prediction.steps import ComposedModel, StepModel, StepShape, fit_lines
from nnperf.report.evaluation import network_table
from nnperf.store import Store


@dataclass(frozen=True)
class Calibrated:
    """A fake-backend calibration: what the network predictors fit on, and an unseen network to predict."""

    calibration: CalibrationSet
    unseen: NetworkInput


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Calibrated:
    from nnperf.campaign import ProfileConfig

    backend = FakeBackend(model=CostModel(noise_sigma=0.0, network_factor=0.9))
    config = ProfileConfig(harness=SHORT_HARNESS)
    networks = [residual_conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16)]
    with Store(tmp_path_factory.mktemp("conformance") / "m.db") as store:
        runs = measure_networks(backend, store, networks, config)
        profiled = measure_networks(backend, store, networks, ProfileConfig(per_layer="profiler", profiler_runs=2,
                                                                            harness=config.harness))
    system = backend.system()
    layers = fit_system_model(runs, system.key, system.label, profiled=profiled)
    predicted = [{p.layer: p.latency_s for p in layers.predict_layers(run.network)} for run in runs]
    unseen = residual_conv_net("unseen", 12, 12)
    return Calibrated(CalibrationSet(runs, predicted, profiled, 1e10, 1e10),
                      NetworkInput(unseen, {p.layer: p.latency_s for p in layers.predict_layers(unseen)}))


Example = Callable[[Calibrated], tuple[Predictor, tuple[Any, ...], Any]]
"""(an unfitted predictor, the arguments of its fit, what its predict takes) for a calibration."""


def _ridge(c: Calibrated) -> tuple[Predictor, tuple[Any, ...], Any]:
    x = np.array([[1.0, 10.0, 5.0], [2.0, 30.0, 7.0], [3.0, 20.0, 11.0], [4.0, 60.0, 13.0]])
    return RidgeModel("conv", "latency_s", alpha=0.5), (x, x @ [1e-6, 2e-7, 3e-7]), x


STEPPED = StepShape("fluctuating", 8, 4)


def _stepped_s(channels: np.ndarray) -> np.ndarray:
    """Eq. 3.1-3.3 with d = 8, r = 4: upper 2e-7 s x floor(c/8)*8 + 2e-5 s, lower 1.5e-7 s x ceil(c/8)*8 + 1e-5 s."""
    upper = (channels - 1) % 4 < 2
    return np.where(upper, 2e-7 * np.floor(channels / 8) * 8 + 2e-5, 1.5e-7 * np.ceil(channels / 8) * 8 + 1e-5)


def _step(c: Calibrated) -> tuple[Predictor, tuple[Any, ...], Any]:
    x = np.arange(10, 61)
    return StepModel(STEPPED, "channels", (("filters", 64),)), (x, _stepped_s(x)), np.arange(5, 80)


def _step_composed(c: Calibrated) -> tuple[Predictor, tuple[Any, ...], Any]:
    base = LayerConfig.of("conv2d", {"filters": 64, "size": 8})
    x = np.arange(10, 61)
    channels = fit_lines(STEPPED, x, _stepped_s(x), "channels")
    points = [(base.with_value("channels", int(v)), float(t)) for v, t in zip(x, _stepped_s(x))]
    return ComposedModel("conv2d", {"channels": channels}), (points,), base.with_value("channels", 37)


def _primitive_cost(c: Calibrated) -> tuple[Predictor, tuple[Any, ...], Any]:
    from nnperf.prediction import PrimitiveCostModel
    from nnperf.primitives import ConvConfig, ConvSample, PrimitiveDataset, sample_configs

    configs = sample_configs([ConvConfig.make(1, 16, 16, 14, 3, padding=1), ConvConfig.make(1, 16, 32, 14, 1)], 24)
    conv = tuple(ConvSample(k, {"direct": 1e-10 * k.macs, "im2col-fhw": 2e-9 * k.macs ** 0.9}) for k in configs)
    return PrimitiveCostModel("lin"), (PrimitiveDataset("fake", ("direct", "im2col-fhw"), (), conv, ()),), configs[:5]


def _adapted(c: Calibrated) -> tuple[Predictor, tuple[Any, ...], Any]:
    """An adaptation's samples: depthwise convolutions that take twice their per-layer-type prediction."""
    from dataclasses import replace

    from nnperf.prediction.kernel import ADAPTED_SAMPLES, AdaptedModel, ConvSample

    samples = [ConvSample(w, w, side, 5, 1, w).layer() for w in (8, 12, 16, 24) for side in (8, 12, 16, 20)]
    triples = tuple((layer, 2e-9 * layer_metrics(layer).macs, 1e-9 * layer_metrics(layer).macs) for layer in samples)
    return AdaptedModel(), (replace(c.calibration, extra={ADAPTED_SAMPLES: triples}),), c.unseen


def _network(klass: type[NetworkPredictor]) -> Example:
    return lambda c: (klass(), (c.calibration,), c.unseen)


EXAMPLES: dict[str, Example] = {
    "ridge": _ridge,
    "previous": _network(PreviousModel),
    "composed": _network(Composition),
    "kernel": _network(KernelModel),
    "adapted": _adapted,
    "macs": _network(MacsModel),
    "roofline": _network(RooflineModel),
    "step": _step,
    "step-composed": _step_composed,
    "primitive-cost": _primitive_cost,
}
"""One example per registered predictor: a predictor registered without one fails the suite."""


def test_every_registered_predictor_has_a_conformance_example() -> None:
    assert sorted(set(PREDICTORS.names()) - set(EXAMPLES)) == []


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_predictor_conformance(name: str, calibrated: Calibrated) -> None:
    predictor, fit_args, x = EXAMPLES[name](calibrated)
    klass = predictor_class(name)
    assert type(predictor) is klass and klass.name == name and klass.description
    params = predictor.get_params()
    assert klass(**params).get_params() == params  # __init__ stores parameters, nothing else
    assert not predictor.is_fitted
    with pytest.raises(NotFittedError, match="not fitted"):
        predictor.predict(x)
    with pytest.raises(NotFittedError):
        predictor.to_dict()
    assert predictor.fit(*fit_args) is predictor
    assert predictor.get_params() == params  # fitting learns attributes ending in _, it changes no parameter
    predicted = np.asarray(predictor.predict(x), dtype=float)
    assert np.all(np.isfinite(predicted)) and np.all(predicted >= 0)
    document = json.loads(json.dumps(predictor.to_dict()))  # plain JSON, no pickle
    assert (document["format"], document["version"], document["name"]) == ("nnperf-predictor", 1, name)
    again = Predictor.from_dict(document)
    assert type(again) is klass and again == predictor
    np.testing.assert_array_equal(np.asarray(again.predict(x), dtype=float), predicted)
    with pytest.raises(FormatVersionError):
        Predictor.from_dict({**document, "version": 2})
    with pytest.raises(FormatVersionError, match="fit it again"):
        Predictor.from_dict({**document, "state_version": klass.version + 1})


def test_documents_name_what_they_hold() -> None:
    with pytest.raises(NnperfError, match="not an nnperf predictor document"):
        Predictor.from_dict({"format": "something-else"})
    ridge = RidgeModel("conv").fit([[1.0], [2.0]], [1.0, 3.0])
    with pytest.raises(NnperfError, match="not a previous"):
        PreviousModel.from_dict(ridge.to_dict())
    with pytest.raises(NnperfError, match="unknown predictor 'nope'"):
        Predictor.from_dict({**ridge.to_dict(), "name": "nope"})


def test_the_network_predictors_come_in_display_order() -> None:
    assert network_predictor_names()[:5] == ["previous", "composed", "kernel", "macs", "roofline"]


class TwiceTheSum(NetworkPredictor):
    """A network predictor the evaluation has never heard of: twice the summed layer predictions."""

    name = "twice-the-sum"
    label = "2 x sum"
    description = "test: twice the summed per-layer predictions"

    def fit(self, calibration: CalibrationSet) -> TwiceTheSum:
        self.factor_ = 2.0
        return self

    def predict(self, x: NetworkInput) -> float:
        self.check_fitted()
        return self.factor_ * float(sum(x.layer_latency_s.values()))

    def fitted_state(self) -> dict[str, Any]:
        return {"factor": self.factor_}

    def load_fitted_state(self, state: dict[str, Any]) -> None:
        self.factor_ = float(state["factor"])


@pytest.fixture
def twice_the_sum() -> Iterator[None]:
    """TwiceTheSum registered as an entry point registers it: the class itself is the factory."""
    PREDICTORS.register(TwiceTheSum.name, TwiceTheSum)  # type: ignore[arg-type]
    yield
    PREDICTORS.unregister(TwiceTheSum.name)


def test_a_registered_predictor_is_fitted_evaluated_and_reported(tmp_path, twice_the_sum) -> None:  # type: ignore[no-untyped-def]
    from nnperf.campaign import ProfileConfig, calibrate

    assert predictor_class(TwiceTheSum.name) is TwiceTheSum
    backend = FakeBackend(model=CostModel(noise_sigma=0.0, network_factor=0.9))
    config = ProfileConfig(harness=SHORT_HARNESS)
    with Store(tmp_path / "m.db") as store:
        model = calibrate(backend, store, [residual_conv_net(f"cal{c}", c, 8) for c in (4, 8, 16)], config)
        assert isinstance(model.predictors["twice-the-sum"], TwiceTheSum)
        unseen = measure_networks(backend, store, [residual_conv_net("unseen", 12, 12)], config)
    evaluation = evaluate(model, unseen)
    assert "twice-the-sum" in evaluation.methods
    comparison = evaluation.networks[0]
    assert comparison.predicted_s["twice-the-sum"] == pytest.approx(2 * comparison.predicted_layer_sum_s)
    assert evaluation.to_dict()["methods"]["twice-the-sum"] == TwiceTheSum.description
    assert method_label("twice-the-sum") == "2 x sum"
    assert "2 x sum ms" in [column.header for column in network_table(evaluation).columns]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_registered_predictor_describes_itself(name: str, calibrated: Calibrated) -> None:
    predictor, fit_args, _ = EXAMPLES[name](calibrated)
    klass = type(predictor)
    assert klass.display_label() and klass.description and isinstance(klass.category, PredictorCategory)
    assert (klass.category is PredictorCategory.NETWORK) == issubclass(klass, NetworkPredictor)
    assert klass.category is not PredictorCategory.OTHER
    with pytest.raises(NotFittedError):
        predictor.summary()
    predictor.fit(*fit_args)
    summary = predictor.summary()
    assert summary and "\n" not in summary
    fitted_on = predictor.fitted_on()
    assert fitted_on is None or (fitted_on.count > 0 and str(fitted_on).startswith(str(fitted_on.count)))


def test_every_network_predictor_of_a_calibration_says_what_it_learnt_and_on_what(calibrated: Calibrated) -> None:
    from nnperf.prediction import fit_network_predictors

    fitted = fit_network_predictors(calibrated.calibration)
    assert list(fitted) == [k.name for k in network_predictor_classes() if k.name in fitted]
    previous = fitted["previous"]
    assert previous.summary() == f"c = {previous.coefficient_c_:.3f}"  # type: ignore[attr-defined]
    composition = fitted["composed"]
    assert f"{composition.delta_s_ * 1e6:+.1f} us" in composition.summary()  # type: ignore[attr-defined]
    assert f"{fitted['macs'].seconds_per_mac_ * 1e12:.4g} ps per MAC" == fitted["macs"].summary()  # type: ignore[attr-defined]
    assert fitted["roofline"].summary() == "10.0 GOP/s, 10.0 GB/s"
    kernel = fitted["kernel"]
    assert all(kind in kernel.summary() for kind in kernel.models_)  # type: ignore[attr-defined]
    assert kernel.fitted_on().count == sum(kernel.samples_.values())  # type: ignore[attr-defined, union-attr]
    networks = [run.network.name for run in calibrated.calibration.runs]
    from nnperf.prediction import SystemModel

    model = SystemModel("k", "label", {}, fitted, calibration={"networks": networks})
    assert model.fitted_on(previous).networks == tuple(networks)
    assert str(model.fitted_on(previous)).startswith(f"{len(networks)} calibration networks")
