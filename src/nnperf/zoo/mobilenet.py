"""MobileNet v1 (Howard et al., 2017) and MobileNet v2 (Sandler et al., 2018).

v1: "MobileNets: Efficient Convolutional Neural Networks for Mobile Vision
Applications", width multiplier 1.0, 224x224. Stem conv3x3/2 (32) + BN + ReLU,
13 depthwise-separable blocks (depthwise 3x3 + BN + ReLU, pointwise 1x1 + BN +
ReLU), global average pool, FC 1000. Convolutions have no bias.
4,231,976 parameters; about 569 M MACs.

v2: "MobileNetV2: Inverted Residuals and Linear Bottlenecks", width 1.0,
224x224, torchvision layout: ReLU6, inverted residual blocks (expand 1x1,
depthwise 3x3, linear project 1x1, residual add when stride 1 and
in == out), last 1x1 conv to 1280, global average pool, Dropout(0.2), FC 1000.
3,504,872 parameters; about 300 M MACs.
"""

from __future__ import annotations

import torch
from torch import nn

from nnperf.zoo._layers import conv_bn

# --------------------------------------------------------------------------- v1

# (output channels, stride) of the 13 depthwise-separable blocks.
_V1_BLOCKS = [
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1),
    (1024, 2), (1024, 1),
]


class MobileNetV1(nn.Module):
    """MobileNet v1 1.0 for 3x224x224 ImageNet input."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, 32, 3, 2, 1, nn.ReLU)]
        cin = 32
        for cout, stride in _V1_BLOCKS:
            layers.append(nn.Sequential(
                conv_bn(cin, cin, 3, stride, cin, nn.ReLU),   # depthwise
                conv_bn(cin, cout, 1, 1, 1, nn.ReLU),         # pointwise
            ))
            cin = cout
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


# --------------------------------------------------------------------------- v2

class InvertedResidual(nn.Module):
    """MobileNet v2 block: expand 1x1 (if t != 1), depthwise 3x3, project 1x1."""

    def __init__(self, cin: int, cout: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        hidden = cin * expand_ratio
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(conv_bn(cin, hidden, 1, 1, 1, nn.ReLU6))
        layers += [
            conv_bn(hidden, hidden, 3, stride, hidden, nn.ReLU6),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # use_res_connect is fixed at construction, so tracing sees one path.
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


# (expansion t, output channels c, repeats n, first stride s), from the paper's Table 2.
_V2_SETTINGS = [
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
    (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1),
]


class MobileNetV2(nn.Module):
    """MobileNet v2 1.0 for 3x224x224 ImageNet input (torchvision layout)."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.2) -> None:
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, 32, 3, 2, 1, nn.ReLU6)]
        cin = 32
        for t, c, n, s in _V2_SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, 1, 1, nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(1280, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def mobilenet_v1() -> nn.Module:
    """MobileNet v1 1.0, 1000 classes, random weights."""
    return MobileNetV1()


def mobilenet_v2() -> nn.Module:
    """MobileNet v2 1.0, 1000 classes, random weights."""
    return MobileNetV2()
