"""Kernel-aware prediction: kinds, features, regressors that recover known functions and store as numbers."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from harness_presets import SHORT_HARNESS
from networks import residual_conv_net
from nnperf.campaign import ProfileConfig, measure_networks
from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, Network, OpType, TensorSpec
from nnperf.ir.metrics import layer_metrics
from nnperf.measure import fixed_timing
from nnperf.measure.backends import ProfileResult
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction import CalibrationSet, NetworkInput
from nnperf.prediction.kernel import (
    CONV_FEATURES,
    LAYER_SAMPLES,
    MIN_LINE_PAIRS,
    REGRESSORS,
    KernelModel,
    StoredRegressor,
    choose,
    choose_with_extra,
    fit_regressor,
    kernel_features,
    kernel_kind,
)
from nnperf.store import Store


def _conv(c_in: int, c_out: int, hw: int, kernel: int, stride: int = 1, groups: int = 1) -> Layer:
    out = (hw + 2 * (kernel // 2) - kernel) // stride + 1
    return Layer("c", OpType.CONV, ("x",), ((1, c_in, hw, hw),), (1, c_out, out, out),
                 ConvAttrs((kernel, kernel), (stride, stride), (kernel // 2,) * 4, groups=groups))


@pytest.mark.parametrize(("layer", "kind"), [
    (_conv(64, 64, 56, 3), "conv:standard"),
    (_conv(64, 128, 56, 1, stride=2), "conv:pointwise"),
    (_conv(64, 256, 56, 1), "conv:pointwise"),
    (_conv(96, 96, 28, 3, groups=96), "conv:depthwise"),
    (_conv(128, 128, 28, 3, groups=32), "conv:grouped"),
])
def test_each_convolution_goes_to_the_kernel_that_runs_it(layer: Layer, kind: str) -> None:
    assert kernel_kind(layer) == kind


def test_a_grouped_convolution_is_described_by_how_its_kernel_runs() -> None:
    layer = _conv(128, 128, 28, 3, groups=32)
    row = dict(zip(CONV_FEATURES, kernel_features(layer, layer_metrics(layer))))
    assert row["groups"] == 32 and row["channels_per_group"] == 4 and row["kernel_area"] == 9
    assert row["out_map"] == 28 * 28 and row["in_map"] == 28 * 28 and row["padding"] == 4
    assert row["n_weights"] == 128 * 4 * 9 + 128  # weights and bias


def _planted(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Latency = 2e-9 s x a^0.9 x b^1.2: a power law the ridge recovers exactly in log space."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(1e3, 1e6, size=(n, 2))
    return x, 2e-9 * x[:, 0] ** 0.9 * x[:, 1] ** 1.2 / 1e6


@pytest.mark.parametrize("name", REGRESSORS)
def test_each_regressor_recovers_a_known_function_and_stores_as_numbers(name: str) -> None:
    x, y = _planted(200, 0)
    model = fit_regressor(name, x, y)
    test_x, test_y = _planted(50, 1)
    error = float(np.median(np.abs(model.predict_s(test_x) - test_y) / test_y))
    assert error < {"ridge": 0.01, "boosting": 0.15, "forest": 0.25, "mlp": 0.15}[name], error
    document = json.loads(json.dumps(model.to_dict()))  # plain JSON
    np.testing.assert_allclose(StoredRegressor.from_dict(document).predict_s(test_x), model.predict_s(test_x))


@pytest.mark.parametrize("name", REGRESSORS)
def test_stored_numbers_predict_what_scikit_learn_predicts(name: str) -> None:
    """The exported numbers against the very estimator they were exported from (two fits of the MLP can differ
    by a percent: its training is not bit-repeatable across BLAS threads)."""
    from nnperf.prediction.kernel._regressors import Regressor, Stored, _estimator, export

    x, y = _planted(80, 2)
    layout = fit_regressor(name, x, y, seed=3)  # the feature scaling a fit uses
    z = (np.log1p(x) - np.asarray(layout.mean)) / np.asarray(layout.scale)
    estimator = _estimator(name, 3).fit(z, np.log(y))
    stored = Stored(Regressor.named(name), layout.mean, layout.scale, export(Regressor.named(name), estimator), 0.0)
    np.testing.assert_allclose(stored.predict_s(x), np.exp(estimator.predict(z)), rtol=1e-9)


@pytest.mark.slow
def test_cross_validation_picks_the_power_law_for_a_power_law_and_trees_for_a_step() -> None:
    x, y = _planted(120, 4)
    chosen, scores = choose(x, y)
    # the power law is within a percentage point of the best (a near-tie goes to the simplest candidate)
    assert chosen.kind == "ridge" and scores["ridge"] <= min(scores.values()) + 0.01 and set(scores) == set(REGRESSORS)
    step = np.where(x[:, 0] > 5e5, 1e-3, 1e-4)  # a kernel switch: no power law fits it
    chosen, scores = choose(x, step)
    assert chosen.kind in ("boosting", "forest") and scores["ridge"] > 0.3


def test_too_few_samples_to_cross_validate_get_the_power_law_unscored() -> None:
    x, y = _planted(5, 5)
    chosen, scores = choose(x, y)
    assert chosen.kind == "ridge" and scores == {}


def test_extra_samples_join_where_they_agree_and_stay_out_where_they_are_biased() -> None:
    x, y = _planted(40, 6)
    extra_x, extra_y = _planted(60, 7)
    agreeing = choose_with_extra(x, y, extra_x, extra_y, candidates=("ridge",))
    # the same law: with them the power law (ridge, alpha 1) is within 2% either way; a tie goes to joining them
    assert agreeing.extra and agreeing.regressor.kind == "ridge"
    assert set(agreeing.scores) == {"ridge", "ridge+extra"} and agreeing.scores["ridge+extra"] < 0.02
    biased = choose_with_extra(x, y, extra_x, 3.0 * extra_y, candidates=("ridge",))
    # three times too slow (an int8 layer alone also converts its input and output): they would pull every
    # prediction of the in-network samples up, so they stay out and the law is recovered
    assert not biased.extra and biased.scores["ridge"] < 0.05 and biased.scores["ridge+extra"] > 0.5
    assert np.median(np.abs(biased.regressor.predict_s(x) / y - 1)) < 0.05
    # too few samples of the trusted source to judge the extra ones by: both join
    few = choose_with_extra(x[:5], y[:5], extra_x, 3.0 * extra_y, candidates=("ridge",))
    assert few.extra and few.regressor.kind == "ridge"
    only_extra = choose_with_extra(np.empty((0, 2)), [], extra_x, extra_y, candidates=("ridge",))
    assert only_extra.extra


def test_the_kernel_model_refuses_an_unknown_way_for_sampled_layers() -> None:
    with pytest.raises(NnperfError, match="judged or always, not 'sometimes'"):
        KernelModel(sampled_layers="sometimes")


def test_an_unknown_stored_regressor_is_refused() -> None:
    with pytest.raises(NnperfError, match="unknown kind 'svm'"):
        StoredRegressor.from_dict({"kind": "svm", "mean": [], "scale": [], "state": {}})


IN_NETWORK_EXTRA_S = 20e-6
"""What each layer of the fake device below takes inside a network beyond its time alone (torch's is 10-130 us)."""


class _InNetworkSlower(FakeBackend):
    """The fake device whose layers take 20 us longer inside a network (the profiler and the whole network) than
    alone, whatever their size."""

    def inside_s(self, alone_s: float) -> float:
        """A layer's time inside a network (the profiler's) from its time alone."""
        return alone_s + IN_NETWORK_EXTRA_S

    def profile(self, network: Network, runs: int) -> ProfileResult:
        result = super().profile(network, runs)
        layers = tuple(replace(m, timing=fixed_timing([self.inside_s(t) for t in m.timing.times_s]))
                       for m in result.layers)
        return replace(result, layers=layers)


def test_the_kernel_model_learns_context_and_takes_sampled_kinds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = _InNetworkSlower(model=CostModel(noise_sigma=0.0, network_call_delta_s=IN_NETWORK_EXTRA_S))
    config = ProfileConfig(harness=SHORT_HARNESS)
    networks = [residual_conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16)]
    with Store(tmp_path / "m.db") as store:
        runs = measure_networks(backend, store, networks, config)
        profiled = measure_networks(backend, store, networks, replace(config, per_layer="profiler", profiler_runs=2))
    grouped = [_conv(c, c, hw, 3, groups=c // 4) for c in (16, 32, 64) for hw in (8, 14, 28, 56)]
    samples = [(layer, backend.model.layer_cost_s(layer)) for layer in grouped]
    calibration = CalibrationSet(runs, [run.layer_median_s() for run in runs], profiled,
                                 extra={LAYER_SAMPLES: samples})
    model = KernelModel(candidates=("ridge",), other_candidates=("ridge",)).fit(calibration)
    assert model.context_s("conv:standard") == pytest.approx(IN_NETWORK_EXTRA_S)
    assert model.context_s_["*"] == pytest.approx(IN_NETWORK_EXTRA_S)
    assert model.samples_["conv:grouped"] == len(grouped)  # a kind only the samples hold gets its own model
    assert model.sampled_ == {"conv:grouped": True} and model.sampled_layers == "always"
    layer = _conv(48, 48, 20, 3, groups=12)
    want = backend.model.layer_cost_s(layer) + IN_NETWORK_EXTRA_S  # its time inside a network
    got = model.models_["conv:grouped"].predict_s(kernel_features(layer, layer_metrics(layer))[None])[0]
    assert got == pytest.approx(want, rel=0.25)  # the power law fits a cost plus a constant only roughly
    unseen = residual_conv_net("unseen", 12, 12)
    measured = backend.network_timer(unseen).time_block(1)
    predicted = model.predict(NetworkInput(unseen, {}))
    assert predicted == pytest.approx(measured, rel=0.1)
    # a kind with no model (depthwise) falls back on its isolated prediction plus the median offset...
    depthwise = Network("dw", (TensorSpec("x", (1, 16, 8, 8)),), (_conv(16, 16, 8, 3, groups=16),), ("c",))
    assert model.layer_latency_s(depthwise, {"c": 1e-4}) == {"c": pytest.approx(1e-4 + IN_NETWORK_EXTRA_S)}
    # ...and a model stored when the context was a ratio still loads, its fallback scaled by that ratio
    state = json.loads(json.dumps(model.fitted_state()))
    del state["context_s"]
    state["context"] = {"*": 1.5}
    legacy = KernelModel()
    legacy.load_fitted_state(state)
    assert legacy.layer_latency_s(depthwise, {"c": 1e-4}) == {"c": pytest.approx(1.5e-4)}


class _InNetworkScaled(_InNetworkSlower):
    """The fake device whose layers take 2 us plus 1.5 times their time alone inside a network: an offset that
    grows with the layer, as an int8 layer's does."""

    def inside_s(self, alone_s: float) -> float:
        return 2e-6 + 1.5 * alone_s


def test_a_line_moves_sampled_layers_into_the_network_where_an_offset_cannot(tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = _InNetworkScaled(model=CostModel(noise_sigma=0.0))
    config = ProfileConfig(harness=SHORT_HARNESS)
    # nine networks: each has one standard convolution measured both ways, and a line needs MIN_LINE_PAIRS
    networks = [residual_conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16, 32)]
    with Store(tmp_path / "m.db") as store:
        runs = measure_networks(backend, store, networks, config)
        profiled = measure_networks(backend, store, networks, replace(config, per_layer="profiler", profiler_runs=2))
    calibration = CalibrationSet(runs, [run.layer_median_s() for run in runs], profiled)
    assert len(networks) >= MIN_LINE_PAIRS
    line = KernelModel(candidates=("ridge",), other_candidates=("ridge",), sampled_context="line").fit(calibration)
    intercept_s, slope = line.context_line_["conv:standard"]
    assert intercept_s == pytest.approx(2e-6, rel=0.05) and slope == pytest.approx(1.5, rel=0.01)
    assert line.in_network_s("conv:standard", 1e-3) == pytest.approx(2e-6 + 1.5e-3, rel=0.01)
    assert "by a line for 4 kinds" in line.summary()
    # the offset, the median over the calibration's small layers, leaves a large one far short
    offset = KernelModel(candidates=("ridge",), other_candidates=("ridge",)).fit(calibration)
    assert offset.context_line_ == {} and offset.in_network_s("conv:standard", 1e-3) < 1.1e-3
    # a kind with no line (a kind the calibration layers lack) keeps its offset
    assert line.in_network_s("conv:grouped", 1e-3) == pytest.approx(1e-3 + line.context_s("conv:grouped"))
    stored = KernelModel()
    stored.load_fitted_state(json.loads(json.dumps(line.fitted_state())))
    assert stored.sampled_context == "line" and stored.context_line_ == line.context_line_
    legacy = json.loads(json.dumps(offset.fitted_state()))
    del legacy["sampled_context"], legacy["context_line"]
    stored.load_fitted_state(legacy)  # stored before lines: every kind keeps its offset
    assert stored.sampled_context == "offset" and stored.context_line_ == {}


def test_the_kernel_model_refuses_an_unknown_sampled_context() -> None:
    with pytest.raises(NnperfError, match="an offset or a line, not 'ratio'"):
        KernelModel(sampled_context="ratio")


def test_no_regressor_predicts_a_layer_faster_than_the_fastest_it_was_fitted_on() -> None:
    x, y = _planted(60, 8)
    model = fit_regressor("ridge", x, y)
    assert model.floor_s == pytest.approx(float(np.min(y)))
    tiny = np.array([[1.0, 1.0]])  # far below every fitted row: the power law extrapolates to about 1e-16 s
    assert model.predict_s(tiny)[0] == pytest.approx(model.floor_s)
    unfloored = replace(model, floor_s=0.0)
    assert unfloored.predict_s(tiny)[0] < 1e-3 * model.floor_s
    document = json.loads(json.dumps(model.to_dict()))
    assert StoredRegressor.from_dict(document).floor_s == model.floor_s
    del document["floor_s"]  # a regressor stored before floors predicts as it did
    assert StoredRegressor.from_dict(document).predict_s(tiny)[0] == pytest.approx(unfloored.predict_s(tiny)[0])
