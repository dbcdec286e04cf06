"""ConvNeXt-Tiny (Liu et al., 2022), with 1x1 convolutions for the pointwise layers.

"A ConvNet for the 2020s", CVPR 2022. Stem 4x4/4 convolution + LayerNorm;
four stages of depths (3, 3, 9, 3) and widths (96, 192, 384, 768), each after
the first opened by a LayerNorm and a 2x2/2 convolution; a block is a 7x7
depthwise convolution, LayerNorm over the channels, pointwise 4x expansion,
GELU, pointwise projection, layer scale (a per-channel multiply) and the
residual add; head: global average pool, LayerNorm, fully connected 1000.
The paper notes its pointwise layers are 1x1 convolutions; written so (and
LayerNorm over the channels as :class:`LayerNorm2d`), the network needs no
permutation. Stochastic depth is the identity at inference. 28,589,128
parameters as torchvision's; 4.47 GMACs counting the bias additions of the
1x1 convolutions (torchvision: 4.46 GFLOPS, counted as MACs).
"""

from __future__ import annotations

import torch
from torch import nn

from nnperf.ir.modules import LayerNorm2d, Scale


class Block(nn.Module):
    """ConvNeXt block: dw 7x7, LayerNorm, 1x1 C->4C, GELU, 1x1 4C->C, layer scale, residual."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = LayerNorm2d(dim)
        self.pwconv1 = nn.Conv2d(dim, 4 * dim, 1)
        self.act = nn.GELU()
        self.pwconv2 = nn.Conv2d(4 * dim, dim, 1)
        self.gamma = Scale(dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.gamma(self.pwconv2(self.act(self.pwconv1(self.norm(self.dwconv(x))))))


class ConvNeXt(nn.Module):
    def __init__(self, depths: tuple[int, ...] = (3, 3, 9, 3), dims: tuple[int, ...] = (96, 192, 384, 768),
                 classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0])]
        for i, (depth, dim) in enumerate(zip(depths, dims)):
            if i > 0:
                layers += [LayerNorm2d(dims[i - 1]), nn.Conv2d(dims[i - 1], dim, 2, stride=2)]
            layers += [Block(dim) for _ in range(depth)]
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.fc = nn.Linear(dims[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(torch.flatten(self.pool(self.features(x)), 1)))


def convnext_tiny() -> nn.Module:
    """ConvNeXt-Tiny for 1000 classes, random weights."""
    return ConvNeXt()
