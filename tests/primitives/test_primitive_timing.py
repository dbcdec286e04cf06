"""Timing primitives and layout transformations with the harness (short settings: these check the plumbing)."""

from __future__ import annotations

import pytest

from harness_presets import SMOKE_HARNESS
from nnperf.primitives import (
    CHW,
    HWC,
    ConvConfig,
    LayoutTransform,
    PrimitiveError,
    get_primitive,
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
