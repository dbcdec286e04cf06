"""Tiny YOLO v2 for PASCAL VOC (Redmon & Farhadi, 2017).

"YOLO9000: Better, Faster, Stronger", CVPR 2017; layout from darknet's
``tiny-yolo-voc.cfg`` (a.k.a. ``yolov2-tiny-voc.cfg``), 3x416x416 input:

    conv3x3 16, 32, 64, 128, 256 each followed by maxpool 2x2/2,
    conv3x3 512 + maxpool 2x2/1 (darknet pads right/bottom by one: ZeroPad2d),
    conv3x3 1024, conv3x3 1024, conv1x1 125 (linear, with bias)

Every conv but the last has BatchNorm (so no bias) and LeakyReLU(0.1).
The output is the raw 125x13x13 detection map (5 anchors x (20 classes + 5));
the region layer (decoding boxes) is post-processing and is not included.
Zero padding before the stride-1 pool stands in for darknet's border
replication; the shapes and the work are the same.
15,861,773 parameters; about 3.49 GMACs.
"""

from __future__ import annotations

import torch
from torch import nn


def _conv_bn_leaky(cin: int, cout: int) -> list[nn.Module]:
    return [
        nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.LeakyReLU(0.1, inplace=True),
    ]


class TinyYoloV2(nn.Module):
    """Tiny YOLO v2 (VOC) backbone + detection conv for 3x416x416 input."""

    def __init__(self, num_anchors: int = 5, num_classes: int = 20) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for cout in (16, 32, 64, 128, 256):
            layers += _conv_bn_leaky(cin, cout)
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            cin = cout
        layers += _conv_bn_leaky(256, 512)
        layers += [nn.ZeroPad2d((0, 1, 0, 1)), nn.MaxPool2d(kernel_size=2, stride=1)]
        layers += _conv_bn_leaky(512, 1024)
        layers += _conv_bn_leaky(1024, 1024)
        self.features = nn.Sequential(*layers)
        self.detector = nn.Conv2d(1024, num_anchors * (num_classes + 5), kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.detector(self.features(x))


def tiny_yolo_v2() -> nn.Module:
    """Tiny YOLO v2 (VOC: 5 anchors, 20 classes), random weights."""
    return TinyYoloV2()
