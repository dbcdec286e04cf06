"""ShuffleNet V2 1.0x (Ma et al., 2018), 224x224.

"ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design",
Table 5 (1.0x: output channels 24, 116, 232, 464, 1024; stages of 4, 8 and 4
units), in torchvision's layout: conv3x3/2 (24) + BN + ReLU, max pool 3x3/2,
three stages whose first unit (Fig. 3(d)) has stride 2 and two branches and
whose other units (Fig. 3(c)) split the channels in two halves with
``chunk``, then concatenate and shuffle the channels in 2 groups (reshape,
transpose, reshape: one CHANNEL_SHUFFLE layer in the IR); conv1x1 to 1024 + BN
+ ReLU, global average pool (a mean over H and W), FC 1000. Convolutions have
no bias. 2,278,604 parameters; about 146 M MACs.
"""

from __future__ import annotations

import torch
from torch import nn


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """The channels of ``x`` interleaved across ``groups`` (section 3.1 of ShuffleNet v1)."""
    batch, channels, height, width = x.size()
    x = x.view(batch, groups, channels // groups, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batch, channels, height, width)


def _depthwise(channels: int, stride: int) -> list[nn.Module]:
    return [nn.Conv2d(channels, channels, 3, stride, 1, groups=channels, bias=False), nn.BatchNorm2d(channels)]


def _pointwise(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


class ShuffleUnit(nn.Module):
    """Fig. 3(c) (stride 1: split, one branch, concat, shuffle) or 3(d) (stride 2: two branches)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        half = cout // 2
        self.stride = stride
        self.branch1 = nn.Sequential(*_depthwise(cin, stride), *_pointwise(cin, half)) if stride > 1 else None
        self.branch2 = nn.Sequential(*_pointwise(cin if stride > 1 else half, half), *_depthwise(half, stride),
                                     *_pointwise(half, half))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.branch1 is None:  # fixed at construction, so tracing sees one path
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """ShuffleNet V2 1.0x for 3x224x224 ImageNet input (torchvision layout)."""

    def __init__(self, num_classes: int = 1000, repeats: tuple[int, ...] = (4, 8, 4),
                 channels: tuple[int, ...] = (24, 116, 232, 464, 1024)) -> None:
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, channels[0], 3, 2, 1, bias=False), nn.BatchNorm2d(channels[0]),
                                   nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        stages: list[nn.Module] = []
        cin = channels[0]
        for n, cout in zip(repeats, channels[1:4]):
            stages.append(nn.Sequential(ShuffleUnit(cin, cout, 2), *(ShuffleUnit(cout, cout, 1) for _ in range(n - 1))))
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.conv5 = nn.Sequential(*_pointwise(cin, channels[4]))
        self.fc = nn.Linear(channels[4], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv5(self.stages(self.maxpool(self.conv1(x))))
        return self.fc(x.mean([2, 3]))


def shufflenet_v2_x1_0() -> nn.Module:
    """ShuffleNet V2 1.0x, 1000 classes, random weights."""
    return ShuffleNetV2()
