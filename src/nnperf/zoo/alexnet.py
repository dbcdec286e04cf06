"""AlexNet (Krizhevsky, Sutskever & Hinton, 2012), torchvision single-tower variant.

The layout follows torchvision's ``alexnet`` (itself from "One weird trick for
parallelizing convolutional neural networks", Krizhevsky 2014): 64/192/384/256/256
filters in one tower, no local response normalisation, an
``AdaptiveAvgPool2d((6, 6))`` before the classifier and dropout in it.
61,100,840 parameters; about 0.714 GMACs at 224x224.
"""

from __future__ import annotations

import torch
from torch import nn


class AlexNet(nn.Module):
    """Single-tower AlexNet for 3x224x224 ImageNet input."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def alexnet() -> nn.Module:
    """AlexNet, 1000 classes, random weights."""
    return AlexNet()
