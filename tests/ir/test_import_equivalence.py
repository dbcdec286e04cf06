"""A network outside the zoo gives the same IR from PyTorch and from its ONNX export."""

from __future__ import annotations

import torch
from torch import nn

from nnperf.ir import OpType
from nnperf.ir.export import export_onnx
from nnperf.ir.importers import from_onnx, from_torch
from nnperf.ir.metrics import layer_metrics
from nnperf.ir.modules import Scale


class Mixed(nn.Module):
    """Op types the zoo does not use: SiLU, hard-swish, sigmoid, tanh, leaky ReLU, scale, upsample, pad, ..."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False)
        self.scale = Scale(16)
        self.silu = nn.SiLU()
        self.dw = nn.Conv2d(16, 16, 5, padding=2, groups=16)
        self.hswish = nn.Hardswish()
        self.grouped = nn.Conv2d(16, 32, 3, padding=1, groups=4)
        self.leaky = nn.LeakyReLU(0.1)
        self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(32, 8, 1), nn.ReLU6(), nn.Conv2d(8, 32, 1),
                                  nn.Sigmoid())
        self.tanh = nn.Tanh()
        self.pool = nn.AvgPool2d(2)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear")
        self.pad = nn.ZeroPad2d((1, 1, 1, 1))
        self.maxpool = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        y = self.silu(self.scale(self.stem(x)))        # 16x16x16
        y = self.hswish(self.dw(y))
        y = self.leaky(self.grouped(y))                # 32x16x16
        y = y * self.gate(y)                           # squeeze-and-excitation: broadcast mul
        z = self.up(self.pool(self.tanh(y)))           # 32x16x16
        y = torch.cat([y, z], dim=1)                   # 64x16x16
        y = self.maxpool(self.pad(y))                  # 18 -> 9 (ceil)
        y = torch.flatten(nn.functional.adaptive_max_pool2d(y, 1), 1)
        return torch.softmax(self.head(y), dim=1)


def test_torch_and_onnx_imports_agree(tmp_path):
    module, x = Mixed().eval(), torch.randn(1, 3, 32, 32)
    via_torch = from_torch(module, x, name="mixed")
    via_onnx = from_onnx(export_onnx(module, x, tmp_path / "mixed.onnx"))
    assert [layer.op for layer in via_torch] == [
        OpType.CONV, OpType.SCALE, OpType.SILU, OpType.CONV, OpType.HARDSWISH, OpType.CONV, OpType.LEAKY_RELU,
        OpType.GLOBAL_AVG_POOL, OpType.CONV, OpType.RELU6, OpType.CONV, OpType.SIGMOID, OpType.MUL, OpType.TANH,
        OpType.AVG_POOL, OpType.UPSAMPLE, OpType.CONCAT, OpType.PAD, OpType.MAX_POOL, OpType.GLOBAL_MAX_POOL,
        OpType.FLATTEN, OpType.LINEAR, OpType.SOFTMAX,
    ]
    assert [layer.op for layer in via_onnx] == [layer.op for layer in via_torch]
    assert [layer.attrs for layer in via_onnx] == [layer.attrs for layer in via_torch]
    assert [layer.input_shapes for layer in via_onnx] == [layer.input_shapes for layer in via_torch]
    # same wiring, up to names
    index_t = {layer.name: i for i, layer in enumerate(via_torch)}
    index_o = {layer.name: i for i, layer in enumerate(via_onnx)}
    assert [[index_t.get(p, -1) for p in layer.inputs] for layer in via_torch] == [
        [index_o.get(p, -1) for p in layer.inputs] for layer in via_onnx]
    for a, b in zip(via_torch, via_onnx):
        assert layer_metrics(a).mem_ops == layer_metrics(b).mem_ops
        assert layer_metrics(a).ops == layer_metrics(b).ops
    # the parameters the IR counts are the module's parameters
    assert sum(layer_metrics(layer).params for layer in via_onnx) == sum(p.numel() for p in module.parameters())
