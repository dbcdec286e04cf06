"""MEC (mec-col on hwc, mec-row-partition on hcw) and torch's own conv2d as a primitive: each against
torch.nn.functional.conv2d over kernels 1 to 11, strides 1 to 4, asymmetric padding, dilation, groups, depthwise
and batches; MEC's compact lowering and its strided windows checked element by element; the layouts written."""

from __future__ import annotations

import pytest
import torch
from prims_helpers import relative_error

from nnperf.primitives import (
    CHW,
    ERROR_BOUNDS,
    HCW,
    HWC,
    ConvConfig,
    Family,
    get_primitive,
    pad_input,
    reference_conv2d,
    to_layout,
)
from nnperf.primitives._mec import Mec, lower, windows

CONFIGS = {
    "1x1": ConvConfig.make(1, 6, 5, 7, 1),
    "1x1 stride 2 batch 2": ConvConfig.make(2, 16, 8, 9, 1, 2),
    "3x3": ConvConfig.make(1, 8, 8, 8, 3, 1, 1),
    "3x3 stride 2 batch 2": ConvConfig.make(2, 8, 12, (9, 11), 3, 2, 1),
    "5x5 asymmetric padding": ConvConfig.make(1, 6, 4, (9, 13), 5, 2, (1, 2, 0, 1)),
    "7x7 stride 2 pad 3": ConvConfig.make(2, 3, 8, (16, 12), 7, 2, 3),
    "11x11 stride 4": ConvConfig.make(2, 3, 8, (23, 31), 11, 4, 2),
    "non-square kernel and stride": ConvConfig.make(1, 4, 4, (5, 8), (1, 3), (2, 1), (0, 1)),
    "dilation 2": ConvConfig.make(1, 4, 6, 9, 3, 1, 2, dilation=2),
    "dilation (2, 1), 7x7": ConvConfig.make(1, 4, 6, (15, 11), 7, (1, 2), 3, dilation=(2, 1)),
    "dilation (1, 3)": ConvConfig.make(2, 4, 6, (7, 12), 3, 1, (1, 3), dilation=(1, 3)),
    "groups 4, dilated, batch 2": ConvConfig.make(2, 16, 8, 11, 3, 1, 2, groups=4, dilation=2),
    "groups 2, stride 2": ConvConfig.make(1, 8, 12, 10, 5, 2, (2, 1, 1, 2), groups=2),
    "depthwise": ConvConfig.make(1, 16, 16, 6, 3, 1, 1, groups=16),
    "depthwise multiplier 2, stride 2, batch 2": ConvConfig.make(2, 8, 16, 9, 3, 2, 1, groups=8),
    "3x3 on 3x3": ConvConfig.make(1, 8, 4, 3, 3),
    "one column out": ConvConfig.make(2, 4, 5, (7, 3), 3),
}

NEW = ("mec-col", "mec-row-partition", "torch-conv2d")


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("name", NEW)
def test_the_new_primitives_compute_conv2d_within_their_family_bound(name: str, config: ConvConfig) -> None:
    primitive = get_primitive(name)
    assert primitive.applies(config)
    assert relative_error(primitive, config) <= primitive.error_bound == 1e-5


@pytest.mark.parametrize("partition_bytes", [1, 3 * 4 * 8 * 2 * 11, 1 << 30], ids=["a row", "three rows", "all"])
def test_mec_row_partition_gives_the_same_result_whatever_its_partitions(partition_bytes: int) -> None:
    # groups 4, dilated, batch 2: f = 8, n*ow = 2 * 11, so 3 * 4 * 8 * 22 bytes hold three of its 11 rows (3+3+3+2)
    config = CONFIGS["groups 4, dilated, batch 2"]
    primitive = Mec("mec-row-partition", Family.MEC, HCW, HCW, "torch ops", "any", orientation="row",
                    partition_bytes=partition_bytes)
    x, w, b = config.random_operands()
    with torch.inference_mode():
        got = primitive.prepare(w, b, config)(to_layout(x, HCW))
        ref = reference_conv2d(x, w, b, config)
    assert float((got - ref).abs().max() / ref.abs().max()) <= 1e-5


def test_the_mec_family_and_its_layouts() -> None:
    assert ERROR_BOUNDS[Family.MEC] == 1e-5
    col, row = get_primitive("mec-col"), get_primitive("mec-row-partition")
    assert (col.family, col.input_layout, col.output_layout) == (Family.MEC, HWC, HWC)
    assert (row.family, row.input_layout, row.output_layout) == (Family.MEC, HCW, HCW)
    assert col.library == row.library == "torch ops"


