"""MobileNetV3-Large (Howard et al., 2019), width 1.0, 224x224.

"Searching for MobileNetV3", Table 1 (MobileNetV3-Large), in torchvision's
layout: stem conv3x3/2 (16) + BN + hard-swish; 15 bottlenecks (expand 1x1
when the expansion differs from the input, depthwise k x k, optional
squeeze-and-excite, linear project 1x1, residual add when stride 1 and
in == out) with ReLU in the first six and hard-swish after; last 1x1 conv to
960 + BN + hard-swish, global average pool, FC 1280 + hard-swish,
Dropout(0.2), FC 1000. The squeeze-and-excite block (section 5.3) is a
global average pool, a 1x1 conv with bias to make_divisible(C/4, 8), ReLU, a
1x1 conv with bias back to C, hard sigmoid, and a multiply of the block's
input: its two "FC" layers are counted as 1x1 convolutions on a 1x1 map.
5,483,032 parameters; about 217 M MACs.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from nnperf.zoo._layers import conv_bn


def make_divisible(value: float, divisor: int = 8) -> int:
    """The nearest multiple of ``divisor`` not below 90% of ``value`` (the MobileNet rounding rule)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


_conv_bn = functools.partial(conv_bn, eps=0.001, momentum=0.01)
"""A convolution, batch normalisation as torchvision's MobileNetV3 sets it, and an activation."""


class SqueezeExcitation(nn.Module):
    """x * hard_sigmoid(fc2(relu(fc1(avgpool(x))))), the FCs as 1x1 convolutions with bias."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        squeezed = make_divisible(channels // 4)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.relu = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.scale_activation = nn.Hardsigmoid(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.scale_activation(self.fc2(self.relu(self.fc1(self.avgpool(x)))))
        return scale * x


class Bottleneck(nn.Module):
    """One MobileNetV3 bottleneck (Fig. 4 of the paper)."""

    def __init__(self, cin: int, kernel: int, expanded: int, cout: int, use_se: bool, act: type[nn.Module],
                 stride: int) -> None:
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expanded != cin:
            layers.append(_conv_bn(cin, expanded, 1, 1, 1, act))
        layers.append(_conv_bn(expanded, expanded, kernel, stride, expanded, act))
        if use_se:
            layers.append(SqueezeExcitation(expanded))
        layers.append(_conv_bn(expanded, cout, 1, 1, 1, None))
        self.block = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.use_res_connect:  # fixed at construction, so tracing sees one path
            return x + self.block(x)
        return self.block(x)


_RE, _HS = nn.ReLU, nn.Hardswish
# (input, kernel, expanded, output, squeeze-and-excite, activation, stride): Table 1 of the paper.
_LARGE = [
    (16, 3, 16, 16, False, _RE, 1), (16, 3, 64, 24, False, _RE, 2), (24, 3, 72, 24, False, _RE, 1),
    (24, 5, 72, 40, True, _RE, 2), (40, 5, 120, 40, True, _RE, 1), (40, 5, 120, 40, True, _RE, 1),
    (40, 3, 240, 80, False, _HS, 2), (80, 3, 200, 80, False, _HS, 1), (80, 3, 184, 80, False, _HS, 1),
    (80, 3, 184, 80, False, _HS, 1), (80, 3, 480, 112, True, _HS, 1), (112, 3, 672, 112, True, _HS, 1),
    (112, 5, 672, 160, True, _HS, 2), (160, 5, 960, 160, True, _HS, 1), (160, 5, 960, 160, True, _HS, 1),
]


BottleneckSetting = tuple[int, int, int, int, bool, type[nn.Module], int]
"""(input, kernel, expanded, output, squeeze-and-excite, activation, stride) of one bottleneck."""


class MobileNetV3Large(nn.Module):
    """MobileNetV3-Large 1.0 for 3x224x224 ImageNet input (torchvision layout); other ``settings`` (a list of
    :data:`BottleneckSetting`, the first reading the stem's 16 channels) and a ``last`` width give the networks
    of a MobileNetV3-like search space (``nnperf.zoo.search_space``)."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.2,
                 settings: list[BottleneckSetting] | None = None, last: int = 960) -> None:
        super().__init__()
        settings = _LARGE if settings is None else settings
        layers: list[nn.Module] = [_conv_bn(3, 16, 3, 2, 1, nn.Hardswish)]
        layers += [Bottleneck(*setting) for setting in settings]
        layers.append(_conv_bn(settings[-1][3], last, 1, 1, 1, nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(last, 1280), nn.Hardswish(inplace=True), nn.Dropout(p=dropout),
                                        nn.Linear(1280, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v3_large() -> nn.Module:
    """MobileNetV3-Large 1.0, 1000 classes, random weights."""
    return MobileNetV3Large()
