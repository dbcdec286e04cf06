"""All-CNN-C (Springenberg, Dosovitskiy, Brox & Riedmiller, 2015).

"Striving for Simplicity: The All Convolutional Net", ICLR 2015 workshop, model
C of Table 1/2 for CIFAR-10 (3x32x32): max pooling is replaced by stride-2 3x3
convolutions and the fully connected layers by 1x1 convolutions followed by
global average pooling.

Variant choices:
- ReLU after every convolution except the last (the 1x1 conv to 10 classes
  produces the logits that are averaged and fed to the softmax).
- Dropout as in the paper: 20% on the input, 50% after each stride-2 conv
  (the layers that replace pooling). Identity in eval mode.
- Convolutions have biases (no batch normalisation in the paper).

1,369,738 parameters; spatial sizes 32 -> 16 -> 8 -> 6 (3x3 conv, no padding).
"""

from __future__ import annotations

import torch
from torch import nn


def _conv_relu(cin: int, cout: int, kernel: int, stride: int = 1, padding: int = 0) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding), nn.ReLU(inplace=True)]


class AllCNNC(nn.Module):
    """All-CNN-C for 3x32x32 CIFAR-10 input."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Dropout(p=0.2),
            *_conv_relu(3, 96, 3, padding=1),
            *_conv_relu(96, 96, 3, padding=1),
            *_conv_relu(96, 96, 3, stride=2, padding=1),
            nn.Dropout(p=0.5),
            *_conv_relu(96, 192, 3, padding=1),
            *_conv_relu(192, 192, 3, padding=1),
            *_conv_relu(192, 192, 3, stride=2, padding=1),
            nn.Dropout(p=0.5),
            *_conv_relu(192, 192, 3, padding=0),
            *_conv_relu(192, 192, 1),
            nn.Conv2d(192, num_classes, kernel_size=1),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        return torch.flatten(x, 1)


def allcnn_c() -> nn.Module:
    """All-CNN-C, 10 classes, random weights."""
    return AllCNNC()
