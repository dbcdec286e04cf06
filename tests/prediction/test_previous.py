"""PreVIous models: Ridge recovery, the coefficient c, calibrate -> predict on the fake backend, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from harness_presets import SHORT_HARNESS
from networks import residual_conv_net, tiny_network
from nnperf.campaign import ProfileConfig, calibrate
from nnperf.errors import FormatVersionError
from nnperf.ir import Layer, NormAttrs, OpType, TransposeAttrs
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction import (
    Composition,
    MissingCalibrationError,
    PreviousModel,
    SystemModel,
    UncoveredLayersError,
    fit_coefficient,
    fit_ridge,
    load_system_model,
    model_key,
)
from nnperf.store import Store

FAST = ProfileConfig(harness=SHORT_HARNESS)


def test_ridge_recovers_known_coefficients() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform([1e3, 1e5, 1e4], [1e6, 1e9, 1e7], size=(400, 3))
    true = np.array([2e-9, 3e-10, 1e-9])
    y = x @ true + 1e-5
    model = fit_ridge("conv", "latency_s", x, y)
    # the closed form on standardised predictors: w = (Z'Z + I)^-1 Z'(y - mean y)
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    np.testing.assert_allclose(model.coef_, np.linalg.solve(z.T @ z + np.eye(3), z.T @ (y - y.mean())), rtol=1e-8)
    # back in raw units (coef / scale) the penalty shrinks the weakest predictor most, by a few percent here
    recovered = np.asarray(model.coef_) / np.asarray(model.scale_)
    np.testing.assert_allclose(recovered, true, rtol=0.05)
    np.testing.assert_allclose(model.predict(x), y, atol=0.01 * y.max())
    assert model.r2_ > 0.999 and model.n_samples_ == 400


def test_ridge_shrinks_by_n_over_n_plus_lambda() -> None:
    x = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]])  # one informative predictor, var 1.25
    y = np.array([0.0, 1, 2, 3])
    model = fit_ridge("pool", "latency_s", x, y)
    # standardised x has sum of squares n = 4, so the slope shrinks to 4 / (4 + 1) of the least-squares slope
    assert model.coef_[0] / model.scale_[0] == pytest.approx(4 / 5)
    assert model.coef_[1] == 0.0 and model.scale_[1] == 1.0  # a constant predictor does nothing


def test_coefficient_c_is_the_slope_through_the_origin() -> None:
    # c = sum(s*y) / sum(s*s) = (1*2 + 2*3 + 3*7) / (1 + 4 + 9) = 29 / 14
    assert fit_coefficient([1, 2, 3], [2, 3, 7]) == pytest.approx(29 / 14)


@pytest.mark.slow
def test_calibrate_then_predict_an_unseen_network(tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = FakeBackend(model=CostModel(noise_sigma=0.0, network_factor=0.9))
    calibration = [residual_conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16, 32) for hw in (8, 16, 32)]
    with Store(tmp_path / "m.db") as store:
        model = calibrate(backend, store, calibration, FAST)
        assert set(model.latency) == {"conv", "relu", "eltwise", "generic"}
        assert model.latency["conv"].n_samples_ == 24
        assert model.coefficient_c == pytest.approx(0.9, rel=0.01)  # the fake network runs in 0.9 x its layers
        unseen = residual_conv_net("unseen", 12, 24)
        prediction = model.predict(unseen)
        truth = {layer.name: backend.model.layer_cost_s(layer) for layer in unseen.layers}
        by_name = {p.layer: p.latency_s for p in prediction.layers}
        assert by_name["a"] == pytest.approx(truth["a"], rel=0.05)  # the dominant 3x3 convolution
        for name in ("r", "b", "add"):  # ridge shrinkage (lambda = 1 on 24 samples) moves small layers more
            assert by_name[name] == pytest.approx(truth[name], rel=0.25), name
        assert prediction.previous_latency_s == pytest.approx(backend.network_cost_s(unseen), rel=0.05)
        assert prediction.hotspots(1)[0][0].layer == "a"  # the 3x3 conv dominates
        again = load_system_model(store, backend.system().key, backend.system().label)
        assert again.to_dict() == model.to_dict()
        # a second calibration reuses every finished campaign and measures nothing new
        before = len(store.layer_measurements())
        assert calibrate(backend, store, calibration, FAST).calibration["reused_networks"] == 12
        assert len(store.layer_measurements()) == before


@pytest.mark.slow
def test_the_composition_recovers_a_per_call_difference(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # inside the network each layer call costs 4 us less than alone (the fake's isolated overhead is 5 us)
    backend = FakeBackend(model=CostModel(noise_sigma=0.0, network_call_delta_s=-4e-6))
    calibration = [residual_conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16, 32) for hw in (8, 16, 32)]
    with Store(tmp_path / "m.db") as store:
        model = calibrate(backend, store, calibration, FAST)
    assert model.composition is not None and model.composition.fusion.fused_pairs == []  # the fake fuses nothing
    assert model.composition.delta_s == pytest.approx(-4e-6, rel=0.05)
    unseen = residual_conv_net("unseen", 12, 12)  # small layers: the per-call difference is a third of the network
    truth = backend.network_cost_s(unseen)
    prediction = model.predict(unseen)
    assert prediction.method == "composed"
    assert prediction.latency_s == pytest.approx(prediction.layer_sum_s + 4 * model.composition.delta_s)
    # Ridge shrinkage leaves the small layers' predictions some 15% off; one constant c is further off still
    assert abs(prediction.latency_s / truth - 1) < 0.2
    assert abs(prediction.latency_s / truth - 1) < abs(prediction.previous_latency_s / truth - 1)


def test_an_uncovered_layer_type_is_named_never_zero(tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    with Store(tmp_path / "m.db") as store:
        model = calibrate(backend, store, [residual_conv_net("cal", 8, 8), residual_conv_net("cal2", 4, 16)], FAST)
    with pytest.raises(UncoveredLayersError,
                       match="layer type.*global_avg_pool \\(gap\\); linear \\(fc\\); max_pool \\(pool\\); softmax"):
        model.predict(tiny_network())
    # each kind of pooling has its own model; add, mul and max share the element-wise one
    assert model_key(tiny_network().layer("gap")) == "global_avg_pool"
    assert model_key(tiny_network().layer("add")) == "eltwise"


def _layer_norm(shape: tuple[int, ...], axis: int) -> Layer:
    return Layer("ln", OpType.LAYER_NORM, ("x",), (shape,), shape, NormAttrs(axis=axis))


def test_layer_normalisation_over_a_strided_axis_has_its_own_model() -> None:
    # a transformer's over its features (the last axis, named -1, or 1 of a matrix) and ConvNeXt's over NCHW channels
    assert model_key(_layer_norm((1, 3136, 96), -1)) == model_key(_layer_norm((1, 768), 1)) == "layer_norm"
    assert model_key(_layer_norm((1, 96, 56, 56), 1)) == "layer_norm:strided"
    # a model stored before the split predicts both with its one layer normalisation model
    ridge = fit_ridge("layer_norm", "latency_s", [[1, 2, 3], [2, 3, 5]], [1, 2])
    doc = SystemModel("k", "label", {"layer_norm": ridge}, {"previous": PreviousModel.of(1.1)}).to_dict()
    older = SystemModel.from_dict(doc)
    assert older.latency["layer_norm:strided"] is older.latency["layer_norm"]


def _transpose(shape: tuple[int, ...], perm: tuple[int, ...]) -> Layer:
    return Layer("t", OpType.TRANSPOSE, ("x",), (shape,), tuple(shape[p] for p in perm), TransposeAttrs(perm))


def test_a_transpose_that_keeps_the_innermost_axis_has_its_own_model() -> None:
    # rows copied whole: a vision transformer's split into heads, MaxViT's window and grid partitions
    assert model_key(_transpose((1, 50, 12, 64), (0, 2, 1, 3))) == "transpose:rows"
    assert model_key(_transpose((1, 8, 7, 8, 7, 64), (0, 1, 3, 2, 4, 5))) == "transpose:rows"
    assert model_key(_transpose((1, 7, 8, 7, 8, 64), (0, 2, 4, 1, 3, 5))) == "transpose:rows"
    # single elements gathered: height and width swapped, tokens made channels, the innermost axis moved
    assert model_key(_transpose((1, 32, 56, 56), (0, 1, 3, 2))) == "transpose"
    assert model_key(_transpose((1, 96, 3136), (0, 2, 1))) == "transpose"
    # axes of one element move no data: the innermost of more than one element decides
    assert model_key(_transpose((1, 64, 1), (0, 2, 1))) == "transpose:rows"
    assert model_key(_transpose((1, 1, 7, 1, 7, 64), (0, 1, 3, 2, 4, 5))) == "transpose:rows"
    assert model_key(_transpose((4, 64, 1), (1, 0, 2))) == "transpose"
    # a model without one predicts these with its transpose model
    ridge = fit_ridge("transpose", "latency_s", [[0, 2, 3], [0, 3, 5]], [1, 2])
    doc = SystemModel("k", "label", {"transpose": ridge}, {"previous": PreviousModel.of(1.1)}).to_dict()
    older = SystemModel.from_dict(doc)
    assert older.latency["transpose:rows"] is older.latency["transpose"]


def test_a_calibration_without_strided_normalisation_predicts_it_with_the_other(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nnperf.ir import Network, TensorSpec
    from nnperf.prediction._features import features

    def normalised(name: str, shape: tuple[int, ...], axis: int) -> Network:
        return Network(name, (TensorSpec("x", shape),), (_layer_norm(shape, axis),), ("ln",))

    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    with Store(tmp_path / "m.db") as store:
        tokens = [normalised(f"tokens{t}", (1, t, 64), -1) for t in (16, 49, 196)]  # no channel normalisation
        model = calibrate(backend, store, [residual_conv_net("cal", 8, 8), *tokens], FAST)
    channels = normalised("channels", (1, 64, 7, 7), 1)
    (prediction,) = model.predict(channels).layers
    assert prediction.key == "layer_norm:strided"
    assert prediction.latency_s == pytest.approx(float(model.latency["layer_norm"].predict(
        features(channels.layers[0])[None])[0]))


def test_generic_layers_are_predicted_by_the_memory_bound_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nnperf.ir import GenericAttrs, Layer, Network, OpType, TensorSpec
    from nnperf.prediction._features import features

    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    calibration = [residual_conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16)]
    with Store(tmp_path / "m.db") as store:
        model = calibrate(backend, store, calibration, FAST)
    # every ReLU and add of the calibration (two per network) fits the generic model; the convolutions do not
    assert model.latency["generic"].n_samples_ == 2 * len(calibration)
    s = (1, 8, 16, 16)
    tile = Layer("tile", OpType.GENERIC, ("add",), (s,), (1, 8, 32, 16), GenericAttrs("Tile", "", (1,), 1, 0, 4))
    base = residual_conv_net("unseen", 8, 16)
    network = Network("with-tile", (TensorSpec("x", s),), base.layers + (tile,), ("tile",))
    prediction = model.predict(network)
    by_name = {p.layer: p for p in prediction.layers}
    assert by_name["tile"].key == "generic"
    assert by_name["tile"].latency_s == pytest.approx(float(model.latency["generic"].predict(features(tile)[None])[0]))
    assert prediction.generic_layers == ("tile",)
    assert prediction.generic_share == pytest.approx(by_name["tile"].latency_s / prediction.layer_sum_s)
    assert prediction.to_dict()["generic"] == {"layers": ["tile"], "share": prediction.generic_share}
    older = SystemModel(model.system_key, model.system_label,
                        {k: v for k, v in model.latency.items() if k != "generic"}, model.predictors)
    with pytest.raises(UncoveredLayersError, match="predates generic layers.*recalibrate"):
        older.predict(network)


def test_missing_calibration_says_how_to_calibrate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Store(tmp_path / "m.db") as store, pytest.raises(MissingCalibrationError,
                                                          match="nnperf calibrate --backend torch"):
        load_system_model(store, "0123456789abcdef", "torch/cpu[threads=1]")


def test_a_model_of_another_system_is_not_used(tmp_path) -> None:  # type: ignore[no-untyped-def]
    one = FakeBackend(model=CostModel(noise_sigma=0.0))
    with Store(tmp_path / "m.db") as store:
        calibrate(one, store, [residual_conv_net("cal", 8, 8)], FAST)
        other = one.system().key[::-1]
        with pytest.raises(MissingCalibrationError, match="no calibration for fake/cpu\\[threads=2\\]"):
            load_system_model(store, other, "fake/cpu[threads=2]", "fake")


def test_model_documents_are_versioned() -> None:
    ridge = fit_ridge("conv", "latency_s", [[1, 2, 3], [2, 3, 5]], [1, 2])
    doc = SystemModel("k", "label", {"conv": ridge}, {"previous": PreviousModel.of(1.1)}).to_dict()
    assert (doc["format"], doc["version"]) == ("nnperf-model", 3)
    assert SystemModel.from_dict(doc).to_dict() == doc
    for version in (1, 4):  # version 1 had one pooling model and no composition; 4 is newer than this nnperf
        with pytest.raises(FormatVersionError, match="recalibrate"):
            SystemModel.from_dict({**doc, "version": version})


def test_version_2_documents_are_read() -> None:
    """A calibration stored by the previous nnperf (c, composition and baselines as fixed keys) still predicts."""
    ridge = fit_ridge("conv", "latency_s", [[1, 2, 3], [2, 3, 5]], [1, 2])
    state = ridge.fitted_state()
    doc_v2 = {"format": "nnperf-model", "version": 2, "features": ["n_weights", "ops", "mem_ops"],
              "system_key": "k", "system_label": "label", "coefficient_c": 1.1, "energy_coefficient_c": None,
              "latency": {"conv": {"key": "conv", "target": "latency_s", **state}}, "energy": {},
              "calibration": {}, "composition": {"delta_s": 2e-6, "fusion": {}}, "macs": {"seconds_per_mac": 1e-9},
              "roofline": None}
    model = SystemModel.from_dict(doc_v2)
    assert model.latency["conv"] == ridge
    assert model.coefficient_c == 1.1 and model.composition == Composition.of(2e-6)
    assert model.macs is not None and model.macs.seconds_per_mac_ == 1e-9 and model.roofline is None
    assert sorted(model.predictors) == ["composed", "macs", "previous"]

def test_calibration_progress_is_one_scale_over_every_phase(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the bar's ETA covered only the current phase: each phase restarted at 0 of its own total, and the
    # profiler phase (one unit per network) showed 0:00:00
    calibration = [residual_conv_net(f"cal{c}", c, 8) for c in (4, 8, 16)]
    seen: list[tuple[str, int, int]] = []
    with Store(tmp_path / "m.db") as store:
        calibrate(FakeBackend(), store, calibration, FAST, progress=lambda *event: seen.append(event))
    totals = {total for _, _, total in seen}
    assert totals == {3 * (4 + 1) + 3 + 1}  # isolated layers and wholes, one unit per profiler pass, roofline
    done = [d for _, d, _ in seen]
    assert done == sorted(done) and done[-1] == 19
    phases = [what.split(":")[0] for what, _, _ in seen]
    assert phases.index("profiler") > max(i for i, p in enumerate(phases) if p == "isolated")
    profiler = [d for what, d, _ in seen if what.startswith("profiler: ")]
    assert min(profiler) >= 15 and max(profiler) == 18  # after the 15 isolated units, 3 units for 3 networks


def test_sampled_pools_join_the_ridge_and_sampled_convolutions_do_not(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nnperf.campaign import measure_networks
    from nnperf.prediction import fit_system_model
    from nnperf.prediction.kernel import ConvSample, PoolSample

    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    system = backend.system()
    with Store(tmp_path / "m.db") as store:
        runs = measure_networks(backend, store, [tiny_network()], FAST)
    pool = PoolSample("max", 64, 112, 3, 2, 0, True).layer()
    conv = ConvSample(64, 64, 56, 3, 1, 1).layer()
    plain = fit_system_model(runs, system.key, system.label)
    sampled = fit_system_model(runs, system.key, system.label, layer_samples=[(pool, 5e-3), (conv, 1e-2)])
    # tiny holds one max pool and two convolutions: the sampled pool is a second max-pool row, the conv none more
    assert (plain.latency["max_pool"].n_samples_, sampled.latency["max_pool"].n_samples_) == (1, 2)
    assert sampled.latency["conv"].to_dict() == plain.latency["conv"].to_dict()
    assert sampled.calibration["layer_samples"] == 2


def test_a_calibration_that_reuses_every_network_keeps_the_speed_read_when_they_were_measured(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    first_five, second_five, third_five = [0.030, 0.031, 0.045, 0.032, 0.030], [0.040] * 5, [0.050] * 4 + [0.051]
    readings = iter(first_five + second_five + third_five)  # the machine slows for one reading, then for good
    monkeypatch.setattr("nnperf.campaign._calibration.ReferenceItem.measure",
                        lambda self, backend, meter=None: next(readings))
    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    calibration = [residual_conv_net("cal", 8, 8), residual_conv_net("cal2", 4, 16)]
    with Store(tmp_path / "m.db") as store:
        first = calibrate(backend, store, calibration, FAST).calibration["reference"]
        again = calibrate(backend, store, calibration, FAST).calibration["reference"]  # every network reused
        # five readings, before, between and after the phases; the slow one does not set the speed
        assert first["readings_s"] == first_five and first["median_s"] == 0.031 and not first["carried"]
        assert again["readings_s"] == first_five and again["carried"] and again["median_s"] == 0.031
        grown = calibrate(backend, store, [*calibration, residual_conv_net("cal3", 4, 8)], FAST)
        assert grown.calibration["reference"]["readings_s"] == third_five  # one measured now: read now
