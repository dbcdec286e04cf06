"""SqueezeNet 1.0 and 1.1 (Iandola et al., 2016), torchvision layout.

"SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB model
size", arXiv:1602.07360. 1.0 is the paper's model; 1.1 is the revision from the
authors' repository (3x3/64 stem, earlier pooling, ~2.4x fewer MACs).
Fire module = squeeze 1x1 + ReLU, then expand 1x1 + ReLU and expand 3x3 + ReLU
concatenated on channels. Max pools 3x3/2 with ceil_mode=True. Classifier:
Dropout(0.5), conv1x1 to 1000, ReLU, global average pool, flatten.
1.0: 1,248,424 parameters, ~0.82 GMACs; 1.1: 1,235,496, ~0.35 GMACs (224x224).
"""

from __future__ import annotations

import torch
from torch import nn


class Fire(nn.Module):
    """Fire module: squeeze 1x1, then concatenated expand 1x1 and 3x3."""

    def __init__(self, cin: int, squeeze: int, expand1x1: int, expand3x3: int) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat(
            [self.expand1x1_activation(self.expand1x1(x)), self.expand3x3_activation(self.expand3x3(x))], 1
        )


def _pool() -> nn.MaxPool2d:
    return nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)


class SqueezeNet(nn.Module):
    """SqueezeNet ``version`` "1_0" or "1_1" for 3x224x224 ImageNet input."""

    def __init__(self, version: str = "1_0", num_classes: int = 1000) -> None:
        super().__init__()
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2),
                nn.ReLU(inplace=True),
                _pool(),
                Fire(96, 16, 64, 64),
                Fire(128, 16, 64, 64),
                Fire(128, 32, 128, 128),
                _pool(),
                Fire(256, 32, 128, 128),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                _pool(),
                Fire(512, 64, 256, 256),
            )
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2),
                nn.ReLU(inplace=True),
                _pool(),
                Fire(64, 16, 64, 64),
                Fire(128, 16, 64, 64),
                _pool(),
                Fire(128, 32, 128, 128),
                Fire(256, 32, 128, 128),
                _pool(),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256),
            )
        else:
            raise ValueError(f"unknown SqueezeNet version {version!r}; expected '1_0' or '1_1'")
        self.classifier = nn.Sequential(
            nn.Dropout(p=0.5),
            nn.Conv2d(512, num_classes, kernel_size=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.classifier(x)
        return torch.flatten(x, 1)


def squeezenet1_0() -> nn.Module:
    """SqueezeNet 1.0, 1000 classes, random weights."""
    return SqueezeNet("1_0")


def squeezenet1_1() -> nn.Module:
    """SqueezeNet 1.1, 1000 classes, random weights."""
    return SqueezeNet("1_1")
