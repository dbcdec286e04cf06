"""Timing primitives and layout transformations with the harness (short settings: these check the plumbing)."""

from __future__ import annotations

import dataclasses

import pytest

from harness_presets import SMOKE_HARNESS
from networks import tiny_network
from nnperf.ir import OpType
from nnperf.primitives import (
    CHW,
    HWC,
    ConvConfig,
    LayoutTransform,
    PrimitiveError,
    get_primitive,
    layer_key,
    layer_layouts,
    layer_signature,
    time_layer,
    time_primitive,
    time_transform,
)

CONFIG = ConvConfig.make(1, 8, 8, 8, 3, 1, 1)


@pytest.mark.parametrize("name", ["onednn-hwc", "winograd-2x3", "ort-nchwc", "opencv"])
def test_time_primitive_returns_a_harness_timing(name: str) -> None:
    primitive = get_primitive(name)
    config = ConvConfig.make(1, 16, 16, 8, 3, 1, 1)
    if not primitive.availability().ok:
        pytest.skip(primitive.availability().reason)
    timing = time_primitive(primitive, config, threads=1, harness=SMOKE_HARNESS)
    assert timing.stats.median_s > 0 and len(timing.times_s) >= SMOKE_HARNESS.min_samples


def test_time_primitive_refuses_a_config_that_does_not_apply() -> None:
    with pytest.raises(PrimitiveError, match="conv1x1-fhw does not apply"):
        time_primitive(get_primitive("conv1x1-fhw"), CONFIG, harness=SMOKE_HARNESS)


@pytest.mark.parametrize(("src", "dst"), [(CHW, HWC), (HWC, CHW)])
def test_time_transform_in_each_direction(src, dst) -> None:  # type: ignore[no-untyped-def]
    timing = time_transform(LayoutTransform(src, dst), 1, 16, (8, 8), harness=SMOKE_HARNESS)
    assert timing.stats.median_s > 0


# ------------------------------------------------------------------- layers other than convolutions, per layout


def test_time_layer_times_a_layer_in_each_layout_it_runs_in() -> None:
    network = tiny_network()
    layers = {layer.name: layer for layer in network.layers}
    assert layer_layouts(layers["pool"]) == (CHW, HWC)
    assert layer_layouts(layers["flatten"]) == (CHW, HWC)  # it reads a 4-D tensor
    assert layer_layouts(layers["fc"]) == (CHW,)  # 2-D in and out
    for layout in (CHW, HWC):
        timing = time_layer(layers["cat"], layout, harness=SMOKE_HARNESS)
        assert timing.stats.median_s > 0 and len(timing.times_s) >= SMOKE_HARNESS.min_samples
    with pytest.raises(ValueError, match=r"layer 'fc' \(linear\) cannot run in hwc; its layouts: chw"):
        time_layer(layers["fc"], HWC, harness=SMOKE_HARNESS)


def test_a_layer_key_names_what_decides_its_time_not_its_name() -> None:
    network = tiny_network()
    layers = {layer.name: layer for layer in network.layers}
    relu = layers["relu1"]
    renamed = dataclasses.replace(relu, name="another", inputs=("conv1",))
    assert layer_key(renamed) == layer_key(relu) and len(layer_key(relu)) == 16
    assert layer_signature(relu) == "relu 1x8x16x16 -> 1x8x16x16 NoAttrs()"
    wider = dataclasses.replace(relu, input_shapes=((1, 8, 16, 32),), output_shape=(1, 8, 16, 32))
    assert layer_key(wider) != layer_key(relu)
    assert layer_key(layers["add"]) != layer_key(dataclasses.replace(layers["add"], op=OpType.MUL))
