"""Every primitive against torch.nn.functional.conv2d on edge configurations, its applicability rules, its
availability reasons and the registry's errors."""

from __future__ import annotations

import sys

import pytest
import torch
from prims_helpers import NAMES, PRIMITIVES, relative_error

from nnperf.errors import NnperfError
from nnperf.primitives import (
    CHW,
    ERROR_BOUNDS,
    HCW,
    HWC,
    ConvConfig,
    Family,
    PrimitiveError,
    get_primitive,
    primitive_report,
)
from nnperf.registry import UnavailableError, UnknownPluginError

EDGE_CONFIGS = {
    "3x3": ConvConfig.make(1, 8, 8, 8, 3, 1, 1),
    "3x3 c>=16": ConvConfig.make(1, 16, 24, 10, 3, 1, 1),
    "1x1": ConvConfig.make(1, 6, 5, 7, 1),
    "1x1 stride 2": ConvConfig.make(2, 16, 8, 9, 1, 2),
    "stride 2": ConvConfig.make(1, 16, 16, 9, 3, 2, 1),
    "asymmetric padding": ConvConfig.make(1, 16, 8, (6, 7), 3, 1, (0, 1, 2, 1)),
    "groups": ConvConfig.make(1, 16, 16, 6, 3, 1, 1, groups=4),
    "depthwise": ConvConfig.make(1, 16, 16, 6, 3, 1, 1, groups=16),
    "dilation": ConvConfig.make(1, 4, 6, 9, 3, 1, 2, dilation=2),
    "5x5": ConvConfig.make(1, 4, 6, 9, 5, 1, 2),
    "1x1 map": ConvConfig.make(3, 32, 8, 1, 1),
    "3x3 on 3x3": ConvConfig.make(1, 8, 4, 3, 3),
    "non-square kernel": ConvConfig.make(1, 4, 4, (5, 8), (1, 3), 1, (0, 1)),
    "batch": ConvConfig.make(4, 16, 16, 5, 3, 1, 1),
}


@pytest.mark.parametrize("config", EDGE_CONFIGS.values(), ids=EDGE_CONFIGS.keys())
@pytest.mark.parametrize("name", NAMES)
def test_every_primitive_matches_conv2d_within_its_family_bound(name: str, config: ConvConfig) -> None:
    primitive = get_primitive(name)
    available = primitive.availability()
    if not available.ok:
        pytest.skip(f"{name}: {available.reason}")
    if not primitive.applies(config):
        with pytest.raises(PrimitiveError, match=name):
            primitive.check(config)
        return
    assert relative_error(primitive, config) <= primitive.error_bound


def test_every_edge_config_is_computed_by_some_primitive_of_each_family_that_could() -> None:
    """The edge configurations exercise every family (not every one skipped)."""
    used = {p.family for p in PRIMITIVES for c in EDGE_CONFIGS.values() if p.applies(c) and p.availability().ok}
    assert used == set(Family)


def test_the_error_bounds_by_family() -> None:
    assert ERROR_BOUNDS[Family.IM2] == ERROR_BOUNDS[Family.DIRECT] == ERROR_BOUNDS[Family.VENDOR] == 1e-5
    assert ERROR_BOUNDS[Family.MEC] == 1e-5
    assert ERROR_BOUNDS[Family.FFT] == 3e-5
    assert ERROR_BOUNDS[Family.WINOGRAD] == 1e-4
    assert get_primitive("nnpack").error_bound == get_primitive("opencv-winograd").error_bound == 1e-4
    assert get_primitive("opencv").error_bound == 1e-5


S1 = ConvConfig.make(1, 8, 8, 8, 3, 1, 1)
S2 = ConvConfig.make(1, 8, 8, 8, 3, 2, 1)
ASYM = ConvConfig.make(1, 8, 8, 8, 3, 1, (1, 1, 0, 0))
GROUPED = ConvConfig.make(1, 8, 8, 8, 3, 1, 1, groups=2)
DILATED = ConvConfig.make(1, 8, 8, 8, 3, 1, 2, dilation=2)
K5 = ConvConfig.make(1, 8, 8, 8, 5, 1, 2)
K1 = ConvConfig.make(1, 8, 8, 8, 1)
BATCH_S2 = ConvConfig.make(2, 8, 8, 8, 3, 2, 1)


