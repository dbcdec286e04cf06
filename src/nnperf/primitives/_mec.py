"""MEC, the memory-efficient convolution (Cho & Brand 2017, "MEC: Memory-efficient Convolution for Deep Neural
Network"; Mulder et al. 3.1 and Table 6: mec-col and mec-row-partition), written on torch ops.

im2col copies every input pixel about kh*kw/(sh*sw) times into an (oh*ow, kh*kw*c) patch matrix. MEC lowers the
zero-padded input along the width only: L (ow, hp, kw, c) holds, for every output column w, the kw-wide strip
(columns w*sw + j*dw) of every padded input row, about kw/sw copies of the input, kh/sh times fewer than im2col.
Output row h needs rows h*sh + i*dh of every strip; with dilation 1 they are the consecutive block
L[:, h*sh : h*sh + kh], an (ow, kh*kw*c) matrix whose rows lie hp*kw*c floats apart in L. So each output row is
one GEMM that reads its window of L where it is (for BLAS a pointer offset and a leading dimension; here a strided
view), and the windows of all rows overlap: nothing of im2col's size is ever copied.

- ``mec-col`` (hwc -> hwc): output row h is L_h @ W, the window times the weights reordered to (kh*kw*c, f): an
  (ow, f) result per row, the hwc layout.
- ``mec-row-partition`` (hcw -> hcw): output row h is W @ L_h^T, the (f, kh*kw*c) weights times the window
  transposed: an (f, ow) result per row, the hcw layout (Mulder et al.'s im x c x im). Output rows are computed in
  partitions of consecutive rows, each of a bounded size (:attr:`Mec.partition_bytes`).

A batch is folded into the GEMMs' ow dimension (L is (n*ow, hp, kw, c): image n's strips follow image n-1's, so a
window's rows stay equally spaced). Groups are a batch of per-group GEMMs: L keeps a group's channels together
(g, n*ow, hp, kw, c/g), so each group's window is a strided matrix too. A dilated kernel (dh > 1) has rows that
are not consecutive in L: it is kh accumulated GEMMs over windows of one row (K = kw*c/g), one per kernel row.
Every GEMM is a ``torch.bmm`` batched over output rows or over groups, whichever is longer, the other looped:
``bmm`` takes the strided windows and writes a strided result in place, so the only copies are the padding, the
lowering and, for a batch, the output put in image order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from nnperf.primitives._algorithms import EVERYTHING
from nnperf.primitives._base import CPU_AND_CUDA, Bound, Family, Primitive
from nnperf.primitives._config import ConvConfig, pad_input
from nnperf.primitives._layout import HCW, HWC

if TYPE_CHECKING:
    import torch

_FLOAT_BYTES = 4


def lower(x: torch.Tensor, config: ConvConfig) -> torch.Tensor:
    """MEC's lowered input L of ``x`` (logical NCHW, any memory format): the contiguous (g, n*ow, hp, kw, c/g)
    tensor with L[g, n*ow + w, r, j, k] = padded x[n, g*c/g + k, r, w*sw + j*dw] (Cho & Brand's compact lowering)."""
    g, (_, kw), (_, sw), (_, dw), (_, ow) = config.groups, config.k, config.stride, config.dilation, config.out
    xp = pad_input(x, config)
    n, _, hp, _ = xp.shape
    strips = xp.unfold(3, (kw - 1) * dw + 1, sw)[..., ::dw]  # (n, c, hp, ow, kw), a view
    strips = strips.unflatten(1, (g, config.c // g))  # (n, g, c/g, hp, ow, kw)
    return strips.permute(1, 0, 4, 3, 5, 2).contiguous().view(g, n * ow, hp, kw, config.c // g)


def windows(low: torch.Tensor, config: ConvConfig, row: int, rows: int) -> torch.Tensor:
    """The (g, oh, n*ow, rows*kw*c/g) view of ``low`` (:func:`lower`) whose [g, h] is output row h's window:
    input rows h*sh + row ... h*sh + row + rows - 1 of every strip, one matrix with a row stride of hp*kw*c/g."""
    g, m, hp, kw, cg = low.shape
    oh, sh = config.out[0], config.stride[0]
    step = kw * cg  # one input row of a strip
    return low.as_strided((g, oh, m, rows * step), (low.stride(0), sh * step, hp * step, 1),
                          low.storage_offset() + row * step)


def bmm_grid(out: torch.Tensor, lhs: torch.Tensor, rhs: torch.Tensor, accumulate: bool) -> None:
    """``out[i, r] = lhs[i, r] @ rhs[i, r]`` (``+=`` when ``accumulate``) for every group i and output row r of
    ``out`` (g, rows, M, N); an operand with one row (the weights) serves every row. One ``torch.bmm`` per group
    batched over the rows, or per row batched over the groups, whichever makes fewer calls; ``bmm`` reads strided
    operands and writes into a strided ``out`` without copying either."""
    import torch

    def gemm(o: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
        if accumulate:
            o.baddbmm_(a, b)
        else:
            torch.bmm(a, b, out=o)

    groups, rows = out.shape[:2]
    if groups <= rows:
        for i in range(groups):
            gemm(out[i], lhs[i].expand(rows, -1, -1), rhs[i].expand(rows, -1, -1))
    else:
        for r in range(rows):
            gemm(out[:, r], lhs[:, min(r, lhs.shape[1] - 1)], rhs[:, min(r, rhs.shape[1] - 1)])


def weight_parts(w: torch.Tensor, config: ConvConfig) -> list[tuple[int, int, torch.Tensor]]:
    """(first input row, rows, weights (g, 1, rows*kw*c/g, f/g)) of each GEMM pass: one pass of all kh kernel rows
    (K = kh*kw*c/g, in L's (row, column, channel) order) without vertical dilation, else one per kernel row."""
    g, (kh, kw), dh = config.groups, config.k, config.dilation[0]
    fg, cg = config.f // g, config.c // g
    wr = w.reshape(g, fg, cg, kh, kw).permute(0, 3, 4, 2, 1)  # (g, kh, kw, c/g, f/g)
    if dh == 1:
        return [(0, kh, wr.reshape(g, 1, kh * kw * cg, fg).contiguous())]
    return [(i * dh, 1, wr[:, i].reshape(g, 1, kw * cg, fg).contiguous()) for i in range(kh)]


@dataclass(frozen=True)
class Mec(Primitive):
    """MEC (see the module docstring). ``orientation`` "col" computes L_h @ W per output row (hwc in and out);
    "row" computes W @ L_h^T (hcw in and out), in partitions of consecutive output rows whose results hold at most
    ``partition_bytes`` (at least one row each). The rows are independent GEMMs, so a partition is what a parallel
    implementation hands to one thread; here torch's GEMMs use the threads, and a partition bounds what one
    batched GEMM writes."""

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    orientation: str = "col"
    partition_bytes: int = 256 * 1024

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        # inference only: bmm's out= refuses tensors that autograd tracks
        w, b = w.detach(), None if b is None else b.detach()
        parts = weight_parts(w, config)
        if self.orientation == "row":
            parts = [(row, rows, wp.transpose(2, 3).contiguous()) for row, rows, wp in parts]
        bias = None if b is None else b.view(1, config.f, 1, 1)
        run = self._col if self.orientation == "col" else self._row

        def bound(x: torch.Tensor) -> torch.Tensor:
            y = run(lower(x, config), parts, config)
            return y if bias is None else y.add_(bias)

        return bound

    @staticmethod
    def _col(low: torch.Tensor, parts: list[tuple[int, int, torch.Tensor]], config: ConvConfig) -> torch.Tensor:
        """(ow, f) per output row into an (oh, n*ow, g, f/g) buffer; returned as a channels-last (n, f, oh, ow)."""
        g, m = low.shape[:2]
        (oh, ow), n = config.out, m // config.out[1]
        buf = low.new_empty((oh, m, g, config.f // g))
        for k, (row, rows, wp) in enumerate(parts):
            bmm_grid(buf.permute(2, 0, 1, 3), windows(low, config, row, rows), wp, accumulate=k > 0)
        # a batch's rows are (oh, n, ow): images to the front, one copy of the output (none for one image)
        y = buf.view(oh, n, ow, config.f).transpose(0, 1).contiguous()
        return y.permute(0, 3, 1, 2)

    def _row(self, low: torch.Tensor, parts: list[tuple[int, int, torch.Tensor]], config: ConvConfig
             ) -> torch.Tensor:
        """(f, ow) per output row into an (oh, g, f/g, n*ow) buffer, a partition of rows at a time; returned as an
        hcw (n, f, oh, ow)."""
        g, m = low.shape[:2]
        (oh, ow), n, f = config.out, m // config.out[1], config.f
        buf = low.new_empty((oh, g, f // g, m))
        step = max(1, self.partition_bytes // (_FLOAT_BYTES * f * m))
        views = [(windows(low, config, row, rows).transpose(2, 3), wp) for row, rows, wp in parts]
        for start in range(0, oh, step):
            out = buf[start:start + step].permute(1, 0, 2, 3)
            for k, (window, wp) in enumerate(views):
                bmm_grid(out, wp, window[:, start:start + step], accumulate=k > 0)
        y = buf.view(oh, f, n, ow).permute(2, 0, 1, 3).contiguous()  # (n, oh, f, ow): a copy only for a batch
        return y.permute(0, 2, 1, 3)


MECS: tuple[Primitive, ...] = (
    Mec("mec-col", Family.MEC, HWC, HWC, "torch ops", EVERYTHING, orientation="col"),
    Mec("mec-row-partition", Family.MEC, HCW, HCW, "torch ops", EVERYTHING, orientation="row"),
)
"""The two MEC primitives of Mulder et al. Table 6."""
