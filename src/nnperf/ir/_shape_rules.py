"""The shape rules: what output shape a layer's inputs and attributes give.

Each rule returns what is wrong with a layer's shapes ('' when nothing). The op specs
(:mod:`nnperf.ir._op_specs`) give each op type its rule, and :func:`~nnperf.ir._op_specs.check_layer_shapes`
applies it.
"""

from __future__ import annotations

from collections.abc import Callable

from nnperf.ir._layer_like import LayerLike
from nnperf.ir._ops import (
    AxisAttrs,
    ChannelShuffleAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    GatherAttrs,
    GroupNormAttrs,
    MatmulAttrs,
    NormAttrs,
    PoolAttrs,
    ReduceAttrs,
    SliceAttrs,
    TransposeAttrs,
)
from nnperf.ir._shapes import (
    Shape,
    broadcast,
    conv_output_size,
    conv_transpose_output_size,
    numel,
    pool_output_size,
    shape_text,
)

ShapeRule = Callable[[LayerLike], str]
"""What is wrong with a layer's shapes under its op's rule ('' when nothing)."""


# ---------------------------------------------------------------------- windows: convolution and pooling
def window_problem(layer: LayerLike) -> str:
    """A convolution's or a pool's 4-D shapes, window attributes and spatial output size."""
    x, out, attrs = layer.input_shape, layer.output_shape, layer.attrs
    assert isinstance(attrs, (ConvAttrs, PoolAttrs))
    if len(x) != 4 or len(out) != 4 or x[0] != out[0]:
        return "needs 4-D NCHW input and output with the same batch"
    dilation = attrs.dilation if isinstance(attrs, ConvAttrs) else (1, 1)
    if (len(attrs.kernel), len(attrs.stride), len(attrs.padding), len(dilation)) != (2, 2, 4, 2):
        return "kernel, stride and dilation need (height, width) and padding (top, left, bottom, right)"
    if min(attrs.kernel + attrs.stride) <= 0 or min(attrs.padding) < 0:
        return f"kernel and stride must be positive and padding non-negative, got {attrs}"
    if isinstance(attrs, ConvAttrs):
        if attrs.groups <= 0 or x[1] % attrs.groups or out[1] % attrs.groups:
            return f"channels must divide by groups={attrs.groups}"
        expected = _conv_spatial_output(x, attrs)
    else:
        if x[1] != out[1]:
            return "pooling must keep the channel count"
        expected = _pool_spatial_output(x, attrs)
    if expected != out[2:]:
        return (f"spatial output should be {shape_text(expected)} for kernel {attrs.kernel}, stride {attrs.stride}, "
                f"padding {attrs.padding}")
    return ""


def _conv_spatial_output(x: Shape, attrs: ConvAttrs) -> Shape:
    return tuple(conv_output_size(x[2 + i], attrs.kernel[i], attrs.stride[i], attrs.padding[i], attrs.padding[2 + i],
                                  attrs.dilation[i]) for i in range(2))


def _pool_spatial_output(x: Shape, attrs: PoolAttrs) -> Shape:
    return tuple(pool_output_size(x[2 + i], attrs.kernel[i], attrs.stride[i], attrs.padding[i], attrs.padding[2 + i],
                                  attrs.ceil_mode) for i in range(2))


def conv_transpose_problem(layer: LayerLike) -> str:
    x, out, a = layer.input_shape, layer.output_shape, layer.attrs
    assert isinstance(a, ConvTransposeAttrs)
    if len(x) != 4 or len(out) != 4 or x[0] != out[0]:
        return "needs 4-D NCHW input and output with the same batch"
    if min(a.kernel + a.stride + a.dilation) <= 0 or min(a.padding + a.output_padding) < 0:
        return f"kernel, stride and dilation must be positive, padding non-negative, got {a}"
    if a.groups <= 0 or x[1] % a.groups or out[1] % a.groups:
        return f"channels must divide by groups={a.groups}"
    expected = tuple(conv_transpose_output_size(x[2 + i], a.kernel[i], a.stride[i], a.padding[i], a.padding[2 + i],
                                                a.output_padding[i], a.dilation[i]) for i in range(2))
    return "" if expected == out[2:] else f"spatial output should be {shape_text(expected)} for {a}"


