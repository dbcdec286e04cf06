"""Convolution algorithms written on torch tensor ops: direct, im2col/im2row, kn2row/kn2col, 1x1-as-GEMM, FFT.

Each is the algorithm of its family in Mulder et al. 3.1 (and Anderson & Gregg's triNNity library that the
paper profiles), with grouped convolutions done as a batch of per-group GEMMs. Tensors are logical NCHW; a
``hwc`` input or output is a channels-last tensor (see ``_layout``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from nnperf.primitives._base import CPU_AND_CUDA, Bound, Family, Primitive
from nnperf.primitives._config import ConvConfig, pad_input
from nnperf.primitives._layout import CHW, HWC

if TYPE_CHECKING:
    import torch


def _bias(b: torch.Tensor | None, f: int) -> torch.Tensor | float:
    return 0.0 if b is None else b.view(1, f, 1, 1)


def _taps(config: ConvConfig, i: int, j: int) -> tuple[slice, slice]:
    """The rows and columns of the padded input that kernel offset (i, j) meets, one per output pixel."""
    (ho, wo), (sh, sw), (dh, dw) = config.out, config.stride, config.dilation
    return slice(i * dh, i * dh + sh * (ho - 1) + 1, sh), slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)


def _hwc_output(y: torch.Tensor, config: ConvConfig) -> torch.Tensor:
    """(n, groups, ho*wo, f/groups) GEMM results as a channels-last (n, f, ho, wo) tensor."""
    n, (ho, wo) = y.shape[0], config.out
    return y.permute(0, 2, 1, 3).reshape(n, ho, wo, config.f).permute(0, 3, 1, 2)


def _hwc_padded(x: torch.Tensor, config: ConvConfig) -> torch.Tensor:
    """A channels-last input as its (n, h, w, c) bytes, zero-padded."""
    import torch.nn.functional as F

    top, left, bottom, right = config.padding
    xh = x.permute(0, 2, 3, 1)
    return F.pad(xh, (0, 0, left, right, top, bottom)) if any(config.padding) else xh


@dataclass(frozen=True)
class Direct(Primitive):
    """direct-sum2d: for each kernel offset, the shifted input times that offset's weight slice, accumulated."""

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch

        g, (kh, kw) = config.groups, config.k
        wg = w.reshape(g, config.f // g, config.c // g, kh, kw)
        bias = _bias(b, config.f)

        def run(x: torch.Tensor) -> torch.Tensor:
            xp = pad_input(x, config)
            n = xp.shape[0]
            xg = xp.reshape(n, g, config.c // g, *xp.shape[2:])
            y = xg.new_zeros((n, g, config.f // g, *config.out))
            for i in range(kh):
                for j in range(kw):
                    rows, cols = _taps(config, i, j)
                    y += torch.einsum("gfc,ngchw->ngfhw", wg[..., i, j], xg[..., rows, cols])
            return y.reshape(n, config.f, *config.out) + bias

        return run


@dataclass(frozen=True)
class Im2col(Primitive):
    """im2col: the (c*kh*kw, ho*wo) patch matrix of a chw input (``unfold``) times the (f, c*kh*kw) weights.

    ``orientation`` "fhw" computes W @ P, an (f, hw) result (chw output); "hwf" computes P^T @ W^T, an
    (hw, f) result (hwc output).
    """

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    orientation: str = "fhw"

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch.nn.functional as F

        g = config.groups
        wm = w.reshape(g, config.f // g, -1)
        wt = wm.transpose(1, 2).contiguous()
        bias = _bias(b, config.f)

        def run(x: torch.Tensor) -> torch.Tensor:
            cols = F.unfold(pad_input(x, config), config.k, dilation=config.dilation, stride=config.stride)
            n = cols.shape[0]
            cols = cols.view(n, g, -1, cols.shape[-1])
            if self.orientation == "fhw":
                return (wm @ cols).reshape(n, config.f, *config.out) + bias
            return _hwc_output(cols.transpose(2, 3) @ wt, config) + bias

        return run


@dataclass(frozen=True)
class Im2row(Primitive):
    """im2row: the (ho*wo, kh*kw*c) patch matrix gathered from an hwc input, times the weights reordered to
    (f, kh*kw*c). ``orientation`` "hwf" computes P @ W^T (hwc output); "fhw" computes W @ P^T (chw output)."""

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    orientation: str = "hwf"

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch

        g, (kh, kw), (ho, wo) = config.groups, config.k, config.out
        cg = config.c // g
        wr = w.reshape(g, config.f // g, cg, kh, kw).permute(0, 1, 3, 4, 2).reshape(g, config.f // g, -1)
        wrt = wr.transpose(1, 2).contiguous()
        bias = _bias(b, config.f)

        def run(x: torch.Tensor) -> torch.Tensor:
            xh = _hwc_padded(x, config)
            n = xh.shape[0]
            taps = [xh[:, r, c, :] for r, c in (_taps(config, i, j) for i in range(kh) for j in range(kw))]
            patches = torch.stack(taps, dim=3)  # (n, ho, wo, kh*kw, c)
            patches = patches.view(n, ho * wo, kh * kw, g, cg).permute(0, 3, 1, 2, 4).reshape(n, g, ho * wo, -1)
            if self.orientation == "hwf":
                return _hwc_output(patches @ wrt, config) + bias
            return (wr @ patches.transpose(2, 3)).reshape(n, config.f, ho, wo) + bias

        return run


@dataclass(frozen=True)
class Kn2row(Primitive):
    """kn2row / kn2col: one GEMM of all kh*kw kernel slices with the whole padded input (1x1 convolutions), then
    the kh*kw partial maps shifted and added (Vasudevan et al.; Mulder et al. 3.1). ``orientation`` "row"
    works on chw ((kh*kw*f, c) @ (c, hw)); "col" on hwc ((hw, c) @ (c, kh*kw*f)). Strided layers compute every
    input position and keep every s-th: correct, and why the paper finds kn2 poor for large strides."""

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    orientation: str = "row"

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        g, (kh, kw) = config.groups, config.k
        fg, cg = config.f // g, config.c // g
        wk = w.reshape(g, fg, cg, kh, kw).permute(0, 3, 4, 1, 2).reshape(g, kh * kw * fg, cg)
        wkt = wk.transpose(1, 2).contiguous()
        bias = _bias(b, config.f)

        def run(x: torch.Tensor) -> torch.Tensor:
            if self.orientation == "row":
                xp = pad_input(x, config)
                n, _, hp, wp = xp.shape
                parts = (wk @ xp.reshape(n, g, cg, hp * wp)).view(n, g, kh, kw, fg, hp, wp)
                rows, cols = _taps(config, 0, 0)
                y = parts[:, :, 0, 0, :, rows, cols].clone()
                for i in range(kh):
                    for j in range(kw):
                        if i or j:
                            rows, cols = _taps(config, i, j)
                            y += parts[:, :, i, j, :, rows, cols]
                return y.reshape(n, config.f, *config.out) + bias
            xh = _hwc_padded(x, config)
            n, hp, wp, _ = xh.shape
            xg = xh.reshape(n, hp * wp, g, cg).transpose(1, 2)
            parts = (xg @ wkt).view(n, g, hp, wp, kh, kw, fg)
            rows, cols = _taps(config, 0, 0)
            y = parts[:, :, rows, cols, 0, 0, :].clone()
            for i in range(kh):
                for j in range(kw):
                    if i or j:
                        rows, cols = _taps(config, i, j)
                        y += parts[:, :, rows, cols, i, j, :]
            return y.permute(0, 2, 3, 1, 4).reshape(n, *config.out, config.f).permute(0, 3, 1, 2) + bias

        return run


@dataclass(frozen=True)
class Conv1x1(Primitive):
    """conv-1x1: a 1x1 convolution is one GEMM of the (f, c) weights with the (strided) input pixels;
    ``orientation`` "fhw" on chw, "hwf" on hwc."""

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    orientation: str = "fhw"

    def applies(self, config: ConvConfig) -> bool:
        return config.k == (1, 1)

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        g = config.groups
        fg, cg = config.f // g, config.c // g
        wm = w.reshape(g, fg, cg)
        wt = wm.transpose(1, 2).contiguous()
        bias = _bias(b, config.f)
        (sh, sw), (ho, wo) = config.stride, config.out

        def run(x: torch.Tensor) -> torch.Tensor:
            if self.orientation == "fhw":
                xs = pad_input(x, config)[:, :, ::sh, ::sw]
                n = xs.shape[0]
                return (wm @ xs.reshape(n, g, cg, ho * wo)).reshape(n, config.f, ho, wo) + bias
            xs = _hwc_padded(x, config)[:, ::sh, ::sw, :]
            n = xs.shape[0]
            return _hwc_output(xs.reshape(n, ho * wo, g, cg).transpose(1, 2) @ wt, config) + bias

        return run


def _conjugate_kernel_spectrum(w: torch.Tensor, config: ConvConfig) -> torch.Tensor:
    """conj(rfft2) of the (dilated) kernel at the padded input size, as (hp * wq, groups, f / groups, c / groups).

    Computed as one complex GEMM of the DFT's basis at the kernel's kh * kw taps (exp(+2 pi i (u a / hp + v b / wp)),
    the conjugate's sign, angles in float64) with the weights: the spectrum is written once, in the layout the
    product per frequency reads, where ``rfft2`` of the zero-padded kernel, its conjugate and the permuted copy took
    2 to 5 times as long (16 s for 128 -> 128 channels at 112 x 112 on one core: the largest part of preparing a
    configuration's primitives). The same values to float32 rounding (about 3e-7 of the largest)."""
    import torch

    g, (kh, kw), (dh, dw), (hp, wp) = config.groups, config.k, config.dilation, config.padded
    fg, cg = config.f // g, config.c // g
    wq = wp // 2 + 1
    rows = torch.arange(hp, dtype=torch.float64)[:, None] * (torch.arange(kh, dtype=torch.float64) * dh)[None]
    cols = torch.arange(wq, dtype=torch.float64)[:, None] * (torch.arange(kw, dtype=torch.float64) * dw)[None]
    turns = (rows % hp / hp)[:, None, :, None] + (cols % wp / wp)[None, :, None, :]  # (hp, wq, kh, kw)
    angle = (2 * math.pi * turns).reshape(hp * wq, kh * kw)
    basis = torch.polar(torch.ones_like(angle), angle).to(device=w.device, dtype=torch.complex64)
    weights = w.reshape(config.f * cg, kh * kw).T.to(torch.complex64)
    return (basis @ weights).reshape(hp * wq, g, fg, cg)


@dataclass(frozen=True)
class Fft(Primitive):
    """FFT: the cross-correlation as a product of ``rfft2`` spectra, X * conj(K), summed over input channels
    and brought back with ``irfft2``; the kernel (dilated by inserting zeros) is transformed once, at the padded
    input size (:func:`_conjugate_kernel_spectrum`). Strided layers keep every s-th output of the unstrided
    result."""

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch

        g, (hp, wp) = config.groups, config.padded
        fg, cg = config.f // g, config.c // g
        wq = wp // 2 + 1
        # one (f, c) @ (c, n) product per frequency: batched GEMMs, 7x faster than the einsum on a 64->64 layer
        spectrum = _conjugate_kernel_spectrum(w, config)
        bias = _bias(b, config.f)
        (ho, wo), (sh, sw) = config.out, config.stride

        def run(x: torch.Tensor) -> torch.Tensor:
            xs = torch.fft.rfft2(pad_input(x, config))
            n = xs.shape[0]
            ys = spectrum @ xs.reshape(n, g, cg, hp * wq).permute(3, 1, 2, 0)  # (hp*wq, g, fg, n)
            y = torch.fft.irfft2(ys.permute(3, 1, 2, 0).reshape(n, g, fg, hp, wq), s=(hp, wp))
            y = y[..., : sh * (ho - 1) + 1 : sh, : sw * (wo - 1) + 1 : sw]
            return y.reshape(n, config.f, ho, wo) + bias

        return run


EVERYTHING = "any kernel, stride, padding, groups, dilation"

ALGORITHMS: tuple[Primitive, ...] = (
    Direct("direct", Family.DIRECT, CHW, CHW, "torch ops", EVERYTHING),
    Im2col("im2col-fhw", Family.IM2, CHW, CHW, "torch ops", EVERYTHING, orientation="fhw"),
    Im2col("im2col-hwf", Family.IM2, CHW, HWC, "torch ops", EVERYTHING, orientation="hwf"),
    Im2row("im2row-hwf", Family.IM2, HWC, HWC, "torch ops", EVERYTHING, orientation="hwf"),
    Im2row("im2row-fhw", Family.IM2, HWC, CHW, "torch ops", EVERYTHING, orientation="fhw"),
    Kn2row("kn2row", Family.KN2, CHW, CHW, "torch ops", EVERYTHING, orientation="row"),
    Kn2row("kn2col", Family.KN2, HWC, HWC, "torch ops", EVERYTHING, orientation="col"),
    Conv1x1("conv1x1-fhw", Family.CONV_1X1, CHW, CHW, "torch ops", "1x1 kernel; any stride, padding, groups",
            orientation="fhw"),
    Conv1x1("conv1x1-hwf", Family.CONV_1X1, HWC, HWC, "torch ops", "1x1 kernel; any stride, padding, groups",
            orientation="hwf"),
    Fft("fft", Family.FFT, CHW, CHW, "torch ops", EVERYTHING),
)
"""The torch-op algorithm primitives, one instance each."""
