"""PreVIousNet-06: nnperf's calibration network of CNN blocks chained the way deployed networks chain them.

Not part of the paper, and not in the default calibration: ``nnperf calibrate --blocks`` adds it. PreVIousNet-01
to -05 hold every layer type the zoo uses, but their convolutions mostly read the output of a Scale, an eltwise
max or a mul, so a backend that keeps tensors in its own format between convolutions (ONNX Runtime's uint8 in
int8 programs, NCHWc in fp32) converts them at almost every convolution inside those networks too, as it does
for a layer timed alone. This network chains convolutions directly, so the profiler shows what a chain saves,
which the kernel-aware predictor then learns (bench/int8_composition.py measures what it changes on small int8
networks).

Same input configurations as PreVIousNet-01 (C x H x W of 32x56x56, 64x28x28, 64x14x14, 64x7x7): a 3x3
conv-BN-ReLU stem; at C channels a basic residual block (two 3x3 convs, add, ReLU), a bottleneck (1x1 to C/2,
3x3, 1x1 back to C, add, ReLU), an inverted residual (1x1 to 4C with ReLU6, depthwise 3x3 with ReLU6, linear 1x1
back to C, add) and a fire module (1x1 squeeze to C/4, 1x1 and 3x3 expands to C/2 each, concat); a 3x3/2 conv to 2C;
at 2C on H/2 a basic block, an inverted residual, a fire module, a depthwise 3x3 and a 1x1 conv; global average
pool, flatten and a 10-way linear layer. Every conv is followed by batch normalisation. 77 layers.
"""

from __future__ import annotations

import torch
from torch import nn

from nnperf.zoo._layers import conv_bn


class _Basic(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.first, self.second, self.relu = conv_bn(c, c, 3), conv_bn(c, c, 3, act=None), nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.second(self.first(x)) + x)


class _Bottleneck(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.reduce, self.conv = conv_bn(c, c // 2, 1), conv_bn(c // 2, c // 2, 3)
        self.expand, self.relu = conv_bn(c // 2, c, 1, act=None), nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.expand(self.conv(self.reduce(x))) + x)


class _Inverted(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.expand = conv_bn(c, 4 * c, 1, act=nn.ReLU6)
        self.depthwise = conv_bn(4 * c, 4 * c, 3, groups=4 * c, act=nn.ReLU6)
        self.project = conv_bn(4 * c, c, 1, act=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(self.depthwise(self.expand(x))) + x


class _Fire(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.squeeze = conv_bn(c, c // 4, 1)
        self.expand1, self.expand3 = conv_bn(c // 4, c // 2, 1), conv_bn(c // 4, c // 2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        squeezed = self.squeeze(x)
        return torch.cat([self.expand1(squeezed), self.expand3(squeezed)], 1)


def previousnet06(channels: int = 32) -> nn.Module:
    """PreVIousNet-06 for ``channels`` input channels (a multiple of 4), random weights."""
    c = channels
    return nn.Sequential(conv_bn(c, c, 3), _Basic(c), _Bottleneck(c), _Inverted(c), _Fire(c),
                         conv_bn(c, 2 * c, 3, 2), _Basic(2 * c), _Inverted(2 * c), _Fire(2 * c),
                         conv_bn(2 * c, 2 * c, 3, groups=2 * c), conv_bn(2 * c, 2 * c, 1),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * c, 10))
