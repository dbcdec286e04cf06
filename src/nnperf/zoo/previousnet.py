"""PreVIousNet calibration networks (Velasco-Montero et al., PreVIous, section V).

"PreVIous: A Methodology for Prediction of Visual Inference Performance on IoT
Devices" (seed ``previous-velasco-montero``). PreVIousNet is not meant for
vision: it is a compact network whose layers sweep the layer types, parameters
and data dimensions of usual CNNs, so that profiling it once on a system gives
the observations for per-layer regression models (section IV-D). Its layers are
arranged in levels (Fig. 4): data and load grow with depth, each level holds a
cluster of parallel branches, and eltwise/concat layers merge equally sized
pairs of tensors from earlier branches. Every layer reaches a network output
(several outputs are returned), so importers keep them all. The paper publishes
the layout only as a figure and a Caffe file; the layouts below follow its
stated layer counts and rules, not the exact Caffe definition.

PreVIousNet-01 (Fig. 4(a), section V-B): 52 layers, 15 conv, 7 BN, 7 Scale,
7 ReLU, 6 pooling, 5 eltwise, 5 concat. Caffe splits batch norm into BN and
Scale, so BN is ``BatchNorm2d(affine=False)`` followed by :class:`Scale`. Input
C x H x W; the paper's configurations (section V-C) are 56x56x32, 28x28x64,
14x14x64 and 7x7x64. Spatial sizes H, ceil(H/2), ceil(H/4), ceil(H/8)
(7x7: 7, 4, 2, 1); channels C, 2C, 4C, 8C:

- level 1 (C, H): conv 3x3 -> BN-Scale-ReLU; pointwise general 1x1 C->2C;
  depthwise 3x3 -> BN-Scale-ReLU; add of the two C branches, concat of the sum
  with the depthwise branch, eltwise max with the pointwise branch; max pool
  2x2/2 (ceil).
- level 2 (2C, H/2): strided conv 3x3/2 -> BN-Scale-ReLU; pointwise general
  2C->4C -> BN-Scale; bottleneck 1x1 2C->C -> conv 5x5 C->2C -> ReLU; eltwise
  mul, concat with the level input, add with the BN-Scale branch; max pool
  3x3/2 pad 1.
- level 3 (4C, H/4): depthwise 3x3 -> BN-Scale-ReLU; bottleneck 1x1 4C->2C ->
  conv 3x3 2C->4C -> BN-Scale-ReLU; add, concat with the level input; average
  pool 3x3/1 pad 1; global average pool (output 1; level 3 rather than 4, so
  it still averages a 2x2 map at 7x7).
- level 4 (8C, H/8): strided conv 3x3/2 -> BN-Scale-ReLU and average pool 2x2/2
  (ceil), concatenated; bottleneck 1x1 16C->4C feeding conv 3x3 4C->8C -> max
  pool 3x3/1 pad 1 and depthwise 5x5, concatenated (output 2); pointwise
  general 8C->16C on the pooled branch (output 3).

PreVIousNet-02 (Fig. 4(b)): 44 layers, 32 FC and 12 softmax, on a vector of
length C (the paper uses C = 256). Clusters of parallel FC layers take vectors
of length C, 2C, 4C, 8C, 16C (256 ... 4096) and the custom lengths 10 and 1000
and produce those lengths; softmax runs on lengths 10, 1000 and C ... 16C.
About 45.6 M parameters at C = 256.

PreVIousNet-03 is nnperf's extension, not part of the paper (which notes that
the architecture "can be adjusted according to the specificity of the networks
to be characterized"): it holds the layer types the zoo uses that
PreVIousNet-01/02 lack, so every zoo network can be predicted. Same input
configurations as PreVIousNet-01; channels C, 2C, 4C, 8C; spatial H, about H/2
on levels 2 and 3, about H/4 on level 4 (7x7: 7, 3, 3, 2). Each level: a
depthwise or grouped conv (depthwise 3x3, grouped 3x3 g=4, depthwise 5x5,
grouped 3x3 g=8); ReLU6 on it, leaky ReLU (0.1) on the level input, eltwise max
of the two; sigmoid of the conv gating the max by eltwise mul; tanh, hard-swish
and SiLU; concat to 2x the channels (LRN after it on levels 1 and 2). Between
levels: max pool 3x3/2 (ceil), zero pad (0,1,0,1) + max pool 2x2/1 (Tiny YOLO),
average pool 2x2/2 (ceil). Heads: global max pool + flatten of level 4; nearest
upsample x2 of levels 4 and 1; bilinear upsample x2 of levels 3 and 2, the first
followed by a global max pool and a reshape to (N, 2, -1); reflection pad 1 of
level 2. 55 layers; each activation type, max and mul run four times per
configuration, on four tensor shapes.
"""

