"""Handlers of the ONNX operators that multiply by weights or slide a window: convolutions, fully connected
layers and matrix products, pooling and reductions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx

from nnperf.errors import ShapeInferenceError
from nnperf.ir._ops import (
    ConvAttrs,
    ConvTransposeAttrs,
    LinearAttrs,
    MatmulAttrs,
    NoAttrs,
    OpType,
    PoolAttrs,
    ReduceAttrs,
)
from nnperf.ir._shapes import Shape, numel, same_padding, shape_text
from nnperf.ir.importers._onnx_converter import Converter, Node, Result
from nnperf.ir.importers._onnx_normalisation import layer_norm_pattern


def map_conv(c: Converter, n: Node) -> Result | None:
    """2-D Conv with its window, groups and bias (ShapeInferenceError for a weight that does not fit)."""
    if len(n.x_shape) != 4 or n.proto.input[0] != n.x or len(n.data_inputs) != 1:
        return None
    w_shape = c.shape_of(n.proto.input[1], "weight")
    groups = int(n.attrs.get("group", 1))
    out_shape = c.shape_of(n.out, "tensor")
    if len(w_shape) != 4 or w_shape[1] * groups != n.x_shape[1] or w_shape[0] != out_shape[1]:
        raise ShapeInferenceError(
            f"{c.source}: Conv node {n.proto.name or n.out!r}: weight {shape_text(w_shape)} with groups={groups} "
            f"does not fit input {shape_text(n.x_shape)} and output {shape_text(out_shape)}"
        )
    kernel = tuple(n.attrs.get("kernel_shape", w_shape[2:]))
    strides = tuple(n.attrs.get("strides", (1, 1)))
    dilations = tuple(n.attrs.get("dilations", (1, 1)))
    pads = _pads(n.attrs, n.x_shape, kernel, strides, dilations)
    return n.single((OpType.CONV, ConvAttrs(kernel=_ints2(kernel), stride=_ints2(strides), padding=pads,
                                            dilation=_ints2(dilations), groups=groups, bias=_has_bias(c, n.proto))))


def map_conv_transpose(c: Converter, n: Node) -> Result | None:
    """2-D ConvTranspose with explicit pads (no output_shape, auto_pad NOTSET or VALID)."""
    if len(n.x_shape) != 4 or n.proto.input[0] != n.x or len(n.data_inputs) != 1 or "output_shape" in n.attrs:
        return None
    auto_pad = n.text("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID"):
        return None
    w_shape = c.shape_of(n.proto.input[1], "weight")
    pads = tuple(int(p) for p in n.attrs.get("pads", (0, 0, 0, 0)))
    return n.single((OpType.CONV_TRANSPOSE, ConvTransposeAttrs(
        kernel=_ints2(n.attrs.get("kernel_shape", w_shape[2:])), stride=_ints2(n.attrs.get("strides", (1, 1))),
        padding=(pads[0], pads[1], pads[2], pads[3]), output_padding=_ints2(n.attrs.get("output_padding", (0, 0))),
        dilation=_ints2(n.attrs.get("dilations", (1, 1))), groups=int(n.attrs.get("group", 1)),
        bias=_has_bias(c, n.proto))))


def map_gemm(c: Converter, n: Node) -> Result | None:
    """Gemm of one activation by a weight: a fully connected layer."""
    if len(n.data_inputs) != 1 or n.proto.input[0] != n.x or n.attrs.get("transA", 0):
        return None
    return n.single((OpType.LINEAR, LinearAttrs(bias=_has_bias(c, n.proto))))


def _fully_connected(c: Converter, n: Node) -> Result | None:
    """MatMul by a 2-D constant; with the Add of a vector after it, a fully connected layer with a bias."""
    weight = n.proto.input[1]
    if len(n.data_inputs) != 1 or n.proto.input[0] != n.x or len(c.shapes.get(weight) or ()) != 2:
        return None
    n_out = (c.shapes.get(weight) or (0, 0))[1]
    add = c.sole_consumer(n.out, "Add")
    if add is not None and _is_vector_constant(c, add, n.out, n_out, n.data):
        c.absorbed.add(id(add))
        return OpType.LINEAR, LinearAttrs(bias=True), [n.x], add.output[0]
    return n.single((OpType.LINEAR, LinearAttrs(bias=False)))


def map_matmul(c: Converter, n: Node) -> Result | None:
    """A product of two activations (either read through a deferred Transpose of its last two axes), else a fully
    connected layer by a 2-D constant."""
    swapped = c.swapped
    if len(n.data_inputs) == 2:
        a, b = n.proto.input[0], n.proto.input[1]
        attrs = MatmulAttrs(transpose_a=a in swapped, transpose_b=b in swapped)
        return OpType.MATMUL, attrs, [swapped.get(a, a), swapped.get(b, b)], n.out
    return _fully_connected(c, n)


def map_pool(c: Converter, n: Node) -> Result | None:
    """2-D MaxPool or AveragePool without dilation."""
    if len(n.x_shape) != 4 or any(d != 1 for d in n.attrs.get("dilations", (1, 1))):
        return None
    is_max = n.proto.op_type == "MaxPool"
    kernel = tuple(n.attrs["kernel_shape"])
    strides = tuple(n.attrs.get("strides", (1, 1)))
    pads = _pads(n.attrs, n.x_shape, kernel, strides, (1, 1))
    return n.single((OpType.MAX_POOL if is_max else OpType.AVG_POOL,
                     PoolAttrs(kernel=_ints2(kernel), stride=_ints2(strides), padding=pads,
                               ceil_mode=bool(n.attrs.get("ceil_mode", 0)),
                               count_include_pad=is_max or bool(n.attrs.get("count_include_pad", 0)))))


def _global_pool(c: Converter, n: Node) -> Result | None:
    """ReduceMean or ReduceMax over H and W: a global pool (axes an attribute, or an input from opset 18)."""
    axes = n.attrs.get("axes")
    if axes is None and len(n.proto.input) > 1:
        value = c.value_of(n.proto.input[1])
        axes = None if value is None else value.tolist()
    if len(n.x_shape) != 4 or axes is None or {int(a) % 4 for a in axes} != {2, 3}:
        return None
    return n.single((OpType.GLOBAL_AVG_POOL if n.proto.op_type == "ReduceMean" else OpType.GLOBAL_MAX_POOL,
                     NoAttrs()))


def _reduce_axes(c: Converter, n: Node) -> tuple[int, ...] | None:
    axes = n.attrs.get("axes")
    if axes is None and len(n.proto.input) > 1:
        value = c.value_of(n.proto.input[1])
        axes = None if value is None else value.reshape(-1).tolist()
    if axes is None:
        return None
    return tuple(sorted({int(a) % len(n.x_shape) for a in axes}))


def map_reduce(c: Converter, n: Node) -> Result | None:
    """A global pool over H and W, the exporter's layer norm pattern, or a mean or max over axes."""
    pooled = _global_pool(c, n)
    if pooled is not None:
        return pooled
    axes = _reduce_axes(c, n)
    if axes is None or len(n.data_inputs) != 1:
        return None
    if n.proto.op_type == "ReduceMean":
        fused = layer_norm_pattern(c, n, axes)
        if fused is not None:
            return fused
    op = OpType.REDUCE_MEAN if n.proto.op_type == "ReduceMean" else OpType.REDUCE_MAX
    return n.single((op, ReduceAttrs(axes=axes, keepdims=bool(n.attrs.get("keepdims", 1)))))


