"""PreVIousNet-04: nnperf's calibration network for the activation and data-movement ops.

Like PreVIousNet-03 (see :mod:`nnperf.zoo.previousnet`), an nnperf extension
of PreVIous's calibration networks (section V: the architecture "can be
adjusted according to the specificity of the networks to be characterized"):
it holds the layer types MobileNetV3 and ShuffleNetV2 (and other exported
networks) use that PreVIousNet-01/02/03 lack, so that calibrating a system
fits a model for each. Same input configurations as PreVIousNet-01 (C x H x W
of 32x56x56, 64x28x28, 64x14x14, 64x7x7); three levels of C, 2C and 4C channels
on H, ceil(H/2) and ceil(H/4), joined by max pools 2x2/2 (ceil). Each level,
on its input x of c channels:

- activations: hard sigmoid (torch's 1/6, 1/2); clip to level-dependent bounds
  (-1..1, -2..0.5, -0.5..3); per-channel PReLU then GELU; mish of the clip;
  log of softplus of x; exp of the clip;
- data movement: the global average pool of the hard sigmoid expanded back to
  c x H x W (a broadcast, as in squeeze-and-excite) and multiplied with the exp;
  concat of GELU and mish shuffled in 2 groups (reshape, transpose, reshape),
  split in two halves with ``chunk``; the first half's channels gathered in
  reverse order, the second added to the log; their concat is the next
  level's input; heads: the product transposed (H and W swapped) and every
  second row of x sliced.

20 layers per level, 62 in all; each new op type runs three times (slice six)
per configuration, on three tensor shapes.
"""

from __future__ import annotations

import torch
from torch import nn

from nnperf.zoo.shufflenet import channel_shuffle

_CLIPS = ((-1.0, 1.0), (-2.0, 0.5), (-0.5, 3.0))
"""(low, high) of each level's clip: none is ReLU6's 0..6, which imports as RELU6."""


class _Level04(nn.Module):
    def __init__(self, channels: int, clip: tuple[float, float]) -> None:
        super().__init__()
        self.hard_sigmoid = nn.Hardsigmoid()
        self.clip = nn.Hardtanh(*clip)
        self.prelu = nn.PReLU(channels)
        self.gelu = nn.GELU()
        self.mish = nn.Mish()
        self.softplus = nn.Softplus()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.channels = channels

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        _, _, height, width = x.shape
        clipped = self.clip(x)
        log = torch.log(self.softplus(x))
        gate = self.pool(self.hard_sigmoid(x)).expand(-1, -1, height, width)
        product = torch.exp(clipped) * gate
        shuffled = channel_shuffle(torch.cat([self.gelu(self.prelu(x)), self.mish(clipped)], 1), 2)
        first, second = shuffled.chunk(2, dim=1)
        reordered = torch.index_select(first, 1, torch.arange(self.channels - 1, -1, -1))
        following = torch.cat([reordered, second + log], 1)
        return following, product.permute(0, 1, 3, 2), x[:, :, ::2]


class PreVIousNet04(nn.Module):
    """nnperf's PreVIousNet-04 for a ``channels`` x H x W input (any H, W >= 1)."""

    def __init__(self, channels: int = 32) -> None:
        super().__init__()
        c = channels
        self.level1 = _Level04(c, _CLIPS[0])
        self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.level2 = _Level04(2 * c, _CLIPS[1])
        self.pool2 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.level3 = _Level04(4 * c, _CLIPS[2])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y1, *heads1 = self.level1(x)
        y2, *heads2 = self.level2(self.pool1(y1))
        y3, *heads3 = self.level3(self.pool2(y2))
        return (y3, *heads1, *heads2, *heads3)


def previousnet04(channels: int = 32) -> nn.Module:
    """nnperf's PreVIousNet-04 for ``channels`` input channels, random weights."""
    return PreVIousNet04(channels)