from __future__ import annotations

import torch
from torch import nn

from nnperf.ir.modules import Scale

# The input configurations (H, W, C) of PreVIousNet-01 in the paper, section V-C.
CONFIGURATIONS: tuple[tuple[int, int, int], ...] = ((56, 56, 32), (28, 28, 64), (14, 14, 64), (7, 7, 64))


class _BnScale(nn.Module):
    """Caffe's BN layer (no affine) followed by its Scale layer: two IR layers."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(channels, affine=False)
        self.scale = Scale(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale(self.bn(x))


class _BnScaleRelu(_BnScale):
    """BN, Scale and ReLU: three IR layers."""

    def __init__(self, channels: int) -> None:
        super().__init__(channels)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.scale(self.bn(x)))


# --------------------------------------------------------------------------- PreVIousNet-01

class PreVIousNet01(nn.Module):
    """PreVIousNet-01 for a ``channels`` x H x W input (any H, W >= 1).

    Returns (global average pool of level 3, level 4 concat, level 4 pointwise).
    """

    def __init__(self, channels: int = 32) -> None:
        super().__init__()
        c = channels
        # level 1: C x H
        self.l1_conv3x3 = nn.Conv2d(c, c, 3, padding=1)
        self.l1_conv3x3_act = _BnScaleRelu(c)
        self.l1_pointwise = nn.Conv2d(c, 2 * c, 1)
        self.l1_depthwise3x3 = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.l1_depthwise3x3_act = _BnScaleRelu(c)
        self.l1_pool = nn.MaxPool2d(2, 2, ceil_mode=True)
        # level 2: 2C x H/2
        self.l2_conv3x3_s2 = nn.Conv2d(2 * c, 2 * c, 3, stride=2, padding=1)
        self.l2_conv3x3_s2_act = _BnScaleRelu(2 * c)
        self.l2_pointwise = nn.Conv2d(2 * c, 4 * c, 1)
        self.l2_pointwise_bn = _BnScale(4 * c)
        self.l2_bottleneck = nn.Conv2d(2 * c, c, 1)
        self.l2_conv5x5 = nn.Conv2d(c, 2 * c, 5, padding=2)
        self.l2_conv5x5_relu = nn.ReLU()
        self.l2_pool = nn.MaxPool2d(3, 2, padding=1)
        # level 3: 4C x H/4
        self.l3_depthwise3x3 = nn.Conv2d(4 * c, 4 * c, 3, padding=1, groups=4 * c)
        self.l3_depthwise3x3_act = _BnScaleRelu(4 * c)
        self.l3_bottleneck = nn.Conv2d(4 * c, 2 * c, 1)
        self.l3_conv3x3 = nn.Conv2d(2 * c, 4 * c, 3, padding=1)
        self.l3_conv3x3_act = _BnScaleRelu(4 * c)
        self.l3_pool = nn.AvgPool2d(3, 1, padding=1)
        self.l3_global_pool = nn.AdaptiveAvgPool2d(1)
        # level 4: 8C x H/8
        self.l4_conv3x3_s2 = nn.Conv2d(8 * c, 8 * c, 3, stride=2, padding=1)
        self.l4_conv3x3_s2_act = _BnScaleRelu(8 * c)
        self.l4_pool = nn.AvgPool2d(2, 2, ceil_mode=True)
        self.l4_bottleneck = nn.Conv2d(16 * c, 4 * c, 1)
        self.l4_conv3x3 = nn.Conv2d(4 * c, 8 * c, 3, padding=1)
        self.l4_conv3x3_pool = nn.MaxPool2d(3, 1, padding=1)
        self.l4_depthwise5x5 = nn.Conv2d(4 * c, 4 * c, 5, padding=2, groups=4 * c)
        self.l4_pointwise = nn.Conv2d(8 * c, 16 * c, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a = self.l1_conv3x3_act(self.l1_conv3x3(x))
        b = self.l1_pointwise(x)
        d = self.l1_depthwise3x3_act(self.l1_depthwise3x3(x))
        level1 = torch.maximum(torch.cat([a + d, d], 1), b)
        pooled1 = self.l1_pool(level1)

        s = self.l2_conv3x3_s2_act(self.l2_conv3x3_s2(level1))
        f = self.l2_pointwise_bn(self.l2_pointwise(pooled1))
        h = self.l2_conv5x5_relu(self.l2_conv5x5(self.l2_bottleneck(pooled1)))
        level2 = torch.cat([s * h, pooled1], 1) + f
        pooled2 = self.l2_pool(level2)

        i = self.l3_depthwise3x3_act(self.l3_depthwise3x3(pooled2))
        k = self.l3_conv3x3_act(self.l3_conv3x3(self.l3_bottleneck(pooled2)))
        pooled3 = self.l3_pool(torch.cat([i + k, pooled2], 1))
        out1 = self.l3_global_pool(pooled3)

        s4 = self.l4_conv3x3_s2_act(self.l4_conv3x3_s2(pooled3))
        pooled4 = self.l4_pool(pooled3)
        m = self.l4_bottleneck(torch.cat([s4, pooled4], 1))
        out2 = torch.cat([self.l4_conv3x3_pool(self.l4_conv3x3(m)), self.l4_depthwise5x5(m)], 1)
        out3 = self.l4_pointwise(pooled4)
        return out1, out2, out3


def previousnet01(channels: int = 32) -> nn.Module:
    """PreVIousNet-01 for ``channels`` input channels, random weights."""
    return PreVIousNet01(channels)


# --------------------------------------------------------------------------- PreVIousNet-02

# (name, source, output length). A length is ("C", m) for m times the input
# length C or ("K", n) for the custom length n (section V-B: K1 = 10, K2 = 1000).
_FC_LAYERS: tuple[tuple[str, str, tuple[str, int]], ...] = (
    # cluster 1, on the input (C)
    ("fc01", "input", ("C", 1)), ("fc02", "input", ("C", 2)), ("fc03", "input", ("C", 4)),
    ("fc04", "input", ("K", 10)), ("fc05", "input", ("K", 1000)),
    # cluster 2, on 2C
    ("fc06", "fc02", ("C", 1)), ("fc07", "fc02", ("C", 4)), ("fc08", "fc02", ("C", 8)),
    ("fc09", "fc02", ("K", 10)), ("fc10", "fc02", ("K", 1000)),
    # cluster 3, on 4C
    ("fc11", "fc03", ("C", 2)), ("fc12", "fc03", ("C", 8)), ("fc13", "fc03", ("C", 16)),
    ("fc14", "fc03", ("K", 1000)),
    # cluster 4, on 8C
    ("fc15", "fc08", ("C", 1)), ("fc16", "fc08", ("C", 4)), ("fc17", "fc08", ("C", 16)),
    ("fc18", "fc08", ("K", 10)), ("fc19", "fc12", ("C", 8)),
    # cluster 5, on 16C
    ("fc20", "fc13", ("C", 2)), ("fc21", "fc13", ("K", 1000)), ("fc22", "fc13", ("K", 10)),
    ("fc23", "fc17", ("C", 8)), ("fc24", "fc17", ("C", 1)),
    # cluster 6, on the custom lengths and a second pass on C ... 4C
    ("fc25", "fc01", ("C", 8)), ("fc26", "fc05", ("K", 10)), ("fc27", "fc05", ("K", 1000)),
    ("fc28", "fc04", ("K", 1000)), ("fc29", "fc04", ("C", 1)), ("fc30", "fc06", ("C", 16)),
    ("fc31", "fc11", ("C", 2)), ("fc32", "fc16", ("C", 4)),
)
# FC outputs that go through a softmax: lengths 10 (x4), 1000 (x3), C, 2C, 4C, 8C, 16C.
_SOFTMAX_ON: tuple[str, ...] = (
    "fc09", "fc18", "fc22", "fc26", "fc10", "fc14", "fc27", "fc15", "fc31", "fc07", "fc23", "fc30",
)


class PreVIousNet02(nn.Module):
    """PreVIousNet-02 for a 1 x ``length`` input vector.

    Returns every FC output no other FC reads, through a softmax where listed.
    """

    def __init__(self, length: int = 256) -> None:
        super().__init__()
        lengths = {"input": length}
        self.fc = nn.ModuleDict()
        for name, source, (kind, n) in _FC_LAYERS:
            lengths[name] = n * length if kind == "C" else n
            self.fc[name] = nn.Linear(lengths[source], lengths[name])
        self.softmax = nn.ModuleDict({name: nn.Softmax(dim=1) for name in _SOFTMAX_ON})
        read = {source for _, source, _ in _FC_LAYERS}
        self._terminals = tuple(name for name, _, _ in _FC_LAYERS if name not in read)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = {"input": x}
        for name, source, _ in _FC_LAYERS:
            values[name] = self.fc[name](values[source])
        return tuple(self.softmax[name](values[name]) if name in self.softmax else values[name]
                     for name in self._terminals)


def previousnet02(length: int = 256) -> nn.Module:
    """PreVIousNet-02 for input vectors of ``length``, random weights."""
    return PreVIousNet02(length)


# --------------------------------------------------------------------------- PreVIousNet-03 (nnperf)

class _Level03(nn.Module):
    """One PreVIousNet-03 level: ``conv`` then six activations, max, mul and concat to 2x channels."""

    def __init__(self, conv: nn.Conv2d, lrn: bool) -> None:
        super().__init__()
        self.conv = conv
        self.relu6 = nn.ReLU6()
        self.leaky_relu = nn.LeakyReLU(0.1)
        self.sigmoid = nn.Sigmoid()
        self.tanh = nn.Tanh()
        self.hardswish = nn.Hardswish()
        self.silu = nn.SiLU()
        self.lrn = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0) if lrn else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.conv(x)
        peak = torch.maximum(self.relu6(d), self.leaky_relu(x))
        gated = self.sigmoid(d) * peak
        y = torch.cat([self.hardswish(peak), self.silu(self.tanh(gated))], 1)
        return self.lrn(y) if self.lrn is not None else y


class PreVIousNet03(nn.Module):
    """nnperf's PreVIousNet-03 for a ``channels`` x H x W input (any H, W >= 1)."""

    def __init__(self, channels: int = 32) -> None:
        super().__init__()
        c = channels
        self.level1 = _Level03(nn.Conv2d(c, c, 3, padding=1, groups=c), lrn=True)
        self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.level2 = _Level03(nn.Conv2d(2 * c, 2 * c, 3, padding=1, groups=4), lrn=True)
        self.pad2 = nn.ZeroPad2d((0, 1, 0, 1))
        self.pool2 = nn.MaxPool2d(2, 1)
        self.level3 = _Level03(nn.Conv2d(4 * c, 4 * c, 5, padding=2, groups=4 * c), lrn=False)
        self.pool3 = nn.AvgPool2d(2, 2, ceil_mode=True)
        self.level4 = _Level03(nn.Conv2d(8 * c, 8 * c, 3, padding=1, groups=8), lrn=False)
        self.global_pool4 = nn.AdaptiveMaxPool2d(1)
        self.upsample4 = nn.Upsample(scale_factor=2, mode="nearest")
        self.upsample3 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.global_pool3 = nn.AdaptiveMaxPool2d(1)
        self.upsample2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.pad_head2 = nn.ReflectionPad2d(1)
        self.upsample1 = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y1 = self.level1(x)
        y2 = self.level2(self.pool1(y1))
        y3 = self.level3(self.pool2(self.pad2(y2)))
        y4 = self.level4(self.pool3(y3))
        return (
            torch.flatten(self.global_pool4(y4), 1),
            self.upsample4(y4),
            self.global_pool3(self.upsample3(y3)).reshape(x.shape[0], 2, -1),
            self.upsample2(y2),
            self.pad_head2(y2),
            self.upsample1(y1),
        )


def previousnet03(channels: int = 32) -> nn.Module:
    """nnperf's PreVIousNet-03 for ``channels`` input channels, random weights."""
    return PreVIousNet03(channels)
