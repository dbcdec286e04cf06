"""Executable PyTorch modules built from an IR network, with deterministic random weights.

:func:`build_torch` makes a :class:`GraphModule` that runs the layers in
topological order, one ``torch.nn`` module per layer, so a caller can time or
profile each layer call; :func:`layer_module` builds one layer alone, to time
it in isolation. Weights come from :func:`layer_weights`, the same as the
ONNX builder's, so both compute the same function, unless the caller gives
them (a file's own, ``_given_weights``).
Each op's module comes from its builder in ``TORCH_BUILDERS``, one table.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from types import MappingProxyType
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nnperf.errors import UnsupportedOperatorError
from nnperf.ir import (
    AxisAttrs,
    BatchNormAttrs,
    ChannelShuffleAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    GatherAttrs,
    GroupNormAttrs,
    HardSigmoidAttrs,
    LeakyReluAttrs,
    LinearAttrs,
    LrnAttrs,
    MatmulAttrs,
    Network,
    NormAttrs,
    OpType,
    PadAttrs,
    PoolAttrs,
    PReluAttrs,
    ReduceAttrs,
    ScaleAttrs,
    Shape,
    SliceAttrs,
    TransposeAttrs,
    UpsampleAttrs,
)
from nnperf.ir import Layer as IRLayer
from nnperf.ir.modules import LayerNorm2d
from nnperf.measure._memory import require_memory
from nnperf.measure.backends._generic_node import GenericNodeError
from nnperf.measure.backends._given_weights import LayerWeights, given_weights, weights_of
from nnperf.measure.backends._torch_generic import GenericModule
from nnperf.measure.backends._weights import pad_amounts

LayerHook = Callable[[str], AbstractContextManager[Any]]


class _Unsupported(Exception):
    """A layer this builder cannot express; the message says why."""


class GraphModule(nn.Module):
    """An IR network as one module: ``forward(*inputs)`` runs every layer in order.

    Inputs are taken positionally in the order of ``network.inputs``; the
    result is a tensor for one network output, else a tuple. Intermediate
    tensors are dropped as soon as their last consumer has run. When
    ``layer_hook`` is set, each layer call runs inside ``with
    layer_hook(layer.name):`` (a profiler range, a timer, ...).
    """

    def __init__(self, network: Network, seed: int = 0, weights: LayerWeights | None = None) -> None:
        super().__init__()
        self.network = network
        self.layer_hook: LayerHook | None = None
        self.layers = nn.ModuleDict()
        self._steps: list[tuple[IRLayer, nn.Module, tuple[str, ...]]] = []
        problems: dict[str, list[str]] = {}
        for layer in network.layers:
            try:
                with given_weights(weights):
                    module = _build(layer, seed)
            except _Unsupported as exc:
                problems.setdefault(f"{layer.op.value} ({exc})", []).append(layer.name)
                continue
            self.layers[self._key(layer.name)] = module
            self._steps.append((layer, module, layer.inputs))
        if problems:
            raise UnsupportedOperatorError(network.name, problems)
        last_use: dict[str, int] = {}
        for index, (_, _, inputs) in enumerate(self._steps):
            for name in inputs:
                last_use[name] = index
        kept = set(network.outputs)
        self._free_after: list[tuple[str, ...]] = [() for _ in self._steps]
        for name, index in last_use.items():
            if name not in kept:
                self._free_after[index] += (name,)
        self.eval().requires_grad_(False)

    def _key(self, name: str) -> str:
        key = re.sub(r"\W", "_", name) or "layer"
        while key in self.layers or hasattr(self.layers, key):
            key += "_"
        return key

    def layer_modules(self) -> Iterator[tuple[IRLayer, nn.Module]]:
        """Each IR layer with the module that computes it, in topological order."""
        for layer, module, _ in self._steps:
            yield layer, module

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        specs = self.network.inputs
        if len(inputs) != len(specs):
            raise TypeError(f"{self.network.name}: expected {len(specs)} input tensor(s) "
                            f"({', '.join(s.name for s in specs)}), got {len(inputs)}")
        values: dict[str, torch.Tensor] = {spec.name: x for spec, x in zip(specs, inputs)}
        hook = self.layer_hook
        for (layer, module, names), dead in zip(self._steps, self._free_after):
            args = [values[n] for n in names]
            if hook is None:
                values[layer.name] = module(*args)
            else:
                with hook(layer.name):
                    values[layer.name] = module(*args)
            del args
            for name in dead:
                del values[name]
        outputs = tuple(values[name] for name in self.network.outputs)
        return outputs[0] if len(outputs) == 1 else outputs


def build_torch(network: Network, seed: int = 0, weights: LayerWeights | None = None) -> GraphModule:
    """``network`` as an eval-mode :class:`GraphModule` with weights from :func:`layer_weights` (``seed``), but
    for the layers ``weights`` gives the parameters of (a file's own: ``from_onnx_with_weights``).

    Raises UnsupportedOperatorError listing every layer that cannot be built, and InsufficientMemoryError
    when its weights and tensors would not fit in the free memory.
    """
    require_memory(network.layers, [s.shape for s in network.inputs], f"network {network.name!r}")
    return GraphModule(network, seed, weights)


def layer_module(layer: IRLayer, seed: int = 0) -> nn.Module:
    """One layer as an eval-mode module taking ``len(layer.inputs)`` tensors positionally.

    Its weights are those the layer has inside :func:`build_torch`'s module.
    """
    require_memory([layer], layer.input_shapes, f"layer {layer.name!r}")
    try:
        module = _build(layer, seed)
    except _Unsupported as exc:
        raise UnsupportedOperatorError(layer.name, {f"{layer.op.value} ({exc})": [layer.name]}) from None
    return module.eval().requires_grad_(False)


# ---------------------------------------------------------------------- small modules for ops torch.nn lacks
class _Eltwise(nn.Module):
    def __init__(self, op: OpType) -> None:
        super().__init__()
        self.fn = {OpType.ADD: torch.add, OpType.MUL: torch.mul, OpType.MAX: torch.maximum}[op]

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return functools.reduce(self.fn, xs)


class _Concat(nn.Module):
    def __init__(self, axis: int) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return torch.cat(xs, dim=self.axis)


class _Reshape(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.shape = shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(self.shape)


class _Scale(nn.Module):
    """y = x * scale (+ bias), the factors broadcast over every axis after the channel axis."""

    def __init__(self, scale: np.ndarray, bias: np.ndarray | None, rank: int) -> None:
        super().__init__()
        shape = (-1,) + (1,) * max(rank - 2, 0)
        self.register_buffer("scale", torch.from_numpy(scale).reshape(shape))
        self.register_buffer("bias", None if bias is None else torch.from_numpy(bias).reshape(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.scale
        return y if self.bias is None else y + self.bias


class _GlobalPool(nn.Module):
    def __init__(self, is_max: bool, flatten: bool) -> None:
        super().__init__()
        self.pool = nn.AdaptiveMaxPool2d(1) if is_max else nn.AdaptiveAvgPool2d(1)
        self.flatten = flatten

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(x)
        return y.flatten(1) if self.flatten else y


class _Upsample(nn.Module):
    def __init__(self, size: Shape, mode: str) -> None:
        super().__init__()
        self.size = size
        self.mode = mode
        self.align_corners = None if mode == "nearest" else False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, size=self.size, mode=self.mode, align_corners=self.align_corners)


class _Pad(nn.Module):
    """F.pad; ``pads`` in torch's order (last axis first), negative values crop."""

    def __init__(self, pads: tuple[int, ...], mode: str = "constant", value: float = 0.0) -> None:
        super().__init__()
        self.pads = pads
        self.mode = mode
        self.value = value if mode == "constant" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, self.pads, mode=self.mode, value=self.value)


