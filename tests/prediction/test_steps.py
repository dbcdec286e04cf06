"""Step models: Eq. 3.1-3.3 by hand, automatic d/r detection on synthetic sweeps, 4-point characterisation,
composition across parameters."""

from __future__ import annotations

import numpy as np
import pytest

from nnperf.measure.sweep import LayerConfig
from nnperf.prediction import NotFittedError
from nnperf.prediction.steps import (
    DetectionConfig,
    Line,
    StepModel,
    StepModelError,
    StepShape,
    characterisation_points,
    compose,
    detect_steps,
    effective,
    fit_lines,
    mape,
    work,
)
from nnperf.prediction.steps._model import branch_of

X = np.arange(10, 531)  # the paper's channel sweep, 10:530:1
FAST = DetectionConfig(max_depth=80, max_period=16, resamples=20)


def paper_like(x: np.ndarray) -> np.ndarray:
    """Eq. 3.1-3.3 with d = 32, r = 8 (Osterwind 3.3.3) and slopes/intercepts of a ~1-2 ms layer."""
    upper = (x - 1) % 8 < 4
    return np.where(upper, np.floor(x / 32) * 32 * 3.0e-6 + 4e-4, np.ceil(x / 32) * 32 * 2.6e-6 + 3e-4)


def noisy(y: np.ndarray, sigma: float, seed: int) -> np.ndarray:
    return y * np.random.default_rng(seed).lognormal(0.0, sigma, len(y))


def test_equations_by_hand():
    model = StepModel.from_lines(StepShape("fluctuating", 32, 8), (Line(3.0e-6, 4e-4), Line(2.6e-6, 3e-4)))
    # x = 33: (33-1) mod 8 = 0 < 4 -> upper, floor(33/32)*32 = 32 -> 32*3e-6 + 4e-4
    assert model.predict_one(33) == pytest.approx(32 * 3.0e-6 + 4e-4)
    # x = 37: (36 mod 8) = 4 -> lower, ceil(37/32)*32 = 64 -> 64*2.6e-6 + 3e-4
    assert model.predict_one(37) == pytest.approx(64 * 2.6e-6 + 3e-4)
    stair = StepModel.from_lines(StepShape("staircase", 16, form="ceil"), (Line(1e-6, 1e-4),))
    assert stair.predict_one(17) == pytest.approx(32 * 1e-6 + 1e-4)
    assert stair.predict_one(16) == pytest.approx(16 * 1e-6 + 1e-4)
    aligned = StepModel.from_lines(StepShape("fluctuating", 8, 4, selector="aligned"),
                                   (Line(2e-6, 0.0), Line(1e-6, 0.0)))
    assert aligned.predict_one(44) == pytest.approx(48 * 1e-6)  # a multiple of 4: lower, ceil
    assert aligned.predict_one(45) == pytest.approx(40 * 2e-6)  # upper, floor


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_detects_the_papers_d_and_r_in_noise(seed):
    detection = detect_steps(X, noisy(paper_like(X), 0.01, seed), FAST)
    assert detection.shape == StepShape("fluctuating", 32, 8)
    assert detection.confidence >= 0.9
    assert detection.rss_share < 0.2


def test_an_even_grid_that_cannot_tell_the_selectors_apart_keeps_the_aligned_reading():
    """On channels 10, 12, 14, ... the paper's selector with r = 4 and the aligned one split the points alike
    (x = 2 mod 4 upper, x = 0 mod 4 lower); the fit is the same, and the aligned reading is kept: at odd
    channel counts it predicts the slow line, which is what ONNX Runtime did on the held-out sweeps."""
    x = np.arange(10, 531, 2)
    truth = StepModel.from_lines(StepShape("fluctuating", 4, 4, selector="aligned"),
                                 (Line(2.4e-5, 6e-5), Line(2.0e-5, 3e-5)))
    detection = detect_steps(x, noisy(truth.predict(x), 0.01, 0), FAST)
    assert detection.shape == StepShape("fluctuating", 4, 4, selector="aligned")
    half = StepShape("fluctuating", 4, 4, selector="half")
    assert np.array_equal(branch_of(half, x), branch_of(detection.shape, x))  # the tie
    odd = np.arange(11, 531, 4)  # x = 3 mod 4: the selectors disagree here
    assert not np.array_equal(branch_of(half, odd), branch_of(detection.shape, odd))


