"""DeiT-Tiny/16 (Touvron et al., 2021), a vision transformer with tokens as a 1 x T map of channels.

"Training data-efficient image transformers & distillation through attention", ICML 2021; the ViT of
Dosovitskiy et al. 2021 at width 192, 3 heads, depth 12, MLP ratio 4, 16x16 patches on 224x224 input.
Patch embedding is a 16x16/16 convolution; a learnt class token is concatenated to the 196 patch tokens and
a learnt position embedding added; each block is LayerNorm, multi-head self-attention and a residual add,
LayerNorm, MLP (192 -> 768, GELU, 768 -> 192) and a residual add; final LayerNorm and a fully connected
layer to 1000 classes.

Written so that it needs no transpose, slice or split layer: the tokens are kept as an N x 192 x 1 x 197
map (channels first), so the token-wise linear layers are 1x1 convolutions and LayerNorm is over the
channels; each head has its own query, key and value projections (192 -> 64; the same weights as a fused
192 -> 576 projection cut in nine); the scores of a head are K^T Q (a matrix product reading K transposed),
the softmax runs over the keys (axis 1), the 1/sqrt(64) factor folded into the query weights as inference
exports do (the weights are random here) and the head's output is V times the attention; the heads are
concatenated along the channels. The classifier reads the mean of the tokens (global average pool) instead of
slicing out the class token: same parameters and MACs. 5,717,416 parameters as DeiT-Tiny; 1.26 GMACs with
the products of attention (fvcore's count: 1.26 G), +0.3 % for the bias additions of the 1x1 convolutions.
"""

from __future__ import annotations

import torch
from torch import nn

from nnperf.ir.modules import LayerNorm2d


class Attention(nn.Module):
    """Multi-head self-attention on an N x C x 1 x T token map."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q = nn.ModuleList(nn.Conv2d(dim, self.head_dim, 1) for _ in range(heads))
        self.k = nn.ModuleList(nn.Conv2d(dim, self.head_dim, 1) for _ in range(heads))
        self.v = nn.ModuleList(nn.Conv2d(dim, self.head_dim, 1) for _ in range(heads))
        self.softmax = nn.Softmax(dim=1)
        self.proj = nn.Conv2d(dim, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, _, t = x.shape
        outputs = []
        for q, k, v in zip(self.q, self.k, self.v):
            qh = q(x).reshape(n, self.head_dim, t)  # the 1/sqrt(head_dim) factor is folded into q's weights
            kh = k(x).reshape(n, self.head_dim, t)
            vh = v(x).reshape(n, self.head_dim, t)
            attention = self.softmax(torch.matmul(kh.transpose(-2, -1), qh))  # N x keys x queries
            outputs.append(torch.matmul(vh, attention))  # N x head_dim x queries
        return self.proj(torch.cat(outputs, dim=1).reshape(n, c, 1, t))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: int = 4) -> None:
        super().__init__()
        self.norm1 = LayerNorm2d(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = LayerNorm2d(dim)
        self.fc1 = nn.Conv2d(dim, mlp_ratio * dim, 1)
        self.act = nn.GELU()
        self.fc2 = nn.Conv2d(mlp_ratio * dim, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))


class VisionTransformer(nn.Module):
    def __init__(self, image: int = 224, patch: int = 16, dim: int = 192, depth: int = 12, heads: int = 3,
                 classes: int = 1000) -> None:
        super().__init__()
        tokens = (image // patch) ** 2
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, dim, 1, 1))
        self.pos_embed = nn.Parameter(torch.randn(1, dim, 1, tokens + 1) * 0.02)
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(depth)))
        self.norm = LayerNorm2d(dim)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x)
        n, c = x.shape[0], x.shape[1]
        x = torch.cat([self.cls_token, x.reshape(n, c, 1, -1)], dim=3) + self.pos_embed
        x = self.norm(self.blocks(x))
        return self.head(torch.flatten(self.pool(x), 1))


def vit_tiny() -> nn.Module:
    """DeiT-Tiny/16 at 224x224 for 1000 classes, random weights."""
    return VisionTransformer()
