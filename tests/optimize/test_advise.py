"""The width advisor on a synthetic stepped device: the step edge it must find, the trend it must not
mistake for one, and the layers it must skip."""

from __future__ import annotations

import numpy as np
import pytest

from nnperf.ir import AxisAttrs, ConvAttrs, Layer, LinearAttrs, Network, OpType, TensorSpec
from nnperf.measure.sweep import LayerConfig
from nnperf.optimize.advise import AdviceError, advise
from nnperf.prediction.steps import StepShape, compose, fit_lines

SIZE = 8
A, B = 1e-10, 2e-5
STEPS_OF_8 = StepShape("staircase", 8)


def staircase_device(config: LayerConfig) -> float:
    """b + a * c * ceil(F/8)*8 * out^2 * k^2: filters in steps of 8, channels smooth."""
    filters = np.ceil(config["filters"] / 8) * 8
    return B + A * config["channels"] * filters * config.output_size ** 2 * config["kernel"] ** 2


def stepped_models(device=staircase_device, shape=STEPS_OF_8):  # type: ignore[no-untyped-def]
    base = LayerConfig.of("conv2d", {"size": SIZE})
    points = [(base.with_value("filters", f), device(base.with_value("filters", f))) for f in range(16, 200)]
    points += [(base.with_value("channels", c), device(base.with_value("channels", c))) for c in range(16, 200)]
    filters = fit_lines(shape, [c["filters"] for c, _ in points[:184]], [t for _, t in points[:184]], "filters")
    return {"conv2d": compose("conv2d", {"filters": filters}, points)}


def chain(*widths: int) -> Network:
    """conv(64 -> w1) -> relu -> conv(w1 -> w2) ... -> gap -> flatten -> fc, at 8x8."""
    conv = ConvAttrs((3, 3), padding=(1,) * 4)
    layers, previous, channels = [], "x", 64
    for i, width in enumerate(widths, start=1):
        s_in, s_out = (1, channels, SIZE, SIZE), (1, width, SIZE, SIZE)
        layers += [Layer(f"conv{i}", OpType.CONV, (previous,), (s_in,), s_out, conv),
                   Layer(f"relu{i}", OpType.RELU, (f"conv{i}",), (s_out,), s_out)]
        previous, channels = f"relu{i}", width
    pooled = (1, channels, 1, 1)
    layers += [Layer("gap", OpType.GLOBAL_AVG_POOL, (previous,), ((1, channels, SIZE, SIZE),), pooled),
               Layer("flatten", OpType.FLATTEN, ("gap",), (pooled,), (1, channels), AxisAttrs(1)),
               Layer("fc", OpType.LINEAR, ("flatten",), ((1, channels),), (1, 10), LinearAttrs())]
    return Network("chain", (TensorSpec("x", (1, 64, SIZE, SIZE)),), tuple(layers), ("fc",))


def test_a_width_just_past_a_step_edge_is_moved_onto_it() -> None:
    advice = advise(chain(100, 64), stepped_models(), "synthetic")
    (s,) = advice.suggestions
    assert (s.layer, s.parameter, s.current, s.suggested) == ("conv1", "filters", 100, 96)
    assert s.affected == ("conv1", "conv2")
    # conv1: 64 channels x ceil(F/8)*8 filters; conv2 reads F channels into 64 filters; 9 x 64 pixels each
    def time(f: int) -> float:
        return 2 * B + A * 9 * 64 * (64 * np.ceil(f / 8) * 8 + f * 64)
    assert s.current_s == pytest.approx(time(100), rel=1e-6)
    assert s.suggested_s == pytest.approx(time(96), rel=1e-6)
    # the trend through 90..110 falls by about (64 + 64) x 4 units from 100 to 96, the steps give 64 x 12
    assert s.bonus_s == pytest.approx(A * 9 * 64 * 64 * 4, rel=0.1)
    # conv2's follower is the classifier (through a flatten of a 1x1 map), which has no model here
    assert advice.considered == 1
    assert advice.skipped == {"conv2": "no step model for fc on this system",
                              "fc": "its width reaches the network output"}
    assert s.measured_saving is None


def test_a_width_on_a_step_edge_gets_no_advice() -> None:
    assert advise(chain(96, 64), stepped_models(), "synthetic").suggestions == ()


def test_a_smooth_device_gets_no_advice_however_low_the_bar() -> None:
    def smooth(config: LayerConfig) -> float:
        return B + A * config["channels"] * config["filters"] * config.output_size ** 2 * config["kernel"] ** 2
    models = stepped_models(smooth, StepShape("linear"))
    assert advise(chain(100, 77), models, "synthetic", min_bonus=1e-6).suggestions == ()


def test_verify_measures_both_widths_of_every_affected_layer() -> None:
    measured: list[tuple[int, int]] = []

    def measure(config: LayerConfig) -> float:
        measured.append((config["channels"], config["filters"]))
        return staircase_device(config)

    (s,) = advise(chain(100, 64), stepped_models(), "synthetic", measure=measure).suggestions
    assert measured == [(64, 100), (100, 64), (64, 96), (96, 64)] * 3  # three interleaved rounds
    assert s.measured_saving == pytest.approx(s.saving, rel=1e-6)  # the device is the model


def test_tolerance_must_be_a_fraction() -> None:
    with pytest.raises(AdviceError, match="tolerance must be a fraction"):
        advise(chain(100), stepped_models(), "synthetic", tolerance=1.5)