def _pads(attrs: dict[str, Any], x_shape: Shape, kernel: Sequence[int], strides: Sequence[int],
          dilations: Sequence[int]) -> tuple[int, int, int, int]:
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = same_padding(x_shape[2:4], kernel, strides, dilations, lower=auto_pad == "SAME_LOWER")
        return (begin[0], begin[1], end[0], end[1])
    pads = tuple(int(p) for p in attrs.get("pads", (0, 0, 0, 0)))
    return (pads[0], pads[1], pads[2], pads[3])


def _has_bias(c: Converter, node: onnx.NodeProto) -> bool:
    """Whether a Conv or Gemm adds a bias; an all-zero stored bias (an exporter's filler) does not count."""
    if len(node.input) < 3 or not node.input[2]:
        return False
    value = c.value_of(node.input[2])
    return value is None or bool(np.any(value))


def _is_vector_constant(c: Converter, add: onnx.NodeProto, tensor: str, length: int, data: set[str]) -> bool:
    other = [t for t in add.input if t != tensor]
    return len(other) == 1 and other[0] not in data and numel(c.shapes.get(other[0]) or (0,)) == length


def _ints2(values: Sequence[int]) -> tuple[int, int]:
    v = tuple(int(x) for x in values)
    if len(v) != 2:
        raise ShapeInferenceError(f"expected two spatial values, got {v}")
    return (v[0], v[1])
