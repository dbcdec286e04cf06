"""ONNX models built from an IR network, with the deterministic weights of :func:`layer_weights` (or those the
caller gives: a file's own, ``_given_weights``).

Naming is a contract the ONNX-based backends rely on to attribute profiler
times to IR layers: each layer ends in one node whose name and output tensor
are both ``layer.name``; a layer that needs several nodes (a scale with a
bias, SiLU, a global pool flattened to NxC, ...) names its earlier helper
nodes and their outputs ``f"{layer.name}/<step>"``; initializers are named
``f"{layer.name}/weight"``, ``.../bias`` and so on. Graph inputs keep the
network's input names. :func:`onnx_node_layers` maps node names back.
Each op's nodes come from its builder in ``ONNX_BUILDERS``, one table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from nnperf.errors import UnsupportedOperatorError
from nnperf.ir import (
    AxisAttrs,
    BatchNormAttrs,
    ChannelShuffleAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    GatherAttrs,
    GenericAttrs,
    GroupNormAttrs,
    HardSigmoidAttrs,
    Layer,
    LeakyReluAttrs,
    LinearAttrs,
    LrnAttrs,
    MatmulAttrs,
    Network,
    NormAttrs,
    OpType,
    PadAttrs,
    PoolAttrs,
    ReduceAttrs,
    ScaleAttrs,
    SliceAttrs,
    TransposeAttrs,
    UpsampleAttrs,
)
from nnperf.ir.importers import rename_outer
from nnperf.measure._memory import require_memory
from nnperf.measure.backends._generic_node import GenericNodeError, generic_node
from nnperf.measure.backends._given_weights import LayerWeights, given_weights, weights_of
from nnperf.measure.backends._weights import pad_amounts

IR_VERSION = 8
"""ONNX IR version written: ONNX Runtime 1.31 refuses versions above 13, and onnx 1.23 writes 14 by default."""

MIN_OPSET = 14
"""The oldest opset with every operator used here in its current form (HardSwish arrived in 14)."""

_HELPER_STEP = re.compile(r"[a-z_]+[0-9]*")


class _Unsupported(Exception):
    """A layer this builder cannot express; the message says why."""


def build_onnx(network: Network, seed: int = 0, opset: int = 17,
               weights: LayerWeights | None = None) -> onnx.ModelProto:
    """``network`` as an ONNX model (IR version 8, default domain at ``opset``, or the newer opset a generic
    layer's node is stated at), with weights from :func:`layer_weights` (``seed``), but for the layers
    ``weights`` gives the parameters of (a file's own: ``from_onnx_with_weights``).

    Raises UnsupportedOperatorError listing every layer that cannot be
    expressed, ValueError for an opset below 14, and InsufficientMemoryError when its weights and tensors
    would not fit in the free memory.
    """
    _check_opset(opset)
    opset = max([opset] + [layer.attrs.opset for layer in network.layers if isinstance(layer.attrs, GenericAttrs)])
    require_memory(network.layers, [s.shape for s in network.inputs], f"network {network.name!r}")
    graph = _Graph(opset)
    problems: dict[str, list[str]] = {}
    for layer in network.layers:
        try:
            with given_weights(weights):
                _emit(graph, layer, list(layer.inputs), seed)
        except _Unsupported as exc:
            problems.setdefault(f"{layer.op.value} ({exc})", []).append(layer.name)
    if problems:
        raise UnsupportedOperatorError(network.name, problems)
    inputs = [helper.make_tensor_value_info(s.name, _elem_type(s.dtype), s.shape) for s in network.inputs]
    specs = {s.name: s for s in network.inputs}
    outputs = []
    for name in network.outputs:
        if name in specs:
            outputs.append(helper.make_tensor_value_info(name, _elem_type(specs[name].dtype), specs[name].shape))
        else:
            layer = network.layer(name)
            outputs.append(helper.make_tensor_value_info(name, output_type(layer), layer.output_shape))
    return _model(graph, network.name, inputs, outputs, opset)


def layer_onnx(layer: Layer, seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    """One layer alone as an ONNX model, its weights as in :func:`build_onnx`.

    The graph inputs are named ``in0``, ``in1``, ... with the layer's input
    shapes; the output is named ``layer.name``.
    """
    _check_opset(opset)
    opset = max(opset, layer.attrs.opset) if isinstance(layer.attrs, GenericAttrs) else opset
    require_memory([layer], layer.input_shapes, f"layer {layer.name!r}")
    graph = _Graph(opset)
    names = [f"in{i}" for i in range(len(layer.inputs))]
    try:
        _emit(graph, layer, names, seed)
    except _Unsupported as exc:
        raise UnsupportedOperatorError(layer.name, {f"{layer.op.value} ({exc})": [layer.name]}) from None
    inputs = [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(names, input_types(layer), layer.input_shapes)]
    output = helper.make_tensor_value_info(layer.name, output_type(layer), layer.output_shape)
    return _model(graph, layer.name, inputs, [output], opset)


def onnx_node_layers(model: onnx.ModelProto) -> dict[str, str]:
    """Every node name of a model from :func:`build_onnx` -> the IR layer it belongs to.

    A helper node ``"x/step"`` belongs to layer ``x``, whose own node comes
    later in the graph; every other node is a layer of its own name.
    """
    names = [node.name for node in model.graph.node]
    later: set[str] = set()
    owner: dict[str, str] = {}
    for name in reversed(names):
        prefix, _, step = name.rpartition("/")
        owner[name] = prefix if prefix in later and _HELPER_STEP.fullmatch(step) else name
        later.add(name)
    return {name: owner[name] for name in names}


def _check_opset(opset: int) -> None:
    if not MIN_OPSET <= opset <= onnx.defs.onnx_opset_version():
        raise ValueError(f"opset must be between {MIN_OPSET} and {onnx.defs.onnx_opset_version()}, got {opset}")


def _model(graph: _Graph, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
           opset: int) -> onnx.ModelProto:
    proto = helper.make_graph(graph.nodes, name, inputs, outputs, initializer=graph.initializers)
    domains = sorted({n.domain for n in graph.nodes if n.domain not in ("", "ai.onnx")})  # a generic layer's
    return helper.make_model(proto, opset_imports=[helper.make_opsetid("", opset)]
                             + [helper.make_opsetid(d, 1) for d in domains], ir_version=IR_VERSION,
                             producer_name="nnperf")


def input_types(layer: Layer) -> tuple[int, ...]:
    """The ONNX element type of each input of ``layer``: float32, but where a generic layer says otherwise."""
    if isinstance(layer.attrs, GenericAttrs):
        return layer.attrs.input_types
    return (onnx.TensorProto.FLOAT,) * len(layer.inputs)


def output_type(layer: Layer) -> int:
    """The ONNX element type ``layer`` writes: float32, but where a generic layer says otherwise."""
    return layer.attrs.output_type if isinstance(layer.attrs, GenericAttrs) else onnx.TensorProto.FLOAT


def _generic(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """The generic layer's own nodes, its stored operands as initializers, its tensors renamed into the graph."""
    try:
        kept = generic_node(layer, seed, g.opset)
    except GenericNodeError as exc:
        raise _Unsupported(str(exc)) from None
    p = layer.name + "/"
    rename = {f"in{i}": tensor for i, tensor in enumerate(ins)}
    for i in sorted(kept.scalar_inputs):  # the IR's one-element vectors back to the scalars the node reads
        rename[f"in{i}"] = g.node("Reshape", [ins[i], g.const(f"{p}rank_0_{i}", np.zeros(0, np.int64))],
                                  f"{p}scalar{i}")
    rename.update({name: g.const(p + name, value) for name, value in kept.stored.items()})
    rename[f"out{kept.output_index}"] = f"{p}scalar_out" if kept.scalar_output else layer.name
    nodes = list(kept.graph.node)
    renamed_outer = {t: rename.get(t, p + t) for node in nodes for t in node.output if t}
    for j, node in enumerate(nodes):
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        for attribute in copy.attribute:  # a branch or a body reads the captured tensors by their new names
            for sub in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)):
                rename_outer(sub, renamed_outer)
        copy.name = layer.name if j == len(nodes) - 1 and not kept.scalar_output else f"{p}n{j}"
        del copy.input[:], copy.output[:]
        copy.input.extend(rename.get(t, p + t) if t else "" for t in node.input)
        copy.output.extend(rename.get(t, p + t) if t else "" for t in node.output)
        g.nodes.append(copy)
    if kept.scalar_output:
        g.node("Reshape", [f"{p}scalar_out", g.const(p + "one", np.ones(1, np.int64))], layer.name)