def global_pool_problem(layer: LayerLike) -> str:
    x, out = layer.input_shape, layer.output_shape
    if len(x) != 4 or out not in ((x[0], x[1], 1, 1), (x[0], x[1])):
        return "global pooling maps NxCxHxW to NxCx1x1 (or NxC)"
    return ""


# ---------------------------------------------------------------------- products
def linear_problem(layer: LayerLike) -> str:
    if layer.input_shape[:-1] != layer.output_shape[:-1]:
        return "a fully connected layer keeps every dimension but the last"
    return ""


def matmul_problem(layer: LayerLike) -> str:
    ins, out = layer.input_shapes, layer.output_shape
    if len(ins) != 2 or min(len(s) for s in ins) < 2:
        return "a matrix product takes two operands of rank 2 or more"
    attrs = layer.attrs
    assert isinstance(attrs, MatmulAttrs)
    a, b = ins
    if attrs.transpose_a:
        a = a[:-2] + (a[-1], a[-2])
    if attrs.transpose_b:
        b = b[:-2] + (b[-1], b[-2])
    if a[-1] != b[-2]:
        return "the inner dimensions differ"
    try:
        batch = broadcast((a[:-2] or (1,), b[:-2] or (1,)))
    except ValueError:
        return "the batch dimensions do not broadcast"
    expected = (batch if max(len(a), len(b)) > 2 else ()) + (a[-2], b[-1])
    return "" if expected == out else f"output should be {shape_text(expected)}"


# ---------------------------------------------------------------------- shape-keeping ops and normalisation
def same_shape_problem(layer: LayerLike) -> str:
    return "" if layer.input_shape == layer.output_shape else "must keep the input shape"


def same_shape_with_channels_problem(layer: LayerLike) -> str:
    """Batch normalisation and LRN: the input shape kept, with a channel dimension."""
    problem = same_shape_problem(layer)
    if not problem and len(layer.input_shape) < 2:
        return "needs a channel dimension"
    return problem


def normalisation_problem(layer: LayerLike) -> str:
    """Layer and group normalisation: the input shape kept, over an axis (or groups of channels) it has."""
    x, a = layer.input_shape, layer.attrs
    if x != layer.output_shape:
        return "must keep the input shape"
    if isinstance(a, NormAttrs) and a.axis not in (1, -1):
        return f"layer normalisation is over the last axis (-1) or the channels (1), got axis {a.axis}"
    if isinstance(a, (NormAttrs, GroupNormAttrs)) and len(x) < 2:
        return "needs a channel dimension"
    if isinstance(a, GroupNormAttrs) and (a.groups <= 0 or x[1] % a.groups):
        return f"channels must divide by groups={a.groups}"
    return ""


def reduce_problem(layer: LayerLike) -> str:
    x, out, a = layer.input_shape, layer.output_shape, layer.attrs
    assert isinstance(a, ReduceAttrs)
    if not a.axes or list(a.axes) != sorted(set(a.axes)) or a.axes[0] < 0 or a.axes[-1] >= len(x):
        return f"axes must be sorted, distinct and within the rank, got {a.axes}"
    kept = tuple(1 if i in a.axes else d for i, d in enumerate(x))
    expected = kept if a.keepdims else tuple(d for i, d in enumerate(x) if i not in a.axes)
    return "" if expected == out else f"output should be {shape_text(expected or (1,))}"


