"""PyTorch modules for IR ops that ``torch.nn`` lacks.

The torch importer treats them as leaf modules, so a network written with them
imports to the matching IR op.
"""

from __future__ import annotations

import torch
from torch import nn


class Scale(nn.Module):
    """Per-channel affine transform y = x * weight[c] (+ bias[c]) on NCHW input.

    Caffe's Scale layer, which PreVIous models as its own layer type.
    """

    def __init__(self, channels: int, bias: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels, 1, 1))
        self.bias = nn.Parameter(torch.zeros(channels, 1, 1)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.weight
        return y + self.bias if self.bias is not None else y


# resizing, normalisation and attention
class LayerNorm2d(nn.Module):
    """Layer normalisation over the channels of NCHW input, with a learnt scale and shift per channel.

    ConvNeXt's channels-first LayerNorm, written out as the mean/variance arithmetic so that its ONNX export
    is the ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add pattern the ONNX importer fuses back.
    """

    def __init__(self, channels: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels, 1, 1))
        self.bias = nn.Parameter(torch.zeros(channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        centred = x - x.mean(1, keepdim=True)
        variance = centred.pow(2).mean(1, keepdim=True)
        return centred / torch.sqrt(variance + self.eps) * self.weight + self.bias