@pytest.mark.parametrize(("name", "claims"), [
    ("winograd-2x3", {S1, ASYM, GROUPED}),
    ("winograd-4x3", {S1, ASYM, GROUPED}),
    ("winograd-2x5", {K5}),
    ("conv1x1-fhw", {K1}),
    ("conv1x1-hwf", {K1}),
    ("aten-im2col", {S1, S2, K5, K1, BATCH_S2}),
    ("nnpack", {S1, S2, K5, K1}),  # strided only at batch 1
    ("onednn-chw", {S1, S2, GROUPED, DILATED, K5, K1, BATCH_S2}),
    ("torch-conv2d", {S1, S2, ASYM, GROUPED, DILATED, K5, K1, BATCH_S2}),
    ("mec-col", {S1, S2, ASYM, GROUPED, DILATED, K5, K1, BATCH_S2}),
    ("mec-row-partition", {S1, S2, ASYM, GROUPED, DILATED, K5, K1, BATCH_S2}),
    ("opencv-winograd", {S1, ASYM}),
    ("direct", {S1, S2, ASYM, GROUPED, DILATED, K5, K1, BATCH_S2}),
    ("fft", {S1, S2, ASYM, GROUPED, DILATED, K5, K1, BATCH_S2}),
])
def test_applicability_rules(name: str, claims: set[ConvConfig]) -> None:
    primitive = get_primitive(name)
    everything = {S1, S2, ASYM, GROUPED, DILATED, K5, K1, BATCH_S2}
    assert {c for c in everything if primitive.applies(c)} == claims


def test_opencv_does_not_claim_what_it_computes_wrongly() -> None:
    opencv = get_primitive("opencv")
    assert not opencv.applies(ConvConfig.make(1, 1, 1, 1, 1, 1, (0, 0, 1, 0)))  # padded unstrided 1x1: garbage
    assert not opencv.applies(ConvConfig.make(1, 8, 8, 9, 3, 1, 1, groups=8))  # 3x3 depthwise: wrong (classic)
    assert opencv.applies(ConvConfig.make(1, 4, 4, 5, 1, 2, (0, 1, 0, 0)))
    assert opencv.applies(ConvConfig.make(1, 8, 16, 9, 3, 1, 1, groups=8))  # depth multiplier 2 is right


def test_nnpack_does_not_claim_padding_as_large_as_the_kernel_which_it_refuses() -> None:
    assert not get_primitive("nnpack").applies(ConvConfig.make(1, 4, 4, 5, 1, 1, 1))
    assert not get_primitive("nnpack").applies(ConvConfig.make(1, 4, 4, 5, 3, 1, 3))
    assert get_primitive("nnpack").applies(ConvConfig.make(1, 4, 4, 5, 3, 1, 2))


def test_ort_nchwc_blocks_only_what_onnx_runtime_blocks() -> None:
    primitive = get_primitive("ort-nchwc")
    if not primitive.availability().ok:
        pytest.skip(primitive.availability().reason)
    assert primitive.input_layout == primitive.output_layout
    assert primitive.input_layout.block in (8, 16)
    assert primitive.applies(ConvConfig.make(1, 16, 16, 8, 3, 1, 1))
    assert not primitive.applies(ConvConfig.make(1, 8, 16, 8, 3, 1, 1))  # small inputs stay NCHW in ONNX Runtime
    assert not primitive.applies(ConvConfig.make(1, 3, 64, 8, 3, 1, 1))


def test_layouts_of_the_library() -> None:
    by_name = {p.name: p for p in PRIMITIVES}
    assert (by_name["onednn-hwc"].input_layout, by_name["onednn-hwc"].output_layout) == (HWC, HWC)
    assert (by_name["im2col-hwf"].input_layout, by_name["im2col-hwf"].output_layout) == (CHW, HWC)
    assert (by_name["im2row-fhw"].input_layout, by_name["im2row-fhw"].output_layout) == (HWC, CHW)
    assert (by_name["mec-row-partition"].input_layout, by_name["mec-row-partition"].output_layout) == (HCW, HCW)
    assert (by_name["torch-conv2d"].input_layout, by_name["torch-conv2d"].output_layout) == (CHW, CHW)
    assert {p.family for p in PRIMITIVES} == set(Family)
    assert len(NAMES) == 24