# ---------------------------------------------------------------------- element-wise and joining ops
def eltwise_problem(layer: LayerLike) -> str:
    ins = layer.input_shapes
    if len(ins) < 2:
        return "an element-wise layer needs at least two inputs"
    try:
        broadcast_shape = broadcast(ins)
    except ValueError:
        return "inputs do not broadcast"
    if broadcast_shape != layer.output_shape:
        return f"output should be the broadcast shape {shape_text(broadcast_shape)}"
    return ""


def concat_problem(layer: LayerLike) -> str:
    ins, out, attrs = layer.input_shapes, layer.output_shape, layer.attrs
    assert isinstance(attrs, AxisAttrs)
    axis = attrs.axis % len(out) if -len(out) <= attrs.axis < len(out) else None
    if axis is None or any(len(s) != len(out) for s in ins):
        return f"axis {attrs.axis} and ranks do not agree"
    if any(s[:axis] + s[axis + 1:] != out[:axis] + out[axis + 1:] for s in ins) or sum(
        s[axis] for s in ins
    ) != out[axis]:
        return f"inputs must match except along axis {axis}, whose sizes add up to the output's"
    return ""


# ---------------------------------------------------------------------- data movement
def reshape_problem(layer: LayerLike) -> str:
    return "" if numel(layer.input_shape) == numel(layer.output_shape) else "must keep the number of elements"


def upsample_problem(layer: LayerLike) -> str:
    x, out = layer.input_shape, layer.output_shape
    return "" if len(x) == len(out) and x[:2] == out[:2] else "must keep batch and channels"


def pad_problem(layer: LayerLike) -> str:
    x, out = layer.input_shape, layer.output_shape
    if len(x) != len(out) or any(o < i for i, o in zip(x, out)):
        return "padding cannot shrink a dimension"
    return ""


def expand_problem(layer: LayerLike) -> str:
    x, out = layer.input_shape, layer.output_shape
    try:
        broadcast_shape = broadcast((x, out))
    except ValueError:
        broadcast_shape = ()
    if len(out) < len(x) or broadcast_shape != out:
        return "an expand broadcasts its input to the output shape"
    return ""


def transpose_problem(layer: LayerLike) -> str:
    x, out, attrs = layer.input_shape, layer.output_shape, layer.attrs
    assert isinstance(attrs, TransposeAttrs)
    if sorted(attrs.perm) != list(range(len(x))) or out != tuple(x[p] for p in attrs.perm):
        return f"perm {attrs.perm} is no permutation of the input axes giving the output"
    return ""


def channel_shuffle_problem(layer: LayerLike) -> str:
    x, attrs = layer.input_shape, layer.attrs
    assert isinstance(attrs, ChannelShuffleAttrs)
    if x != layer.output_shape or len(x) < 2 or attrs.groups < 1 or x[1] % attrs.groups:
        return f"a channel shuffle keeps the shape and needs channels divisible by groups={attrs.groups}"
    return ""


def selection_problem(layer: LayerLike) -> str:
    """Slice and gather: the output keeps the input but for the elements they select along one axis."""
    x, out, attrs = layer.input_shape, layer.output_shape, layer.attrs
    assert isinstance(attrs, (SliceAttrs, GatherAttrs))
    if not 0 <= attrs.axis < len(x) or len(out) != len(x):
        return f"axis {attrs.axis} is not an axis of the input, or the rank changes"
    size = x[attrs.axis]
    if isinstance(attrs, SliceAttrs):
        ok = attrs.step >= 1 and 0 <= attrs.start < attrs.end <= size
        kept = len(range(attrs.start, attrs.end, attrs.step))
    else:
        ok = bool(attrs.indices) and all(0 <= i < size for i in attrs.indices)
        kept = len(attrs.indices)
    if not ok or out != x[:attrs.axis] + (kept,) + x[attrs.axis + 1:]:
        return f"{attrs} does not select the output from the input"
    return ""


def any_shapes(layer: LayerLike) -> str:
    """No rule: a constant's input only places it in the graph (its output is the stored tensor, of any shape),
    and a generic layer's shapes are ONNX shape inference's."""
    return ""
