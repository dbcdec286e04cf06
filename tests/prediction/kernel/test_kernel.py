"""Kernel-aware prediction: kinds, features, regressors that recover known functions and store as numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, OpType
from nnperf.ir.metrics import layer_metrics
from nnperf.prediction.kernel import (
    CONV_FEATURES,
    REGRESSORS,
    StoredRegressor,
    choose,
    fit_regressor,
    kernel_features,
    kernel_kind,
)


def _conv(c_in: int, c_out: int, hw: int, kernel: int, stride: int = 1, groups: int = 1) -> Layer:
    out = (hw + 2 * (kernel // 2) - kernel) // stride + 1
    return Layer("c", OpType.CONV, ("x",), ((1, c_in, hw, hw),), (1, c_out, out, out),
                 ConvAttrs((kernel, kernel), (stride, stride), (kernel // 2,) * 4, groups=groups))


@pytest.mark.parametrize(("layer", "kind"), [
    (_conv(64, 64, 56, 3), "conv:dense"),
    (_conv(64, 128, 56, 1, stride=2), "conv:dense"),  # a strided 1x1 is not a plain matrix product
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
    from nnperf.prediction.kernel._regressors import _estimator

    x, y = _planted(80, 2)
    stored = fit_regressor(name, x, y, seed=3)
    z = (np.log1p(x) - np.asarray(stored.mean)) / np.asarray(stored.scale)
    estimator = _estimator(name, 3).fit(z, np.log(y))
    np.testing.assert_allclose(stored.predict_s(x), np.exp(estimator.predict(z)), rtol=1e-9)


def test_cross_validation_picks_the_power_law_for_a_power_law_and_trees_for_a_step() -> None:
    x, y = _planted(120, 4)
    chosen, scores = choose(x, y)
    assert chosen.kind == "ridge" and scores["ridge"] == min(scores.values()) and set(scores) == set(REGRESSORS)
    step = np.where(x[:, 0] > 5e5, 1e-3, 1e-4)  # a kernel switch: no power law fits it
    chosen, scores = choose(x, step)
    assert chosen.kind in ("boosting", "forest") and scores["ridge"] > 0.3


def test_too_few_samples_to_cross_validate_get_the_power_law_unscored() -> None:
    x, y = _planted(5, 5)
    chosen, scores = choose(x, y)
    assert chosen.kind == "ridge" and scores == {}


def test_an_unknown_stored_regressor_is_refused() -> None:
    with pytest.raises(NnperfError, match="unknown kind 'svm'"):
        StoredRegressor.from_dict({"kind": "svm", "mean": [], "scale": [], "state": {}})
