"""Handlers of the ONNX activations and element-wise operators: each element of the output computed from the
same element of the inputs (broadcast), and softmax along one axis."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx

from nnperf.ir._ops import (
    AxisAttrs,
    ClipAttrs,
    HardSigmoidAttrs,
    LeakyReluAttrs,
    NoAttrs,
    OpType,
    PReluAttrs,
    ScaleAttrs,
)
from nnperf.ir._shapes import Shape
from nnperf.ir.importers._common import one_value, scale_kind
from nnperf.ir.importers._onnx_converter import Converter, Mapped, Node, OnnxHandler, Result, f32
from nnperf.ir.importers._onnx_patterns import gelu_erf_pattern, softplus_pattern
from nnperf.ir.importers._table import ImportRule, rule


def plain_rule(op: OpType) -> ImportRule[OnnxHandler]:
    """The rule of an operator that maps to ``op`` whatever its attributes."""

    def handle(c: Converter, n: Node) -> Result | None:
        return n.single((op, NoAttrs()))

    return rule({op}, handle)


def map_sigmoid(c: Converter, n: Node) -> Result | None:
    """Sigmoid, or SiLU when its only consumer multiplies it by its own input (how exporters write SiLU)."""
    mul = c.sole_consumer(n.out, "Mul")
    if mul is not None and set(mul.input) == {n.x, n.out}:
        c.absorbed.add(id(mul))
        return OpType.SILU, NoAttrs(), [n.x], mul.output[0]
    return n.single((OpType.SIGMOID, NoAttrs()))


def map_leaky_relu(c: Converter, n: Node) -> Result | None:
    """LeakyRelu with its slope."""
    return n.single((OpType.LEAKY_RELU, LeakyReluAttrs(negative_slope=f32(n.attrs.get("alpha", 0.01)))))


def map_clip(c: Converter, n: Node) -> Result | None:
    """Clip: a ReLU, a ReLU6 or a CLIP layer by its constant bounds."""
    return n.single(_clip_bounds(c, n.proto, n.attrs))


def _clip_bounds(c: Converter, node: onnx.NodeProto, attrs: dict[str, Any]) -> Mapped | None:
    """Clip's bounds as a ReLU, a ReLU6 or a CLIP layer; None for bounds that are not stored constants of one
    value, or for no bounds at all."""
    if c.opset < 11:
        low, high = attrs.get("min"), attrs.get("max")
    else:
        lo = c.value_of(node.input[1]) if len(node.input) > 1 else None
        hi = c.value_of(node.input[2]) if len(node.input) > 2 else None
        if (len(node.input) > 1 and node.input[1] and lo is None) or (
            len(node.input) > 2 and node.input[2] and hi is None
        ):
            return None
        low = None if lo is None else one_value(lo)
        high = None if hi is None else one_value(hi)
        if (lo is not None and low is None) or (hi is not None and high is None):
            return None  # bounds of more than one value: no clip layer
    if low == 0.0 and high == 6.0:
        return OpType.RELU6, NoAttrs()
    if low == 0.0 and (high is None or np.isinf(high)):
        return OpType.RELU, NoAttrs()
    if low is None and high is None:  # any other bounds are a CLIP layer
        return None
    return OpType.CLIP, ClipAttrs(low=-math.inf if low is None else f32(low),
                                  high=math.inf if high is None else f32(high))


def map_hard_sigmoid(c: Converter, n: Node) -> Result | None:
    """HardSigmoid with its alpha and beta."""
    return n.single((OpType.HARD_SIGMOID, HardSigmoidAttrs(alpha=f32(n.attrs.get("alpha", 0.2)),
                                                           beta=f32(n.attrs.get("beta", 0.5)))))


def map_prelu(c: Converter, n: Node) -> Result | None:
    """PRelu by a constant slope: one per channel or a single one."""
    if len(n.consts) != 1 or n.proto.input[0] != n.x:
        return None
    kind = scale_kind(c.shapes.get(n.consts[0]), n.x_shape)
    return None if kind is None else n.single((OpType.PRELU, PReluAttrs(per_channel=kind == "channel")))


def map_gelu(c: Converter, n: Node) -> Result | None:
    """Gelu (only the exact form, approximate='none')."""
    return n.single((OpType.GELU, NoAttrs())) if n.text("approximate", "none") == "none" else None


def map_eltwise(op: OpType) -> OnnxHandler:
    """Add, Sum or Max of two or more activations."""

    def handle(c: Converter, n: Node) -> Result | None:
        return (op, NoAttrs(), n.data_inputs, n.out) if len(n.data_inputs) >= 2 else None

    return handle


def map_mul(c: Converter, n: Node) -> Result | None:
    """Mul of activations, or by a scalar or per-channel constant: a scale layer, with the Add of a bias after it."""
    softplus = softplus_pattern(c, n)
    if softplus is not None:
        return softplus
    if len(n.data_inputs) >= 2:
        return OpType.MUL, NoAttrs(), n.data_inputs, n.out
    if len(n.consts) != 1:
        return None
    kind = scale_kind(c.shapes.get(n.consts[0]), n.x_shape)
    if kind is None:
        return None
    per_channel = kind == "channel"
    add = c.sole_consumer(n.out, "Add")
    if add is not None and _is_scale_bias(c, add, n.out, n.x_shape, n.data):
        c.absorbed.add(id(add))
        return OpType.SCALE, ScaleAttrs(bias=True, per_channel=per_channel), [n.x], add.output[0]
    return n.single((OpType.SCALE, ScaleAttrs(bias=False, per_channel=per_channel)))


def _is_scale_bias(c: Converter, add: onnx.NodeProto, tensor: str, x_shape: Shape, data: set[str]) -> bool:
    other = [t for t in add.input if t != tensor]
    return len(other) == 1 and other[0] not in data and scale_kind(c.shapes.get(other[0]), x_shape) is not None


def map_binary(op: OpType) -> OnnxHandler:
    """Sub, Div or Pow of two activations; Div by a scalar or per-channel constant is a scale layer."""

    def handle(c: Converter, n: Node) -> Result | None:
        if len(n.data_inputs) >= 2:
            return op, NoAttrs(), n.data_inputs, n.out
        if op is not OpType.DIV or n.proto.input[0] != n.x or len(n.consts) != 1:
            return None
        kind = scale_kind(c.shapes.get(n.consts[0]), n.x_shape)
        return None if kind is None else n.single((OpType.SCALE, ScaleAttrs(bias=False, per_channel=kind == "channel")))

    return handle


def map_div(c: Converter, n: Node) -> Result | None:
    """The exporters' GELU pattern (which starts with a Div by sqrt 2), else a division."""
    return gelu_erf_pattern(c, n) or map_binary(OpType.DIV)(c, n)


def map_softmax(c: Converter, n: Node) -> Result | None:
    """Softmax along its axis (the default axis is opset 13's last, before it the second)."""
    default = -1 if c.opset >= 13 else 1  # opset 13 moved the default axis to the last
    return n.single((OpType.SOFTMAX, AxisAttrs(axis=int(n.attrs.get("axis", default)) % len(n.x_shape))))
