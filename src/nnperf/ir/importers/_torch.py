"""Import a ``torch.nn.Module`` into the IR with torch.fx and shape propagation.

Leaf modules (Conv2d, BatchNorm2d, ...) map one to one to IR layers by the
rule of their class in ``TORCH_MODULE_IMPORTERS``; common functional calls and
tensor methods (``torch.cat``, ``+``, ``x.flatten(1)``) by their rule in
``TORCH_CALL_IMPORTERS``. Nodes that compute no activation (parameters, sizes) are
skipped. Every unsupported call is collected and reported in one error.
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from nnperf.errors import InvalidNetworkError, NnperfError, ShapeInferenceError, UnsupportedOperatorError
from nnperf.ir._network import Layer, Network, TensorSpec
from nnperf.ir._op_specs import OP_SPECS
from nnperf.ir._ops import (
    Attributes,
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
    NoAttrs,
    NormAttrs,
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
from nnperf.ir._shapes import Shape, numel
from nnperf.ir._transforms import fuse_channel_shuffle, remove_noops
from nnperf.ir.importers._common import NameTable, Unsupported, adaptive_pool, reshape_op, scale_kind
from nnperf.ir.importers._table import ImportRule, rule
from nnperf.ir.importers._torch_export import first_line, via_onnx
from nnperf.ir.modules import (
    LayerNorm2d,
    Scale,
)

Mapped = tuple[OpType, Attributes]


class TraceError(NnperfError):
    """A module that torch.fx cannot trace symbolically."""


class _Tracer(fx.Tracer):
    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return isinstance(m, (Scale, LayerNorm2d)) or super().is_leaf_module(m, qualname)


def from_torch(
    module: nn.Module,
    example_inputs: torch.Tensor | Sequence[torch.Tensor],
    name: str | None = None,
    keep_noops: bool = False,
    strict: bool = False,
) -> Network:
    """The IR of ``module`` for the given example input(s).

    Shapes come from running the traced module once on ``example_inputs`` in
    eval mode under ``torch.no_grad()``. Identity and dropout layers are
    dropped unless ``keep_noops`` is set (see :func:`remove_noops`). A module that torch.fx cannot trace, or
    whose trace calls something without a rule here, is exported to ONNX and imported from there (see
    ``_torch_export``; a warning names the route), unless ``strict`` is set, which raises instead.
    """
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    name = name or type(module).__name__
    module = module.eval()
    try:
        graph = _Tracer().trace(module)
    except Exception as exc:  # torch.fx raises many types; the message is what matters
        why = f"{type(exc).__name__}: {first_line(exc)}"
        if not strict:
            return via_onnx(module, inputs, name, f"torch.fx cannot trace the module: {why}", keep_noops)
        raise TraceError(f"{name}: torch.fx cannot trace this module ({why}); without --strict nnperf imports it "
                         "through torch.export and ONNX") from exc
    gm = fx.GraphModule(module, graph)
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(*inputs)
    except Exception as exc:
        raise ShapeInferenceError(f"{name}: running the module on the example input failed: {exc}") from exc
    try:
        network = _Converter(gm, name).convert()
    except UnsupportedOperatorError as exc:
        if strict:
            raise
        return via_onnx(module, inputs, name, f"the torch.fx importer has no rule for {', '.join(exc.operators)}",
                        keep_noops)
    return network if keep_noops else fuse_channel_shuffle(remove_noops(network))



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
        if self._convert_split_part(node):
            return
        self._bind_constants(node)  # a class token or position embedding becomes a CONSTANT layer
        if self._fuse_transposes(node):  # x.transpose(-2, -1) read by a matrix product
            return
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

    # resizing, normalisation and attention
    def _fuse_transposes(self, node: fx.Node) -> bool:
        """Defers a swap of the last two axes whose readers are all matrix products, and makes a MATMUL that
        reads such swapped operands with ``transpose_a``/``transpose_b`` (True when ``node`` was handled)."""
        if not hasattr(self, "swapped"):
            self.swapped: dict[fx.Node, fx.Node] = {}
        if _swaps_last_axes(node) and node.all_input_nodes[0] in self.layer_of \
                and all(u.target in _MATMULS for u in node.users):
            self.swapped[node] = node.all_input_nodes[0]
            return True
        if node.target not in _MATMULS or not any(a in self.swapped for a in node.args[:2]):
            return False
        a, b = node.args[0], node.args[1]
        sources = [self.swapped.get(x, x) for x in (a, b)]
        out_shape = _shape(node)
        if out_shape is None or not all(isinstance(x, fx.Node) and x in self.layer_of for x in sources):
            self.unsupported.add("matmul of a transposed operand that is not an activation", node.name)
            return True
        producers = tuple(self.layer_of[x] for x in sources)
        attrs = MatmulAttrs(transpose_a=a in self.swapped, transpose_b=b in self.swapped)
        name = self.names.unique(node.name)
        self.layers.append(Layer(name, OpType.MATMUL, producers, tuple(self.shape_of[p] for p in producers),
                                 out_shape, attrs))
        self._bind(node, name, out_shape)
        return True

    def _bind_constants(self, node: fx.Node) -> None:
        """Makes a CONSTANT layer of each stored tensor that ``node`` concatenates or combines element-wise
        with an activation, when it is neither a scalar nor per-channel (those make scale layers)."""
        if node.op == "call_module" or node.target not in _CONSTANT_OPERAND_CALLS:
            return
        args = _flat_nodes((node.args, node.kwargs))
        data = [n for n in args if n in self.layer_of]
        if not data:
            return
        first = self.layer_of[data[0]]
        for arg in args:
            shape = _shape(arg)
            if arg in self.layer_of or shape is None or numel(shape) == 1:
                continue
            if node.target not in _CONCATS and scale_kind(shape, self.shape_of[first]) is not None:
                continue
            name = self.names.unique(str(arg.target) if arg.op == "get_attr" else arg.name)
            self.layers.append(Layer(name, OpType.CONSTANT, (first,), (self.shape_of[first],), shape))
            self._bind(arg, name, shape)


    # activations and data movement
    def _convert_split_part(self, node: fx.Node) -> bool:
        """``parts[i]`` of a torch.chunk or torch.split of an activation: one SLICE layer per part used."""
        if node.target is not operator.getitem or not isinstance(node.args[0], fx.Node):
            return False
        whole, index = node.args[0], node.args[1]
        source = whole.args[0] if whole.args else None
        if whole.target not in _SPLITS or source not in self.layer_of or not isinstance(index, int):
            return False
        parts = whole.meta.get("tensor_meta")
        out_shape = _shape(node)
        producer = self.layer_of[source]  # type: ignore[index]
        x = self.shape_of[producer]
        if not isinstance(parts, (tuple, list)) or out_shape is None:
            return False
        axis = _axis(_arg(whole, 2, "dim", 0), len(x))
        start = sum(int(p.shape[axis]) for p in parts[:index % len(parts)])
        attrs = SliceAttrs(axis=axis, start=start, end=start + out_shape[axis])
        layer_name = self.names.unique(node.name)
        self.layers.append(Layer(layer_name, OpType.SLICE, (producer,), (x,), out_shape, attrs))
        self._bind(node, layer_name, out_shape)
        return True


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


ModuleHandler = Callable[[nn.Module, tuple[Shape, ...], Shape], Mapped | None]
"""Maps a leaf module given its input shapes and output shape, or returns None when its settings are not supported."""
CallHandler = Callable[[fx.Node, tuple[Shape, ...], Shape, list[Any]], Mapped | None]
"""Maps a function or method call; the last argument holds its operands that are not activations."""


def _map_module(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    """The rule of the most specific class of ``m`` that has one (so torch's subclasses share their base's)."""
    for cls in type(m).__mro__:
        found = TORCH_MODULE_IMPORTERS.get(cls)
        if found is not None:
            return found.handler(m, ins, out)
    return None


def _map_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    """Maps a function or method call; ``constants`` are its operands that are not activations."""
    found = TORCH_CALL_IMPORTERS.get(node.target)
    return None if found is None else found.handler(node, ins, out, constants)


# ---------------------------------------------------------------------- one handler per leaf module class
def _conv2d(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.Conv2d)
    k, d = _pair(m.kernel_size), _pair(m.dilation)
    return OpType.CONV, ConvAttrs(kernel=k, stride=_pair(m.stride), padding=_padding(m.padding, k, d),
                                  dilation=d, groups=m.groups, bias=m.bias is not None)


def _linear(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.Linear)
    return OpType.LINEAR, LinearAttrs(bias=m.bias is not None)


def _max_pool2d(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.MaxPool2d)
    if _pair(m.dilation) != (1, 1):
        return None
    return OpType.MAX_POOL, _pool_attrs(m.kernel_size, m.stride, m.padding, m.ceil_mode)


def _avg_pool2d(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.AvgPool2d)
    return OpType.AVG_POOL, _pool_attrs(m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad)


def _adaptive_pool2d(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    return adaptive_pool((ins[0][-2], ins[0][-1]), (out[-2], out[-1]), isinstance(m, nn.AdaptiveMaxPool2d))


def _batch_norm(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))
    return OpType.BATCH_NORM, BatchNormAttrs(eps=float(m.eps), affine=bool(m.affine))


def _scale(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, Scale)
    return OpType.SCALE, ScaleAttrs(bias=m.bias is not None, per_channel=True)


def _hardtanh(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    """ReLU6, or a Hardtanh with its bounds."""
    assert isinstance(m, nn.Hardtanh)
    if (m.min_val, m.max_val) == (0.0, 6.0):
        return OpType.RELU6, NoAttrs()
    return OpType.CLIP, ClipAttrs(low=float(m.min_val), high=float(m.max_val))


def _leaky_relu(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.LeakyReLU)
    return OpType.LEAKY_RELU, LeakyReluAttrs(negative_slope=float(m.negative_slope))


def _exactly(cls: type[nn.Module], op: OpType) -> ImportRule[ModuleHandler]:
    """``op`` for instances of ``cls`` itself: torch.ao's quantized ReLU6 subclasses nn.ReLU, for one."""

    def handle(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
        return (op, NoAttrs()) if type(m) is cls else None

    return rule({op}, handle)


def _softmax(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.Softmax)
    return OpType.SOFTMAX, AxisAttrs(axis=_axis(m.dim, len(out)))


def _lrn(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.LocalResponseNorm)
    return OpType.LRN, LrnAttrs(size=int(m.size), alpha=float(m.alpha), beta=float(m.beta), k=float(m.k))


def _flatten(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    return reshape_op(ins[0], out)


def _upsample_module(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.Upsample)
    return _upsample(m.mode)


def _pad_module(mode: str) -> ModuleHandler:
    def handle(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
        value = float(getattr(m, "value", 0.0)) if mode == "constant" else 0.0
        return OpType.PAD, PadAttrs(mode=mode, value=value)

    return handle


# activations and data movement
def _hard_sigmoid() -> Mapped:
    # torch's fixed relu6(x + 3) / 6; 1/6 to the 7 digits a float32 attribute keeps, as the ONNX importer reads it
    return OpType.HARD_SIGMOID, HardSigmoidAttrs(alpha=float(f"{1.0 / 6.0:.7g}"), beta=0.5)


def _prelu(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.PReLU)
    if m.num_parameters != 1 and (len(ins[0]) < 2 or m.num_parameters != ins[0][1]):
        return None
    return OpType.PRELU, PReluAttrs(per_channel=m.num_parameters != 1)


def _gelu(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.GELU)
    return (OpType.GELU, NoAttrs()) if m.approximate == "none" else None


def _softplus(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    """Softplus with beta 1 (its threshold only switches to the identity where they agree to float precision)."""
    assert isinstance(m, nn.Softplus)
    return (OpType.SOFTPLUS, NoAttrs()) if m.beta == 1 else None


def _channel_shuffle(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.ChannelShuffle)
    return OpType.CHANNEL_SHUFFLE, ChannelShuffleAttrs(groups=int(m.groups))


def _conv_transpose2d(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.ConvTranspose2d)
    if not isinstance(m.padding, tuple) or len(m.padding) != 2:
        return None
    ph, pw = _pair(m.padding)
    return OpType.CONV_TRANSPOSE, ConvTransposeAttrs(
        kernel=_pair(m.kernel_size), stride=_pair(m.stride), padding=(ph, pw, ph, pw),
        output_padding=_pair(m.output_padding), dilation=_pair(m.dilation), groups=m.groups, bias=m.bias is not None)


def _layer_norm(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.LayerNorm)
    if len(m.normalized_shape) != 1:
        return None  # over several trailing axes: not one IR op
    return OpType.LAYER_NORM, NormAttrs(axis=-1, eps=float(m.eps), affine=m.elementwise_affine)


def _layer_norm2d(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, LayerNorm2d)
    return OpType.LAYER_NORM, NormAttrs(axis=1, eps=float(m.eps), affine=True)


def _group_norm(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    assert isinstance(m, nn.GroupNorm)
    return OpType.GROUP_NORM, GroupNormAttrs(groups=m.num_groups, eps=float(m.eps), affine=m.affine)


def _instance_norm(m: nn.Module, ins: tuple[Shape, ...], out: Shape) -> Mapped | None:
    """Instance normalisation is group normalisation with one channel per group (without running statistics)."""
    assert isinstance(m, nn.InstanceNorm2d)
    if m.track_running_stats:
        return None
    return OpType.GROUP_NORM, GroupNormAttrs(groups=ins[0][1], eps=float(m.eps), affine=m.affine)


_POOLS = {nn.AdaptiveAvgPool2d: (OpType.GLOBAL_AVG_POOL, OpType.AVG_POOL),
          nn.AdaptiveMaxPool2d: (OpType.GLOBAL_MAX_POOL, OpType.MAX_POOL)}
_RESHAPES = (OpType.FLATTEN, OpType.RESHAPE)
TORCH_MODULE_IMPORTERS: Mapping[type[nn.Module], ImportRule[ModuleHandler]] = MappingProxyType({
    nn.Conv2d: rule({OpType.CONV}, _conv2d),
    nn.Linear: rule({OpType.LINEAR}, _linear),
    nn.MaxPool2d: rule({OpType.MAX_POOL}, _max_pool2d),
    nn.AvgPool2d: rule({OpType.AVG_POOL}, _avg_pool2d),
    nn.AdaptiveAvgPool2d: rule(_POOLS[nn.AdaptiveAvgPool2d], _adaptive_pool2d),
    nn.AdaptiveMaxPool2d: rule(_POOLS[nn.AdaptiveMaxPool2d], _adaptive_pool2d),
    nn.BatchNorm1d: rule({OpType.BATCH_NORM}, _batch_norm),
    nn.BatchNorm2d: rule({OpType.BATCH_NORM}, _batch_norm),
    Scale: rule({OpType.SCALE}, _scale),
    nn.ReLU6: rule({OpType.RELU6, OpType.CLIP}, _hardtanh),
    nn.Hardtanh: rule({OpType.RELU6, OpType.CLIP}, _hardtanh),
    nn.LeakyReLU: rule({OpType.LEAKY_RELU}, _leaky_relu),
    nn.Softmax: rule({OpType.SOFTMAX}, _softmax),
    nn.LocalResponseNorm: rule({OpType.LRN}, _lrn),
    nn.Flatten: rule(_RESHAPES, _flatten),
    nn.Upsample: rule({OpType.UPSAMPLE}, _upsample_module),
    nn.ZeroPad2d: rule({OpType.PAD}, _pad_module("constant")),
    nn.ConstantPad2d: rule({OpType.PAD}, _pad_module("constant")),
    nn.ReflectionPad2d: rule({OpType.PAD}, _pad_module("reflect")),
    nn.ReplicationPad2d: rule({OpType.PAD}, _pad_module("replicate")),
    # activations and data movement
    nn.Hardsigmoid: rule({OpType.HARD_SIGMOID}, lambda m, ins, out: _hard_sigmoid()),
    nn.PReLU: rule({OpType.PRELU}, _prelu),
    nn.GELU: rule({OpType.GELU}, _gelu),
    nn.Softplus: rule({OpType.SOFTPLUS}, _softplus),
    nn.ChannelShuffle: rule({OpType.CHANNEL_SHUFFLE}, _channel_shuffle),
    # resizing, normalisation and attention
    nn.ConvTranspose2d: rule({OpType.CONV_TRANSPOSE}, _conv_transpose2d),
    nn.LayerNorm: rule({OpType.LAYER_NORM}, _layer_norm),
    LayerNorm2d: rule({OpType.LAYER_NORM}, _layer_norm2d),
    nn.GroupNorm: rule({OpType.GROUP_NORM}, _group_norm),
    nn.InstanceNorm2d: rule({OpType.GROUP_NORM}, _instance_norm),
    # the classes each op type's spec maps to it (ReLU, Identity, ...)
    **{getattr(nn, name): _exactly(getattr(nn, name), spec.op) for spec in OP_SPECS for name in spec.torch_modules},
})
"""Leaf module class -> its rule; a module takes the rule of the first class of its MRO found here."""


# ---------------------------------------------------------------------- one handler per function or method
def _call_plain(op: OpType) -> ImportRule[CallHandler]:
    """The rule of a call that maps to ``op`` whatever its arguments."""

    def handle(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
        return op, NoAttrs()

    return rule({op}, handle)


def _torch_target(name: str) -> Any:
    """A call an op spec names: a function by its dotted path (``torch.nn.functional.relu``), a Tensor method by
    its bare name (``relu``)."""
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute) if module else name


def _leaky_relu_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return OpType.LEAKY_RELU, LeakyReluAttrs(negative_slope=float(_arg(node, 1, "negative_slope", 0.01)))


def _eltwise_call(op: OpType) -> ImportRule[CallHandler]:
    """Add, mul or max of activations; add or mul of one activation and a constant is a scale layer."""

    def handle(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
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

    return rule({op} if op is OpType.MAX else {op, OpType.SCALE}, handle)


def _cat(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return OpType.CONCAT, AxisAttrs(axis=_axis(_arg(node, 1, "dim", 0), len(out)))


def _reshape_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return reshape_op(ins[0], out)


def _softmax_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return OpType.SOFTMAX, AxisAttrs(axis=_axis(_arg(node, 1, "dim", None), len(out)))


def _adaptive_pool_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return adaptive_pool((ins[0][-2], ins[0][-1]), (out[-2], out[-1]), node.target is F.adaptive_max_pool2d)


def _max_pool_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return OpType.MAX_POOL, _pool_attrs(_arg(node, 1, "kernel_size", 1), _arg(node, 2, "stride", None),
                                        _arg(node, 3, "padding", 0), _arg(node, 5, "ceil_mode", False))


def _avg_pool_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return OpType.AVG_POOL, _pool_attrs(_arg(node, 1, "kernel_size", 1), _arg(node, 2, "stride", None),
                                        _arg(node, 3, "padding", 0), _arg(node, 4, "ceil_mode", False),
                                        _arg(node, 5, "count_include_pad", True))


def _mean_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    """A mean over H and W of an NCHW tensor: a global average pool."""
    if len(ins[0]) != 4:
        return None
    dims = _arg(node, 1, "dim", None)
    if dims is not None and {d % 4 for d in ((dims,) if isinstance(dims, int) else dims)} == {2, 3}:
        return OpType.GLOBAL_AVG_POOL, NoAttrs()
    return None


def _pad_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    mode = _arg(node, 2, "mode", "constant")
    if mode not in ("constant", "reflect", "replicate"):
        return None
    return OpType.PAD, PadAttrs(mode=mode, value=float(_arg(node, 3, "value", 0.0) or 0.0))


def _interpolate_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return _upsample(_arg(node, 3, "mode", "nearest"))


def _lrn_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return OpType.LRN, LrnAttrs(size=int(_arg(node, 1, "size", 5)), alpha=float(_arg(node, 2, "alpha", 1e-4)),
                                beta=float(_arg(node, 3, "beta", 0.75)), k=float(_arg(node, 4, "k", 1.0)))


# activations and data movement
_SPLITS = frozenset({torch.chunk, torch.split, torch.functional.split, "chunk", "split"})
"""Calls whose parts ``parts[i]`` become SLICE layers (see ``_Converter._convert_split_part``)."""


def _clamp_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    """clamp/clip/hardtanh with constant bounds: RELU6 for 0..6, RELU for 0.., else CLIP."""
    first, second = ("min_val", "max_val") if node.target is F.hardtanh else ("min", "max")
    low = _arg(node, 1, first, -1.0 if node.target is F.hardtanh else None)
    high = _arg(node, 2, second, 1.0 if node.target is F.hardtanh else None)
    if not all(v is None or isinstance(v, (int, float)) for v in (low, high)) or (low is None and high is None):
        return None
    low = float("-inf") if low is None else float(low)
    high = float("inf") if high is None else float(high)
    if (low, high) == (0.0, 6.0):
        return OpType.RELU6, NoAttrs()
    if (low, high) == (0.0, float("inf")):
        return OpType.RELU, NoAttrs()
    return OpType.CLIP, ClipAttrs(low=low, high=high)


def _gelu_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return (OpType.GELU, NoAttrs()) if _arg(node, 1, "approximate", "none") == "none" else None


def _softplus_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return (OpType.SOFTPLUS, NoAttrs()) if _arg(node, 1, "beta", 1) == 1 else None


def _transpose_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    """transpose(a, b) or permute(dims) of an activation."""
    rank = len(ins[0])
    if node.target in ("permute", torch.permute):
        dims = node.args[1:] if node.target == "permute" else node.args[1:2]
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        perm = tuple(int(d) % rank for d in dims)
    else:
        a, b = int(_arg(node, 1, "dim0", 0)) % rank, int(_arg(node, 2, "dim1", 1)) % rank
        order = list(range(rank))
        order[a], order[b] = order[b], order[a]
        perm = tuple(order)
    return OpType.TRANSPOSE, TransposeAttrs(perm=perm)


def _getitem_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    """x[..., a:b:s] along one axis (SLICE) or x[:, [i, j, ...]] along one axis (GATHER)."""
    index = node.args[1]
    items = index if isinstance(index, tuple) else (index,)
    x = ins[0]
    if len(items) > len(x) or any(i is Ellipsis or i is None or isinstance(i, (int, fx.Node)) for i in items):
        return None
    chosen = [(axis, i) for axis, i in enumerate(items) if not (isinstance(i, slice) and i == slice(None))]
    if len(chosen) != 1:
        return None
    axis, item = chosen[0]
    if isinstance(item, list) and all(isinstance(v, int) for v in item):
        return OpType.GATHER, GatherAttrs(axis=axis, indices=tuple(v % x[axis] for v in item))
    if isinstance(item, slice):
        start, end, step = item.indices(x[axis])
        if step >= 1 and start < end:
            return OpType.SLICE, SliceAttrs(axis=axis, start=start, end=end, step=step)
    return None


def _index_select_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    """index_select by constant indices: torch.arange or torch.tensor of literals, or a buffer with values."""
    index = _arg(node, 2, "index", None)
    if not isinstance(index, fx.Node):
        return None
    value: torch.Tensor | None = None
    if index.target in (torch.arange, torch.tensor) and not _flat_nodes((index.args, index.kwargs)):
        value = index.target(*index.args, **index.kwargs)  # literals only: nothing of the module runs
    elif index.op == "get_attr" and node.graph.owning_module is not None:
        value = node.graph.owning_module.get_buffer(str(index.target))
    if value is None or value.dim() != 1 or value.is_meta:  # a module built on the meta device has no values
        return None
    axis = int(_arg(node, 1, "dim", 0)) % len(ins[0])
    return OpType.GATHER, GatherAttrs(axis=axis, indices=tuple(int(v) % ins[0][axis] for v in value.tolist()))


def _expand_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    return (OpType.EXPAND, NoAttrs()) if len(ins) == 1 else None


def _binary_call(op: OpType) -> ImportRule[CallHandler]:
    """Sub, div or pow of two activations; a division by a scalar or per-channel constant is a scale layer."""

    def handle(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
        if len(ins) >= 2:
            return op, NoAttrs()
        if op is not OpType.DIV or _arg(node, 0, "input", None) not in node.all_input_nodes:
            return None  # a constant minus, over or to the power of an activation: no IR op
        const_shape = _shape(constants[0]) if constants and isinstance(constants[0], fx.Node) else (1,)
        kind = scale_kind(const_shape, ins[0])
        return None if kind is None else (OpType.SCALE, ScaleAttrs(bias=False, per_channel=kind == "channel"))

    return rule({op, OpType.SCALE} if op is OpType.DIV else {op}, handle)


def _swaps_last_axes(node: fx.Node) -> bool:
    """Whether ``node`` is x.transpose(-2, -1) (any spelling of the last two axes) or x.mT."""
    shape = _shape(node)
    if shape is None or len(shape) < 2:
        return False
    if node.op == "call_function" and node.target is getattr and node.args[1:] == ("mT",):
        return True
    if node.target not in ("transpose", torch.transpose) or len(node.args) != 3:
        return False
    dims = node.args[1:]
    return all(isinstance(d, int) for d in dims) and {int(d) % len(shape) for d in dims} == {len(shape) - 2,
                                                                                             len(shape) - 1}


def _matmul_call(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
    """A product of two activations; by a stored 2-D weight it is a fully connected layer without bias."""
    if len(ins) == 2:
        return OpType.MATMUL, MatmulAttrs()
    weight = _shape(constants[0]) if constants and isinstance(constants[0], fx.Node) else None
    if weight is not None and len(weight) == 2 and _arg(node, 0, "input", None) not in constants:
        return OpType.LINEAR, LinearAttrs(bias=False)
    return None


def _reduce_axes(node: fx.Node, rank: int) -> tuple[int, ...] | None:
    dims = _arg(node, 1, "dim", None)
    if dims is None:
        return None
    return tuple(sorted({int(d) % rank for d in ((dims,) if isinstance(dims, int) else dims)}))


def _reduce_call(op: OpType) -> CallHandler:
    """A mean or max over some axes; over H and W of NCHW a global average (as before) or max pool."""

    def handle(node: fx.Node, ins: tuple[Shape, ...], out: Shape, constants: list[Any]) -> Mapped | None:
        if op is OpType.REDUCE_MEAN:
            pooled = _mean_call(node, ins, out, constants)
            if pooled is not None:
                return pooled
        axes = _reduce_axes(node, len(ins[0]))
        if axes is None:
            return None
        if op is OpType.REDUCE_MAX and len(ins[0]) == 4 and axes == (2, 3):
            return OpType.GLOBAL_MAX_POOL, NoAttrs()  # as ONNX's ReduceMax over H and W imports
        return op, ReduceAttrs(axes=axes, keepdims=bool(_arg(node, 2, "keepdim", False)))

    return handle


_SUB, _DIV, _POW = _binary_call(OpType.SUB), _binary_call(OpType.DIV), _binary_call(OpType.POW)
_MATMUL = rule({OpType.MATMUL, OpType.LINEAR}, _matmul_call)
_MEAN = rule({OpType.GLOBAL_AVG_POOL, OpType.REDUCE_MEAN}, _reduce_call(OpType.REDUCE_MEAN))
_AMAX = rule({OpType.REDUCE_MAX, OpType.GLOBAL_MAX_POOL}, _reduce_call(OpType.REDUCE_MAX))
_ADD, _MUL, _MAX = _eltwise_call(OpType.ADD), _eltwise_call(OpType.MUL), _eltwise_call(OpType.MAX)
_RESHAPE_CALL = rule(_RESHAPES, _reshape_call)
_SOFTMAX_CALL = rule({OpType.SOFTMAX}, _softmax_call)
TORCH_CALL_IMPORTERS: Mapping[Any, ImportRule[CallHandler]] = MappingProxyType({
    F.leaky_relu: rule({OpType.LEAKY_RELU}, _leaky_relu_call),
    operator.add: _ADD, operator.iadd: _ADD, torch.add: _ADD, "add": _ADD, "add_": _ADD,
    operator.mul: _MUL, operator.imul: _MUL, torch.mul: _MUL, "mul": _MUL, "mul_": _MUL,
    torch.maximum: _MAX, torch.max: _MAX,
    torch.cat: rule({OpType.CONCAT}, _cat), torch.concat: rule({OpType.CONCAT}, _cat),
    torch.flatten: _RESHAPE_CALL, "flatten": _RESHAPE_CALL, "view": _RESHAPE_CALL, "reshape": _RESHAPE_CALL,
    torch.reshape: _RESHAPE_CALL, "squeeze": _RESHAPE_CALL, "unsqueeze": _RESHAPE_CALL,
    torch.squeeze: _RESHAPE_CALL, torch.unsqueeze: _RESHAPE_CALL,
    F.softmax: _SOFTMAX_CALL, torch.softmax: _SOFTMAX_CALL, "softmax": _SOFTMAX_CALL,
    F.adaptive_avg_pool2d: rule(_POOLS[nn.AdaptiveAvgPool2d], _adaptive_pool_call),
    F.adaptive_max_pool2d: rule(_POOLS[nn.AdaptiveMaxPool2d], _adaptive_pool_call),
    F.max_pool2d: rule({OpType.MAX_POOL}, _max_pool_call),
    F.avg_pool2d: rule({OpType.AVG_POOL}, _avg_pool_call),
    F.pad: rule({OpType.PAD}, _pad_call),
    F.interpolate: rule({OpType.UPSAMPLE}, _interpolate_call),
    F.local_response_norm: rule({OpType.LRN}, _lrn_call),
    # activations and data movement
    F.hardsigmoid: rule({OpType.HARD_SIGMOID}, lambda node, ins, out, constants: _hard_sigmoid()),
    torch.clamp: rule({OpType.CLIP, OpType.RELU, OpType.RELU6}, _clamp_call),
    torch.clip: rule({OpType.CLIP, OpType.RELU, OpType.RELU6}, _clamp_call),
    "clamp": rule({OpType.CLIP, OpType.RELU, OpType.RELU6}, _clamp_call),
    "clip": rule({OpType.CLIP, OpType.RELU, OpType.RELU6}, _clamp_call),
    F.hardtanh: rule({OpType.CLIP, OpType.RELU6}, _clamp_call),
    F.gelu: rule({OpType.GELU}, _gelu_call),
    F.softplus: rule({OpType.SOFTPLUS}, _softplus_call),
    torch.transpose: rule({OpType.TRANSPOSE}, _transpose_call), "transpose": rule({OpType.TRANSPOSE}, _transpose_call),
    torch.permute: rule({OpType.TRANSPOSE}, _transpose_call), "permute": rule({OpType.TRANSPOSE}, _transpose_call),
    operator.getitem: rule({OpType.SLICE, OpType.GATHER}, _getitem_call),
    torch.index_select: rule({OpType.GATHER}, _index_select_call),
    "index_select": rule({OpType.GATHER}, _index_select_call),
    "expand": rule({OpType.EXPAND}, _expand_call), "expand_as": rule({OpType.EXPAND}, _expand_call),
    F.channel_shuffle: rule({OpType.CHANNEL_SHUFFLE}, lambda node, ins, out, constants: (
        OpType.CHANNEL_SHUFFLE, ChannelShuffleAttrs(groups=int(_arg(node, 1, "groups", 1))))),
    # resizing, normalisation and attention
    operator.sub: _SUB, operator.isub: _SUB, torch.sub: _SUB, "sub": _SUB,
    operator.truediv: _DIV, operator.itruediv: _DIV, torch.div: _DIV, "div": _DIV,
    operator.pow: _POW, torch.pow: _POW, "pow": _POW,
    operator.matmul: _MATMUL, torch.matmul: _MATMUL, torch.bmm: _MATMUL, "matmul": _MATMUL, "bmm": _MATMUL,
    torch.mean: _MEAN, "mean": _MEAN,
    torch.amax: _AMAX, "amax": _AMAX,
    # the functions and methods each op type's spec maps to it (torch.relu, "relu", ...)
    **{_torch_target(name): _call_plain(spec.op) for spec in OP_SPECS for name in spec.torch_calls},
})
"""``call_function`` target or ``call_method`` name (a Tensor method) -> its rule."""

_CONCATS = frozenset({torch.cat, torch.concat})
_MATMULS = frozenset({operator.matmul, torch.matmul, torch.bmm, "matmul", "bmm"})
_CONSTANT_OPERAND_CALLS = frozenset({torch.cat, torch.concat, operator.add, torch.add, "add", operator.sub, torch.sub,
                                     "sub"})
"""Calls whose stored-tensor operand becomes a CONSTANT layer (a scalar or per-channel one, a scale's bias; a
multiply by a full-size tensor stays unsupported, as in the ONNX importer)."""

TORCH_NOT_IMPORTED: frozenset[OpType] = frozenset({OpType.CONSTANT, OpType.GENERIC})
"""IR ops that no module or call maps to: CONSTANT, made of a stored tensor operand (see ``_bind_constants``), and
GENERIC, which only the ONNX importer makes."""
