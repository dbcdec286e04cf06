"""The network IR: a DAG of layers with static tensor shapes.

Shapes include the batch dimension; 4-D activations are NCHW. A layer has one
output tensor, named after the layer; its ``inputs`` name the layers (or the
network inputs) that produce what it reads, in operand order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from nnperf.errors import InvalidNetworkError
from nnperf.ir._limits import check_layer_size, check_network_size, check_tensor_size
from nnperf.ir._ops import (
    ACTIVATIONS,
    DATA_MOVEMENT,
    ELTWISE,
    NOOPS,
    Attributes,
    AxisAttrs,
    ChannelShuffleAttrs,
    ConvAttrs,
    ConvKind,
    ConvTransposeAttrs,
    GatherAttrs,
    GroupNormAttrs,
    MatmulAttrs,
    NoAttrs,
    NormAttrs,
    OpType,
    PoolAttrs,
    ReduceAttrs,
    SliceAttrs,
    TransposeAttrs,
    attributes_class,
)

Shape = tuple[int, ...]


def numel(shape: Shape) -> int:
    """Number of elements of a tensor of this shape."""
    return math.prod(shape)


@dataclass(frozen=True)
class TensorSpec:
    """A network input: its name, shape (batch first) and element type."""

    name: str
    shape: Shape
    dtype: str = "float32"

    def __post_init__(self) -> None:
        _check_shape(self.shape, f"input {self.name!r}")
        check_tensor_size(self.shape, f"input {self.name!r}")


@dataclass(frozen=True)
class Layer:
    """One operator of the network.

    ``inputs`` are the names of the producers (layers or network inputs), one
    per operand; ``input_shapes`` gives each operand's shape in the same order.
    """

    name: str
    op: OpType
    inputs: tuple[str, ...]
    input_shapes: tuple[Shape, ...]
    output_shape: Shape
    attrs: Attributes = field(default_factory=NoAttrs)

    def __post_init__(self) -> None:
        where = f"layer {self.name!r} ({self.op.value})"
        if not self.name:
            raise InvalidNetworkError(f"a {self.op.value} layer has an empty name")
        if not isinstance(self.op, OpType):
            raise InvalidNetworkError(f"layer {self.name!r}: op must be an OpType, got {self.op!r}")
        expected = attributes_class(self.op)
        if isinstance(self.attrs, NoAttrs) and expected is not NoAttrs:
            try:  # attributes left out: the op's defaults, where it has them (not for conv or pooling)
                object.__setattr__(self, "attrs", expected())
            except TypeError:
                raise InvalidNetworkError(f"{where}: needs {expected.__name__} (kernel, stride, ...)") from None
        if not isinstance(self.attrs, expected):
            raise InvalidNetworkError(
                f"{where}: attributes must be {expected.__name__}, got {type(self.attrs).__name__}"
            )
        if len(self.inputs) != len(self.input_shapes):
            raise InvalidNetworkError(
                f"{where}: {len(self.inputs)} inputs but {len(self.input_shapes)} input shapes"
            )
        if not self.inputs:
            raise InvalidNetworkError(f"{where}: has no inputs")
        for i, shape in enumerate(self.input_shapes):
            _check_shape(shape, f"{where}, input {i}")
        _check_shape(self.output_shape, f"{where}, output")
        _check_layer_shapes(self, where)
        check_layer_size(self, where)

    @property
    def input_shape(self) -> Shape:
        """Shape of the first operand (the only one for most layers)."""
        return self.input_shapes[0]

    @property
    def conv_kind(self) -> ConvKind | None:
        """Standard, pointwise, depthwise or grouped, for convolutions; else None."""
        if self.op is not OpType.CONV:
            return None
        assert isinstance(self.attrs, ConvAttrs)
        c_in, c_out, groups = self.input_shape[1], self.output_shape[1], self.attrs.groups
        if groups == 1:
            return ConvKind.POINTWISE if self.attrs.kernel == (1, 1) else ConvKind.STANDARD
        if groups == c_in and c_out % c_in == 0:
            return ConvKind.DEPTHWISE
        return ConvKind.GROUPED


@dataclass(frozen=True)
class Network:
    """A DAG of layers in topological order, with named inputs and outputs.

    ``int8_layers`` names the layers the model file runs in int8 (a quantised model's convolutions and matrix
    products, between its QuantizeLinear and DequantizeLinear nodes); every other layer computes in float.
    """

    name: str
    inputs: tuple[TensorSpec, ...]
    layers: tuple[Layer, ...]
    outputs: tuple[str, ...]
    int8_layers: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.inputs:
            raise InvalidNetworkError(f"network {self.name!r} has no inputs")
        if not self.layers:
            raise InvalidNetworkError(f"network {self.name!r} has no layers")
        shapes: dict[str, Shape] = {}
        for spec in self.inputs:
            if spec.name in shapes:
                raise InvalidNetworkError(f"network {self.name!r}: duplicate input name {spec.name!r}")
            shapes[spec.name] = spec.shape
        for layer in self.layers:
            if layer.name in shapes:
                raise InvalidNetworkError(f"network {self.name!r}: duplicate name {layer.name!r}")
            for producer, shape in zip(layer.inputs, layer.input_shapes):
                if producer not in shapes:
                    raise InvalidNetworkError(
                        f"layer {layer.name!r} reads {producer!r}, which is not a network input "
                        "or an earlier layer (layers must be in topological order)"
                    )
                if shapes[producer] != shape:
                    raise InvalidNetworkError(
                        f"layer {layer.name!r} expects {producer!r} of shape {shape_text(shape)}, "
                        f"but it has shape {shape_text(shapes[producer])}"
                    )
            shapes[layer.name] = layer.output_shape
        if not self.outputs:
            raise InvalidNetworkError(f"network {self.name!r} has no outputs")
        strangers = sorted(self.int8_layers - shapes.keys())
        if strangers:
            raise InvalidNetworkError(f"network {self.name!r}: int8 layer(s) {', '.join(strangers)} are not layers")
        for out in self.outputs:
            if out not in shapes:
                raise InvalidNetworkError(f"network {self.name!r}: output {out!r} is not a layer or input")
        check_network_size(self)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    @cached_property
    def _by_name(self) -> dict[str, Layer]:
        return {layer.name: layer for layer in self.layers}

    @cached_property
    def _consumers(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {spec.name: [] for spec in self.inputs}
        for layer in self.layers:
            found[layer.name] = []
            for producer in dict.fromkeys(layer.inputs):
                found[producer].append(layer.name)
        return {name: tuple(users) for name, users in found.items()}

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; KeyError naming it if there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"network {self.name!r} has no layer {name!r}") from None

    def producers(self, name: str) -> tuple[str, ...]:
        """Names of the layers or inputs that ``name`` reads."""
        return self.layer(name).inputs

    def consumers(self, name: str) -> tuple[str, ...]:
        """Names of the layers that read the output of ``name`` (a layer or an input)."""
        try:
            return self._consumers[name]
        except KeyError:
            raise KeyError(f"network {self.name!r} has no layer or input {name!r}") from None

    def op_counts(self) -> dict[OpType, int]:
        """How many layers of each op type the network has."""
        counts: dict[OpType, int] = {}
        for layer in self.layers:
            counts[layer.op] = counts.get(layer.op, 0) + 1
        return counts


def shape_text(shape: Shape) -> str:
    """(1, 3, 224, 224) -> '1x3x224x224', the form nnperf prints and parses shapes in."""
    return "x".join(str(d) for d in shape)


def _check_shape(shape: Shape, where: str) -> None:
    if not isinstance(shape, tuple) or not shape:
        raise InvalidNetworkError(f"{where}: shape must be a non-empty tuple of ints, got {shape!r}")
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise InvalidNetworkError(f"{where}: every dimension must be a positive int, got shape {shape!r}")


def same_padding(sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                 lower: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The padding (begins, ends) per spatial axis that ONNX's ``auto_pad`` SAME_UPPER (or SAME_LOWER, ``lower``)
    gives: each output side is ceil(size / stride), the odd pad element at the end (the beginning)."""
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max(0, (-(-size // s) - 1) * s + d * (k - 1) + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(large if lower else small)
        ends.append(small if lower else large)
    return tuple(begins), tuple(ends)


def conv_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1) -> int:
    """Output length of a convolution along one spatial axis (floor rule)."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def pool_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, ceil_mode: bool) -> int:
    """Output length of a pooling window along one axis, with PyTorch/ONNX's ceil rule.

    In ceil mode the last window must start inside the input or its left padding.
    """
    span = size + pad_begin + pad_end - kernel
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def _check_layer_shapes(layer: Layer, where: str) -> None:
    """Checks that the output shape follows from the inputs and attributes."""
    op, ins, out = layer.op, layer.input_shapes, layer.output_shape
    if op is OpType.GENERIC:
        return  # its shapes are ONNX shape inference's: no rule of nnperf's to check them against
    single_input = op not in ELTWISE and op not in (OpType.CONCAT, OpType.MATMUL)
    if single_input and len(ins) != 1:
        raise InvalidNetworkError(f"{where}: takes one input, got {len(ins)}")
    x = ins[0]

    def fail(msg: str) -> None:
        raise InvalidNetworkError(f"{where}: {msg} (input {', '.join(map(shape_text, ins))}, output {shape_text(out)})")

    if op in (OpType.CONV, OpType.MAX_POOL, OpType.AVG_POOL):
        if len(x) != 4 or len(out) != 4 or x[0] != out[0]:
            fail("needs 4-D NCHW input and output with the same batch")
        attrs = layer.attrs
        assert isinstance(attrs, (ConvAttrs, PoolAttrs))
        dilation = attrs.dilation if isinstance(attrs, ConvAttrs) else (1, 1)
        if (len(attrs.kernel), len(attrs.stride), len(attrs.padding), len(dilation)) != (2, 2, 4, 2):
            fail("kernel, stride and dilation need (height, width) and padding (top, left, bottom, right)")
        if min(attrs.kernel + attrs.stride) <= 0 or min(attrs.padding) < 0:
            fail(f"kernel and stride must be positive and padding non-negative, got {attrs}")
        if isinstance(attrs, ConvAttrs):
            if attrs.groups <= 0 or x[1] % attrs.groups or out[1] % attrs.groups:
                fail(f"channels must divide by groups={attrs.groups}")
            expected = tuple(
                conv_output_size(x[2 + i], attrs.kernel[i], attrs.stride[i], attrs.padding[i], attrs.padding[2 + i],
                                 attrs.dilation[i])
                for i in range(2)
            )
        else:
            if x[1] != out[1]:
                fail("pooling must keep the channel count")
            expected = tuple(
                pool_output_size(x[2 + i], attrs.kernel[i], attrs.stride[i], attrs.padding[i], attrs.padding[2 + i],
                                 attrs.ceil_mode)
                for i in range(2)
            )
        if expected != out[2:]:
            fail(f"spatial output should be {shape_text(expected)} for kernel {attrs.kernel}, stride {attrs.stride}, "
                 f"padding {attrs.padding}")
    elif op in (OpType.GLOBAL_AVG_POOL, OpType.GLOBAL_MAX_POOL):
        if len(x) != 4 or out not in ((x[0], x[1], 1, 1), (x[0], x[1])):
            fail("global pooling maps NxCxHxW to NxCx1x1 (or NxC)")
    elif op is OpType.LINEAR:
        if x[:-1] != out[:-1]:
            fail("a fully connected layer keeps every dimension but the last")
    elif op in ACTIVATIONS or op in NOOPS or op in (OpType.BATCH_NORM, OpType.SCALE, OpType.SOFTMAX, OpType.LRN):
        if x != out:
            fail("must keep the input shape")
        if op in (OpType.BATCH_NORM, OpType.LRN) and len(x) < 2:
            fail("needs a channel dimension")
    elif op in ELTWISE:
        if len(ins) < 2:
            fail("an element-wise layer needs at least two inputs")
        try:
            broadcast = _broadcast(ins)
        except ValueError:
            fail("inputs do not broadcast")
        if broadcast != out:
            fail(f"output should be the broadcast shape {shape_text(broadcast)}")
    elif op is OpType.CONCAT:
        assert isinstance(layer.attrs, AxisAttrs)
        axis = layer.attrs.axis % len(out) if -len(out) <= layer.attrs.axis < len(out) else None
        if axis is None or any(len(s) != len(out) for s in ins):
            fail(f"axis {layer.attrs.axis} and ranks do not agree")
        assert axis is not None
        if any(s[:axis] + s[axis + 1:] != out[:axis] + out[axis + 1:] for s in ins) or sum(
            s[axis] for s in ins
        ) != out[axis]:
            fail(f"inputs must match except along axis {axis}, whose sizes add up to the output's")
    elif op in (OpType.FLATTEN, OpType.RESHAPE):
        if numel(x) != numel(out):
            fail("must keep the number of elements")
    elif op is OpType.UPSAMPLE:
        if len(x) != len(out) or x[:2] != out[:2]:
            fail("must keep batch and channels")
    elif op is OpType.PAD and (len(x) != len(out) or any(o < i for i, o in zip(x, out))):
        fail("padding cannot shrink a dimension")
    # activations and data movement (issue 17)
    elif op in DATA_MOVEMENT:
        _check_data_movement(layer, fail)
    # resizing, normalisation and attention (issue 17)
    elif op in _ISSUE17_CHECKS:
        problem = _ISSUE17_CHECKS[op](layer)
        if problem:
            fail(problem)


def _check_data_movement(layer: Layer, fail: Callable[[str], None]) -> None:
    """Slice, transpose, channel shuffle, gather and expand: the output shape their attributes give."""
    x, out, attrs = layer.input_shape, layer.output_shape, layer.attrs
    if layer.op is OpType.EXPAND:
        try:
            broadcast = _broadcast((x, out))
        except ValueError:
            broadcast = ()
        if len(out) < len(x) or broadcast != out:
            fail("an expand broadcasts its input to the output shape")
    elif isinstance(attrs, TransposeAttrs):
        if sorted(attrs.perm) != list(range(len(x))) or out != tuple(x[p] for p in attrs.perm):
            fail(f"perm {attrs.perm} is no permutation of the input axes giving the output")
    elif isinstance(attrs, ChannelShuffleAttrs):
        if x != out or len(x) < 2 or attrs.groups < 1 or x[1] % attrs.groups:
            fail(f"a channel shuffle keeps the shape and needs channels divisible by groups={attrs.groups}")
    elif isinstance(attrs, (SliceAttrs, GatherAttrs)):
        if not 0 <= attrs.axis < len(x) or len(out) != len(x):
            fail(f"axis {attrs.axis} is not an axis of the input, or the rank changes")
        size = x[attrs.axis]
        if isinstance(attrs, SliceAttrs):
            ok = attrs.step >= 1 and 0 <= attrs.start < attrs.end <= size
            kept = len(range(attrs.start, attrs.end, attrs.step))
        else:
            ok = bool(attrs.indices) and all(0 <= i < size for i in attrs.indices)
            kept = len(attrs.indices)
        if not ok or out != x[:attrs.axis] + (kept,) + x[attrs.axis + 1:]:
            fail(f"{attrs} does not select the output from the input")


# resizing, normalisation and attention (issue 17)
def _conv_transpose_problem(layer: Layer) -> str:
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


def conv_transpose_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
                               output_padding: int = 0, dilation: int = 1) -> int:
    """Output length of a transposed convolution along one spatial axis (PyTorch's and ONNX's rule)."""
    return (size - 1) * stride - pad_begin - pad_end + dilation * (kernel - 1) + output_padding + 1


def _same_shape_problem(layer: Layer) -> str:
    x, out, a = layer.input_shape, layer.output_shape, layer.attrs
    if x != out:
        return "must keep the input shape"
    if isinstance(a, NormAttrs) and a.axis not in (1, -1):
        return f"layer normalisation is over the last axis (-1) or the channels (1), got axis {a.axis}"
    if isinstance(a, (NormAttrs, GroupNormAttrs)) and len(x) < 2:
        return "needs a channel dimension"
    if isinstance(a, GroupNormAttrs) and (a.groups <= 0 or x[1] % a.groups):
        return f"channels must divide by groups={a.groups}"
    return ""


def _reduce_problem(layer: Layer) -> str:
    x, out, a = layer.input_shape, layer.output_shape, layer.attrs
    assert isinstance(a, ReduceAttrs)
    if not a.axes or list(a.axes) != sorted(set(a.axes)) or a.axes[0] < 0 or a.axes[-1] >= len(x):
        return f"axes must be sorted, distinct and within the rank, got {a.axes}"
    kept = tuple(1 if i in a.axes else d for i, d in enumerate(x))
    expected = kept if a.keepdims else tuple(d for i, d in enumerate(x) if i not in a.axes)
    return "" if expected == out else f"output should be {shape_text(expected or (1,))}"


def _matmul_problem(layer: Layer) -> str:
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
        batch = _broadcast((a[:-2] or (1,), b[:-2] or (1,)))
    except ValueError:
        return "the batch dimensions do not broadcast"
    expected = (batch if max(len(a), len(b)) > 2 else ()) + (a[-2], b[-1])
    return "" if expected == out else f"output should be {shape_text(expected)}"


def _constant_problem(layer: Layer) -> str:
    return ""  # its input only places it in the graph; the output is the stored tensor, of any shape


_ISSUE17_CHECKS = {
    OpType.CONV_TRANSPOSE: _conv_transpose_problem,
    OpType.LAYER_NORM: _same_shape_problem,
    OpType.GROUP_NORM: _same_shape_problem,
    OpType.REDUCE_MEAN: _reduce_problem,
    OpType.REDUCE_MAX: _reduce_problem,
    OpType.MATMUL: _matmul_problem,
    OpType.CONSTANT: _constant_problem,
}
"""Shape checks of the issue-17 ops, each returning what is wrong ('' when nothing)."""


def _broadcast(shapes: tuple[Shape, ...]) -> Shape:
    rank = max(len(s) for s in shapes)
    result = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            raise ValueError("not broadcastable")
        result.append(dims.pop() if dims else 1)
    return tuple(result)
