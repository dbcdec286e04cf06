"""Layouts and the transformations between them: exact round trips, the blocked layout's zero padding."""

from __future__ import annotations

import pytest
import torch

from nnperf.primitives import (
    CHW,
    HWC,
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


@pytest.mark.parametrize("middle", [HWC, blocked(8), blocked(16)], ids=str)
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
    assert layouts[:2] == (CHW, HWC)
    transforms = all_transforms()
    assert len(transforms) == len(layouts) ** 2  # Mulder et al. 3.2.2: K*K, identities included
    assert {t.name for t in transforms} >= {"chw->hwc", "hwc->chw", "chw->chw"}


def test_layout_names_parse() -> None:
    assert parse_layout("chw16c") == blocked(16)
    assert parse_layout("hwc") is HWC
    with pytest.raises(PrimitiveError, match="unknown layout 'nchw'"):
        parse_layout("nchw")