class _PaddedPool(nn.Module):
    """2-D pooling with padding torch's pooling modules refuse (asymmetric, or above half the kernel).

    The input is padded (or cropped) explicitly to exactly the extent the
    output windows cover; average pooling divides each window sum by the
    number of input cells it covers, plus declared padding cells when
    ``count_include_pad``: the rule of ``nn.AvgPool2d``, which never counts
    the ceil-mode overhang past the declared padding.
    """

    def __init__(self, is_max: bool, attrs: PoolAttrs, in_hw: Shape, out_hw: Shape) -> None:
        super().__init__()
        self.is_max = is_max
        self.kernel, self.stride = attrs.kernel, attrs.stride
        begin = attrs.padding[:2]
        end = tuple((out_hw[i] - 1) * attrs.stride[i] + attrs.kernel[i] - in_hw[i] - begin[i] for i in range(2))
        self.pads = (begin[1], end[1], begin[0], end[0])
        masks = []
        for i in range(2):
            pos = np.arange(begin[i] + in_hw[i] + end[i]) - begin[i]  # index into the unpadded input
            high = in_hw[i] + attrs.padding[2 + i] if attrs.count_include_pad else in_hw[i]
            low = -begin[i] if attrs.count_include_pad else 0
            masks.append(((pos >= low) & (pos < high)).astype(np.float32))
        mask = torch.from_numpy(np.outer(masks[0], masks[1]))[None, None]
        count = F.avg_pool2d(mask, self.kernel, self.stride, divisor_override=1).clamp(min=1.0)
        self.register_buffer("count", count)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.is_max:
            return F.max_pool2d(F.pad(x, self.pads, value=float("-inf")), self.kernel, self.stride)
        return F.avg_pool2d(F.pad(x, self.pads), self.kernel, self.stride, divisor_override=1) / self.count


