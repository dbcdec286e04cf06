"""Import a ``torch.nn.Module`` into the IR with torch.fx and shape propagation.

Leaf modules (Conv2d, BatchNorm2d, ...) map one to one to IR layers; common
functional calls and tensor methods (``torch.cat``, ``+``, ``x.flatten(1)``)
are mapped too. Nodes that compute no activation (parameters, sizes) are
skipped. Every unsupported call is collected and reported in one error.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from nnperf.errors import InvalidNetworkError, NnperfError, ShapeInferenceError
from nnperf.ir._network import Layer, Network, Shape, TensorSpec
from nnperf.ir._ops import (
    Attributes,
    AxisAttrs,
    BatchNormAttrs,
    ConvAttrs,
    LeakyReluAttrs,
    LinearAttrs,
    LrnAttrs,
    NoAttrs,
    OpType,
    PadAttrs,
    PoolAttrs,
    ScaleAttrs,
    UpsampleAttrs,
)
from nnperf.ir._transforms import remove_noops
from nnperf.ir.importers._common import NameTable, Unsupported, adaptive_pool, reshape_op, scale_kind
from nnperf.ir.modules import Scale

Mapped = tuple[OpType, Attributes]


class TraceError(NnperfError):
    """A module that torch.fx cannot trace symbolically."""


class _Tracer(fx.Tracer):
    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return isinstance(m, Scale) or super().is_leaf_module(m, qualname)


def from_torch(
    module: nn.Module,
    example_inputs: torch.Tensor | Sequence[torch.Tensor],
    name: str | None = None,
    keep_noops: bool = False,
) -> Network:
    """The IR of ``module`` for the given example input(s).

    Shapes come from running the traced module once on ``example_inputs`` in
    eval mode under ``torch.no_grad()``. Identity and dropout layers are
    dropped unless ``keep_noops`` is set (see :func:`remove_noops`).
    """
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    name = name or type(module).__name__
    module = module.eval()
    try:
        graph = _Tracer().trace(module)
    except Exception as exc:  # torch.fx raises many types; the message is what matters
        raise TraceError(
            f"{name}: torch.fx cannot trace this module ({type(exc).__name__}: {exc}); "
            "export it to ONNX and import the file instead"
        ) from exc
    gm = fx.GraphModule(module, graph)
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(*inputs)
    except Exception as exc:
        raise ShapeInferenceError(f"{name}: running the module on the example input failed: {exc}") from exc
    network = _Converter(gm, name).convert()
    return network if keep_noops else remove_noops(network)


@dataclass
class _Converter:
    gm: fx.GraphModule
    name: str

    def __post_init__(self) -> None:
        self.modules = dict(self.gm.named_modules())
        self.unsupported = Unsupported(self.name)
        self.names = NameTable()
        self.layer_of: dict[fx.Node, str] = {}  # data nodes -> the IR name of their value
        self.shape_of: dict[str, Shape] = {}
        self.layers: list[Layer] = []
        self.specs: list[TensorSpec] = []
        self.scale_of: dict[str, int] = {}  # index in self.layers of bias-less SCALE layers

    def convert(self) -> Network:
        outputs: list[str] = []
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                shape = _shape(node)
                if shape is None:
                    raise ShapeInferenceError(f"{self.name}: input {node.name!r} is not a tensor")
                spec_name = self.names.unique(node.name)
                self.specs.append(TensorSpec(spec_name, shape, _dtype(node)))
                self._bind(node, spec_name, shape)
            elif node.op == "output":
                outputs = [self.layer_of[n] for n in _flat_nodes(node.args) if n in self.layer_of]
            elif node.op in ("call_module", "call_function", "call_method"):
                self._convert_call(node)
        self.unsupported.raise_if_any()
        if not outputs:
            raise ShapeInferenceError(f"{self.name}: the module returns no tensor computed from its input")
        return Network(self.name, tuple(self.specs), tuple(self.layers), tuple(dict.fromkeys(outputs)))

    def _bind(self, node: fx.Node, name: str, shape: Shape) -> None:
        self.layer_of[node] = name
        self.shape_of[name] = shape

    def _convert_call(self, node: fx.Node) -> None:
        data_args = [n for n in _flat_nodes((node.args, node.kwargs)) if n in self.layer_of]
        out_shape = _shape(node)
        if not data_args or out_shape is None:
            return  # a parameter, a constant or a size: not an activation
        producers = tuple(self.layer_of[n] for n in data_args)
        in_shapes = tuple(self.shape_of[p] for p in producers)
        if node.op == "call_module":
            module = self.modules[str(node.target)]
            what = type(module).__name__
            mapped = _map_module(module, in_shapes, out_shape)
            wanted = str(node.target)
        else:
            what = _callable_name(node)
            mapped = _map_call(node, in_shapes, out_shape, [a for a in node.args if a not in data_args])
            wanted = node.name
        if mapped is None:
            self.unsupported.add(what, node.name)
            self._bind(node, node.name, out_shape)  # keep going to report every problem
            return
        op, attrs = mapped
        if node.op != "call_module" and op is OpType.SCALE and isinstance(attrs, ScaleAttrs) and attrs.bias:
            # "activation + constant" is only meaningful as the bias of a preceding "x * w": Caffe's Scale.
            index = self.scale_of.pop(producers[0], None)
            if index is None:
                self.unsupported.add(f"{what} with a constant (not after a multiply by a constant)", node.name)
                self._bind(node, node.name, out_shape)
                return
            prev = self.layers[index]
            assert isinstance(prev.attrs, ScaleAttrs)
            self.layers[index] = Layer(prev.name, OpType.SCALE, prev.inputs, prev.input_shapes, out_shape,
                                       ScaleAttrs(bias=True, per_channel=attrs.per_channel or prev.attrs.per_channel))
            self._bind(node, prev.name, out_shape)
            return
        layer_name = self.names.unique(wanted)
        try:
            self.layers.append(Layer(layer_name, op, producers, in_shapes, out_shape, attrs))
        except InvalidNetworkError as exc:
            raise InvalidNetworkError(f"{self.name}: {exc}") from exc
        if op is OpType.SCALE and node.op != "call_module" and len(node.users) == 1:
            self.scale_of[layer_name] = len(self.layers) - 1
        self._bind(node, layer_name, out_shape)


def _shape(node: fx.Node) -> Shape | None:
    meta = node.meta.get("tensor_meta")
    if isinstance(meta, TensorMetadata):
        return tuple(int(d) for d in meta.shape)
    return None


def _dtype(node: fx.Node) -> str:
    meta = node.meta.get("tensor_meta")
    return str(meta.dtype).removeprefix("torch.") if isinstance(meta, TensorMetadata) else "float32"


def _flat_nodes(value: Any) -> list[fx.Node]:
    found: list[fx.Node] = []
    fx.node.map_arg(value, found.append)
    return found


def _callable_name(node: fx.Node) -> str:
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    target = node.target
    return getattr(target, "__name__", str(target))


def _pair(value: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    v = tuple(int(x) for x in value)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def _padding(padding: Any, kernel: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, int, int, int]:
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        total = [dilation[i] * (kernel[i] - 1) for i in range(2)]
        return (total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2)
    ph, pw = _pair(padding)
    return (ph, pw, ph, pw)


def _pool_attrs(kernel: Any, stride: Any, padding: Any, ceil_mode: bool, count_include_pad: bool = True) -> PoolAttrs:
    k = _pair(kernel)
    s = _pair(stride) if stride not in (None, ()) else k
    ph, pw = _pair(padding)
    return PoolAttrs(kernel=k, stride=s, padding=(ph, pw, ph, pw), ceil_mode=bool(ceil_mode),
                     count_include_pad=bool(count_include_pad))


def _map_module(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    if isinstance(m, nn.Conv2d):
        k, d = _pair(m.kernel_size), _pair(m.dilation)
        return OpType.CONV, ConvAttrs(kernel=k, stride=_pair(m.stride), padding=_padding(m.padding, k, d),
                                      dilation=d, groups=m.groups, bias=m.bias is not None)
    if isinstance(m, nn.Linear):
        return OpType.LINEAR, LinearAttrs(bias=m.bias is not None)
    if isinstance(m, nn.MaxPool2d):
        if _pair(m.dilation) != (1, 1):
            return None
        return OpType.MAX_POOL, _pool_attrs(m.kernel_size, m.stride, m.padding, m.ceil_mode)
    if isinstance(m, nn.AvgPool2d):
        return OpType.AVG_POOL, _pool_attrs(m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad)
    if isinstance(m, (nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)):
        return adaptive_pool((ins[0][-2], ins[0][-1]), (out[-2], out[-1]), isinstance(m, nn.AdaptiveMaxPool2d))
    if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
        return OpType.BATCH_NORM, BatchNormAttrs(eps=float(m.eps), affine=bool(m.affine))
    if isinstance(m, Scale):
        return OpType.SCALE, ScaleAttrs(bias=m.bias is not None, per_channel=True)
    if isinstance(m, nn.ReLU6) or (isinstance(m, nn.Hardtanh) and (m.min_val, m.max_val) == (0.0, 6.0)):
        return OpType.RELU6, NoAttrs()
    if isinstance(m, nn.LeakyReLU):
        return OpType.LEAKY_RELU, LeakyReluAttrs(negative_slope=float(m.negative_slope))
    simple = {nn.ReLU: OpType.RELU, nn.Sigmoid: OpType.SIGMOID, nn.Tanh: OpType.TANH, nn.Hardswish: OpType.HARDSWISH,
              nn.SiLU: OpType.SILU, nn.Identity: OpType.IDENTITY, nn.Dropout: OpType.DROPOUT,
              nn.Dropout2d: OpType.DROPOUT}
    for cls, op in simple.items():
        if type(m) is cls:
            return op, NoAttrs()
    if isinstance(m, nn.Softmax):
        return OpType.SOFTMAX, AxisAttrs(axis=_axis(m.dim, len(out)))
    if isinstance(m, nn.LocalResponseNorm):
        return OpType.LRN, LrnAttrs(size=int(m.size), alpha=float(m.alpha), beta=float(m.beta), k=float(m.k))
    if isinstance(m, nn.Flatten):
        return reshape_op(ins[0], out)
    if isinstance(m, nn.Upsample):
        return _upsample(m.mode)
    if isinstance(m, (nn.ZeroPad2d, nn.ConstantPad2d)):
        return OpType.PAD, PadAttrs(mode="constant", value=float(getattr(m, "value", 0.0)))
    if isinstance(m, nn.ReflectionPad2d):
        return OpType.PAD, PadAttrs(mode="reflect")
    if isinstance(m, nn.ReplicationPad2d):
        return OpType.PAD, PadAttrs(mode="replicate")
    return None


def _upsample(mode: str) -> Mapped | None:
    if mode == "nearest":
        return OpType.UPSAMPLE, UpsampleAttrs(mode="nearest")
    if mode in ("linear", "bilinear"):
        return OpType.UPSAMPLE, UpsampleAttrs(mode="linear")
    return None


def _axis(dim: int | None, rank: int) -> int:
    return 1 if dim is None else dim % rank


def _arg(node: fx.Node, index: int, key: str, default: Any) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(key, default)


_ACTIVATION_CALLS: dict[Any, OpType] = {
    F.relu: OpType.RELU, torch.relu: OpType.RELU, torch.relu_: OpType.RELU, "relu": OpType.RELU,
    "relu_": OpType.RELU, F.relu6: OpType.RELU6, torch.sigmoid: OpType.SIGMOID, F.sigmoid: OpType.SIGMOID,
    "sigmoid": OpType.SIGMOID, torch.tanh: OpType.TANH, F.tanh: OpType.TANH, "tanh": OpType.TANH,
    F.hardswish: OpType.HARDSWISH, F.silu: OpType.SILU,
}
_ELTWISE_CALLS: dict[Any, OpType] = {
    operator.add: OpType.ADD, operator.iadd: OpType.ADD, torch.add: OpType.ADD, "add": OpType.ADD,
    "add_": OpType.ADD, operator.mul: OpType.MUL, operator.imul: OpType.MUL, torch.mul: OpType.MUL,
    "mul": OpType.MUL, "mul_": OpType.MUL, torch.maximum: OpType.MAX, torch.max: OpType.MAX,
}


def _map_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    """Maps a function or method call; ``constants`` are its operands that are not activations."""
    target = node.target
    if target in _ACTIVATION_CALLS:
        return _ACTIVATION_CALLS[target], NoAttrs()
    if target is F.leaky_relu:
        return OpType.LEAKY_RELU, LeakyReluAttrs(negative_slope=float(_arg(node, 1, "negative_slope", 0.01)))
    if target in _ELTWISE_CALLS:
        op = _ELTWISE_CALLS[target]
        if len(ins) >= 2:
            return op, NoAttrs()
        if op is OpType.MAX:
            return None
        # One activation and a constant: a scale (mul) or the bias of a preceding scale (add).
        const_shape = _shape(constants[0]) if constants and isinstance(constants[0], fx.Node) else (1,)
        kind = scale_kind(const_shape, ins[0])
        if kind is None:
            return None
        return OpType.SCALE, ScaleAttrs(bias=op is OpType.ADD, per_channel=kind == "channel")
    if target in (torch.cat, torch.concat):
        return OpType.CONCAT, AxisAttrs(axis=_axis(_arg(node, 1, "dim", 0), len(out)))
    if target in (torch.flatten, "flatten", "view", "reshape", torch.reshape, "squeeze", "unsqueeze", torch.squeeze,
                  torch.unsqueeze):
        return reshape_op(ins[0], out)
    if target in (F.softmax, torch.softmax, "softmax"):
        return OpType.SOFTMAX, AxisAttrs(axis=_axis(_arg(node, 1, "dim", None), len(out)))
    if target in (F.adaptive_avg_pool2d, F.adaptive_max_pool2d):
        return adaptive_pool((ins[0][-2], ins[0][-1]), (out[-2], out[-1]), target is F.adaptive_max_pool2d)
    if target is F.max_pool2d:
        return OpType.MAX_POOL, _pool_attrs(_arg(node, 1, "kernel_size", 1), _arg(node, 2, "stride", None),
                                            _arg(node, 3, "padding", 0), _arg(node, 5, "ceil_mode", False))
    if target is F.avg_pool2d:
        return OpType.AVG_POOL, _pool_attrs(_arg(node, 1, "kernel_size", 1), _arg(node, 2, "stride", None),
                                            _arg(node, 3, "padding", 0), _arg(node, 4, "ceil_mode", False),
                                            _arg(node, 5, "count_include_pad", True))
    if target in (torch.mean, "mean") and len(ins[0]) == 4:
        dims = _arg(node, 1, "dim", None)
        if dims is not None and {d % 4 for d in ((dims,) if isinstance(dims, int) else dims)} == {2, 3}:
            return OpType.GLOBAL_AVG_POOL, NoAttrs()
        return None
    if target is F.pad:
        mode = _arg(node, 2, "mode", "constant")
        return (OpType.PAD, PadAttrs(mode=mode, value=float(_arg(node, 3, "value", 0.0) or 0.0))) if mode in (
            "constant", "reflect", "replicate") else None
    if target is F.interpolate:
        return _upsample(_arg(node, 3, "mode", "nearest"))
    if target is F.local_response_norm:
        return OpType.LRN, LrnAttrs(size=int(_arg(node, 1, "size", 5)), alpha=float(_arg(node, 2, "alpha", 1e-4)),
                                    beta=float(_arg(node, 3, "beta", 0.75)), k=float(_arg(node, 4, "k", 1.0)))
    if target in (F.dropout, "contiguous", "clone"):
        return (OpType.DROPOUT if target is F.dropout else OpType.IDENTITY), NoAttrs()
    return None
