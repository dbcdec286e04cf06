"""U-Net (Ronneberger, Fischer & Brox, 2015), a small padded variant.

"U-Net: Convolutional Networks for Biomedical Image Segmentation", MICCAI 2015:
a contracting path of double 3x3 convolutions (each with ReLU) and 2x2 max
pools, an expanding path of 2x2 stride-2 transposed convolutions ("up-convolution"
halving the channels), concatenation with the skip connection of the same
level, double 3x3 convolutions, and a final 1x1 convolution to 2 classes.
Variant: 4 pooling levels, base width 32 (32, 64, 128, 256, bottleneck 512)
instead of the paper's 64, padding 1 so that skip connections need no
cropping, no batch normalisation, 1x3x256x256 input. There is no single
published figure for this variant; its MACs and parameters are computed from
the architecture in tests/ir/test_zoo_metrics.py: 12,093,358,080 MACs with the
conv bias additions, 7,760,130 parameters.
"""

from __future__ import annotations

import torch
from torch import nn


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """U-Net with ``levels`` poolings, ``base`` channels at full resolution and ``classes`` output maps."""

    def __init__(self, in_channels: int = 3, classes: int = 2, base: int = 32, levels: int = 4) -> None:
        super().__init__()
        widths = [base * 2**i for i in range(levels + 1)]
        self.down = nn.ModuleList([_double_conv(in_channels, widths[0])])
        self.down.extend(_double_conv(widths[i], widths[i + 1]) for i in range(levels))
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList(nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2)
                                for i in reversed(range(levels)))
        self.merge = nn.ModuleList(_double_conv(2 * widths[i], widths[i]) for i in reversed(range(levels)))
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else self.pool(x))
            skips.append(x)
        x = skips.pop()
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([skips.pop(), up(x)], dim=1))
        return self.head(x)


def unet() -> nn.Module:
    """The zoo's U-Net: 4 levels, base 32, 3 input channels, 2 classes, random weights."""
    return UNet()
