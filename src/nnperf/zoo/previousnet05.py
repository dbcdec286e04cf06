"""PreVIousNet-05, nnperf's calibration network for the resizing, normalisation and attention ops.

Like PreVIousNet-03 (see :mod:`nnperf.zoo.previousnet`), not part of the paper: it holds the op types that
U-Net, ConvNeXt and the vision transformer need and PreVIousNet-01/02/03 lack, so that ``nnperf calibrate``
fits a model for each. Same input configurations as PreVIousNet-01 (C x H x W: 32x56x56, 64x28x28,
64x14x14, 64x7x7). Two levels, the second on a 2C x ceil(H/2) x ceil(W/2) map made by a 3x3/2 convolution;
each level runs:

- transposed convolutions 2x2/2 and 3x3/2 (padding 1, output padding 1, 4 groups), their difference (sub),
  group normalisation (4 groups) of it, and a bilinear upsample x2 of the input (the same output size);
- a dilated 3x3 convolution (dilation 2), layer normalisation over its channels, GELU, instance
  normalisation, a mean and a max over the channels (keepdims), a division by the mean
  and a power of the sigmoid of the convolution to the instance-normalised map;
- attention on the map as C tokens of H*W features: x x^T (a matrix product reading its second operand
  transposed), softmax on the last axis, the product with x, layer normalisation over the last axis, a
  learnt class token concatenated and a learnt position embedding added (two constant layers); and the same
  with 4 heads as 4-D products, softmax over axis 2;
- the map made tokens (H*W x C, a transpose that moves the innermost axis) and rearranged as transformers
  rearrange them, by transposes that keep the innermost axis and copy whole rows: a split into 4 heads
  (H*W x 4 x C/4 to 4 x H*W x C/4), a partition into P x P windows (H/P x P x W/P x P x C to
  H/P x W/P x P x P x C, as Swin's) and into a P x P grid (P x H/P x P x W/P x C to H/P x W/P x P x P x C), where
  P is the largest of 7, 4, 2 and 1 that divides H and W.

Every layer reaches one of the returned outputs. 2 x 34 layers and the convolution between the levels.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nnperf.ir.modules import LayerNorm2d


class _Level05(nn.Module):
    def __init__(self, c: int, height: int, width: int) -> None:
        super().__init__()
        tokens = height * width
        self.window = next(size for size in (7, 4, 2, 1) if height % size == 0 and width % size == 0)
        self.up2 = nn.ConvTranspose2d(c, c, 2, stride=2)
        self.up3 = nn.ConvTranspose2d(c, c, 3, stride=2, padding=1, output_padding=1, groups=4)
        self.group_norm = nn.GroupNorm(4, c)
        self.dilated = nn.Conv2d(c, c, 3, padding=2, dilation=2)
        self.channel_norm = LayerNorm2d(c)
        self.gelu = nn.GELU()
        self.instance_norm = nn.InstanceNorm2d(c, affine=True)
        self.sigmoid = nn.Sigmoid()
        self.token_norm = nn.LayerNorm(tokens)
        self.cls_token = nn.Parameter(torch.randn(1, c, 1) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, c, tokens + 1) * 0.02)
        self.heads = 4

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n, c, h, w = x.shape
        diff = self.up2(x) - self.up3(x)
        resized = F.interpolate(x, scale_factor=2.0, mode="bilinear")
        d = self.dilated(x)
        g = self.gelu(self.channel_norm(d))
        inst = self.instance_norm(g)
        mean = inst.mean(1, keepdim=True)
        peak = torch.amax(g, dim=1, keepdim=True)
        powered = torch.pow(self.sigmoid(d), inst)
        t = d.reshape(n, c, h * w)
        mixed = self.token_norm(torch.matmul(torch.softmax(torch.matmul(t, t.transpose(-2, -1)), dim=-1), t))
        tokens = torch.cat([self.cls_token, mixed], dim=2) + self.pos_embed
        q = d.reshape(n, self.heads, c // self.heads, h * w)
        heads = torch.matmul(torch.softmax(torch.matmul(q, q.transpose(-2, -1)), dim=2), q)
        return self.group_norm(diff), resized, g / mean, peak, powered, tokens, heads, *self.rearranged(t, h, w)

    def rearranged(self, t: torch.Tensor, h: int, w: int) -> tuple[torch.Tensor, ...]:
        """The channels x tokens map ``t`` of an h x w grid as tokens, split into heads, and partitioned into
        windows and into a grid."""
        n, c, _ = t.shape
        tokens = t.transpose(1, 2)
        split = tokens.reshape(n, h * w, self.heads, c // self.heads).permute(0, 2, 1, 3)
        p = self.window
        windows = tokens.reshape(n, h // p, p, w // p, p, c).permute(0, 1, 3, 2, 4, 5)
        grid = tokens.reshape(n, p, h // p, p, w // p, c).permute(0, 2, 4, 1, 3, 5)
        return split, windows, grid


class PreVIousNet05(nn.Module):
    """nnperf's PreVIousNet-05 for a ``channels`` x ``height`` x ``width`` input."""

    def __init__(self, channels: int = 32, height: int = 56, width: int = 56) -> None:
        super().__init__()
        c = channels
        self.level1 = _Level05(c, height, width)
        self.down = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.level2 = _Level05(2 * c, -(-height // 2), -(-width // 2))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.level1(x) + self.level2(self.down(x))


def previousnet05(channels: int = 32, height: int = 56, width: int = 56) -> nn.Module:
    """nnperf's PreVIousNet-05 for a ``channels`` x ``height`` x ``width`` input, random weights."""
    return PreVIousNet05(channels, height, width)
