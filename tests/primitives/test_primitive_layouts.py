"""Layouts and the transformations between them: exact round trips, the memory order of hwc and hcw, the blocked
layout's zero padding."""

from __future__ import annotations

import pytest
import torch

from nnperf.primitives import (
    CHW,
    HCW,
    HWC,
    PLAIN_LAYOUTS,
    Layout,
    LayoutTransform,
    PrimitiveError,
    all_transforms,
    blocked,
    from_layout,
    parse_layout,
    primitive_layouts,
    to_layout,
)

X = torch.randn(2, 20, 5, 7, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("middle", [HWC, HCW, blocked(8), blocked(16)], ids=str)
def test_chw_to_a_layout_and_back_is_identical(middle) -> None:  # type: ignore[no-untyped-def]
    there = LayoutTransform(CHW, middle).run(X)
    back = LayoutTransform(middle, CHW).run(there, channels=20)
    assert torch.equal(back, X)
    assert back.is_contiguous()


def test_hwc_is_channels_last_memory_of_the_same_logical_tensor() -> None:
    y = LayoutTransform(CHW, HWC).run(X)
    assert y.shape == X.shape and torch.equal(y, X)
    assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()
    assert torch.equal(y.permute(0, 2, 3, 1).reshape(-1), X.permute(0, 2, 3, 1).reshape(-1))


def test_hcw_is_the_same_logical_tensor_with_each_row_a_channels_by_width_matrix() -> None:
    y = to_layout(X, HCW)
    _, c, h, w = X.shape  # 2, 20, 5, 7
    assert y.shape == X.shape and torch.equal(y, X)
    assert y.stride() == (h * c * w, w, c * w, 1)  # bytes (n, h, c, w)
    flat = torch.as_strided(y, (y.numel(),), (1,))  # its memory in order
    assert torch.equal(flat, X.permute(0, 2, 1, 3).reshape(-1))
    assert flat[(1 * h + 3) * c * w + 4 * w + 6] == X[1, 4, 3, 6]
    assert to_layout(y, HCW).data_ptr() == y.data_ptr()  # already hcw: no copy
    back = from_layout(y, HCW)
    assert torch.equal(back, X) and back.is_contiguous()


@pytest.mark.parametrize("src", [CHW, HWC, HCW, blocked(8)], ids=str)
@pytest.mark.parametrize("dst", [CHW, HWC, HCW, blocked(8)], ids=str)
def test_every_transform_between_the_layouts_keeps_the_values_and_writes_dst(src: Layout, dst: Layout) -> None:
    y = LayoutTransform(src, dst).run(to_layout(X, src), channels=20)
    assert torch.equal(from_layout(y, dst, 20), X)
    assert torch.equal(y, to_layout(X, dst))
    assert y.stride() == to_layout(X, dst).stride()


def test_a_move_between_plain_layouts_of_an_activation_with_the_same_bytes_copies_nothing() -> None:
    # one channel: chw, hwc and hcw are all (n, h, w); one row: chw and hcw are (n, c, w)
    one_channel, one_row = X[:, :1].contiguous(), X[:, :, :1].contiguous()
    for a in PLAIN_LAYOUTS:
        for b in PLAIN_LAYOUTS:
            x = to_layout(one_channel, a)
            assert LayoutTransform(a, b).run(x).data_ptr() == x.data_ptr()
    assert to_layout(one_row, HCW).data_ptr() == one_row.data_ptr()
    assert to_layout(to_layout(one_row, HCW), CHW).data_ptr() == one_row.data_ptr()


def test_blocked_layout_groups_channels_in_blocks_and_pads_with_zeros() -> None:
    y = to_layout(X, blocked(8))  # 20 channels -> 3 blocks of 8, the last 4 of block 2 zero
    assert y.shape == (2, 3, 5, 7, 8)
    assert torch.equal(y[:, 1, :, :, 3], X[:, 8 + 3])
    assert torch.count_nonzero(y[:, 2, :, :, 4:]) == 0
    assert from_layout(y, blocked(8)).shape == (2, 24, 5, 7)  # without channels the padding stays


def test_hwc_to_blocked_and_back_to_hwc() -> None:
    hwc = to_layout(X, HWC)
    back = LayoutTransform(blocked(16), HWC).run(LayoutTransform(HWC, blocked(16)).run(hwc), channels=20)
    assert torch.equal(back, X) and back.is_contiguous(memory_format=torch.channels_last)


def test_the_identity_returns_its_input() -> None:
    assert LayoutTransform(HWC, HWC).run(X) is X


def test_all_transforms_pairs_every_layout_the_primitives_use() -> None:
    layouts = primitive_layouts()
    # the paper's three (mec-row-partition reads and writes hcw), then ort-nchwc's blocked one
    assert layouts[:3] == (CHW, HWC, HCW) == PLAIN_LAYOUTS
    assert len(layouts) == 4 and layouts[3].block in (8, 16)
    assert primitive_layouts() == layouts  # the same order every time
    transforms = all_transforms()
    assert len(transforms) == len(layouts) ** 2 == 16  # Mulder et al. 3.2.2: K*K, identities included
    assert [t.name for t in transforms[:4]] == ["chw->chw", "chw->hwc", "chw->hcw", f"chw->{layouts[3]}"]
    assert {t.name for t in transforms} >= {"hwc->hcw", "hcw->hwc", "hcw->chw", f"hcw->{layouts[3]}"}


def test_layout_names_parse() -> None:
    assert parse_layout("chw16c") == blocked(16)
    assert parse_layout("hwc") is HWC
    assert parse_layout("hcw") is HCW
    with pytest.raises(PrimitiveError, match="unknown layout 'nchw'; known: chw, hwc, hcw, chw<B>c"):
        parse_layout("nchw")
