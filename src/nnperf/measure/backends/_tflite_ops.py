"""The TFLite operators each IR op becomes (:mod:`nnperf.measure.backends._tflite_graph` writes the model).

Each emitter reads its operands through the writer (in NHWC where the operator computes on the channels last),
writes its operators and defines its output value; a chain's first layer writes the whole chain (its ``Fold``).
Where TFLite has no operator, the layer becomes the arithmetic a converter writes for it (SiLU as LOGISTIC and MUL,
layer and group normalisation as MEAN, SUB, MUL, RSQRT ...). ``EMITTERS`` covers every op type but the generic one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from nnperf.ir import (
    AxisAttrs,
    ChannelShuffleAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvKind,
    ConvTransposeAttrs,
    GatherAttrs,
    GroupNormAttrs,
    HardSigmoidAttrs,
    Layer,
    LeakyReluAttrs,
    LrnAttrs,
    MatmulAttrs,
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
from nnperf.measure.backends._tflite_writer import (
    ACTIVATION,
    MIRROR_REFLECT,
    NCHW_TO_NHWC,
    NHWC_TO_NCHW,
    PADDING,
    Fold,
    TfliteUnsupported,
    TfliteWriter,
    affine_of,
    layout_axis,
    layout_shape,
    nhwc_shape,
    same_pads,
)
from nnperf.measure.backends._weights import layer_weights, pad_amounts

Emitter = Callable[[TfliteWriter, Layer, Fold], None]
"""Writes a layer's operators (a chain's, given its fold) and defines the value they compute."""

Options = tuple[str, dict[str, Any]]


def _opts(table: str, **fields: Any) -> Options:
    return table, fields


def _act(fold: Fold | None = None, name: str = "NONE") -> int:
    return ACTIVATION[fold.activation if fold is not None else name]


def _channel_const(w: TfliteWriter, value: np.ndarray, rank: int, nhwc: bool, name: str) -> int:
    """A per-channel vector (or a single value) that broadcasts over a tensor's channel axis: the last in NHWC and
    for a 2-D tensor, axis 1 otherwise."""
    flat = np.asarray(value, np.float32).reshape(-1)
    trailing = 0 if flat.size == 1 or nhwc or rank <= 2 else rank - 2
    return w.const(flat.reshape((flat.size,) + (1,) * trailing), name)


def _scalar(w: TfliteWriter, value: float, name: str) -> int:
    return w.const(np.array([value], np.float32), name)


def _pad(w: TfliteWriter, x: int, pads: Sequence[tuple[int, int]], value: float, name: str) -> int:
    """``x`` padded by (begin, end) per axis with ``value`` (PAD for zeros, PADV2 otherwise)."""
    shape = tuple(d + b + e for d, (b, e) in zip(w.shape(x), pads))
    paddings = w.const(np.array(pads).reshape(-1, 2), name + "_paddings")
    if value == 0.0:
        return w.node("PAD", [x, paddings], shape, name)
    return w.node("PADV2", [x, paddings, _scalar(w, value, name + "_value")], shape, name)


# ---------------------------------------------------------------------- windows: convolutions and pools
def _window_input(w: TfliteWriter, x: int, size: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
                  dilation: Sequence[int], pads: tuple[int, int, int, int], name: str) -> tuple[int, str]:
    """The NHWC input and padding of a convolution: VALID without padding, SAME where the IR's padding is exactly
    TFLite's SAME, else a PAD operator before a VALID window (what the converter writes for explicit padding)."""
    if not any(pads):
        return x, "VALID"
    if pads == same_pads(size, kernel, stride, dilation):
        return x, "SAME"
    top, left, bottom, right = pads
    return _pad(w, x, ((0, 0), (top, bottom), (left, right), (0, 0)), 0.0, name + "/pad"), "VALID"