def _elem_type(dtype: str) -> int:
    """The ONNX type of a network tensor of numpy type ``dtype``: float32 for every float type, as the layers
    compute."""
    if np.dtype(dtype).kind == "f":
        return onnx.TensorProto.FLOAT
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class _Graph:
    """Nodes and initializers collected in topological order."""

    def __init__(self, opset: int = 17) -> None:
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def node(self, op_type: str, inputs: list[str], name: str, **attrs: Any) -> str:
        """Adds a node whose name and single output are ``name``; returns ``name``."""
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(value, order="C"), name))  # a scalar stays rank 0
        return name


OnnxBuilder = Callable[[_Graph, Layer, list[str], int], None]
"""Adds the nodes of a layer reading the given tensors, with weights from the seed; the last is named layer.name."""


def _emit(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """Adds the nodes of ``layer`` reading tensors ``ins``; the last node is named ``layer.name``."""
    builder = ONNX_BUILDERS.get(layer.op)
    if builder is None:
        raise _Unsupported("no ONNX builder for this op")
    builder(g, layer, ins, seed)


# ---------------------------------------------------------------------- one builder per op
def _conv(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    attrs, p = layer.attrs, layer.name + "/"
    assert isinstance(attrs, ConvAttrs)
    w = weights_of(layer, seed)
    operands = [ins[0], g.const(p + "weight", w["weight"])] + ([g.const(p + "bias", w["bias"])] if attrs.bias else [])
    g.node("Conv", operands, layer.name, kernel_shape=list(attrs.kernel), strides=list(attrs.stride),
           pads=list(attrs.padding), dilations=list(attrs.dilation), group=attrs.groups)


def _linear(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """Gemm for NxC input; MatMul (and Add) for more leading axes, which Gemm does not take."""
    attrs, x, out, p = layer.attrs, ins[0], layer.name, layer.name + "/"
    assert isinstance(attrs, LinearAttrs)
    w = weights_of(layer, seed)
    if len(layer.input_shape) == 2:
        operands = [x, g.const(p + "weight", w["weight"])]
        operands += [g.const(p + "bias", w["bias"])] if attrs.bias else []
        g.node("Gemm", operands, out, transB=1)
    elif attrs.bias:
        y = g.node("MatMul", [x, g.const(p + "weight", w["weight"].T)], p + "matmul")
        g.node("Add", [y, g.const(p + "bias", w["bias"])], out)
    else:
        g.node("MatMul", [x, g.const(p + "weight", w["weight"].T)], out)


def _pool(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    attrs = layer.attrs
    assert isinstance(attrs, PoolAttrs)
    common: dict[str, Any] = {"kernel_shape": list(attrs.kernel), "strides": list(attrs.stride),
                              "pads": list(attrs.padding), "ceil_mode": int(attrs.ceil_mode)}
    if layer.op is OpType.MAX_POOL:
        g.node("MaxPool", ins[:1], layer.name, **common)
    else:
        g.node("AveragePool", ins[:1], layer.name, count_include_pad=int(attrs.count_include_pad), **common)


def _global_pool(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """The global pool, flattened to NxC when the layer's output is 2-D."""
    pool = "GlobalMaxPool" if layer.op is OpType.GLOBAL_MAX_POOL else "GlobalAveragePool"
    if len(layer.output_shape) == 4:
        g.node(pool, ins[:1], layer.name)
    else:
        g.node("Flatten", [g.node(pool, ins[:1], layer.name + "/pool")], layer.name, axis=1)


def _batch_norm(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    assert isinstance(layer.attrs, BatchNormAttrs)
    w = weights_of(layer, seed)
    operands = ins[:1] + [g.const(f"{layer.name}/{key}", w[key]) for key in ("weight", "bias", "mean", "var")]
    g.node("BatchNormalization", operands, layer.name, epsilon=layer.attrs.eps)


def _scale(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """Mul by the factors, broadcast over the axes after the channel (or a scalar), then Add of the bias."""
    attrs, x, out, p = layer.attrs, ins[0], layer.name, layer.name + "/"
    assert isinstance(attrs, ScaleAttrs)
    w = weights_of(layer, seed)
    shape = (-1,) + (1,) * (len(layer.input_shape) - 2) if attrs.per_channel else (1,)
    if "bias" in w:
        y = g.node("Mul", [x, g.const(p + "scale", w["scale"].reshape(shape))], p + "mul")
        g.node("Add", [y, g.const(p + "bias", w["bias"].reshape(shape))], out)
    else:
        g.node("Mul", [x, g.const(p + "scale", w["scale"].reshape(shape))], out)


def _plain(op_type: str) -> OnnxBuilder:
    """A builder for a layer that is one ONNX node of ``op_type`` without attributes."""

    def build(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
        g.node(op_type, ins[:1], layer.name)

    return build


def _relu6(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    p = layer.name + "/"
    g.node("Clip", [ins[0], g.const(p + "min", np.array(0.0, np.float32)),
                    g.const(p + "max", np.array(6.0, np.float32))], layer.name)


def _leaky_relu(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    assert isinstance(layer.attrs, LeakyReluAttrs)
    g.node("LeakyRelu", ins[:1], layer.name, alpha=layer.attrs.negative_slope)


def _silu(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    x = ins[0]
    g.node("Mul", [x, g.node("Sigmoid", [x], layer.name + "/sigmoid")], layer.name)


def _add(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    g.node("Add" if len(ins) == 2 else "Sum", ins, layer.name)


def _max(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    g.node("Max", ins, layer.name)


def _mul(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """A chain of binary Muls (ONNX has no variadic product)."""
    y = ins[0]
    for i, other in enumerate(ins[1:], start=1):
        y = g.node("Mul", [y, other], layer.name if i == len(ins) - 1 else f"{layer.name}/mul{i}")


def _axis_op(op_type: str) -> OnnxBuilder:
    """Concat or Softmax along the layer's axis."""

    def build(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
        assert isinstance(layer.attrs, AxisAttrs)
        g.node(op_type, ins, layer.name, axis=layer.attrs.axis)

    return build


def _flatten(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    assert isinstance(layer.attrs, AxisAttrs)
    axis = layer.attrs.axis % len(layer.input_shape)
    if layer.output_shape == (math.prod(layer.input_shape[:axis]), math.prod(layer.input_shape[axis:])):
        g.node("Flatten", ins[:1], layer.name, axis=axis)
    else:
        _reshape(g, layer, ins, seed)


def _reshape(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    g.node("Reshape", [ins[0], g.const(layer.name + "/shape", np.array(layer.output_shape, np.int64))], layer.name)


def _pad(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """Pad with all begins then all ends (ONNX's order), torch's 'replicate' being ONNX's 'edge'."""
    attrs, p = layer.attrs, layer.name + "/"
    assert isinstance(attrs, PadAttrs)
    amounts = pad_amounts(layer)
    pads = np.array([b for b, _ in amounts] + [e for _, e in amounts], np.int64)
    operands = [ins[0], g.const(p + "pads", pads)]
    if attrs.mode == "constant":
        operands.append(g.const(p + "value", np.array(attrs.value, np.float32)))
    mode = {"replicate": "edge"}.get(attrs.mode, attrs.mode)
    if mode not in ("constant", "reflect", "edge"):
        raise _Unsupported(f"padding mode {attrs.mode!r}")
    g.node("Pad", operands, layer.name, mode=mode)


def _lrn(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """LRN with torch's window, channels c - size//2 .. c + (size-1)//2.

    ONNX's LRN places even windows the other way (c - (size-1)//2 ..), so for
    an even size the scaled window sum is a 1x1 convolution of x*x with a band
    matrix, followed by (k + .)^beta and a division.
    """
    attrs, x, out, p, rank = layer.attrs, ins[0], layer.name, layer.name + "/", len(layer.input_shape)
    assert isinstance(attrs, LrnAttrs)
    if rank < 3:
        raise _Unsupported("LRN needs at least one spatial axis")
    if attrs.size % 2:
        g.node("LRN", [x], out, size=attrs.size, alpha=attrs.alpha, beta=attrs.beta, bias=attrs.k)
        return
    channels = layer.input_shape[1]
    band = np.zeros((channels, channels), np.float32)
    for c in range(channels):
        band[c, max(0, c - attrs.size // 2):c + (attrs.size - 1) // 2 + 1] = attrs.alpha / attrs.size
    square = g.node("Mul", [x, x], p + "square")
    window = g.node("Conv", [square, g.const(p + "band", band.reshape((channels, channels) + (1,) * (rank - 2)))],
                    p + "window")
    base = g.node("Add", [window, g.const(p + "k", np.array(attrs.k, np.float32))], p + "add")
    denominator = g.node("Pow", [base, g.const(p + "beta", np.array(attrs.beta, np.float32))], p + "pow")
    g.node("Div", [x, denominator], out)


def _resize(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """Resize to the output shape: torch's 'nearest' (asymmetric, floor) or linear with align_corners=False."""
    attrs, x = layer.attrs, ins[0]
    assert isinstance(attrs, UpsampleAttrs)
    sizes = g.const(layer.name + "/sizes", np.array(layer.output_shape, np.int64))
    if attrs.mode == "nearest":
        g.node("Resize", [x, "", "", sizes], layer.name, mode="nearest",
               coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    elif attrs.mode == "linear":
        g.node("Resize", [x, "", "", sizes], layer.name, mode="linear", coordinate_transformation_mode="half_pixel")
    else:
        raise _Unsupported(f"upsampling mode {attrs.mode!r}")


# ---------------------------------------------------------------------- activations and data movement
def _hard_sigmoid(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    assert isinstance(layer.attrs, HardSigmoidAttrs)
    g.node("HardSigmoid", ins[:1], layer.name, alpha=layer.attrs.alpha, beta=layer.attrs.beta)


def _clip(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """Clip with a bound input left empty where the bound is infinite."""
    attrs, p = layer.attrs, layer.name + "/"
    assert isinstance(attrs, ClipAttrs)
    low = "" if math.isinf(attrs.low) else g.const(p + "min", np.array(attrs.low, np.float32))
    high = "" if math.isinf(attrs.high) else g.const(p + "max", np.array(attrs.high, np.float32))
    g.node("Clip", [ins[0], low, high], layer.name)


def _prelu(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """PRelu with the slopes broadcast over the axes after the channel (ONNX broadcasts from the last axis)."""
    slope = weights_of(layer, seed)["slope"]
    shape = (slope.size,) + (1,) * max(len(layer.input_shape) - 2, 0)
    g.node("PRelu", [ins[0], g.const(layer.name + "/slope", slope.reshape(shape))], layer.name)


def _gelu(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """The exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), as torch's exporter writes it (ONNX Gelu needs opset 20)."""
    x, p = ins[0], layer.name + "/"
    scaled = g.node("Div", [x, g.const(p + "sqrt2", np.array(math.sqrt(2.0), np.float32))], p + "div")
    plus_one = g.node("Add", [g.node("Erf", [scaled], p + "erf"), g.const(p + "one", np.array(1.0, np.float32))],
                      p + "add")
    g.node("Mul", [g.node("Mul", [x, plus_one], p + "mul"), g.const(p + "half", np.array(0.5, np.float32))],
           layer.name)


def _mish(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """x * tanh(softplus(x)) (ONNX's Mish needs opset 18)."""
    x, p = ins[0], layer.name + "/"
    g.node("Mul", [x, g.node("Tanh", [g.node("Softplus", [x], p + "softplus")], p + "tanh")], layer.name)


def _slice(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    attrs, p = layer.attrs, layer.name + "/"
    assert isinstance(attrs, SliceAttrs)
    values = {"starts": attrs.start, "ends": attrs.end, "axes": attrs.axis, "steps": attrs.step}
    g.node("Slice", [ins[0]] + [g.const(p + k, np.array([v], np.int64)) for k, v in values.items()], layer.name)


def _transpose(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    assert isinstance(layer.attrs, TransposeAttrs)
    g.node("Transpose", ins[:1], layer.name, perm=list(layer.attrs.perm))


def _channel_shuffle(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """Reshape to (N, g, C/g, ...), Transpose of axes 1 and 2, Reshape back: how ShuffleNet is exported."""
    attrs, x, p = layer.attrs, layer.input_shape, layer.name + "/"
    assert isinstance(attrs, ChannelShuffleAttrs)
    grouped = (x[0], attrs.groups, x[1] // attrs.groups) + x[2:]
    y = g.node("Reshape", [ins[0], g.const(p + "grouped", np.array(grouped, np.int64))], p + "reshape")
    y = g.node("Transpose", [y], p + "transpose", perm=[0, 2, 1] + list(range(3, len(grouped))))
    g.node("Reshape", [y, g.const(p + "shape", np.array(x, np.int64))], layer.name)


def _gather(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    assert isinstance(layer.attrs, GatherAttrs)
    indices = g.const(layer.name + "/indices", np.array(layer.attrs.indices, np.int64))
    g.node("Gather", [ins[0], indices], layer.name, axis=layer.attrs.axis)


def _expand(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    g.node("Expand", [ins[0], g.const(layer.name + "/shape", np.array(layer.output_shape, np.int64))], layer.name)


# ---------------------------------------------------------------------- resizing, normalisation and attention
def _conv_transpose(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    attrs, p = layer.attrs, layer.name + "/"
    assert isinstance(attrs, ConvTransposeAttrs)
    w = weights_of(layer, seed)
    operands = [ins[0], g.const(p + "weight", w["weight"])] + ([g.const(p + "bias", w["bias"])] if attrs.bias else [])
    g.node("ConvTranspose", operands, layer.name, kernel_shape=list(attrs.kernel), strides=list(attrs.stride),
           pads=list(attrs.padding), output_padding=list(attrs.output_padding), dilations=list(attrs.dilation),
           group=attrs.groups)


def _reduce_node(g: _Graph, op_type: str, x: str, axes: list[int], name: str, keepdims: bool = True) -> str:
    """ReduceMean or ReduceMax over ``axes``: an attribute before opset 18, an input since."""
    if g.opset >= 18:
        return g.node(op_type, [x, g.const(name + "_axes", np.array(axes, np.int64))], name, keepdims=int(keepdims))
    return g.node(op_type, [x], name, axes=axes, keepdims=int(keepdims))


def _layer_norm(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """LayerNormalization over the last axis (opset 17 on); otherwise, and over the channels, the
    ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add arithmetic that exporters write (and the importer fuses)."""
    attrs, x, p = layer.attrs, ins[0], layer.name + "/"
    assert isinstance(attrs, NormAttrs)
    w = weights_of(layer, seed)
    rank = len(layer.input_shape)
    if attrs.axis == -1 and g.opset >= 17:
        g.node("LayerNormalization", [x, g.const(p + "weight", w["weight"]), g.const(p + "bias", w["bias"])],
               layer.name, axis=-1, epsilon=attrs.eps)
        return
    axis = rank - 1 if attrs.axis == -1 else 1
    shape = (-1,) + (1,) * (rank - 2) if axis == 1 else (-1,)
    centred = g.node("Sub", [x, _reduce_node(g, "ReduceMean", x, [axis], p + "mean")], p + "sub")
    square = g.node("Pow", [centred, g.const(p + "two", np.array(2.0, np.float32))], p + "pow")
    var = g.node("Add", [_reduce_node(g, "ReduceMean", square, [axis], p + "var"),
                         g.const(p + "eps", np.array(attrs.eps, np.float32))], p + "add")
    normed = g.node("Div", [centred, g.node("Sqrt", [var], p + "sqrt")], p + "div")
    scaled = g.node("Mul", [normed, g.const(p + "weight", w["weight"].reshape(shape))], p + "mul")
    g.node("Add", [scaled, g.const(p + "bias", w["bias"].reshape(shape))], layer.name)


def _group_norm(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """InstanceNormalization for one channel per group; otherwise over (N, G, -1), then the per-channel affine."""
    attrs, x, p, shape = layer.attrs, ins[0], layer.name + "/", layer.input_shape
    assert isinstance(attrs, GroupNormAttrs)
    w = weights_of(layer, seed)
    if attrs.groups == shape[1]:
        g.node("InstanceNormalization", [x, g.const(p + "weight", w["weight"]), g.const(p + "bias", w["bias"])],
               layer.name, epsilon=attrs.eps)
        return
    grouped = g.node("Reshape", [x, g.const(p + "groups", np.array([shape[0], attrs.groups, -1], np.int64))],
                     p + "reshape")
    ones, zeros = np.ones(attrs.groups, np.float32), np.zeros(attrs.groups, np.float32)
    normed = g.node("InstanceNormalization", [grouped, g.const(p + "ones", ones), g.const(p + "zeros", zeros)],
                    p + "norm", epsilon=attrs.eps)
    back = g.node("Reshape", [normed, g.const(p + "shape", np.array(shape, np.int64))], p + "unshape")
    per_channel = (-1,) + (1,) * (len(shape) - 2)
    scaled = g.node("Mul", [back, g.const(p + "weight", w["weight"].reshape(per_channel))], p + "mul")
    g.node("Add", [scaled, g.const(p + "bias", w["bias"].reshape(per_channel))], layer.name)


def _reduce(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    attrs = layer.attrs
    assert isinstance(attrs, ReduceAttrs)
    op_type = "ReduceMax" if layer.op is OpType.REDUCE_MAX else "ReduceMean"
    if g.opset >= 18:
        g.node(op_type, [ins[0], g.const(layer.name + "/axes", np.array(attrs.axes, np.int64))], layer.name,
               keepdims=int(attrs.keepdims))
    else:
        g.node(op_type, ins[:1], layer.name, axes=list(attrs.axes), keepdims=int(attrs.keepdims))


def _binary(op_type: str) -> OnnxBuilder:
    """A chain of binary Sub, Div or Pow nodes, left to right."""

    def build(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
        y = ins[0]
        for i, other in enumerate(ins[1:], start=1):
            y = g.node(op_type, [y, other], layer.name if i == len(ins) - 1 else f"{layer.name}/step{i}")

    return build


def _matmul(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    """MatMul, an operand read transposed through a Transpose of its last two axes (which the importer defers)."""
    attrs = layer.attrs
    assert isinstance(attrs, MatmulAttrs)
    operands = list(ins[:2])
    for i, (flag, shape) in enumerate(zip((attrs.transpose_a, attrs.transpose_b), layer.input_shapes)):
        if flag:
            rank = len(shape)
            operands[i] = g.node("Transpose", [operands[i]], f"{layer.name}/transpose{i}",
                                 perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    g.node("MatMul", operands, layer.name)


def _constant(g: _Graph, layer: Layer, ins: list[str], seed: int) -> None:
    g.node("Identity", [g.const(layer.name + "/value", weights_of(layer, seed)["value"])], layer.name)



ONNX_BUILDERS: Mapping[OpType, OnnxBuilder] = MappingProxyType({
    OpType.CONV: _conv,
    OpType.LINEAR: _linear,
    OpType.MAX_POOL: _pool,
    OpType.AVG_POOL: _pool,
    OpType.GLOBAL_AVG_POOL: _global_pool,
    OpType.GLOBAL_MAX_POOL: _global_pool,
    OpType.BATCH_NORM: _batch_norm,
    OpType.SCALE: _scale,
    OpType.RELU: _plain("Relu"),
    OpType.RELU6: _relu6,
    OpType.LEAKY_RELU: _leaky_relu,
    OpType.SIGMOID: _plain("Sigmoid"),
    OpType.TANH: _plain("Tanh"),
    OpType.HARDSWISH: _plain("HardSwish"),
    OpType.SILU: _silu,
    OpType.ADD: _add,
    OpType.MUL: _mul,
    OpType.MAX: _max,
    OpType.CONCAT: _axis_op("Concat"),
    OpType.SOFTMAX: _axis_op("Softmax"),
    OpType.LRN: _lrn,
    OpType.FLATTEN: _flatten,
    OpType.RESHAPE: _reshape,
    OpType.UPSAMPLE: _resize,
    OpType.PAD: _pad,
    OpType.IDENTITY: _plain("Identity"),
    OpType.DROPOUT: _plain("Dropout"),
    # activations and data movement
    OpType.HARD_SIGMOID: _hard_sigmoid,
    OpType.CLIP: _clip,
    OpType.PRELU: _prelu,
    OpType.GELU: _gelu,
    OpType.SOFTPLUS: _plain("Softplus"),
    OpType.MISH: _mish,
    OpType.EXP: _plain("Exp"),
    OpType.LOG: _plain("Log"),
    OpType.SLICE: _slice,
    OpType.TRANSPOSE: _transpose,
    OpType.CHANNEL_SHUFFLE: _channel_shuffle,
    OpType.GATHER: _gather,
    OpType.EXPAND: _expand,
    # resizing, normalisation and attention
    OpType.CONV_TRANSPOSE: _conv_transpose,
    OpType.LAYER_NORM: _layer_norm,
    OpType.GROUP_NORM: _group_norm,
    OpType.REDUCE_MEAN: _reduce,
    OpType.REDUCE_MAX: _reduce,
    OpType.MATMUL: _matmul,
    OpType.SUB: _binary("Sub"),
    OpType.DIV: _binary("Div"),
    OpType.POW: _binary("Pow"),
    OpType.CONSTANT: _constant,
    OpType.GENERIC: _generic,
})
"""IR op -> the builder of its ONNX nodes (adding an op type means adding its entry here)."""

ONNX_NOT_BUILT: frozenset[OpType] = frozenset()
"""IR ops the ONNX builder cannot express at all: none (some settings of an op still raise)."""
