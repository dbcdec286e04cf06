"""The PyTorch importer: every op type from modules and from functional calls."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nnperf.errors import NnperfWarning, UnsupportedOperatorError
from nnperf.ir import AxisAttrs, ConvAttrs, ConvKind, NoAttrs, OpType, PoolAttrs, ScaleAttrs, UpsampleAttrs
from nnperf.ir.importers import TraceError, from_torch
from nnperf.ir.metrics import network_metrics
from nnperf.ir.modules import Scale


class Everything(nn.Module):
    """One of each module-level op type nnperf covers."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.pw = nn.Conv2d(8, 16, 1, bias=False)
        self.grouped = nn.Conv2d(16, 16, 3, stride=2, padding="valid", groups=4)
        self.bn = nn.BatchNorm2d(8)
        self.scale = Scale(8)
        self.relu, self.relu6, self.leaky = nn.ReLU(), nn.ReLU6(), nn.LeakyReLU(0.1)
        self.sig, self.tanh, self.hsw, self.silu = nn.Sigmoid(), nn.Tanh(), nn.Hardswish(), nn.SiLU()
        self.lrn = nn.LocalResponseNorm(5)
        self.maxpool = nn.MaxPool2d(2)
        self.avgpool = nn.AvgPool2d(3, stride=1, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.pad = nn.ZeroPad2d((0, 1, 0, 1))
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(16, 10)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        y = self.relu(self.scale(self.bn(self.conv(x))))           # 8x8x8
        y = self.relu6(self.dw(y)) + self.leaky(y)                  # add
        y = self.sig(y) * self.tanh(y)                              # mul
        y = torch.maximum(self.hsw(y), self.silu(y))                # max
        y = self.lrn(y)
        y = self.pw(y)                                              # 16x8x8
        y = self.avgpool(self.up(self.maxpool(y)))                  # 16x8x8
        y = self.grouped(self.pad(y))                               # 9x9 -> 4x4
        return self.softmax(self.fc(self.drop(self.flatten(self.gap(y)))))


def test_every_module_op_type():
    net = from_torch(Everything(), torch.randn(1, 3, 8, 8), name="everything")
    ops = [layer.op for layer in net]
    assert ops == [
        OpType.CONV, OpType.BATCH_NORM, OpType.SCALE, OpType.RELU, OpType.CONV, OpType.RELU6, OpType.LEAKY_RELU,
        OpType.ADD, OpType.SIGMOID, OpType.TANH, OpType.MUL, OpType.HARDSWISH, OpType.SILU, OpType.MAX,
        OpType.LRN, OpType.CONV, OpType.MAX_POOL, OpType.UPSAMPLE, OpType.AVG_POOL, OpType.PAD, OpType.CONV,
        OpType.GLOBAL_AVG_POOL, OpType.FLATTEN, OpType.LINEAR, OpType.SOFTMAX,
    ]  # the dropout is gone: a no-op at inference
    assert [layer.conv_kind for layer in net if layer.op is OpType.CONV] == [
        ConvKind.STANDARD, ConvKind.DEPTHWISE, ConvKind.POINTWISE, ConvKind.GROUPED]
    grouped = net.layer("grouped")
    assert grouped.attrs == ConvAttrs(kernel=(3, 3), stride=(2, 2), padding=(0, 0, 0, 0), groups=4, bias=True)
    assert grouped.input_shape == (1, 16, 9, 9) and grouped.output_shape == (1, 16, 4, 4)
    assert net.layer("scale").attrs == ScaleAttrs(bias=True, per_channel=True)
    assert net.producers("fc") == ("flatten",)
    m = network_metrics(net)
    # conv 3->8 3x3 on 8x8 with bias: 3*3*3*8*8*8 + 8*8*8 = 14,336 MACs
    assert next(x for x in m.layers if x.name == "conv").macs == 14_336
    # params: conv 224 + bn 16 + scale 16 + dw 72 + pw 128 + grouped (3*3*4*16 + 16 = 592) + fc 170 = 1,218
    assert m.params == 1_218
    assert m.params == sum(p.numel() for p in Everything().parameters())


def test_keep_noops():
    net = from_torch(Everything(), torch.randn(1, 3, 8, 8), keep_noops=True)
    assert net.layer("drop").op is OpType.DROPOUT
    assert net.producers("fc") == ("drop",)


class Functional(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(4, 1, 1))
        self.b = nn.Parameter(torch.zeros(4, 1, 1))

    def forward(self, x):
        y = F.relu(x)
        y = y * self.w + self.b                       # scale with bias
        a = F.max_pool2d(y, 2)
        b = F.avg_pool2d(y, 2)
        y = torch.cat((a, b), 1)                      # 8 channels, 4x4
        y = F.interpolate(y, scale_factor=2, mode="bilinear")
        y = F.pad(y, (1, 1, 1, 1))
        y = F.adaptive_avg_pool2d(y, (5, 5))          # 10x10 -> 5x5: a 2x2 avg pool
        y = y.mean((2, 3))
        return F.softmax(y.view(y.size(0), -1), dim=-1)


def test_functional_calls():
    net = from_torch(Functional(), torch.randn(1, 4, 8, 8))
    assert [layer.op for layer in net] == [
        OpType.RELU, OpType.SCALE, OpType.MAX_POOL, OpType.AVG_POOL, OpType.CONCAT, OpType.UPSAMPLE, OpType.PAD,
        OpType.AVG_POOL, OpType.GLOBAL_AVG_POOL, OpType.RESHAPE, OpType.SOFTMAX,
    ]
    scale = net.layers[1]
    assert scale.attrs == ScaleAttrs(bias=True, per_channel=True)
    assert net.layers[7].attrs == PoolAttrs(kernel=(2, 2), stride=(2, 2))
    assert net.layers[4].output_shape == (1, 8, 4, 4)
    assert net.layers[-1].attrs.axis == 1


class Strange(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv1d(3, 3, 1)
        self.gelu = nn.GELU(approximate="tanh")  # the exact GELU is supported
        self.gelu = nn.Softmin(dim=1)  # GELU became supported

    def forward(self, x):
        y = self.gelu(x)
        z = self.gelu(torch.erf(y))
        return self.c1(z.flatten(2))


def test_every_unsupported_operator_is_listed_at_once_when_strict():
    with pytest.raises(UnsupportedOperatorError) as info:
        from_torch(Strange(), torch.randn(1, 3, 4, 4), name="strange", strict=True)
    ops = info.value.operators
    assert set(ops) == {"Softmin", "erf", "Conv1d"}
    assert ops["Softmin"] == ["gelu", "gelu_1"]
    assert "strange" in str(info.value) and "gelu_1" in str(info.value)


def test_a_module_with_calls_without_a_rule_is_imported_through_torch_export_and_onnx():
    with pytest.warns(NnperfWarning, match="strange: imported through torch.export and ONNX \\(the torch.fx "
                                           "importer has no rule for Softmin, erf, Conv1d\\)"):
        net = from_torch(Strange(), torch.randn(1, 3, 4, 4), name="strange")
    generic = sorted(layer.attrs.operator for layer in net.layers if layer.op is OpType.GENERIC)
    assert "Erf" in generic and "Conv" in generic  # the Conv is 1-D: no dedicated layer type
    assert net.layers[-1].output_shape == (1, 3, 16)


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return torch.erf(x)
        return -x


def test_untraceable_module_is_refused_when_strict():
    with pytest.raises(TraceError, match="cannot trace this module.*without --strict"):
        from_torch(Branchy(), torch.randn(1, 3), strict=True)


def test_a_module_torch_export_refuses_is_imported_through_torchscript():
    # a branch on a tensor's value stops torch.fx and torch.export; TorchScript's tracer follows the branch taken
    with pytest.warns(NnperfWarning, match="imported through TorchScript and ONNX \\(torch.fx cannot trace"):
        net = from_torch(Branchy(), torch.ones(1, 3))
    assert [(layer.op, layer.attrs.operator) for layer in net.layers] == [(OpType.GENERIC, "Erf")]


class SelfConcat(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return torch.cat([y, y], dim=1)


def test_concat_of_one_tensor_with_itself():
    net = from_torch(SelfConcat(), torch.randn(1, 3, 4, 4))
    cat = net.layers[-1]
    assert cat.op is OpType.CONCAT and cat.inputs == ("relu", "relu") and cat.output_shape == (1, 6, 4, 4)


# activations and data movement
class NewerActivations(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hsig = nn.Hardsigmoid()
        self.clip = nn.Hardtanh(-1.0, 2.0)
        self.prelu = nn.PReLU(4)
        self.prelu_one = nn.PReLU()
        self.gelu = nn.GELU()
        self.softplus = nn.Softplus()
        self.mish = nn.Mish()

    def forward(self, x):
        y = self.mish(self.softplus(self.gelu(self.prelu_one(self.prelu(self.clip(self.hsig(x)))))))
        y = torch.log(torch.exp(y))
        return torch.clamp(F.hardsigmoid(y), min=0.1), torch.clamp(y, 0.0, 6.0), F.gelu(F.mish(y))


def test_newer_activation_modules_and_calls():
    from nnperf.ir import ClipAttrs, HardSigmoidAttrs, NoAttrs, PReluAttrs

    net = from_torch(NewerActivations(), torch.randn(1, 4, 5, 5))
    hard_sigmoid = HardSigmoidAttrs(alpha=0.1666667, beta=0.5)
    assert [(layer.op, layer.attrs) for layer in net.layers] == [
        (OpType.HARD_SIGMOID, hard_sigmoid), (OpType.CLIP, ClipAttrs(low=-1.0, high=2.0)),
        (OpType.PRELU, PReluAttrs(per_channel=True)), (OpType.PRELU, PReluAttrs(per_channel=False)),
        (OpType.GELU, NoAttrs()), (OpType.SOFTPLUS, NoAttrs()), (OpType.MISH, NoAttrs()), (OpType.EXP, NoAttrs()),
        (OpType.LOG, NoAttrs()), (OpType.HARD_SIGMOID, hard_sigmoid), (OpType.CLIP, ClipAttrs(low=0.1)),
        (OpType.RELU6, NoAttrs()), (OpType.MISH, NoAttrs()), (OpType.GELU, NoAttrs())]
    assert network_metrics(net).params == 4 + 1  # the PReLU slopes


class NewerDataMovement(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        n, c, h, w = x.shape
        a, b = x.chunk(2, dim=1)
        p, q, r = torch.split(x, [1, 4, 3], dim=1)
        shuffled = torch.transpose(x.view(n, 2, c // 2, h, w), 1, 2).contiguous().view(n, c, h, w)
        picked = torch.index_select(x, 1, torch.arange(7, -1, -2)) + x[:, [3, 1, 3, 1]]
        rows = x[:, :, 1:4:2]
        gate = self.pool(x).expand(-1, -1, h, w)
        return a, b, p, q, r, shuffled, picked, rows.permute(0, 2, 3, 1), gate


def test_newer_data_movement_calls():
    from nnperf.ir import ChannelShuffleAttrs, GatherAttrs, NoAttrs, SliceAttrs, TransposeAttrs

    net = from_torch(NewerDataMovement(), torch.randn(1, 8, 5, 6))
    assert [(layer.op, layer.attrs, layer.output_shape) for layer in net.layers] == [
        (OpType.SLICE, SliceAttrs(axis=1, start=0, end=4), (1, 4, 5, 6)),
        (OpType.SLICE, SliceAttrs(axis=1, start=4, end=8), (1, 4, 5, 6)),
        (OpType.SLICE, SliceAttrs(axis=1, start=0, end=1), (1, 1, 5, 6)),
        (OpType.SLICE, SliceAttrs(axis=1, start=1, end=5), (1, 4, 5, 6)),
        (OpType.SLICE, SliceAttrs(axis=1, start=5, end=8), (1, 3, 5, 6)),
        (OpType.CHANNEL_SHUFFLE, ChannelShuffleAttrs(groups=2), (1, 8, 5, 6)),
        (OpType.GATHER, GatherAttrs(axis=1, indices=(7, 5, 3, 1)), (1, 4, 5, 6)),
        (OpType.GATHER, GatherAttrs(axis=1, indices=(3, 1, 3, 1)), (1, 4, 5, 6)),
        (OpType.ADD, NoAttrs(), (1, 4, 5, 6)),
        (OpType.SLICE, SliceAttrs(axis=2, start=1, end=4, step=2), (1, 8, 2, 6)),
        (OpType.GLOBAL_AVG_POOL, NoAttrs(), (1, 8, 1, 1)),
        (OpType.EXPAND, NoAttrs(), (1, 8, 5, 6)),
        (OpType.TRANSPOSE, TransposeAttrs(perm=(0, 2, 3, 1)), (1, 2, 6, 8))]
# resizing, normalisation and attention
class NewerOps(nn.Module):
    """One of each issue-17 op, as modules and calls."""

    def __init__(self) -> None:
        super().__init__()
        from nnperf.ir.modules import LayerNorm2d

        self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.dilated = nn.Conv2d(8, 4, 3, padding=2, dilation=2)
        self.ln2d = LayerNorm2d(4)
        self.gn = nn.GroupNorm(2, 4)
        self.inorm = nn.InstanceNorm2d(4)
        self.gelu = nn.GELU()
        self.ln = nn.LayerNorm(16)
        self.cls = nn.Parameter(torch.zeros(1, 4, 1))
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        u = self.gn(self.up(x))  # 1x4x8x8
        d = self.inorm(self.gelu(self.ln2d(self.dilated(x))))  # 1x4x4x4
        small = F.interpolate(u, size=(4, 4), mode="bilinear")
        e = (small - d) / torch.sigmoid(d) ** d / 2.0
        t = self.ln(e.reshape(1, 4, 16))
        a = torch.matmul(self.softmax(t @ t.transpose(-2, -1)), t)  # 1x4x16
        return torch.cat([self.cls, a], dim=2), e.mean(1, keepdim=True), torch.amax(e, dim=-1), F.gelu(e)


def test_newer_ops_from_modules_and_calls() -> None:
    from nnperf.ir import ConvTransposeAttrs, GroupNormAttrs, MatmulAttrs, NormAttrs, ReduceAttrs

    net = from_torch(NewerOps(), torch.randn(1, 8, 4, 4))
    got = [(layer.op, layer.attrs) for layer in net]
    assert got == [
        (OpType.CONV_TRANSPOSE, ConvTransposeAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1),
                                                   output_padding=(1, 1), groups=2)),
        (OpType.GROUP_NORM, GroupNormAttrs(groups=2)),
        (OpType.CONV, ConvAttrs(kernel=(3, 3), padding=(2, 2, 2, 2), dilation=(2, 2))),
        (OpType.LAYER_NORM, NormAttrs(axis=1, eps=1e-6)),
        (OpType.GELU, NoAttrs()),
        (OpType.GROUP_NORM, GroupNormAttrs(groups=4, affine=False)),  # instance norm: one channel per group
        (OpType.UPSAMPLE, UpsampleAttrs("linear")),
        (OpType.SUB, NoAttrs()),
        (OpType.SIGMOID, NoAttrs()),
        (OpType.POW, NoAttrs()),
        (OpType.DIV, NoAttrs()),
        (OpType.SCALE, ScaleAttrs(bias=False, per_channel=False)),  # / 2.0
        (OpType.RESHAPE, NoAttrs()),
        (OpType.LAYER_NORM, NormAttrs(axis=-1)),
        (OpType.MATMUL, MatmulAttrs(transpose_b=True)),  # t @ t.transpose(-2, -1), no transpose layer
        (OpType.SOFTMAX, AxisAttrs(axis=1)),
        (OpType.MATMUL, MatmulAttrs()),
        (OpType.CONSTANT, NoAttrs()),  # the class token, a parameter operand of the concat
        (OpType.CONCAT, AxisAttrs(axis=2)),
        (OpType.REDUCE_MEAN, ReduceAttrs(axes=(1,), keepdims=True)),
        (OpType.REDUCE_MAX, ReduceAttrs(axes=(3,), keepdims=False)),
        (OpType.GELU, NoAttrs()),
    ]
    cls = net.layers[17]
    assert (cls.name, cls.output_shape, network_metrics(net).layers[17].params) == ("cls", (1, 4, 1), 4)
    assert net.layers[14].inputs == (net.layers[13].name,) * 2