def _conv(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """CONV_2D (OHWI weights; grouped when the filter holds fewer input channels), or DEPTHWISE_CONV_2D (1HWC
    weights, output channel ``c * multiplier + m``) for a depthwise one."""
    attrs, p = layer.attrs, layer.name
    assert isinstance(attrs, ConvAttrs)
    c_in, c_out = layer.input_shape[1], layer.output_shape[1]
    given = layer_weights(layer, w.seed)
    weight, bias = fold.weights(given["weight"], given.get("bias", np.zeros(c_out, np.float32)))
    x, padding = _window_input(w, w.read(layer.inputs[0], True), layer.input_shape[2:], attrs.kernel, attrs.stride,
                               attrs.dilation, attrs.padding, p)
    common = {"padding": PADDING[padding], "strideH": attrs.stride[0], "strideW": attrs.stride[1],
              "dilationHFactor": attrs.dilation[0], "dilationWFactor": attrs.dilation[1],
              "fusedActivationFunction": _act(fold)}
    out = nhwc_shape(layer.output_shape)
    if layer.conv_kind is ConvKind.DEPTHWISE:
        filt = w.const(weight.transpose(1, 2, 3, 0), p + "/weight")
        y = w.node("DEPTHWISE_CONV_2D", [x, filt, w.const(bias, p + "/bias")], out, p,
                   _opts("DepthwiseConv2DOptions", depthMultiplier=c_out // c_in, **common))
    else:
        filt = w.const(weight.transpose(0, 2, 3, 1), p + "/weight")
        y = w.node("CONV_2D", [x, filt, w.const(bias, p + "/bias")], out, p, _opts("Conv2DOptions", **common))
    w.define(fold.out, y, True)


def _average_correction(size: Sequence[int], attrs: PoolAttrs, out: Sequence[int]) -> np.ndarray | None:
    """Per output position, kernel area / the elements ONNX divides by (the padding counted or not, never the
    part of a ceil-mode window past the padded input): the factor that turns a VALID average over the zero-padded
    input into ONNX's; None where it is one everywhere."""
    counts = []
    for axis in range(2):
        n, k, s, begin = size[axis], attrs.kernel[axis], attrs.stride[axis], attrs.padding[axis]
        low, high = (-begin, n + attrs.padding[2 + axis]) if attrs.count_include_pad else (0, n)
        starts = np.arange(out[axis]) * s - begin
        counts.append(np.minimum(starts + k, high) - np.maximum(starts, low))
    area = attrs.kernel[0] * attrs.kernel[1]
    factor = area / np.outer(counts[0], counts[1]).astype(np.float64)
    return None if np.allclose(factor, 1.0) else factor.astype(np.float32)


def _pool(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """MAX_POOL_2D or AVERAGE_POOL_2D: VALID, SAME where TFLite's SAME means the same (a max, or an average that
    leaves the padding out of its count), else padded first (the lowest float for a max, zeros for an average,
    whose count is then corrected by a MUL); a ceil-mode window past the end pads the end further."""
    attrs, p = layer.attrs, layer.name
    assert isinstance(attrs, PoolAttrs)
    size, out = layer.input_shape[2:], layer.output_shape[2:]
    top, left, bottom, right = attrs.padding
    bottom = max(bottom, (out[0] - 1) * attrs.stride[0] + attrs.kernel[0] - size[0] - top)
    right = max(right, (out[1] - 1) * attrs.stride[1] + attrs.kernel[1] - size[1] - left)
    is_max = layer.op is OpType.MAX_POOL
    code = "MAX_POOL_2D" if is_max else "AVERAGE_POOL_2D"
    x = w.read(layer.inputs[0], True)

    def options(padding: str) -> Options:
        return _opts("Pool2DOptions", padding=PADDING[padding], strideH=attrs.stride[0], strideW=attrs.stride[1],
                     filterHeight=attrs.kernel[0], filterWidth=attrs.kernel[1])

    shape = nhwc_shape(layer.output_shape)
    pads = (top, left, bottom, right)
    if not any(pads):
        y = w.node(code, [x], shape, p, options("VALID"))
    elif pads == same_pads(size, attrs.kernel, attrs.stride) and (is_max or not attrs.count_include_pad):
        y = w.node(code, [x], shape, p, options("SAME"))
    else:
        value = float(np.finfo(np.float32).min) if is_max else 0.0
        x = _pad(w, x, ((0, 0), (top, bottom), (left, right), (0, 0)), value, p + "/pad")
        correction = None if is_max else _average_correction(size, attrs, out)
        y = w.node(code, [x], shape, p if correction is None else p + "/pool", options("VALID"))
        if correction is not None:
            factor = w.const(correction.reshape(1, out[0], out[1], 1), p + "/count")
            y = w.node("MUL", [y, factor], shape, p, _opts("MulOptions", fusedActivationFunction=_act()))
    w.define(fold.out, y, True)


def _global_pool(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """MEAN (REDUCE_MAX) over H and W, kept as 1x1 for a 4-D output."""
    keep = len(layer.output_shape) == 4
    code = "REDUCE_MAX" if layer.op is OpType.GLOBAL_MAX_POOL else "MEAN"
    x = w.read(layer.inputs[0], True)
    y = w.node(code, [x, w.const(np.array([1, 2]), layer.name + "/axes")], layout_shape(layer.output_shape, True),
               layer.name, _opts("ReducerOptions", keepDims=keep))
    w.define(layer.name, y, True)


def _conv_transpose(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """TRANSPOSE_CONV, one per group (after a SPLIT, joined by a CONCATENATION: TFLite's has no groups), SAME where
    that crops what the IR's padding crops, else VALID and a STRIDED_SLICE cropping the padding off; output padding
    past the full output pads it, the bias then added after."""
    attrs, p = layer.attrs, layer.name
    assert isinstance(attrs, ConvTransposeAttrs)
    if attrs.dilation != (1, 1):
        raise TfliteUnsupported("dilation: TFLite's TRANSPOSE_CONV has none")
    n, c_in, height, width = layer.input_shape
    c_out, groups = layer.output_shape[1], attrs.groups
    out_hw = layer.output_shape[2:]
    given = layer_weights(layer, w.seed)
    weight = given["weight"].reshape(groups, c_in // groups, c_out // groups, *attrs.kernel)
    bias = given.get("bias", np.zeros(c_out, np.float32))
    if fold.scale is not None and fold.shift is not None:
        scale = np.broadcast_to(fold.scale, (c_out,)).astype(np.float32)
        weight = weight * scale.reshape(groups, 1, c_out // groups, 1, 1)
        bias = bias * scale + fold.shift
    full = ((height - 1) * attrs.stride[0] + attrs.kernel[0], (width - 1) * attrs.stride[1] + attrs.kernel[1])
    begins = attrs.padding[:2]
    same = out_hw == (height * attrs.stride[0], width * attrs.stride[1]) and all(
        b == (f - o) // 2 for b, f, o in zip(begins, full, out_hw))
    padding = "SAME" if same and out_hw != full else "VALID"
    conv_hw = out_hw if padding == "SAME" else full
    ends = [min(b + o, f) for b, o, f in zip(begins, out_hw, full)]
    past = [b + o - e for b, o, e in zip(begins, out_hw, ends)]
    late_bias = padding == "VALID" and any(past)  # rows past the full output hold the bias alone
    x = w.read(layer.inputs[0], True)
    parts = [x]
    if groups > 1:
        shape = (n, height, width, c_in // groups)
        parts = [w.tensor(shape, f"{p}/split{i}") for i in range(groups)]
        w.op("SPLIT", [w.const(np.array(3), p + "/split_axis"), x], parts, p + "/split",
             _opts("SplitOptions", numSplits=groups))
    step = c_out // groups
    outputs = []
    for i, part in enumerate(parts):
        b = np.zeros(step, np.float32) if late_bias else bias[i * step:(i + 1) * step]
        operands = [w.const(np.array([n, *conv_hw, step]), f"{p}/shape{i}"),
                    w.const(weight[i].transpose(1, 2, 3, 0), f"{p}/weight{i}"), part, w.const(b, f"{p}/bias{i}")]
        outputs.append(w.node("TRANSPOSE_CONV", operands, (n, *conv_hw, step), p if groups == 1 else f"{p}/group{i}",
                              _opts("TransposeConvOptions", padding=PADDING[padding], strideH=attrs.stride[0],
                                    strideW=attrs.stride[1],
                                    fusedActivationFunction=_act(None if late_bias else fold))))
    y = outputs[0] if groups == 1 else w.node("CONCATENATION", outputs, (n, *conv_hw, c_out), p + "/concat",
                                              _opts("ConcatenationOptions", axis=3))
    if padding == "VALID" and (any(begins) or tuple(ends) != full):
        y = w.node("STRIDED_SLICE", [y, w.const(np.array([0, *begins, 0]), p + "/begin"),
                                     w.const(np.array([n, *ends, c_out]), p + "/end"),
                                     w.const(np.ones(4, np.int32), p + "/strides")],
                   (n, ends[0] - begins[0], ends[1] - begins[1], c_out), p + "/crop", _opts("StridedSliceOptions"))
    if late_bias:
        y = _pad(w, y, ((0, 0), (0, past[0]), (0, past[1]), (0, 0)), 0.0, p + "/output_padding")
        y = w.node("ADD", [y, w.const(bias, p + "/bias")], nhwc_shape(layer.output_shape), p + "/add_bias",
                   _opts("AddOptions", fusedActivationFunction=_act(fold)))
    w.define(fold.out, y, True)


# ---------------------------------------------------------------------- products
def _linear(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """FULLY_CONNECTED (weights (out, in) as the IR's), keeping the leading axes of an input of rank over 2."""
    given = layer_weights(layer, w.seed)
    n_out = layer.output_shape[-1]
    weight, bias = fold.weights(given["weight"], given.get("bias", np.zeros(n_out, np.float32)))
    x = w.read(layer.inputs[0], False)
    y = w.node("FULLY_CONNECTED", [x, w.const(weight, layer.name + "/weight"), w.const(bias, layer.name + "/bias")],
               layer.output_shape, layer.name,
               _opts("FullyConnectedOptions", fusedActivationFunction=_act(fold),
                     keepNumDims=len(layer.input_shape) > 2))
    w.define(fold.out, y, False)


def _matmul(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """BATCH_MATMUL over the last two axes of the IR's order, either operand read transposed (adj_x, adj_y)."""
    attrs = layer.attrs
    assert isinstance(attrs, MatmulAttrs)
    a, b = (w.read(name, False) for name in layer.inputs[:2])
    y = w.node("BATCH_MATMUL", [a, b], layer.output_shape, layer.name,
               _opts("BatchMatMulOptions", adjX=attrs.transpose_a, adjY=attrs.transpose_b))
    w.define(layer.name, y, False)


# ---------------------------------------------------------------------- element-wise
def _affine_layer(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """A batch norm or scale no convolution took: MUL by the per-channel factors, then ADD of the shifts."""
    scale, shift = affine_of(layer, w.seed)
    x, nhwc = w.read_any(layer.inputs[0])
    rank, shape = len(layer.input_shape), w.shape(x)
    with_shift = layer.op is OpType.BATCH_NORM or (isinstance(layer.attrs, ScaleAttrs) and layer.attrs.bias)
    y = w.node("MUL", [x, _channel_const(w, scale, rank, nhwc, layer.name + "/scale")], shape,
               layer.name + "/mul" if with_shift else layer.name, _opts("MulOptions"))
    if with_shift:
        y = w.node("ADD", [y, _channel_const(w, shift, rank, nhwc, layer.name + "/shift")], shape, layer.name,
                   _opts("AddOptions"))
    w.define(layer.name, y, nhwc)


def _unary(code: str, options: Callable[[Layer], Options] | None = None) -> Emitter:
    """One operator of ``code`` on the input as it is laid out."""

    def emit(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
        x, nhwc = w.read_any(layer.inputs[0])
        y = w.node(code, [x], w.shape(x), layer.name, options(layer) if options else None)
        w.define(layer.name, y, nhwc)

    return emit


def _chain(steps: Sequence[tuple[str, str | float | None, Options | None]]) -> Emitter:
    """Operators one after another on the input as it is laid out: (code, second operand, options), the second
    operand a constant, 'x' (the layer's input) or None."""

    def emit(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
        x, nhwc = w.read_any(layer.inputs[0])
        y = x
        for i, (code, other, options) in enumerate(steps):
            operands = [y]
            if other == "x":
                operands.append(x)
            elif other is not None:
                operands.append(_scalar(w, float(other), f"{layer.name}/c{i}"))
            y = w.node(code, operands, w.shape(x), layer.name if i == len(steps) - 1 else f"{layer.name}/s{i}",
                       options)
        w.define(layer.name, y, nhwc)

    return emit


_SOFTPLUS = [("EXP", None, None), ("ADD", 1.0, _opts("AddOptions")), ("LOG", None, None)]
"""log(1 + exp(x)): TFLite has no softplus (exact below x = 88, where exp overflows float32)."""


def _hard_sigmoid(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """min(1, relu(alpha x + beta)): MUL, ADD with a fused RELU, MINIMUM."""
    attrs = layer.attrs
    assert isinstance(attrs, HardSigmoidAttrs)
    steps = [("MUL", attrs.alpha, _opts("MulOptions")),
             ("ADD", attrs.beta, _opts("AddOptions", fusedActivationFunction=_act(name="RELU"))),
             ("MINIMUM", 1.0, None)]
    _chain(steps)(w, layer, fold)


def _clip(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """RELU, RELU_N1_TO_1, RELU_0_TO_1 or RELU6 where the bounds are theirs, else MAXIMUM and MINIMUM."""
    attrs = layer.attrs
    assert isinstance(attrs, ClipAttrs)
    named = {(0.0, math.inf): "RELU", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, 1.0): "RELU_0_TO_1", (0.0, 6.0): "RELU6"}
    code = named.get((attrs.low, attrs.high))
    if code is not None:
        _unary(code)(w, layer, fold)
        return
    steps: list[tuple[str, str | float | None, Options | None]] = []
    if not math.isinf(attrs.low):
        steps.append(("MAXIMUM", attrs.low, None))
    if not math.isinf(attrs.high):
        steps.append(("MINIMUM", attrs.high, None))
    if steps:
        _chain(steps)(w, layer, fold)
    else:
        _alias(w, layer, fold)


def _prelu(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    x, nhwc = w.read_any(layer.inputs[0])
    slope = _channel_const(w, layer_weights(layer, w.seed)["slope"], len(layer.input_shape), nhwc,
                           layer.name + "/slope")
    w.define(layer.name, w.node("PRELU", [x, slope], w.shape(x), layer.name), nhwc)


def _broadcast_operand(w: TfliteWriter, name: str, nhwc: bool) -> int:
    """Operand ``name`` of a broadcasting operator computing in NHWC (``nhwc``) or the IR's order: numpy's rules
    align the trailing axes of the IR's order, so in NHWC an operand of lower rank is made 4-D first."""
    shape = w.shapes[name]
    if not nhwc or len(shape) == 4:
        return w.read(name, nhwc)
    padded = (1,) * (4 - len(shape)) + tuple(shape)
    if name in w.constants:
        return w.const(w.constants[name].reshape(padded).transpose(NCHW_TO_NHWC), name + "/nhwc")
    return w.permute(w.reshape(w.read(name, False), padded, name + "/4d"), NCHW_TO_NHWC, name + "/4d_nhwc")


def _computes_in_nhwc(w: TfliteWriter, names: Sequence[str], rank: int) -> bool:
    """Whether a layer of 4-D output over ``names`` computes in NHWC: unless each 4-D operand exists in the IR's
    order only (the output of a reshape), where converting them all would cost more than it saves."""
    return rank == 4 and any(True in w.layouts(n) for n in names if w.is_4d(n))


def _binary(code: str, table: str | None) -> Emitter:
    """A chain of binary operators with numpy broadcasting, the last taking the chain's fused activation."""

    def emit(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
        nhwc = _computes_in_nhwc(w, layer.inputs, len(layer.output_shape))
        operands = [_broadcast_operand(w, name, nhwc) for name in layer.inputs]
        y = operands[0]
        for i, other in enumerate(operands[1:], start=1):
            last = i == len(operands) - 1
            shape = np.broadcast_shapes(w.shape(y), w.shape(other))
            options = _opts(table, fusedActivationFunction=_act(fold if last else None)) if table else None
            y = w.node(code, [y, other], shape, layer.name if last else f"{layer.name}/step{i}", options)
        w.define(fold.out, y, nhwc)

    return emit


def _concat(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    attrs = layer.attrs
    assert isinstance(attrs, AxisAttrs)
    rank = len(layer.output_shape)
    nhwc = _computes_in_nhwc(w, layer.inputs, rank)
    y = w.node("CONCATENATION", [w.read(name, nhwc) for name in layer.inputs], layout_shape(layer.output_shape, nhwc),
               layer.name, _opts("ConcatenationOptions", axis=layout_axis(attrs.axis, rank, nhwc)))
    w.define(layer.name, y, nhwc)


def _softmax(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """SOFTMAX (over the last axis), between transposes that make the layer's axis last where it is not."""
    attrs = layer.attrs
    assert isinstance(attrs, AxisAttrs)
    x, nhwc = w.read_any(layer.inputs[0])
    rank = len(layer.input_shape)
    axis = layout_axis(attrs.axis, rank, nhwc)
    options = _opts("SoftmaxOptions", beta=1.0)
    if axis == rank - 1:
        y = w.node("SOFTMAX", [x], w.shape(x), layer.name, options)
    else:
        perm = [i for i in range(rank) if i != axis] + [axis]
        moved = w.permute(x, perm, layer.name + "/last")
        y = w.node("SOFTMAX", [moved], w.shape(moved), layer.name + "/softmax", options)
        y = w.permute(y, [int(i) for i in np.argsort(perm)], layer.name)
    w.define(layer.name, y, nhwc)


def _lrn(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """LOCAL_RESPONSE_NORMALIZATION (a symmetric window, alpha per element) for an odd size; for an even one
    torch's window is not symmetric, so x / (k + alpha/size * band(x^2))^beta as MUL, a 1x1 CONV_2D of a band
    matrix, ADD, POW and DIV."""
    attrs = layer.attrs
    assert isinstance(attrs, LrnAttrs)
    if len(layer.input_shape) != 4:
        raise TfliteUnsupported("LRN of a tensor that is not 4-D")
    x, p = w.read(layer.inputs[0], True), layer.name
    shape = w.shape(x)
    if attrs.size % 2:
        y = w.node("LOCAL_RESPONSE_NORMALIZATION", [x], shape, p,
                   _opts("LocalResponseNormalizationOptions", radius=(attrs.size - 1) // 2, bias=attrs.k,
                         alpha=attrs.alpha / attrs.size, beta=attrs.beta))
        w.define(p, y, True)
        return
    channels = layer.input_shape[1]
    band = np.zeros((channels, channels), np.float32)
    for c in range(channels):
        band[c, max(0, c - attrs.size // 2):c + (attrs.size - 1) // 2 + 1] = attrs.alpha / attrs.size
    square = w.node("MUL", [x, x], shape, p + "/square", _opts("MulOptions"))
    window = w.node("CONV_2D", [square, w.const(band.reshape(channels, 1, 1, channels), p + "/band"),
                                w.const(np.zeros(channels, np.float32), p + "/zero")], shape, p + "/window",
                    _opts("Conv2DOptions", padding=PADDING["VALID"], strideH=1, strideW=1))
    base = w.node("ADD", [window, _scalar(w, attrs.k, p + "/k")], shape, p + "/base", _opts("AddOptions"))
    power = w.node("POW", [base, _scalar(w, attrs.beta, p + "/beta")], shape, p + "/pow")
    w.define(p, w.node("DIV", [x, power], shape, p, _opts("DivOptions")), True)


# ---------------------------------------------------------------------- data movement
def _reshape(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """RESHAPE of the elements in the IR's order (through a TRANSPOSE to NCHW for a 4-D NHWC input); a 4-D reshape
    that keeps batch and channels only merges or splits H and W, which it does alike in NHWC."""
    source, x_shape, out = layer.inputs[0], layer.input_shape, layer.output_shape
    if len(x_shape) == 4 and len(out) == 4 and x_shape[:2] == out[:2] and True in w.layouts(source):
        w.define(layer.name, w.reshape(w.read(source, True), nhwc_shape(out), layer.name), True)
    else:
        w.define(layer.name, w.reshape(w.read_ir_order(source), out, layer.name), False)


def _upsample(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """RESIZE_NEAREST_NEIGHBOR (asymmetric, floor: torch's 'nearest') or RESIZE_BILINEAR (half-pixel centres)."""
    attrs = layer.attrs
    assert isinstance(attrs, UpsampleAttrs)
    if len(layer.input_shape) != 4:
        raise TfliteUnsupported("resizing a tensor that is not 4-D")
    x = w.read(layer.inputs[0], True)
    size = w.const(np.array(layer.output_shape[2:]), layer.name + "/size")
    if attrs.mode == "nearest":
        code, options = "RESIZE_NEAREST_NEIGHBOR", _opts("ResizeNearestNeighborOptions", alignCorners=False,
                                                         halfPixelCenters=False)
    elif attrs.mode == "linear":
        code, options = "RESIZE_BILINEAR", _opts("ResizeBilinearOptions", alignCorners=False, halfPixelCenters=True)
    else:
        raise TfliteUnsupported(f"upsampling mode {attrs.mode!r}")
    w.define(layer.name, w.node(code, [x, size], nhwc_shape(layer.output_shape), layer.name, options), True)


def _pad_layer(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """PAD / PADV2 (constant), MIRROR_PAD (reflect), or a GATHER of clamped indices per padded axis (replicate:
    TFLite has no edge padding)."""
    attrs = layer.attrs
    assert isinstance(attrs, PadAttrs)
    x, nhwc = w.read_any(layer.inputs[0])
    amounts = pad_amounts(layer)
    pads = [amounts[i] for i in NCHW_TO_NHWC] if nhwc and len(amounts) == 4 else list(amounts)
    if attrs.mode == "constant":
        y = _pad(w, x, pads, attrs.value, layer.name)
    elif attrs.mode == "reflect":
        shape = tuple(d + b + e for d, (b, e) in zip(w.shape(x), pads))
        y = w.node("MIRROR_PAD", [x, w.const(np.array(pads), layer.name + "_paddings")], shape, layer.name,
                   _opts("MirrorPadOptions", mode=MIRROR_REFLECT))
    elif attrs.mode == "replicate":
        y = x
        for axis, (begin, end) in enumerate(pads):
            if begin or end:
                size = w.shape(y)[axis]
                index = np.clip(np.arange(-begin, size + end), 0, size - 1)
                shape = tuple(len(index) if i == axis else d for i, d in enumerate(w.shape(y)))
                y = w.node("GATHER", [y, w.const(index, f"{layer.name}/index{axis}")], shape,
                           f"{layer.name}/edge{axis}", _opts("GatherOptions", axis=axis))
    else:
        raise TfliteUnsupported(f"padding mode {attrs.mode!r}")
    w.define(layer.name, y, nhwc)


def _slice(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """STRIDED_SLICE of one axis (in NHWC, a slice of the channels is one of the last axis)."""
    attrs = layer.attrs
    assert isinstance(attrs, SliceAttrs)
    x, nhwc = w.read_any(layer.inputs[0])
    shape = w.shape(x)
    axis = layout_axis(attrs.axis, len(shape), nhwc)
    begin, end, strides = [0] * len(shape), list(shape), [1] * len(shape)
    begin[axis], end[axis], strides[axis] = attrs.start, attrs.end, attrs.step
    p = layer.name
    y = w.node("STRIDED_SLICE", [x, w.const(np.array(begin), p + "/begin"), w.const(np.array(end), p + "/end"),
                                 w.const(np.array(strides), p + "/strides")],
               layout_shape(layer.output_shape, nhwc), p, _opts("StridedSliceOptions"))
    w.define(p, y, nhwc)


def _transpose(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """One TRANSPOSE: on an NHWC input the IR's permutation composed with the conversions on either side."""
    attrs = layer.attrs
    assert isinstance(attrs, TransposeAttrs)
    x, nhwc = w.read_any(layer.inputs[0])
    perm = list(attrs.perm)
    if nhwc:
        perm = [NHWC_TO_NCHW[attrs.perm[NCHW_TO_NHWC[j]]] for j in range(4)]
    w.define(layer.name, w.permute(x, perm, layer.name), nhwc)


def _channel_shuffle(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """RESHAPE to (..., groups, C/groups), TRANSPOSE of those two, RESHAPE back: in NHWC the channels are last, so
    the shuffle needs no conversion to NCHW."""
    attrs = layer.attrs
    assert isinstance(attrs, ChannelShuffleAttrs)
    x, nhwc = w.read_any(layer.inputs[0])
    shape, g, p = w.shape(x), attrs.groups, layer.name
    if nhwc:
        grouped, perm = shape[:3] + (g, shape[3] // g), [0, 1, 2, 4, 3]
    else:
        grouped, perm = (shape[0], g, shape[1] // g, math.prod(shape[2:])), [0, 2, 1, 3]
    y = w.permute(w.reshape(x, grouped, p + "/grouped"), perm, p + "/swap")
    w.define(p, w.reshape(y, shape, p), nhwc)


def _gather(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    attrs = layer.attrs
    assert isinstance(attrs, GatherAttrs)
    x, nhwc = w.read_any(layer.inputs[0])
    axis = layout_axis(attrs.axis, len(layer.input_shape), nhwc)
    y = w.node("GATHER", [x, w.const(np.array(attrs.indices), layer.name + "/indices")],
               layout_shape(layer.output_shape, nhwc), layer.name, _opts("GatherOptions", axis=axis))
    w.define(layer.name, y, nhwc)


def _expand(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """BROADCAST_TO the output shape (in NHWC for a 4-D output)."""
    nhwc = len(layer.output_shape) == 4 and (not w.is_4d(layer.inputs[0]) or True in w.layouts(layer.inputs[0]))
    x = _broadcast_operand(w, layer.inputs[0], nhwc)
    shape = layout_shape(layer.output_shape, nhwc)
    y = w.node("BROADCAST_TO", [x, w.const(np.array(shape), layer.name + "/shape")], shape, layer.name)
    w.define(layer.name, y, nhwc)


# ---------------------------------------------------------------------- normalisation and reductions
def _normalised(w: TfliteWriter, x: int, axes: Sequence[int], eps: float, name: str) -> int:
    """(x - mean) * rsqrt(var + eps) over ``axes``: MEAN, SUB, MUL, MEAN, ADD, RSQRT, MUL (the arithmetic the
    converter writes for a layer norm)."""
    shape = w.shape(x)
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    axes_t = w.const(np.array(axes), name + "/axes")
    reduce = _opts("ReducerOptions", keepDims=True)
    mean = w.node("MEAN", [x, axes_t], kept, name + "/mean", reduce)
    centred = w.node("SUB", [x, mean], shape, name + "/centred", _opts("SubOptions"))
    square = w.node("MUL", [centred, centred], shape, name + "/square", _opts("MulOptions"))
    var = w.node("MEAN", [square, axes_t], kept, name + "/var", reduce)
    var = w.node("ADD", [var, _scalar(w, eps, name + "/eps")], kept, name + "/var_eps", _opts("AddOptions"))
    inverse = w.node("RSQRT", [var], kept, name + "/rsqrt")
    return w.node("MUL", [centred, inverse], shape, name + "/normed", _opts("MulOptions"))


def _affine_after(w: TfliteWriter, y: int, layer: Layer, nhwc: bool, shape: Sequence[int] | None = None) -> int:
    """MUL by the layer's weight and ADD of its bias, shaped ``shape`` (per channel when None)."""
    given, p = layer_weights(layer, w.seed), layer.name
    if shape is None:
        scale = _channel_const(w, given["weight"], len(layer.input_shape), nhwc, p + "/weight")
        shift = _channel_const(w, given["bias"], len(layer.input_shape), nhwc, p + "/bias")
    else:
        scale, shift = w.const(given["weight"].reshape(shape), p + "/weight"), w.const(given["bias"].reshape(shape),
                                                                                      p + "/bias")
    y = w.node("MUL", [y, scale], w.shape(y), p + "/scaled", _opts("MulOptions"))
    return w.node("ADD", [y, shift], w.shape(y), p, _opts("AddOptions"))


def _layer_norm(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    attrs = layer.attrs
    assert isinstance(attrs, NormAttrs)
    x, nhwc = w.read_any(layer.inputs[0])
    rank = len(layer.input_shape)
    axis = layout_axis(attrs.axis, rank, nhwc)
    y = _normalised(w, x, [axis], attrs.eps, layer.name)
    if attrs.affine:
        shape = [1] * rank
        shape[axis] = w.shape(x)[axis]
        y = _affine_after(w, y, layer, nhwc, shape)
    w.define(layer.name, y, nhwc)


def _group_norm(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """Normalised over each group of channels and the spatial axes (a RESHAPE splits the channels into groups,
    not needed for one channel a group in NHWC), then the per-channel affine."""
    attrs = layer.attrs
    assert isinstance(attrs, GroupNormAttrs)
    x, nhwc = w.read_any(layer.inputs[0])
    shape, g, p = w.shape(x), attrs.groups, layer.name
    channels = layer.input_shape[1]
    if nhwc and g == channels:
        y = _normalised(w, x, [1, 2], attrs.eps, p)
    elif nhwc:
        grouped = w.reshape(x, shape[:3] + (g, channels // g), p + "/grouped")
        y = w.reshape(_normalised(w, grouped, [1, 2, 4], attrs.eps, p), shape, p + "/ungrouped")
    else:
        grouped = w.reshape(x, (shape[0], g, math.prod(shape[1:]) // g), p + "/grouped")
        y = w.reshape(_normalised(w, grouped, [2], attrs.eps, p), shape, p + "/ungrouped")
    if attrs.affine:
        y = _affine_after(w, y, layer, nhwc)
    w.define(p, y, nhwc)


def _reduce(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """MEAN or REDUCE_MAX over the axes; without keepdims an NHWC input's remaining axes are put back in the IR's
    order."""
    attrs = layer.attrs
    assert isinstance(attrs, ReduceAttrs)
    code = "REDUCE_MAX" if layer.op is OpType.REDUCE_MAX else "MEAN"
    x, nhwc = w.read_any(layer.inputs[0])
    rank, p = len(layer.input_shape), layer.name
    axes = sorted(layout_axis(a, rank, nhwc) for a in attrs.axes)
    axes_t, options = w.const(np.array(axes), p + "/axes"), _opts("ReducerOptions", keepDims=attrs.keepdims)
    if attrs.keepdims or not nhwc:
        y = w.node(code, [x, axes_t], layout_shape(layer.output_shape, nhwc and attrs.keepdims), p, options)
        w.define(p, y, nhwc and attrs.keepdims)
        return
    remaining = [NCHW_TO_NHWC[j] for j in range(4) if j not in axes]  # the IR axes left, in NHWC order
    y = w.node(code, [x, axes_t], tuple(layer.input_shape[a] for a in remaining), p + "/reduce", options)
    w.define(p, w.permute(y, [int(i) for i in np.argsort(remaining)], p), False)


# ---------------------------------------------------------------------- stored values and no-ops
def _constant(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """A stored tensor: no operator, its readers read it (in the layout each wants) from the file."""
    w.constants[layer.name] = layer_weights(layer, w.seed)["value"]


def _alias(w: TfliteWriter, layer: Layer, fold: Fold) -> None:
    """An identity or a dropout: its producer's value, no operator."""
    source = layer.inputs[0]
    if source in w.pending:
        tensor, nhwc = w.read_any(source)
        w.define(layer.name, tensor, nhwc)
    else:
        w.alias(layer.name, source)


EMITTERS: Mapping[OpType, Emitter] = MappingProxyType({
    OpType.CONV: _conv,
    OpType.LINEAR: _linear,
    OpType.MAX_POOL: _pool,
    OpType.AVG_POOL: _pool,
    OpType.GLOBAL_AVG_POOL: _global_pool,
    OpType.GLOBAL_MAX_POOL: _global_pool,
    OpType.BATCH_NORM: _affine_layer,
    OpType.SCALE: _affine_layer,
    OpType.RELU: _unary("RELU"),
    OpType.RELU6: _unary("RELU6"),
    OpType.LEAKY_RELU: _unary("LEAKY_RELU", lambda layer: _opts(
        "LeakyReluOptions", alpha=layer.attrs.negative_slope if isinstance(layer.attrs, LeakyReluAttrs) else 0.01)),
    OpType.SIGMOID: _unary("LOGISTIC"),
    OpType.TANH: _unary("TANH"),
    OpType.HARDSWISH: _unary("HARD_SWISH"),
    OpType.SILU: _chain([("LOGISTIC", None, None), ("MUL", "x", _opts("MulOptions"))]),
    OpType.ADD: _binary("ADD", "AddOptions"),
    OpType.MUL: _binary("MUL", "MulOptions"),
    OpType.MAX: _binary("MAXIMUM", None),
    OpType.CONCAT: _concat,
    OpType.SOFTMAX: _softmax,
    OpType.LRN: _lrn,
    OpType.FLATTEN: _reshape,
    OpType.RESHAPE: _reshape,
    OpType.UPSAMPLE: _upsample,
    OpType.PAD: _pad_layer,
    OpType.IDENTITY: _alias,
    OpType.DROPOUT: _alias,
    OpType.HARD_SIGMOID: _hard_sigmoid,
    OpType.CLIP: _clip,
    OpType.PRELU: _prelu,
    OpType.GELU: _unary("GELU", lambda layer: _opts("GeluOptions", approximate=False)),
    OpType.SOFTPLUS: _chain(_SOFTPLUS),
    OpType.MISH: _chain([*_SOFTPLUS, ("TANH", None, None), ("MUL", "x", _opts("MulOptions"))]),
    OpType.EXP: _unary("EXP"),
    OpType.LOG: _unary("LOG"),
    OpType.SLICE: _slice,
    OpType.TRANSPOSE: _transpose,
    OpType.CHANNEL_SHUFFLE: _channel_shuffle,
    OpType.GATHER: _gather,
    OpType.EXPAND: _expand,
    OpType.CONV_TRANSPOSE: _conv_transpose,
    OpType.LAYER_NORM: _layer_norm,
    OpType.GROUP_NORM: _group_norm,
    OpType.REDUCE_MEAN: _reduce,
    OpType.REDUCE_MAX: _reduce,
    OpType.MATMUL: _matmul,
    OpType.SUB: _binary("SUB", "SubOptions"),
    OpType.DIV: _binary("DIV", "DivOptions"),
    OpType.POW: _binary("POW", None),
    OpType.CONSTANT: _constant,
})
"""IR op -> the writer of its operators (adding an op type means adding its entry here)."""

NOT_WRITTEN = frozenset({OpType.GENERIC})
"""IR ops the writer refuses: generic layers (ONNX operators kept as they are) have no TFLite counterpart."""
