"""Data layouts of activations and the transformations between them (Mulder et al. 3.2.2).

A tensor in a layout is always a torch tensor:

* ``chw`` (NCHW): a contiguous (n, c, h, w) tensor;
* ``hwc`` (NHWC): a logical (n, c, h, w) tensor in ``torch.channels_last`` memory, so that torch ops take it
  as it is and its bytes are (n, h, w, c);
* ``hcw`` (the paper's im x c x im): a logical (n, c, h, w) tensor whose bytes are (n, h, c, w), each input row
  a (c, w) matrix (``x.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)``). torch's ops take it as any strided
  tensor and its element-wise ops keep it, but its convolutions and poolings write chw: as with the blocked
  layout, only primitives read and write it (MEC's row-partitioned GEMMs), and other layers get it transformed;
* ``chw<B>c`` (NCHWc, blocked): a contiguous (n, ceil(c/B), h, w, B) tensor whose channels past c are zero,
  the layout of ONNX Runtime's NCHWc kernels (B = 16 with AVX-512, 8 with AVX2).

A transformation between two layouts is a copy (the identity costs nothing, as in the paper); its cost is
asymmetric (gathering is not scattering), so both directions are separate objects to time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnperf.primitives._config import PrimitiveError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Layout:
    """A data layout by name; ``block`` is the channel block of a blocked layout (0 for the others)."""

    name: str
    block: int = 0

    def __str__(self) -> str:
        return self.name


CHW = Layout("chw")
HWC = Layout("hwc")
HCW = Layout("hcw")

PLAIN_LAYOUTS: tuple[Layout, ...] = (CHW, HWC, HCW)
"""The layouts without channel blocks, in the order listings give them (the blocked ones come after)."""


def layout_order(layout: Layout) -> tuple[int, int, str]:
    """A sort key: chw, hwc, hcw, then the blocked layouts by block size."""
    plain = PLAIN_LAYOUTS.index(layout) if layout in PLAIN_LAYOUTS else len(PLAIN_LAYOUTS)
    return layout.block, plain, layout.name


def blocked(block: int) -> Layout:
    """The NCHWc layout with channel blocks of ``block``."""
    if block < 2:
        raise PrimitiveError(f"a channel block must be at least 2, got {block}")
    return Layout(f"chw{block}c", block)


def parse_layout(name: str) -> Layout:
    """``chw``, ``hwc``, ``hcw`` or ``chw<B>c``."""
    for layout in PLAIN_LAYOUTS:
        if name == layout.name:
            return layout
    if name.startswith("chw") and name.endswith("c") and name[3:-1].isdigit():
        return blocked(int(name[3:-1]))
    raise PrimitiveError(f"unknown layout {name!r}; known: chw, hwc, hcw, chw<B>c (e.g. chw16c)")


def to_layout(x: torch.Tensor, layout: Layout) -> torch.Tensor:
    """``x`` (a logical NCHW tensor in chw, hwc or hcw memory) in ``layout``; ``x`` itself (or, for hcw, a view of
    it) when it is in ``layout`` already."""
    import torch

    if layout == CHW:
        return x.contiguous()
    if layout == HWC:
        return x.contiguous(memory_format=torch.channels_last)
    if layout == HCW:
        return x.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
    n, c, h, w = x.shape
    b = layout.block
    blocks = -(-c // b)
    out = x.new_zeros((n, blocks, h, w, b))
    view = out.permute(0, 1, 4, 2, 3)  # (n, blocks, b, h, w), a view into out
    full, rest = divmod(c, b)
    if full:
        view[:, :full].copy_(x[:, :full * b].reshape(n, full, b, h, w))
    if rest:
        view[:, full, :rest].copy_(x[:, full * b:])
    return out


def from_layout(x: torch.Tensor, layout: Layout, channels: int | None = None) -> torch.Tensor:
    """The logical NCHW tensor (chw memory) of ``x`` in ``layout``; ``channels`` drops a blocked layout's padding."""
    if not layout.block:
        return x.contiguous()
    n, blocks, h, w, b = x.shape
    y = x.permute(0, 1, 4, 2, 3).reshape(n, blocks * b, h, w)
    return (y if channels is None else y[:, :channels]).contiguous()


@dataclass(frozen=True)
class LayoutTransform:
    """The copy of an activation from layout ``src`` to ``dst``; ``run`` returns a new tensor (or ``x`` for the
    identity). ``channels`` is needed only when leaving a blocked layout whose channel count is not a multiple
    of its block."""

    src: Layout
    dst: Layout

    @property
    def name(self) -> str:
        return f"{self.src}->{self.dst}"

    def run(self, x: torch.Tensor, channels: int | None = None) -> torch.Tensor:
        if self.src == self.dst:
            return x
        if self.src.block:
            x = from_layout(x, self.src, channels)
        return to_layout(x, self.dst)


def layout_transforms(layouts: tuple[Layout, ...]) -> list[LayoutTransform]:
    """Every transformation between ``layouts``, the identities included (K*K of them for K layouts)."""
    return [LayoutTransform(a, b) for a in layouts for b in layouts]