# ---------------------------------------------------------------------- one layer -> one module
TorchBuilder = Callable[[IRLayer, int], nn.Module]
"""Builds one layer's module from the layer and the weight seed; raises _Unsupported with the reason."""


def _build(layer: IRLayer, seed: int) -> nn.Module:
    builder = TORCH_BUILDERS.get(layer.op)
    if builder is None:
        raise _Unsupported("no torch builder for this op")
    return builder(layer, seed)


def _plain(factory: Callable[[], nn.Module]) -> TorchBuilder:
    """A builder for a layer computed by ``factory()`` whatever its shapes."""

    def build(layer: IRLayer, seed: int) -> nn.Module:
        return factory()

    return build


def _linear(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, LinearAttrs)
    linear = nn.Linear(layer.input_shape[-1], layer.output_shape[-1], bias=layer.attrs.bias)
    _load(linear, weights_of(layer, seed))
    return linear


def _global_pool(layer: IRLayer, seed: int) -> nn.Module:
    return _GlobalPool(layer.op is OpType.GLOBAL_MAX_POOL, flatten=len(layer.output_shape) == 2)


def _scale(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, ScaleAttrs)
    w = weights_of(layer, seed)
    return _Scale(w["scale"], w.get("bias"), len(layer.input_shape) if layer.attrs.per_channel else 0)


def _leaky_relu(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, LeakyReluAttrs)
    return nn.LeakyReLU(layer.attrs.negative_slope)


def _eltwise(layer: IRLayer, seed: int) -> nn.Module:
    return _Eltwise(layer.op)


def _concat(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, AxisAttrs)
    return _Concat(layer.attrs.axis)


def _softmax(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, AxisAttrs)
    return nn.Softmax(dim=layer.attrs.axis)


def _lrn(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, LrnAttrs)
    if len(layer.input_shape) < 3:
        raise _Unsupported("LRN needs at least one spatial axis")
    return nn.LocalResponseNorm(attrs.size, attrs.alpha, attrs.beta, attrs.k)


def _flatten(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, AxisAttrs)
    x = layer.input_shape
    axis = layer.attrs.axis % len(x)
    if layer.output_shape == x[:axis] + (math.prod(x[axis:]),):
        return nn.Flatten(axis, -1)
    return _Reshape(layer.output_shape)


def _reshape(layer: IRLayer, seed: int) -> nn.Module:
    return _Reshape(layer.output_shape)


