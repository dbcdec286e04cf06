"""ResNet-18 and ResNet-34 (He, Zhang, Ren & Sun, 2016), torchvision layout.

"Deep Residual Learning for Image Recognition", CVPR 2016. BasicBlock (two 3x3
convs with BN), projection shortcut = conv1x1 (stride 2) + BN where the shape
changes (option B), stem conv7x7/2 + BN + ReLU + maxpool3x3/2, global average
pool, FC 1000. Convolutions have no bias. 224x224 input.
ResNet-18: 11,689,512 parameters, ~1.81 GMACs; ResNet-34: 21,797,672, ~3.66 GMACs.
"""

from __future__ import annotations

import torch
from torch import nn


class BasicBlock(nn.Module):
    """Two 3x3 conv + BN layers with an identity or 1x1-projection shortcut."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu2 = nn.ReLU(inplace=True)
        if stride != 1 or cin != cout:
            self.downsample: nn.Sequential | None = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                nn.BatchNorm2d(cout),
            )
        else:
            self.downsample = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        # Fixed at construction, so symbolic tracing sees a single path.
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu2(out + shortcut)


class ResNet(nn.Module):
    """ResNet built from BasicBlocks, ``layers`` blocks per stage."""

    def __init__(self, layers: tuple[int, int, int, int], num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        stages = []
        cin = 64
        for i, (cout, blocks) in enumerate(zip((64, 128, 256, 512), layers)):
            stride = 1 if i == 0 else 2
            stage = [BasicBlock(cin, cout, stride)]
            stage += [BasicBlock(cout, cout) for _ in range(blocks - 1)]
            stages.append(nn.Sequential(*stage))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def resnet18() -> nn.Module:
    """ResNet-18, 1000 classes, random weights."""
    return ResNet((2, 2, 2, 2))


def resnet34() -> nn.Module:
    """ResNet-34, 1000 classes, random weights."""
    return ResNet((3, 4, 6, 3))