def test_an_unknown_primitive_is_an_nnperf_error_listing_the_known_ones() -> None:
    with pytest.raises(UnknownPluginError, match="unknown primitive 'winograd-6x3'; known: aten-im2col") as info:
        get_primitive("winograd-6x3")
    assert isinstance(info.value, NnperfError)


def test_a_config_that_does_not_apply_is_refused_with_the_rule() -> None:
    x, w, b = S2.random_operands()
    with pytest.raises(PrimitiveError, match=r"winograd-2x3 does not apply .* \(3x3 kernel, stride 1, dilation 1\)"):
        get_primitive("winograd-2x3").run(x, w, b, S2)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"c": 6, "groups": 4}, "multiples of groups=4"),
    ({"im": 2, "k": 3}, "larger than the padded input"),
    ({"batch": 0}, "batch must be positive"),
    ({"padding": (0, -1, 0, 0)}, "padding must be non-negative"),
])
def test_bad_configs_are_primitive_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"batch": 1, "c": 8, "f": 8, "im": 8, "k": 3, **kwargs}
    with pytest.raises(PrimitiveError, match=message):
        ConvConfig.make(**args)  # type: ignore[arg-type]


def test_config_arithmetic() -> None:
    config = ConvConfig.make(2, 16, 32, (7, 9), 3, 2, (1, 0, 2, 1))
    assert config.padded == (7 + 1 + 2, 9 + 0 + 1)
    assert config.out == ((10 - 3) // 2 + 1, (10 - 3) // 2 + 1)
    assert config.macs == 2 * 32 * 4 * 4 * 16 * 3 * 3
    assert not config.symmetric_padding
    assert ConvConfig.make(1, 4, 4, 8, 3, padding=(1, 2)).padding == (1, 2, 1, 2)


def test_onednn_disabled_is_unavailable_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.mkldnn, "enabled", False)
    available = get_primitive("onednn-chw").availability()
    assert not available.ok and "torch.backends.mkldnn.enabled is False" in available.reason
    x, w, b = S1.random_operands()
    with pytest.raises(UnavailableError, match="primitive onednn-chw is unavailable: oneDNN is disabled"):
        get_primitive("onednn-chw").run(x, w, b, S1)


def test_onnx_runtime_missing_is_unavailable_with_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime now raises ImportError
    available = get_primitive("ort-chw").availability()
    assert not available.ok
    assert available.reason == "onnxruntime is not installed (pip install onnx onnxruntime)"


def test_opencv_missing_is_unavailable_with_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)
    available = get_primitive("opencv").availability()
    assert available.reason == "OpenCV is not installed (pip install opencv-python-headless)"


def test_nnpack_reports_why_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from nnperf.primitives import _vendor

    monkeypatch.setattr(torch, "_nnpack_available", lambda: False)
    _vendor._nnpack_probe.cache_clear()
    try:
        available = get_primitive("nnpack").availability()
        assert not available.ok and "torch._nnpack_available() is False" in available.reason
    finally:
        _vendor._nnpack_probe.cache_clear()


def test_the_report_lists_every_primitive_with_its_availability() -> None:
    report = primitive_report()
    assert [p.name for p, _ in report] == sorted(NAMES)
    assert all(available.ok or available.reason for _, available in report)


def test_onnx_runtime_models_declare_the_ir_version_of_their_opset_and_refusals_are_primitive_errors():
    # the onnx package stamps its newest IR version, which an older ONNX Runtime refuses to load; the one-node
    # models declare IR 8 (opset 17's), and a model ONNX Runtime refuses is a PrimitiveError, which a profile
    # notes before it goes on (ONNX Runtime's own exceptions are not RuntimeErrors)
    pytest.importorskip("onnxruntime")
    import numpy as np

    from nnperf.primitives._vendor import ONNX_IR_VERSION, _conv_model, _ort_session

    config = ConvConfig.make(1, 4, 8, 6, 3, padding=1)
    model = _conv_model(config, np.zeros(config.weight_shape(), np.float32), None)
    assert model.ir_version == ONNX_IR_VERSION == 8
    model.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(PrimitiveError, match="ONNX Runtime .* refused the model"):
        _ort_session(model, 1, "ORT_DISABLE_ALL")
