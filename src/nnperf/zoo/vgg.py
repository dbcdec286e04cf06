"""VGG-11, VGG-16 and VGG-19 (Simonyan & Zisserman, 2015), torchvision layout.

"Very Deep Convolutional Networks for Large-Scale Image Recognition", ICLR 2015,
configurations A (11), D (16) and E (19), without batch normalisation: 3x3
convs (padding 1, bias) + ReLU, 2x2/2 max pools, AdaptiveAvgPool2d((7, 7)),
classifier FC 4096 - ReLU - Dropout - FC 4096 - ReLU - Dropout - FC 1000.
Parameters: 132,863,336 / 138,357,544 / 143,667,240; about 7.6 / 15.5 / 19.6
GMACs at 224x224.
"""

from __future__ import annotations

import torch
from torch import nn

# Output channels per 3x3 conv; "M" = 2x2 max pool.
_CFGS: dict[str, list[object]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M",
          512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


class VGG(nn.Module):
    """VGG without batch norm for 3x224x224 ImageNet input."""

    def __init__(self, cfg: str, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for item in _CFGS[cfg]:
            if item == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers += [nn.Conv2d(cin, item, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
                cin = item
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def vgg11() -> nn.Module:
    """VGG-11 (configuration A), 1000 classes, random weights."""
    return VGG("A")


def vgg16() -> nn.Module:
    """VGG-16 (configuration D), 1000 classes, random weights."""
    return VGG("D")


def vgg19() -> nn.Module:
    """VGG-19 (configuration E), 1000 classes, random weights."""
    return VGG("E")