@pytest.mark.parametrize(("depth", "form"), [(8, "ceil"), (16, "floor"), (24, "ceil")])
def test_detects_a_staircase(depth, form):
    q = (np.ceil(X / depth) if form == "ceil" else np.floor(X / depth)) * depth
    detection = detect_steps(X, noisy(2e-6 * q + 1e-4, 0.01, depth), FAST)
    assert (detection.shape.kind, detection.shape.depth, detection.shape.form) == ("staircase", depth, form)
    assert detection.confidence >= 0.9


@pytest.mark.parametrize("seed", range(6))
def test_a_straight_line_has_no_steps(seed):
    detection = detect_steps(X, noisy(2e-6 * X + 1e-4, 0.02, seed), FAST)
    assert detection.is_linear
    assert detection.confidence >= 0.8


def test_an_isolated_spike_is_left_out():
    y = noisy(2e-6 * np.ceil(X / 16) * 16 + 1e-4, 0.005, 3)
    y[100] *= 1.8
    detection = detect_steps(X, y, FAST)
    assert detection.shape.depth == 16
    assert int(X[100]) in detection.outliers


def test_detection_refuses_bad_input():
    with pytest.raises(StepModelError, match="at least 8"):
        detect_steps([1, 2, 3], [1.0, 2.0, 3.0])
    with pytest.raises(StepModelError, match="positive and finite"):
        detect_steps(np.arange(1, 11), np.r_[np.ones(9), -1.0])
    with pytest.raises(StepModelError, match="repeats"):
        detect_steps(np.r_[np.arange(1, 10), 9], np.ones(10))


def test_four_point_characterisation_reproduces_a_synthetic_model():
    shape = StepShape("fluctuating", 32, 8)
    truth = StepModel.from_lines(shape, (Line(3.1e-6, 5e-4), Line(2.4e-6, 3.5e-4)))
    values = np.arange(120, 220, 3)  # the paper's held-out sweeps, 120:219:3
    points = characterisation_points(shape, 120, 219, 3)
    assert len(points) == 4
    # (x-1) mod 8 < 4 is upper: 123 (122 mod 8 = 2) and 219 (2); lower: 120 (119 mod 8 = 7) and 216 (7)
    assert points == (120, 123, 216, 219)
    local = fit_lines(shape, points, truth.predict(np.array(points)))
    for fitted, true in zip(local.lines_, truth.lines_):
        assert fitted.slope_s == pytest.approx(true.slope_s, rel=1e-9)
        assert fitted.intercept_s == pytest.approx(true.intercept_s, rel=1e-9)
    assert mape(local.predict(values), truth.predict(values)) < 1e-12


def test_characterisation_needs_two_steps_per_line():
    with pytest.raises(StepModelError, match="too narrow"):
        characterisation_points(StepShape("staircase", 64), 65, 90)
    with pytest.raises(StepModelError, match="at least 4"):
        characterisation_points(StepShape("linear"), 10, 12)
    with pytest.raises(StepModelError, match="two different steps"):
        fit_lines(StepShape("staircase", 32), [33, 40], [1e-3, 1e-3])


def test_a_step_model_learns_its_lines_in_fit_and_keeps_its_parameters():
    shape = StepShape("staircase", 16)
    model = StepModel(shape, "channels", (("filters", 64),))
    assert model.get_params() == {"shape": shape, "parameter": "channels", "fixed": (("filters", 64),)}
    with pytest.raises(NotFittedError):
        model.predict([17])
    # two points on two steps: ceil(17/16)*16 = 32 and ceil(40/16)*16 = 48, T = 1e-6 s x q + 1e-4 s
    assert model.fit([17, 40], [32 * 1e-6 + 1e-4, 48 * 1e-6 + 1e-4]) is model
    (line,) = model.lines_
    assert (line.slope_s, line.intercept_s) == (pytest.approx(1e-6), pytest.approx(1e-4))
    assert model == StepModel.from_lines(shape, model.lines_, "channels", (("filters", 64),))
    with pytest.raises(StepModelError, match="a fluctuating model has 2 line"):
        StepModel.from_lines(StepShape("fluctuating", 8, 4), (Line(1e-6, 0.0),))