def _load(module: nn.Module, arrays: dict[str, np.ndarray]) -> None:
    for name, value in arrays.items():
        target = getattr(module, name)
        if target is not None:
            target.data.copy_(torch.from_numpy(value).reshape(target.shape))


def _conv(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, ConvAttrs)
    top, left, bottom, right = attrs.padding
    symmetric = (top, left) == (bottom, right)
    conv = nn.Conv2d(layer.input_shape[1], layer.output_shape[1], attrs.kernel, attrs.stride,
                     padding=(top, left) if symmetric else 0, dilation=attrs.dilation, groups=attrs.groups,
                     bias=attrs.bias)
    _load(conv, weights_of(layer, seed))
    if symmetric:
        return conv
    return nn.Sequential(_Pad((left, right, top, bottom)), conv)


def _pool(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, PoolAttrs)
    is_max = layer.op is OpType.MAX_POOL
    top, left, bottom, right = attrs.padding
    kh, kw = attrs.kernel
    if (top, left) == (bottom, right) and top <= kh // 2 and left <= kw // 2:
        if is_max:
            return nn.MaxPool2d(attrs.kernel, attrs.stride, (top, left), ceil_mode=attrs.ceil_mode)
        return nn.AvgPool2d(attrs.kernel, attrs.stride, (top, left), ceil_mode=attrs.ceil_mode,
                            count_include_pad=attrs.count_include_pad)
    return _PaddedPool(is_max, attrs, layer.input_shape[2:], layer.output_shape[2:])


def _batch_norm(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, BatchNormAttrs)
    rank = len(layer.input_shape)
    classes: dict[int, type[nn.modules.batchnorm._BatchNorm]] = {
        2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}
    if rank not in classes:
        raise _Unsupported(f"batch normalisation of a {rank}-D tensor")
    bn = classes[rank](layer.input_shape[1], eps=attrs.eps, affine=attrs.affine)
    w = weights_of(layer, seed)
    assert bn.running_mean is not None and bn.running_var is not None
    bn.running_mean.copy_(torch.from_numpy(w["mean"]))
    bn.running_var.copy_(torch.from_numpy(w["var"]))
    if attrs.affine:
        _load(bn, {"weight": w["weight"], "bias": w["bias"]})
    return bn


def _upsample(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, UpsampleAttrs)
    rank = len(layer.input_shape)
    if attrs.mode == "nearest" and rank >= 3:
        return _Upsample(layer.output_shape[2:], "nearest")
    linear = {3: "linear", 4: "bilinear", 5: "trilinear"}
    if attrs.mode == "linear" and rank in linear:
        return _Upsample(layer.output_shape[2:], linear[rank])
    raise _Unsupported(f"{attrs.mode} upsampling of a {rank}-D tensor")


def _pad(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, PadAttrs)
    amounts = pad_amounts(layer)
    padded = [i for i, p in enumerate(amounts) if p != (0, 0)]
    first = padded[0] if padded else len(amounts)
    if attrs.mode != "constant":
        if first < 2 or not 3 <= len(amounts) <= 5:
            raise _Unsupported(f"{attrs.mode} padding of a non-spatial axis or a {len(amounts)}-D tensor")
        first = 2
    pads: tuple[int, ...] = ()
    for begin, end in reversed(amounts[first:]):
        pads += (begin, end)
    if not pads:
        return nn.Identity()
    return _Pad(pads, attrs.mode, attrs.value)


# ---------------------------------------------------------------------- activations and data movement
class _Unary(nn.Module):
    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


class _HardSigmoid(nn.Module):
    def __init__(self, alpha: float, beta: float) -> None:
        super().__init__()
        self.alpha, self.beta = alpha, beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x * self.alpha + self.beta, 0.0, 1.0)


class _Clip(nn.Module):
    def __init__(self, low: float, high: float) -> None:
        super().__init__()
        self.low = None if math.isinf(low) else low
        self.high = None if math.isinf(high) else high

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, self.low, self.high)


class _Slice(nn.Module):
    def __init__(self, attrs: SliceAttrs) -> None:
        super().__init__()
        self.index = (slice(None),) * attrs.axis + (slice(attrs.start, attrs.end, attrs.step),)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[self.index]


