"""GoogLeNet / Inception v1 (Szegedy et al., 2015), torchvision variant.

"Going Deeper with Convolutions", CVPR 2015, as implemented by torchvision's
``googlenet`` (the variant its ImageNet weights were trained for):
BasicConv2d = conv (no bias) + BatchNorm(eps=0.001) + ReLU; the "5x5" branch of
each inception module actually uses a 3x3 conv; max pools use
ceil_mode=True; no auxiliary classifiers; no transform_input; global average
pool, Dropout(0.2), FC 1000. No local response normalisation.
6,624,904 parameters; about 1.5 GMACs at 224x224.
"""

from __future__ import annotations

import torch
from torch import nn


class BasicConv2d(nn.Module):
    """Conv (no bias) + BatchNorm(eps=0.001) + ReLU."""

    def __init__(self, cin: int, cout: int, kernel_size: int, stride: int = 1, padding: int = 0) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size, stride=stride, padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=0.001)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


class Inception(nn.Module):
    """Four parallel branches concatenated on channels."""

    def __init__(self, cin: int, ch1x1: int, ch3x3red: int, ch3x3: int,
                 ch5x5red: int, ch5x5: int, pool_proj: int) -> None:
        super().__init__()
        self.branch1 = BasicConv2d(cin, ch1x1, 1)
        self.branch2 = nn.Sequential(BasicConv2d(cin, ch3x3red, 1), BasicConv2d(ch3x3red, ch3x3, 3, padding=1))
        # torchvision uses a 3x3 conv here, not the paper's 5x5.
        self.branch3 = nn.Sequential(BasicConv2d(cin, ch5x5red, 1), BasicConv2d(ch5x5red, ch5x5, 3, padding=1))
        self.branch4 = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
            BasicConv2d(cin, pool_proj, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class GoogLeNet(nn.Module):
    """GoogLeNet for 3x224x224 ImageNet input."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.2) -> None:
        super().__init__()
        self.conv1 = BasicConv2d(3, 64, 7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = BasicConv2d(64, 64, 1)
        self.conv3 = BasicConv2d(64, 192, 3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)

        self.inception3a = Inception(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = Inception(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)

        self.inception4a = Inception(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = Inception(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = Inception(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = Inception(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = Inception(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)

        self.inception5a = Inception(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = Inception(832, 384, 192, 384, 48, 128, 128)

        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool1(self.conv1(x))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        x = self.inception4c(self.inception4b(self.inception4a(x)))
        x = self.maxpool4(self.inception4e(self.inception4d(x)))
        x = self.inception5b(self.inception5a(x))
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(self.dropout(x))


def googlenet() -> nn.Module:
    """GoogLeNet (torchvision variant, no aux heads), 1000 classes, random weights."""
    return GoogLeNet()