def test_mec_col_writes_hwc_and_mec_row_partition_writes_hcw() -> None:
    config = CONFIGS["3x3 stride 2 batch 2"]  # f = 12, out 5 x 6
    x, w, b = config.random_operands()
    with torch.inference_mode():
        y_col = get_primitive("mec-col").run(to_layout(x, HWC), w, b, config)
        y_row = get_primitive("mec-row-partition").run(to_layout(x, HCW), w, b, config)
    assert y_col.shape == y_row.shape == (2, 12, 5, 6)
    assert y_col.is_contiguous(memory_format=torch.channels_last)
    assert y_row.stride() == (5 * 12 * 6, 6, 12 * 6, 1)  # bytes (n, h, c, w)


def test_the_lowering_holds_each_output_columns_strip_of_every_padded_row() -> None:
    config = ConvConfig.make(2, 4, 6, (5, 9), 3, (1, 2), (1, 0, 0, 2), groups=2, dilation=(1, 2))
    x, _, _ = config.random_operands()
    xp = pad_input(x, config)  # (2, 4, 6, 11)
    low = lower(to_layout(x, HWC), config)
    (_, ow), (hp, _) = config.out, config.padded
    assert ow == (11 - 2 * (3 - 1) - 1) // 2 + 1 == 4
    assert low.shape == (2, 2 * ow, hp, 3, 2) and low.is_contiguous()  # (g, n*ow, hp, kw, c/g)
    for g in range(2):
        for n in range(2):
            for w in range(ow):
                for j in range(3):
                    # column w*sw + j*dw of every padded row, group g's two channels
                    assert torch.equal(low[g, n * ow + w, :, j, :], xp[n, 2 * g:2 * g + 2, :, 2 * w + 2 * j].T)


def test_the_lowering_is_kh_over_sh_times_smaller_than_im2col() -> None:
    config = ConvConfig.make(1, 64, 64, 56, 3, 1, 1)
    low = lower(torch.zeros(config.input_shape()), config)
    im2col = config.out[0] * config.out[1] * 3 * 3 * 64
    assert low.numel() == 56 * 58 * 3 * 64  # ow * hp * kw * c
    assert low.numel() / im2col == pytest.approx(58 / (56 * 3))


def test_the_row_windows_are_strided_views_of_the_lowering_not_copies() -> None:
    config = ConvConfig.make(2, 4, 6, (9, 7), 3, 2, 1, groups=2)
    low = lower(config.random_operands()[0], config)
    oh, ow = config.out
    view = windows(low, config, row=0, rows=3)  # dilation 1: all kh rows in one window of K = kh*kw*c/g
    assert view.shape == (2, oh, 2 * ow, 3 * 3 * 2)
    assert view.untyped_storage().data_ptr() == low.untyped_storage().data_ptr()
    for h in range(oh):
        # output row h reads input rows 2h ... 2h + 2 of every strip, as one (n*ow, kh*kw*c/g) matrix
        assert torch.equal(view[1, h], low[1, :, 2 * h:2 * h + 3].reshape(2 * ow, -1))
    one = windows(low, config, row=2, rows=1)  # a dilated kernel's third row alone
    assert torch.equal(one[0, 1], low[0, :, 2 + 2].reshape(2 * ow, -1))


def test_torch_conv2d_is_conv2d_as_a_model_calls_it() -> None:
    primitive = get_primitive("torch-conv2d")
    assert (primitive.family, primitive.input_layout, primitive.output_layout) == (Family.VENDOR, CHW, CHW)
    config = CONFIGS["5x5 asymmetric padding"]
    x, w, b = config.random_operands()
    with torch.inference_mode():
        # asymmetric padding is padded first, as the reference does: the same call, the same bits
        assert torch.equal(primitive.run(x, w, b, config), reference_conv2d(x, w, b, config))
        symmetric = CONFIGS["7x7 stride 2 pad 3"]
        x, w, b = symmetric.random_operands()
        want = torch.nn.functional.conv2d(x, w, b, 2, 3)  # padding is conv2d's own argument
        assert torch.equal(primitive.run(x, w, b, symmetric), want)


def test_torch_conv2d_may_pick_winograd_when_onednn_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    primitive = get_primitive("torch-conv2d")
    assert primitive.error_bound == ERROR_BOUNDS[Family.VENDOR]
    monkeypatch.setattr(torch.backends.mkldnn, "enabled", False)  # conv2d then sends batches >= 16 to NNPACK
    assert primitive.error_bound == ERROR_BOUNDS[Family.WINOGRAD]
    assert primitive.availability().ok
