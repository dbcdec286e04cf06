"""Winograd minimal filtering F(m x m, r x r) for unstrided convolutions (Lavin & Gray 2016; Mulder et al. 3.1).

Y = A^T [ (G g G^T) (.) (B^T d B) ] A over overlapping (m+r-1)^2 input tiles, the element-wise products
summed over input channels as (m+r-1)^2 GEMMs. The matrices come from Toom-Cook interpolation at the points
0, +-1, +-2, ... and infinity: for the linear convolution c = V^-1 [(V_m u) (.) (V_r g)] (V the Vandermonde
matrix of the points), transposing gives the correlation y = V_m^T [(V_r g) (.) (V^-T d)], so
A^T = V_m^T, G = V_r, B^T = V^-T. With points 0, 1, -1 this is, up to row scaling, Lavin's F(2,3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from nnperf.primitives._base import CPU_AND_CUDA, Bound, Family, Primitive
from nnperf.primitives._config import ConvConfig, pad_input
from nnperf.primitives._layout import CHW

if TYPE_CHECKING:
    import torch

POINTS = (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5)
"""Interpolation points in the usual order (infinity is always added last)."""


def winograd_matrices(m: int, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T (m, a), G (a, r), B^T (a, a)) of F(m, r), a = m + r - 1, in float64."""
    a = m + r - 1
    if a - 1 > len(POINTS):
        raise ValueError(f"F({m},{r}) needs {a - 1} finite points; only {len(POINTS)} are defined")
    points = np.array(POINTS[: a - 1])

    def vandermonde(cols: int) -> np.ndarray:
        v = np.zeros((a, cols))
        v[:-1] = points[:, None] ** np.arange(cols)[None, :]
        v[-1, -1] = 1.0  # the point at infinity takes the leading coefficient
        return v

    return vandermonde(m).T, vandermonde(r), np.linalg.inv(vandermonde(a)).T


@dataclass(frozen=True)
class Winograd(Primitive):
    """F(m x m, r x r): r x r kernels, stride 1, dilation 1; any padding and groups."""

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    m: int = 2
    r: int = 3

    def applies(self, config: ConvConfig) -> bool:
        return config.k == (self.r, self.r) and config.stride == (1, 1) and config.dilation == (1, 1)

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch
        import torch.nn.functional as F

        m, r = self.m, self.r
        a = m + r - 1
        at64, g64, bt64 = (torch.from_numpy(v).to(w.device) for v in winograd_matrices(m, r))  # on w's device
        at, bt = at64.float(), bt64.float()
        groups, fg, cg = config.groups, config.f // config.groups, config.c // config.groups
        # the kernel transform in float64, then rounded once
        u = torch.einsum("ai,fcij,bj->abfc", g64, w.double(), g64)
        u = u.float().reshape(a * a, groups, fg, cg).contiguous()
        bias = 0.0 if b is None else b.view(1, config.f, 1, 1)
        (ho, wo), (hp, wp) = config.out, config.padded
        th, tw = -(-ho // m), -(-wo // m)

        def run(x: torch.Tensor) -> torch.Tensor:
            xp = F.pad(pad_input(x, config), (0, tw * m + r - 1 - wp, 0, th * m + r - 1 - hp))
            n = xp.shape[0]
            tiles = xp.unfold(2, a, m).unfold(3, a, m)  # (n, c, th, tw, a, a)
            v = torch.einsum("ai,nctwij,bj->abnctw", bt, tiles, bt)
            v = v.reshape(a * a, n, groups, cg, th * tw).permute(0, 2, 3, 1, 4).reshape(a * a, groups, cg, -1)
            mm = (u @ v).view(a, a, groups, fg, n, th, tw)
            y = torch.einsum("ia,abgfntw,jb->ngftiwj", at, mm, at)
            return y.reshape(n, config.f, th * m, tw * m)[:, :, :ho, :wo] + bias

        return run


WINOGRADS: tuple[Primitive, ...] = (
    Winograd("winograd-2x3", Family.WINOGRAD, CHW, CHW, "torch ops", "3x3 kernel, stride 1, dilation 1", m=2, r=3),
    Winograd("winograd-4x3", Family.WINOGRAD, CHW, CHW, "torch ops", "3x3 kernel, stride 1, dilation 1", m=4, r=3),
    Winograd("winograd-2x5", Family.WINOGRAD, CHW, CHW, "torch ops", "5x5 kernel, stride 1, dilation 1", m=2, r=5),
)
