"""Classifiers of the families of Cappuccino's Table I and nnperf's zoo, sized for the rendered glyphs.

Each takes ``(N, 1, s, s)`` images and returns :data:`~nnperf.optimize.synthesize._glyphs.GLYPH_CLASSES` logits;
``width`` scales every layer's channels (the families' ImageNet widths divided, so that they train on this CPU):

- ``resnet18``: ResNet-18's four stages of two basic blocks (3x3 convolutions, batch norm, identity or 1x1
  projection shortcuts), CIFAR-style stem (one 3x3 convolution, no pool), channels w, 2w, 4w, 8w;
- ``mobilenet_v2``: MobileNet v2's inverted residuals (1x1 expansion x6, 3x3 depthwise, 1x1 linear projection,
  residual when shapes allow) in seven stages of its widths scaled by w / 32;
- ``squeezenet``: SqueezeNet 1.1's fire modules (1x1 squeeze, parallel 1x1 and 3x3 expand, concatenated) with
  max pools between, widths scaled by w / 64, and a 1x1 convolution classifier;
- ``googlenet``: GoogLeNet's inception modules (1x1; 1x1 then 3x3; 1x1 then 5x5 as two 3x3; 3x3 max pool then
  1x1; concatenated) in two stages with a max pool between, widths scaled by w / 64.

:func:`train_glyph_network` trains one with the digits CNN's recipe (Adam, cosine decay, shifted images).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from nnperf.optimize.synthesize._data import ValidationSet
from nnperf.optimize.synthesize._digits import accuracy, seeded_fit
from nnperf.optimize.synthesize._errors import SynthesisError
from nnperf.optimize.synthesize._glyphs import GLYPH_CLASSES

FAMILIES = ("resnet18", "mobilenet_v2", "squeezenet", "googlenet")
"""The families :func:`glyph_network` builds."""


def _cbr(cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1, relu: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class _Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(_cbr(cin, cout, 3, stride), _cbr(cout, cout, 3, 1, relu=False))
        self.shortcut = nn.Identity() if stride == 1 and cin == cout else _cbr(cin, cout, 1, stride, relu=False)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


class _Inverted(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expansion: int = 6) -> None:
        super().__init__()
        hidden = cin * expansion
        self.residual = stride == 1 and cin == cout
        self.body = nn.Sequential(_cbr(cin, hidden, 1), _cbr(hidden, hidden, 3, stride, groups=hidden),
                                  _cbr(hidden, cout, 1, relu=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class _Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand: int) -> None:
        super().__init__()
        self.squeeze = _cbr(cin, squeeze, 1)
        self.e1, self.e3 = _cbr(squeeze, expand, 1), _cbr(squeeze, expand, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.squeeze(x)
        return torch.cat([self.e1(s), self.e3(s)], 1)


class _Inception(nn.Module):
    def __init__(self, cin: int, c1: int, c3r: int, c3: int, c5r: int, c5: int, pool: int) -> None:
        super().__init__()
        self.b1 = _cbr(cin, c1, 1)
        self.b3 = nn.Sequential(_cbr(cin, c3r, 1), _cbr(c3r, c3, 3))
        self.b5 = nn.Sequential(_cbr(cin, c5r, 1), _cbr(c5r, c5, 3), _cbr(c5, c5, 3))
        self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1), _cbr(cin, pool, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], 1)


def _scaled(channels: int, factor: float) -> int:
    return max(4, round(channels * factor / 4) * 4)


def glyph_network(family: str, width: int = 16, classes: int = len(GLYPH_CLASSES)) -> nn.Module:
    """A ``family`` classifier (see the module docstring) of base width ``width`` for 1-channel images."""
    head: list[nn.Module]
    if family == "resnet18":
        chans = [width, 2 * width, 4 * width, 8 * width]
        body: list[nn.Module] = [_cbr(1, width)]
        cin = width
        for i, c in enumerate(chans):
            body += [_Basic(cin, c, 1 if i == 0 else 2), _Basic(c, c, 1)]
            cin = c
        head = [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    elif family == "mobilenet_v2":
        f = width / 32
        body, cin = [_cbr(1, _scaled(32, f), 3, 1)], _scaled(32, f)
        for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                           (6, 160, 3, 1), (6, 320, 1, 1)):
            for i in range(n):
                body.append(_Inverted(cin, _scaled(c, f), s if i == 0 else 1, t))
                cin = _scaled(c, f)
        body.append(_cbr(cin, _scaled(1280, f), 1))
        head = [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(_scaled(1280, f), classes)]
    elif family == "squeezenet":
        f = width / 64
        body = [_cbr(1, _scaled(64, f), 3, 1), nn.MaxPool2d(2)]
        cin = _scaled(64, f)
        for i, (s, e) in enumerate(((16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256),
                                    (64, 256))):
            if i in (2, 4):
                body.append(nn.MaxPool2d(2))
            body.append(_Fire(cin, _scaled(s, f), _scaled(e, f)))
            cin = 2 * _scaled(e, f)
        head = [nn.Dropout(0.2), nn.Conv2d(cin, classes, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    elif family == "googlenet":
        f = width / 64
        stem = _scaled(64, f)
        body = [_cbr(1, stem, 3), _cbr(stem, 3 * stem, 3), nn.MaxPool2d(2)]
        cin = 3 * stem
        for i, spec in enumerate(((64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64),
                                  (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64))):
            if i == 2:
                body.append(nn.MaxPool2d(2))
            scaled = [_scaled(c, f) for c in spec]
            body.append(_Inception(cin, *scaled))
            cin = scaled[0] + scaled[2] + scaled[4] + scaled[5]
        head = [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(cin, classes)]
    else:
        raise SynthesisError(f"glyph network: unknown family {family!r} (known: {', '.join(FAMILIES)})")
    return nn.Sequential(*body, *head)


@dataclass(frozen=True, eq=False)
class TrainedGlyphs:
    """A trained glyph classifier and how accurate it is on glyphs from fonts it never saw."""

    family: str
    module: nn.Module
    """In eval mode."""
    width: int
    epochs: int
    seed: int
    train_accuracy: float
    held_out_accuracy: float
    """Top-1 on the held-out fonts' glyphs, in [0, 1]."""
    train_s: float


def train_glyph_network(family: str, train_set: ValidationSet, held_out: ValidationSet, width: int = 16,
                        epochs: int = 4, seed: int = 0) -> TrainedGlyphs:
    """A ``family`` network trained on ``train_set`` (Adam, cosine decay, images shifted by up to 2 px; seeded in
    a forked torch RNG) and its top-1 on ``train_set`` and ``held_out``."""
    module, train_s = seeded_fit(lambda: glyph_network(family, width), train_set, epochs, seed)
    return TrainedGlyphs(family, module, width, epochs, seed, accuracy(module, train_set),
                         accuracy(module, held_out), train_s)
