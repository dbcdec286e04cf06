"""SimpleNet v1 (Hasanpour, Rouhani, Fayyaz & Sabokrou, 2016).

"Lets keep it simple, Using simple architectures to outperform deeper and more
complex architectures", arXiv:1608.06037. The 13-layer, ~5.5 M-parameter
CIFAR model, laid out as in the authors' official PyTorch port
(Coderx7/SimpleNet_Pytorch), here with 100 classes (CIFAR-100), 3x32x32:

    conv3x3 64, 128, 128, 128, maxpool, 128, 128, 256, maxpool, 256, 256,
    maxpool, 512, maxpool, conv1x1 2048, conv1x1 256, maxpool, conv3x3 256,
    global max pool, dropout, FC 100

Every conv has a bias and is followed by BatchNorm (eps 1e-5, momentum 0.05)
and ReLU; max pools are 2x2 stride 2 (32 -> 16 -> 8 -> 4 -> 2 -> 1, so the
last 3x3 conv sees a 1x1 map). The official port's Dropout2d(0.1) after each
pool is left out (identity at inference anyway); the Dropout(0.1) before the
classifier is kept. 5,521,508 parameters.
"""

from __future__ import annotations

import torch
from torch import nn

# Output channels of a 3x3 conv, (channels, 1) for a 1x1 conv, "M" = 2x2 max pool.
_CFG: list[object] = [
    64, 128, 128, 128, "M", 128, 128, 256, "M", 256, 256, "M", 512, "M",
    (2048, 1), (256, 1), "M", 256,
]


class SimpleNet(nn.Module):
    """SimpleNet v1 for 3x32x32 input."""

    def __init__(self, num_classes: int = 100) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for item in _CFG:
            if item == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
                continue
            cout, kernel = item if isinstance(item, tuple) else (item, 3)
            layers += [
                nn.Conv2d(cin, cout, kernel, padding=(kernel - 1) // 2),
                nn.BatchNorm2d(cout, eps=1e-5, momentum=0.05),
                nn.ReLU(inplace=True),
            ]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.global_pool = nn.AdaptiveMaxPool2d((1, 1))
        self.dropout = nn.Dropout(p=0.1)
        self.classifier = nn.Linear(256, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.global_pool(x)
        x = torch.flatten(x, 1)
        return self.classifier(self.dropout(x))


def simplenet() -> nn.Module:
    """SimpleNet v1, 100 classes, random weights."""
    return SimpleNet()