class _Transpose(nn.Module):
    def __init__(self, perm: tuple[int, ...]) -> None:
        super().__init__()
        self.perm = perm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(self.perm).contiguous()


class _ChannelShuffle(nn.Module):
    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c = x.shape[:2]
        y = x.reshape((n, self.groups, c // self.groups) + tuple(x.shape[2:]))
        return y.transpose(1, 2).reshape(x.shape)


class _Gather(nn.Module):
    def __init__(self, axis: int, indices: tuple[int, ...]) -> None:
        super().__init__()
        self.axis = axis
        self.register_buffer("indices", torch.tensor(indices, dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.index_select(x, self.axis, self.indices)


class _Expand(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.shape = shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.expand(self.shape).contiguous()


def _hard_sigmoid(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, HardSigmoidAttrs)
    return _HardSigmoid(layer.attrs.alpha, layer.attrs.beta)


def _clip(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, ClipAttrs)
    return _Clip(layer.attrs.low, layer.attrs.high)


def _prelu(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, PReluAttrs)
    slope = weights_of(layer, seed)["slope"]
    prelu = nn.PReLU(slope.size)
    prelu.weight.data.copy_(torch.from_numpy(slope))
    return prelu


def _unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> TorchBuilder:
    return _plain(lambda: _Unary(fn))


def _slice(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, SliceAttrs)
    return _Slice(layer.attrs)


def _transpose(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, TransposeAttrs)
    return _Transpose(layer.attrs.perm)


def _channel_shuffle(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, ChannelShuffleAttrs)
    return _ChannelShuffle(layer.attrs.groups)


def _gather(layer: IRLayer, seed: int) -> nn.Module:
    assert isinstance(layer.attrs, GatherAttrs)
    return _Gather(layer.attrs.axis, layer.attrs.indices)


def _expand(layer: IRLayer, seed: int) -> nn.Module:
    return _Expand(layer.output_shape)


# ---------------------------------------------------------------------- resizing, normalisation and attention
class _Binary(nn.Module):
    def __init__(self, op: OpType) -> None:
        super().__init__()
        self.fn = {OpType.SUB: torch.sub, OpType.DIV: torch.div, OpType.POW: torch.pow}[op]

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return functools.reduce(self.fn, xs)


class _MatMul(nn.Module):
    def __init__(self, attrs: MatmulAttrs) -> None:
        super().__init__()
        self.transpose_a, self.transpose_b = attrs.transpose_a, attrs.transpose_b

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a.transpose(-2, -1) if self.transpose_a else a, b.transpose(-2, -1) if self.transpose_b else b)


class _Reduce(nn.Module):
    def __init__(self, is_max: bool, axes: tuple[int, ...], keepdims: bool) -> None:
        super().__init__()
        self.is_max, self.axes, self.keepdims = is_max, axes, keepdims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.is_max:
            return torch.amax(x, dim=self.axes, keepdim=self.keepdims)
        return torch.mean(x, dim=self.axes, keepdim=self.keepdims)


class _Constant(nn.Module):
    """Returns its stored tensor whatever it is given (its input only places it in the graph)."""

    def __init__(self, value: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("value", torch.from_numpy(value))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.value


def _conv_transpose(layer: IRLayer, seed: int) -> nn.Module:
    """ConvTranspose2d; asymmetric padding is cropped from the full output afterwards."""
    attrs = layer.attrs
    assert isinstance(attrs, ConvTransposeAttrs)
    top, left, bottom, right = attrs.padding
    symmetric = (top, left) == (bottom, right)
    conv = nn.ConvTranspose2d(layer.input_shape[1], layer.output_shape[1], attrs.kernel, attrs.stride,
                              padding=(top, left) if symmetric else 0, output_padding=attrs.output_padding,
                              groups=attrs.groups, bias=attrs.bias, dilation=attrs.dilation)
    _load(conv, weights_of(layer, seed))
    if symmetric:
        return conv
    return nn.Sequential(conv, _Pad((-left, -right, -top, -bottom)))


def _layer_norm(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, NormAttrs)
    w = weights_of(layer, seed)
    if attrs.axis == 1:
        if len(layer.input_shape) != 4:
            raise _Unsupported("layer normalisation over the channels of a tensor that is not NCHW")
        norm2d = LayerNorm2d(layer.input_shape[1], eps=attrs.eps)
        _load(norm2d, w)
        return norm2d
    norm = nn.LayerNorm(layer.input_shape[-1], eps=attrs.eps, elementwise_affine=attrs.affine)
    if attrs.affine:
        _load(norm, w)
    return norm


def _group_norm(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, GroupNormAttrs)
    norm = nn.GroupNorm(attrs.groups, layer.input_shape[1], eps=attrs.eps, affine=attrs.affine)
    if attrs.affine:
        _load(norm, weights_of(layer, seed))
    return norm


def _reduce(layer: IRLayer, seed: int) -> nn.Module:
    attrs = layer.attrs
    assert isinstance(attrs, ReduceAttrs)
    return _Reduce(layer.op is OpType.REDUCE_MAX, attrs.axes, attrs.keepdims)


def _constant(layer: IRLayer, seed: int) -> nn.Module:
    return _Constant(weights_of(layer, seed)["value"])


def _generic(layer: IRLayer, seed: int) -> nn.Module:
    try:
        return GenericModule(layer, seed)
    except (NotImplementedError, GenericNodeError) as exc:
        raise _Unsupported(str(exc)) from None


TORCH_BUILDERS: Mapping[OpType, TorchBuilder] = MappingProxyType({
    OpType.CONV: _conv,
    OpType.LINEAR: _linear,
    OpType.MAX_POOL: _pool,
    OpType.AVG_POOL: _pool,
    OpType.GLOBAL_AVG_POOL: _global_pool,
    OpType.GLOBAL_MAX_POOL: _global_pool,
    OpType.BATCH_NORM: _batch_norm,
    OpType.SCALE: _scale,
    OpType.RELU: _plain(nn.ReLU),
    OpType.RELU6: _plain(nn.ReLU6),
    OpType.LEAKY_RELU: _leaky_relu,
    OpType.SIGMOID: _plain(nn.Sigmoid),
    OpType.TANH: _plain(nn.Tanh),
    OpType.HARDSWISH: _plain(nn.Hardswish),
    OpType.SILU: _plain(nn.SiLU),
    OpType.ADD: _eltwise,
    OpType.MUL: _eltwise,
    OpType.MAX: _eltwise,
    OpType.CONCAT: _concat,
    OpType.SOFTMAX: _softmax,
    OpType.LRN: _lrn,
    OpType.FLATTEN: _flatten,
    OpType.RESHAPE: _reshape,
    OpType.UPSAMPLE: _upsample,
    OpType.PAD: _pad,
    OpType.IDENTITY: _plain(nn.Identity),
    OpType.DROPOUT: _plain(nn.Dropout),
    # activations and data movement
    OpType.HARD_SIGMOID: _hard_sigmoid,
    OpType.CLIP: _clip,
    OpType.PRELU: _prelu,
    OpType.GELU: _plain(nn.GELU),
    OpType.SOFTPLUS: _plain(nn.Softplus),
    OpType.MISH: _plain(nn.Mish),
    OpType.EXP: _unary(torch.exp),
    OpType.LOG: _unary(torch.log),
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
    OpType.MATMUL: lambda layer, seed: _MatMul(layer.attrs),
    OpType.SUB: lambda layer, seed: _Binary(layer.op),
    OpType.DIV: lambda layer, seed: _Binary(layer.op),
    OpType.POW: lambda layer, seed: _Binary(layer.op),
    OpType.CONSTANT: _constant,
    OpType.GENERIC: _generic,
})
"""IR op -> the builder of its module (adding an op type means adding its entry here)."""

TORCH_NOT_BUILT: frozenset[OpType] = frozenset()
"""IR ops the torch builder cannot express at all: none (some settings of an op still raise)."""
