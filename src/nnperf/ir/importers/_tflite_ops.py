"""The .tflite importer's handlers and its table: each builtin operator and the rule that maps it.

Attributes are converted from TFLite's NHWC to the IR's NCHW: CONV_2D filters are OHWI (groups = input channels
/ the filter's I), DEPTHWISE_CONV_2D filters 1HW(C*m) (groups = C), SAME padding is the explicit (top, left,
bottom, right) TensorFlow computes (the odd pixel at the bottom and right), an axis of an image tensor is
renumbered (channels 3 -> 1). A bias is counted wherever the file stores one, zero or not: LiteRT adds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from nnperf.ir._op_specs import OP_SPECS
from nnperf.ir._ops import (
    AxisAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    GatherAttrs,
    LeakyReluAttrs,
    LinearAttrs,
    LrnAttrs,
    MatmulAttrs,
    NoAttrs,
    OpType,
    PadAttrs,
    PoolAttrs,
    PReluAttrs,
    ReduceAttrs,
    ScaleAttrs,
    SliceAttrs,
    TransposeAttrs,
    UpsampleAttrs,
)
from nnperf.ir._shapes import numel, same_padding
from nnperf.ir.importers._common import one_value, reshape_op, scale_kind
from nnperf.ir.importers._table import ImportRule, rule
from nnperf.ir.importers._tflite_convert import PREVIOUS, Converter, Op, Step, TfliteHandler, TfliteTwin
from nnperf.ir.importers._tflite_read import broadcast_shape

_SAME = 0
"""LiteRT's Padding.SAME (VALID is 1)."""


def _f32(value: float) -> float:
    """A float32 option as the decimal it was written as (0.2 is stored as 0.200000003)."""
    return float(f"{float(value):.7g}")


def _padding(op: Op, size_hw: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
             dilation: Sequence[int] = (1, 1)) -> tuple[int, int, int, int]:
    """(top, left, bottom, right): TensorFlow's SAME (each output side ceil(size / stride), the odd pixel at the
    end), or none for VALID."""
    if int(op.option("padding", _SAME)) != _SAME:
        return (0, 0, 0, 0)
    begin, end = same_padding(size_hw, kernel, stride, dilation)
    return (begin[0], begin[1], end[0], end[1])


def _strides(op: Op) -> tuple[int, int]:
    return (max(int(op.option("strideH", 1)), 1), max(int(op.option("strideW", 1)), 1))


def _image_input(c: Converter, op: Op) -> bool:
    """Whether the operator's first activation is a 4-D NHWC image (what windows slide over)."""
    return len(c.file_shape(op.x)) == 4 and c.layout(op.x).image