def test_a_composed_model_learns_its_scale_in_fit():
    base = LayerConfig.of("conv2d", {"size": 8})
    model = compose("conv2d", {}, [(base.with_value("channels", c), 1e-4 + 1e-12 * c * 128 * 64 * 9)
                                   for c in (8, 16, 32)])  # T = b + a * c * F * out^2 * k^2
    assert (model.scale_s_, model.offset_s_) == (pytest.approx(1e-12), pytest.approx(1e-4))
    assert (model.fitted_points_, model.ranges_["channels"], model.ranges_["filters"]) == (3, (8, 32), (128, 128))
    assert model.macs_range_ == (8 * 128 * 64 * 9, 32 * 128 * 64 * 9)
    assert model.modelled == [] and model.get_params() == {"kind": "conv2d", "models": {}}


def test_shape_validation():
    with pytest.raises(StepModelError, match="period"):
        StepShape("fluctuating", 32)
    with pytest.raises(StepModelError, match="no step depth"):
        StepShape("linear", 8)
    with pytest.raises(StepModelError, match="unknown step model kind"):
        StepShape("wavy", 8)


def test_work_variables():
    config = LayerConfig.of("conv2d", {"channels": 48, "filters": 64, "size": 56, "kernel": 3, "stride": 2})
    assert work(config, "channels") == 48
    assert work(config, "size") == 28 * 28
    assert work(config, "kernel") == 9


def test_effective_size_of_a_staircase_is_its_quantised_width():
    stair = StepModel.from_lines(StepShape("staircase", 16), (Line(2e-6, 1e-4),), "channels")
    assert effective(stair, np.array([17, 32, 33])).tolist() == pytest.approx([32, 32, 48])


def test_composition_recovers_a_separable_synthetic_device():
    """T = b + a * ceil(c/8)*8 * ceil(f/16)*16 * out^2 * k^2: two sweeps give the scale; any config predicted."""
    a, b = 1e-11, 2e-5

    def device(config: LayerConfig) -> float:
        c, f = np.ceil(config["channels"] / 8) * 8, np.ceil(config["filters"] / 16) * 16
        return b + a * c * f * work(config, "size") * work(config, "kernel")

    base = LayerConfig.of("conv2d", {"size": 28})
    channel_points = [(base.with_value("channels", c), device(base.with_value("channels", c))) for c in range(16, 200)]
    filter_points = [(base.with_value("filters", f), device(base.with_value("filters", f))) for f in range(16, 200)]
    models = {
        "channels": fit_lines(StepShape("staircase", 8), [c["channels"] for c, _ in channel_points],
                              [t for _, t in channel_points], "channels"),
        "filters": fit_lines(StepShape("staircase", 16), [c["filters"] for c, _ in filter_points],
                             [t for _, t in filter_points], "filters"),
    }
    composed = compose("conv2d", models, channel_points + filter_points)
    assert composed.scale_s_ == pytest.approx(a, rel=1e-6)  # E_c = ceil(c/8)*8, E_f = ceil(f/16)*16: a and b exactly
    assert composed.offset_s_ == pytest.approx(b, rel=1e-6)
    for config in (LayerConfig.of("conv2d", {"channels": 37, "filters": 90, "size": 14, "kernel": 5}),
                   LayerConfig.of("conv2d", {"channels": 150, "filters": 33, "size": 40, "kernel": 1})):
        assert composed.predict(config) == pytest.approx(device(config), rel=1e-6)
    assert composed.extrapolated(LayerConfig.of("conv2d", {"channels": 300, "size": 28})) == [
        "channels=300 (covered 16-199)", "MACs 2.71e+08 (covered 1.45e+07-1.8e+08)"]
    # every parameter inside its swept range, but 16 x 16 is an eighth of the smallest measured 16 x 128:
    # 16 * 16 * 28^2 * 3^2 MACs against 16 * 128 * 28^2 * 3^2 to 199 * 128 * 28^2 * 3^2
    assert composed.extrapolated(LayerConfig.of("conv2d", {"channels": 16, "filters": 16, "size": 28})) == [
        "MACs 1.81e+06 (covered 1.45e+07-1.8e+08)"]
    assert composed.extrapolated(LayerConfig.of("conv2d", {"channels": 64, "filters": 64, "size": 28})) == []


def test_composition_needs_data():
    with pytest.raises(StepModelError, match="at least two"):
        compose("conv2d", {}, [])