# ---------------------------------------------------------------------- convolutions and products
def map_conv(c: Converter, op: Op) -> list[Step] | None:
    """CONV_2D by stored OHWI filters: groups = input channels / I."""
    weights = op.input(1)
    if not _image_input(c, op) or op.x != op.input(0) or not c.is_constant(weights):
        return None
    _, kh, kw, i = c.file_shape(weights)
    channels = c.shape(op.x)[1]
    if i <= 0 or channels % i:
        return None
    dilation = (int(op.option("dilationHFactor", 1)), int(op.option("dilationWFactor", 1)))
    stride = _strides(op)
    attrs = ConvAttrs(kernel=(kh, kw), stride=stride, padding=_padding(op, c.shape(op.x)[2:], (kh, kw), stride,
                                                                        dilation),
                      dilation=dilation, groups=channels // i, bias=op.input(2) >= 0)
    return [Step(OpType.CONV, attrs, (op.x,), op.outputs[0])]


def map_depthwise(c: Converter, op: Op) -> list[Step] | None:
    """DEPTHWISE_CONV_2D by stored 1HW(C*m) filters: a convolution of groups = C."""
    weights = op.input(1)
    if not _image_input(c, op) or op.x != op.input(0) or not c.is_constant(weights):
        return None
    _, kh, kw, _ = c.file_shape(weights)
    dilation = (int(op.option("dilationHFactor", 1)), int(op.option("dilationWFactor", 1)))
    stride = _strides(op)
    attrs = ConvAttrs(kernel=(kh, kw), stride=stride, padding=_padding(op, c.shape(op.x)[2:], (kh, kw), stride,
                                                                        dilation),
                      dilation=dilation, groups=c.shape(op.x)[1], bias=op.input(2) >= 0)
    return [Step(OpType.CONV, attrs, (op.x,), op.outputs[0])]


def map_transpose_conv(c: Converter, op: Op) -> list[Step] | None:
    """TRANSPOSE_CONV (output shape, OHWI filters, input, bias): the padding TensorFlow takes off the full output,
    the odd pixel at the end, and what the stated output shape adds back as output padding."""
    weights, x = op.input(1), op.input(2)
    if x != op.x or not _image_input(c, op) or not c.is_constant(weights):
        return None
    _, kh, kw, _ = c.file_shape(weights)
    stride = _strides(op)
    size_in, size_out = c.shape(x)[2:], c.shape(op.outputs[0])[2:]
    begins, ends, extra = [], [], []
    for i, k in enumerate((kh, kw)):
        full = (size_in[i] - 1) * stride[i] + k
        total = max(full - size_out[i], 0) if int(op.option("padding", _SAME)) == _SAME else 0
        begins.append(total // 2)
        ends.append(total - total // 2)
        extra.append(size_out[i] - (full - total))
    if min(extra) < 0:
        return None
    attrs = ConvTransposeAttrs(kernel=(kh, kw), stride=stride, padding=(begins[0], begins[1], ends[0], ends[1]),
                               output_padding=(extra[0], extra[1]), bias=op.input(3) >= 0)
    return [Step(OpType.CONV_TRANSPOSE, attrs, (x,), op.outputs[0])]


def map_fully_connected(c: Converter, op: Op) -> list[Step] | None:
    """FULLY_CONNECTED by stored (out, in) weights: a linear layer, after a flatten of an input of another rank
    than 2 (LiteRT folds every leading axis into rows); with ``keep_num_dims`` over the channels of an image, a 1x1
    convolution. Weights computed at run time: a matrix product of two activations."""
    weights, out = op.input(1), op.outputs[0]
    if op.x != op.input(0):
        return None
    if not c.is_constant(weights):
        if weights not in op.activations or len(c.file_shape(op.x)) != 2 or op.input(2) >= 0:
            return None
        return [Step(OpType.MATMUL, MatmulAttrs(transpose_b=True), (op.x, weights), out)]
    n_in = c.file_shape(weights)[-1]
    bias = op.input(2) >= 0
    x_shape = c.file_shape(op.x)
    if op.option("keepNumDims", False) and len(x_shape) != 2:
        if _image_input(c, op):
            return [Step(OpType.CONV, ConvAttrs(kernel=(1, 1), bias=bias), (op.x,), out)]
        return [Step(OpType.LINEAR, LinearAttrs(bias=bias), (op.x,), out)]
    if len(x_shape) == 2:
        return [Step(OpType.LINEAR, LinearAttrs(bias=bias), (op.x,), out)]
    rows = (numel(x_shape) // n_in, n_in)
    flatten, attrs = reshape_op(c.shape(op.x), rows)
    return [Step(flatten, attrs, (op.x,), shape=rows, role="flatten"),
            Step(OpType.LINEAR, LinearAttrs(bias=bias), output=out)]


def map_batch_matmul(c: Converter, op: Op) -> list[Step] | None:
    """BATCH_MATMUL of two activations (either read transposed), or by a stored 2-D matrix (a linear layer)."""
    a, b = op.input(0), op.input(1)
    if any(c.layout(t).image for t in (a, b) if t in op.activations) or a != op.x:
        return None
    if b in op.activations:
        attrs = MatmulAttrs(transpose_a=bool(op.option("adjX", False)), transpose_b=bool(op.option("adjY", False)))
        return [Step(OpType.MATMUL, attrs, (a, b), op.outputs[0])]
    if len(c.file_shape(b)) != 2 or op.option("adjX", False) or op.option("adjY", False):
        return None
    return [Step(OpType.LINEAR, LinearAttrs(bias=False), (a,), op.outputs[0])]


# ---------------------------------------------------------------------- windows and reductions
def map_pool(c: Converter, op: Op) -> list[Step] | None:
    """MAX_POOL_2D or AVERAGE_POOL_2D; an average over SAME padding counts only the input pixels, as TensorFlow
    does."""
    if not _image_input(c, op):
        return None
    is_max = op.name == "MAX_POOL_2D"
    kernel = (int(op.option("filterHeight", 1)), int(op.option("filterWidth", 1)))
    stride = _strides(op)
    attrs = PoolAttrs(kernel=kernel, stride=stride, padding=_padding(op, c.shape(op.x)[2:], kernel, stride),
                      count_include_pad=is_max)
    return [Step(OpType.MAX_POOL if is_max else OpType.AVG_POOL, attrs, (op.x,), op.outputs[0])]


def map_reduce(c: Converter, op: Op) -> list[Step] | None:
    """MEAN or REDUCE_MAX over stored axes: a global pool over an image's H and W, else a reduction (with a
    reshape after it where dropping the axes leaves them in another order than the file's)."""
    axes = c.ints(op.input(1))
    if axes is None or op.x != op.input(0):
        return None
    rank, layout, out = len(c.file_shape(op.x)), c.layout(op.x), op.outputs[0]
    ir_axes = tuple(sorted({layout.axis(a, rank) for a in axes}))
    is_mean = op.name == "MEAN"
    if layout.image and ir_axes == (2, 3) and c.shape(out) in ((c.shape(op.x)[:2]) + (1, 1), c.shape(op.x)[:2]):
        return [Step(OpType.GLOBAL_AVG_POOL if is_mean else OpType.GLOBAL_MAX_POOL, NoAttrs(), (op.x,), out)]
    kind = OpType.REDUCE_MEAN if is_mean else OpType.REDUCE_MAX
    keep = bool(op.option("keepDims", False))
    x_shape = c.shape(op.x)
    kept = tuple(1 if i in ir_axes else d for i, d in enumerate(x_shape))
    dropped = tuple(d for i, d in enumerate(x_shape) if i not in ir_axes) or (1,)
    if c.shape(out) == (kept if keep else dropped):
        return [Step(kind, ReduceAttrs(axes=ir_axes, keepdims=keep), (op.x,), out)]
    return [Step(kind, ReduceAttrs(axes=ir_axes, keepdims=True), (op.x,), shape=kept),
            Step(OpType.RESHAPE, NoAttrs(), output=out, role="reshape")]


def map_softmax(c: Converter, op: Op) -> list[Step] | None:
    """SOFTMAX over the last axis of the file (an image's channels: IR axis 1)."""
    rank = len(c.file_shape(op.x))
    return [Step(OpType.SOFTMAX, AxisAttrs(axis=c.layout(op.x).axis(-1, rank)), (op.x,), op.outputs[0])]


def map_lrn(c: Converter, op: Op) -> list[Step] | None:
    """LOCAL_RESPONSE_NORMALIZATION: a window of 2 * radius + 1 channels; TensorFlow's alpha scales each square,
    the IR's (ONNX's) their mean, hence alpha * size."""
    size = 2 * int(op.option("radius", 0)) + 1
    attrs = LrnAttrs(size=size, alpha=_f32(float(op.option("alpha", 0.0)) * size),
                     beta=_f32(op.option("beta", 0.0)), k=_f32(op.option("bias", 0.0)))
    return [Step(OpType.LRN, attrs, (op.x,), op.outputs[0])] if _image_input(c, op) else None


# ---------------------------------------------------------------------- element-wise
def plain_rule(op_type: OpType) -> ImportRule[TfliteHandler]:
    """The rule of an operator that maps to ``op_type`` whatever its options."""

    def handle(c: Converter, op: Op) -> list[Step] | None:
        return [Step(op_type, NoAttrs(), (op.x,), op.outputs[0])]

    return rule({op_type}, handle)


def map_clip(low: float, high: float) -> TfliteHandler:
    """RELU_N1_TO_1 and RELU_0_TO_1: a clip to fixed bounds."""

    def handle(c: Converter, op: Op) -> list[Step] | None:
        return [Step(OpType.CLIP, ClipAttrs(low, high), (op.x,), op.outputs[0])]

    return handle


def map_logistic(c: Converter, op: Op) -> list[Step] | None:
    """LOGISTIC, or SiLU when its only reader multiplies it by its own input (how converters write SiLU)."""
    mul = c.sole_reader(op.outputs[0], "MUL")
    if mul is not None and set(mul.inputs) == {op.x, op.outputs[0]} and not mul.option("fusedActivationFunction", 0):
        c.absorbed.add(mul.index)
        return [Step(OpType.SILU, NoAttrs(), (op.x,), mul.outputs[0])]
    return [Step(OpType.SIGMOID, NoAttrs(), (op.x,), op.outputs[0])]


def map_square(c: Converter, op: Op) -> list[Step] | None:
    """SQUARE: a product of the activation with itself."""
    return [Step(OpType.MUL, NoAttrs(), (op.x, op.x), op.outputs[0])]


def map_squared_difference(c: Converter, op: Op) -> list[Step] | None:
    """SQUARED_DIFFERENCE (a layer or group norm's variance, as TensorFlow writes it): a subtraction, then the
    product of the difference with itself."""
    operands = tuple(t for t in op.inputs if t >= 0)
    if len(operands) != 2 or _mixed_ranks(c, op):
        return None
    return [Step(OpType.SUB, NoAttrs(), operands, shape=c.shape(op.outputs[0]), role="difference"),
            Step(OpType.MUL, NoAttrs(), (PREVIOUS, PREVIOUS), op.outputs[0])]


def map_leaky_relu(c: Converter, op: Op) -> list[Step] | None:
    return [Step(OpType.LEAKY_RELU, LeakyReluAttrs(_f32(op.option("alpha", 0.2))), (op.x,), op.outputs[0])]


def map_gelu(c: Converter, op: Op) -> list[Step] | None:
    """GELU, the exact form only (the tanh approximation is kept as a generic layer)."""
    return None if op.option("approximate", False) else [Step(OpType.GELU, NoAttrs(), (op.x,), op.outputs[0])]


def map_prelu(c: Converter, op: Op) -> list[Step] | None:
    """PRELU by a stored slope: one per channel, or one in all."""
    kind = _constant_kind(c, op, op.input(1))
    if op.x != op.input(0) or kind is None:
        return None
    return [Step(OpType.PRELU, PReluAttrs(per_channel=kind == "channel"), (op.x,), op.outputs[0])]


def _constant_kind(c: Converter, op: Op, tensor: int) -> str | None:
    """'scalar' or 'channel' when the stored ``tensor`` is one value, or one per channel of ``op``'s activation."""
    if not c.is_constant(tensor):
        return None
    shape = broadcast_shape(c.file_shape(tensor), len(c.file_shape(op.x)), c.layout(op.x).image)
    return scale_kind(shape, c.shape(op.x))


def map_binary(op_type: OpType) -> TfliteHandler:
    """ADD, SUB, MUL, DIV, MAXIMUM, POW or ADD_N of activations and stored operands (a stored operand becomes a
    CONSTANT layer); a MUL by one value or one per channel is a scale layer, with the ADD of a bias after it, and
    so is a DIV by one."""

    def handle(c: Converter, op: Op) -> list[Step] | None:
        operands = tuple(t for t in op.inputs if t >= 0)
        if _mixed_ranks(c, op):
            return None
        stored = [t for t in operands if t not in op.activations]
        if len(op.activations) == 1 and len(stored) == 1 and op_type in (OpType.MUL, OpType.DIV):
            scale = _scale(c, op, stored[0], op_type)
            if scale is not None:
                return scale
        if len(operands) < 2:
            return None
        return [Step(op_type, NoAttrs(), operands, op.outputs[0])]

    return handle


def _mixed_ranks(c: Converter, op: Op) -> bool:
    """Whether an image meets an activation of another rank: NHWC broadcasts a (C,) over the channels, which the
    IR's NCHW cannot without a reshape the file does not have."""
    ranks = {len(c.file_shape(t)) for t in op.activations}
    return len(ranks) > 1 and any(c.layout(t).image for t in op.activations)


def _scale(c: Converter, op: Op, stored: int, op_type: OpType) -> list[Step] | None:
    kind = _constant_kind(c, op, stored)
    if kind is None or (op_type is OpType.DIV and op.input(1) != stored):
        return None
    per_channel = kind == "channel"
    add = None if op.option("fusedActivationFunction", 0) else c.sole_reader(op.outputs[0], "ADD")
    if add is not None and not add.option("fusedActivationFunction", 0) and op_type is OpType.MUL:
        bias = [t for t in add.inputs if t != op.outputs[0]]
        if len(bias) == 1 and _constant_kind(c, op, bias[0]) is not None:
            c.absorbed.add(add.index)
            return [Step(OpType.SCALE, ScaleAttrs(bias=True, per_channel=per_channel), (op.x,), add.outputs[0])]
    return [Step(OpType.SCALE, ScaleAttrs(bias=False, per_channel=per_channel), (op.x,), op.outputs[0])]


def map_concat(c: Converter, op: Op) -> list[Step] | None:
    """CONCATENATION along its axis (an image's channels: IR axis 1); stored inputs become CONSTANT layers."""
    out = op.outputs[0]
    axis = c.layout(out).axis(int(op.option("axis", 0)), len(c.file_shape(out)))
    return [Step(OpType.CONCAT, AxisAttrs(axis=axis), tuple(t for t in op.inputs if t >= 0), out)]


# ---------------------------------------------------------------------- data movement
def map_reshape(c: Converter, op: Op) -> list[Step] | None:
    """RESHAPE, SQUEEZE or EXPAND_DIMS: a flatten when it folds all but the batch, else a reshape (an image's
    elements are counted, not ordered: the IR does not model the order NHWC leaves them in)."""
    kind, attrs = reshape_op(c.shape(op.x), c.shape(op.outputs[0]))
    return [Step(kind, attrs, (op.x,), op.outputs[0])]


def map_broadcast_to(c: Converter, op: Op) -> list[Step] | None:
    """BROADCAST_TO: an expand to the output's shape."""
    return [Step(OpType.EXPAND, NoAttrs(), (op.x,), op.outputs[0])] if op.x == op.input(0) else None


def map_transpose(c: Converter, op: Op) -> list[Step] | None:
    """TRANSPOSE by a stored permutation, renumbered for the IR axes of its input and output."""
    perm = c.ints(op.input(1))
    rank = len(c.file_shape(op.x))
    if perm is None or sorted(perm) != list(range(rank)):
        return None
    into, out_layout = c.layout(op.x), c.layout(op.outputs[0])
    ir_perm = tuple(into.axis(perm[out_layout.file_axis(j)], rank) for j in range(rank))
    return [Step(OpType.TRANSPOSE, TransposeAttrs(ir_perm), (op.x,), op.outputs[0])]


def map_pad(c: Converter, op: Op) -> list[Step] | None:
    """PAD, PADV2 (by a stored value) and MIRROR_PAD (REFLECT only: the IR has no SYMMETRIC mode)."""
    if op.x != op.input(0):
        return None
    if op.name == "MIRROR_PAD":
        if int(op.option("mode", 0)) != 0:
            return None
        attrs = PadAttrs(mode="reflect")
    elif op.name == "PADV2" and op.input(2) >= 0:
        value = c.value(op.input(2))
        number = None if value is None else one_value(value)
        if number is None:
            return None
        attrs = PadAttrs(value=_f32(number))
    else:
        attrs = PadAttrs()
    return [Step(OpType.PAD, attrs, (op.x,), op.outputs[0])]


def map_resize(c: Converter, op: Op) -> list[Step] | None:
    """RESIZE_NEAREST_NEIGHBOR or RESIZE_BILINEAR of an image."""
    mode = "nearest" if op.name == "RESIZE_NEAREST_NEIGHBOR" else "linear"
    return [Step(OpType.UPSAMPLE, UpsampleAttrs(mode), (op.x,), op.outputs[0])] if _image_input(c, op) else None


def _slices(c: Converter, op: Op, ranges: Sequence[tuple[int, int, int]], out: int) -> list[Step] | None:
    """One SLICE layer per axis that ``ranges`` (start, end, step per file axis) cut, the first reading the
    operator's activation, then a reshape when the file's result drops axes; one full slice when none is cut."""
    layout, rank = c.layout(op.x), len(ranges)
    shape = list(c.shape(op.x))
    steps: list[Step] = []
    for file_axis, (start, end, step) in enumerate(ranges):
        size = c.file_shape(op.x)[file_axis]
        if (start, end, step) == (0, size, 1):
            continue
        if step < 1 or not 0 <= start < end <= size:
            return None
        axis = layout.axis(file_axis, rank)
        shape[axis] = len(range(start, end, step))
        steps.append(Step(OpType.SLICE, SliceAttrs(axis, start, end, step), shape=tuple(shape), role=f"axis{axis}"))
    if not steps:  # nothing cut: the file still copies the tensor
        steps.append(Step(OpType.SLICE, SliceAttrs(0, 0, shape[0]), shape=tuple(shape)))
    steps[0] = Step(steps[0].op, steps[0].attrs, (op.x,), shape=steps[0].shape, role=steps[0].role)
    if tuple(shape) != c.shape(out):
        return [*steps, Step(OpType.RESHAPE, NoAttrs(), output=out, role="reshape")]
    last = steps[-1]
    return [*steps[:-1], Step(last.op, last.attrs, last.inputs, out)]


def _masked(mask: int, axis: int) -> bool:
    return bool((mask >> axis) & 1)


def map_strided_slice(c: Converter, op: Op) -> list[Step] | None:
    """STRIDED_SLICE by stored bounds and positive strides, with begin, end and shrink masks (no ellipsis or new
    axes): a slice per cut axis."""
    bounds = [c.ints(op.input(i)) for i in (1, 2, 3)]
    if op.x != op.input(0) or any(b is None for b in bounds) or op.option("ellipsisMask", 0) or \
            op.option("newAxisMask", 0) or op.option("offset", False):
        return None
    begin, end, strides = (list(b or ()) for b in bounds)
    masks = (int(op.option("beginMask", 0)), int(op.option("endMask", 0)), int(op.option("shrinkAxisMask", 0)))
    ranges = []
    for axis, size in enumerate(c.file_shape(op.x)):
        if axis >= len(begin):
            ranges.append((0, size, 1))
            continue
        start = 0 if _masked(masks[0], axis) else begin[axis]
        start = min(max(start + size if start < 0 else start, 0), size)
        stop = size if _masked(masks[1], axis) else end[axis]
        stop = start + 1 if _masked(masks[2], axis) else min(max(stop + size if stop < 0 else stop, 0), size)
        ranges.append((start, stop, strides[axis]))
    return _slices(c, op, ranges, op.outputs[0])


def map_slice(c: Converter, op: Op) -> list[Step] | None:
    """SLICE by a stored begin and size (-1: to the end)."""
    begin, size = c.ints(op.input(1)), c.ints(op.input(2))
    shape = c.file_shape(op.x)
    if begin is None or size is None or op.x != op.input(0) or len(begin) != len(shape) or len(size) != len(shape):
        return None
    ranges = [(b, d if s == -1 else b + s, 1) for b, s, d in zip(begin, size, shape)]
    return _slices(c, op, ranges, op.outputs[0])


def map_split(c: Converter, op: Op) -> list[Step] | None:
    """SPLIT (equal parts) or SPLIT_V (stored sizes, one -1 for the rest) along a stored axis: a slice per
    output."""
    x, rank = op.x, len(c.file_shape(op.x))
    axis_values = c.ints(op.input(0) if op.name == "SPLIT" else op.input(2))
    if not axis_values or x != (op.input(1) if op.name == "SPLIT" else op.input(0)):
        return None
    axis = axis_values[0] % rank
    size = c.file_shape(x)[axis]
    sizes = [size // len(op.outputs)] * len(op.outputs) if op.name == "SPLIT" else c.ints(op.input(1))
    if sizes is None or len(sizes) != len(op.outputs):
        return None
    if -1 in sizes:
        sizes[sizes.index(-1)] = size - (sum(sizes) + 1)
    ir_axis, start, steps = c.layout(x).axis(axis, rank), 0, []
    for part, out in zip(sizes, op.outputs):
        if part <= 0:
            return None
        steps.append(Step(OpType.SLICE, SliceAttrs(ir_axis, start, start + part), (x,), out))
        start += part
    return steps


def map_gather(c: Converter, op: Op) -> list[Step] | None:
    """GATHER of stored indices (one axis, no batch dimensions); a single index drops the axis (a reshape after)."""
    indices = c.ints(op.input(1))
    rank = len(c.file_shape(op.x))
    if indices is None or op.x != op.input(0) or op.option("batchDims", 0) or len(c.file_shape(op.input(1))) > 1:
        return None
    file_axis = int(op.option("axis", 0)) % rank
    size = c.file_shape(op.x)[file_axis]
    axis = c.layout(op.x).axis(file_axis, rank)
    attrs = GatherAttrs(axis, tuple(i + size if i < 0 else i for i in indices))
    if len(c.file_shape(op.input(1))) == 1:
        return [Step(OpType.GATHER, attrs, (op.x,), op.outputs[0])]
    shape = tuple(len(indices) if i == axis else d for i, d in enumerate(c.shape(op.x)))
    return [Step(OpType.GATHER, attrs, (op.x,), shape=shape),
            Step(OpType.RESHAPE, NoAttrs(), output=op.outputs[0], role="reshape")]


def _rules(operators: Sequence[str], produces: set[OpType], handler: TfliteHandler,
           refusal: str = "") -> dict[str, ImportRule[TfliteHandler]]:
    return {name: rule(produces, handler, refusal.format(name=name)) for name in operators}


_ACTIVATIONS = {OpType.RELU, OpType.RELU6, OpType.TANH, OpType.CLIP}
"""What a fused activation adds after an operator."""
_BINARY = {"ADD": OpType.ADD, "SUB": OpType.SUB, "MUL": OpType.MUL, "DIV": OpType.DIV, "MAXIMUM": OpType.MAX,
           "POW": OpType.POW, "ADD_N": OpType.ADD}
_PLAIN = {name: spec.op for spec in OP_SPECS for name in spec.tflite}
"""The builtin operators each op type's spec maps to it whatever their options (RELU, TANH, ...)."""

TFLITE_IMPORTERS: Mapping[str, ImportRule[TfliteHandler]] = MappingProxyType({
    "CONV_2D": rule({OpType.CONV, *_ACTIVATIONS}, map_conv, "CONV_2D (filters computed at run time)"),
    "DEPTHWISE_CONV_2D": rule({OpType.CONV, *_ACTIVATIONS}, map_depthwise,
                              "DEPTHWISE_CONV_2D (filters computed at run time)"),
    "TRANSPOSE_CONV": rule({OpType.CONV_TRANSPOSE, *_ACTIVATIONS}, map_transpose_conv,
                           "TRANSPOSE_CONV (filters computed at run time, or an output larger than its windows)"),
    "FULLY_CONNECTED": rule({OpType.LINEAR, OpType.FLATTEN, OpType.RESHAPE, OpType.CONV, OpType.MATMUL,
                             *_ACTIVATIONS}, map_fully_connected,
                            "FULLY_CONNECTED (weights computed at run time, of an input that is not 2-D)"),
    "BATCH_MATMUL": rule({OpType.MATMUL, OpType.LINEAR}, map_batch_matmul,
                         "BATCH_MATMUL (of an image, or by a stored operand that is not a matrix)"),
    **_rules(("MAX_POOL_2D", "AVERAGE_POOL_2D"), {OpType.MAX_POOL, OpType.AVG_POOL, *_ACTIVATIONS}, map_pool,
             "{name} (of a tensor that is not an image)"),
    **_rules(("MEAN", "REDUCE_MAX"), {OpType.GLOBAL_AVG_POOL, OpType.GLOBAL_MAX_POOL, OpType.REDUCE_MEAN,
                                      OpType.REDUCE_MAX, OpType.RESHAPE}, map_reduce,
             "{name} (axes computed at run time)"),
    "SOFTMAX": rule({OpType.SOFTMAX}, map_softmax),
    "LOCAL_RESPONSE_NORMALIZATION": rule({OpType.LRN}, map_lrn),
    **{name: plain_rule(op_type) for name, op_type in _PLAIN.items()},
    "LOGISTIC": rule({OpType.SIGMOID, OpType.SILU}, map_logistic),
    "SQUARE": rule({OpType.MUL}, map_square),
    "SQUARED_DIFFERENCE": rule({OpType.SUB, OpType.MUL, OpType.CONSTANT}, map_squared_difference,
                               "SQUARED_DIFFERENCE (of an image and an activation of another rank)"),
    "RELU_N1_TO_1": rule({OpType.CLIP}, map_clip(-1.0, 1.0)),
    "RELU_0_TO_1": rule({OpType.CLIP}, map_clip(0.0, 1.0)),
    "LEAKY_RELU": rule({OpType.LEAKY_RELU}, map_leaky_relu),
    "GELU": rule({OpType.GELU}, map_gelu, "GELU (the tanh approximation)"),
    "PRELU": rule({OpType.PRELU}, map_prelu, "PRELU (slopes neither one per channel nor one in all)"),
    **{name: rule({op_type, OpType.SCALE, OpType.CONSTANT, *_ACTIVATIONS}, map_binary(op_type),
                  f"{name} (of an image and an activation of another rank)")
       for name, op_type in _BINARY.items()},
    "CONCATENATION": rule({OpType.CONCAT, OpType.CONSTANT, *_ACTIVATIONS}, map_concat),
    **_rules(("RESHAPE", "SQUEEZE", "EXPAND_DIMS"), {OpType.FLATTEN, OpType.RESHAPE}, map_reshape),
    "BROADCAST_TO": rule({OpType.EXPAND}, map_broadcast_to),
    "TRANSPOSE": rule({OpType.TRANSPOSE}, map_transpose, "TRANSPOSE (a permutation computed at run time)"),
    **_rules(("PAD", "PADV2", "MIRROR_PAD"), {OpType.PAD}, map_pad,
             "{name} (SYMMETRIC mirroring, or a value computed at run time)"),
    **_rules(("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"), {OpType.UPSAMPLE}, map_resize,
             "{name} (of a tensor that is not an image)"),
    "STRIDED_SLICE": rule({OpType.SLICE, OpType.RESHAPE}, map_strided_slice,
                          "STRIDED_SLICE (bounds computed at run time, negative strides, an ellipsis or new axes)"),
    "SLICE": rule({OpType.SLICE, OpType.RESHAPE}, map_slice, "SLICE (bounds computed at run time)"),
    **_rules(("SPLIT", "SPLIT_V"), {OpType.SLICE}, map_split, "{name} (sizes or axis computed at run time)"),
    "GATHER": rule({OpType.GATHER, OpType.RESHAPE}, map_gather,
                   "GATHER (indices computed at run time, or batch dimensions)"),
})
"""TFLite builtin operator -> the rule that maps it (some only for some options and operands)."""

TFLITE_TWINS: Mapping[str, TfliteTwin] = MappingProxyType({
    "ABS": TfliteTwin("Abs"), "NEG": TfliteTwin("Neg"), "SQRT": TfliteTwin("Sqrt"), "FLOOR": TfliteTwin("Floor"),
    "CEIL": TfliteTwin("Ceil"), "ROUND": TfliteTwin("Round"), "SIGN": TfliteTwin("Sign"), "SIN": TfliteTwin("Sin"),
    "COS": TfliteTwin("Cos"), "ELU": TfliteTwin("Elu"), "MINIMUM": TfliteTwin("Min"),
    "RSQRT": TfliteTwin("Pow", constant=-0.5),
    "PRELU": TfliteTwin("PRelu"), "GELU": TfliteTwin("Gelu", attributes={"approximate": "tanh"}, opset=20),
    "DEPTH_TO_SPACE": TfliteTwin("DepthToSpace", attributes={"mode": "DCR"}, options={"blocksize": "blockSize"}),
    "SPACE_TO_DEPTH": TfliteTwin("SpaceToDepth", options={"blocksize": "blockSize"}),
})
"""TFLite operators no IR layer type has, kept as generic layers (unless strict) by the ONNX operator that
computes the same on the IR's NCHW tensors: element-wise ones, and DEPTH_TO_SPACE / SPACE_TO_DEPTH, whose NHWC
channel order is ONNX's DCR on NCHW. (A generic layer holds an ONNX node: an operator without such a twin is
refused.)"""
