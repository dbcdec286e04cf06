"""Generic layers in PyTorch: the torch function of each ONNX operator a generic layer may keep.

``TORCH_GENERIC_OPS`` maps an ONNX ``op_type`` to a function of the node's operands (tensors in the node's input
order, None for an omitted optional one) and attributes, following the ONNX operator's definition at opset 17.
A generic layer's nodes (the Identity nodes that name what its subgraphs read, then the node) run in order; an
If runs the branch its condition picks, node by node. An operator without an entry cannot run on the torch
backend; ONNX Runtime runs every generic layer.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper
from torch import nn

from nnperf.ir import Layer, same_padding
from nnperf.measure.backends._generic_node import generic_node

Operands = Sequence[torch.Tensor | None]
TorchOp = Callable[[Operands, Mapping[str, Any]], torch.Tensor | tuple[torch.Tensor, ...]]

_ONNX_TO_TORCH_DTYPE = {1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32,
                        7: torch.int64, 9: torch.bool, 10: torch.float32, 11: torch.float32, 16: torch.float32}
"""ONNX element type -> the torch type a cast computes in (every float type is float32, as the backends compute)."""


class GenericModule(nn.Module):
    """Runs a generic layer's ONNX nodes with their torch functions (an If's branches too, the one its condition
    picks); stored operands are buffers."""

    def __init__(self, layer: Layer, seed: int = 0) -> None:
        super().__init__()
        kept = generic_node(layer, seed)
        missing = sorted(_without_torch_form(kept.graph))
        if missing:
            raise NotImplementedError(f"ONNX {', '.join(missing)} has no PyTorch form here; measure it with "
                                      "--backend onnxruntime")
        self.op_type, self.output_index = kept.node.op_type, kept.output_index
        self.scalar_inputs, self.scalar_output = kept.scalar_inputs, kept.scalar_output
        self.steps = _steps(kept.graph)
        self.output = kept.graph.output[0].name
        self.stored_names = tuple(kept.stored)
        for name, value in kept.stored.items():
            self.register_buffer(name, torch.from_numpy(value.copy()))

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        values: dict[str, torch.Tensor] = {name: getattr(self, name) for name in self.stored_names}
        values.update((f"in{i}", x.reshape(()) if i in self.scalar_inputs else x) for i, x in enumerate(xs))
        _run(self.steps, values)
        out = values[self.output]
        return out.reshape(1) if self.scalar_output else out


@dataclass(frozen=True)
class _Step:
    """One node as the torch form runs it: its function, operand and result names, attributes, and for an If
    its two branches (each its steps and the names of its results)."""

    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: Mapping[str, Any]
    branches: tuple[tuple[tuple[_Step, ...], tuple[str, ...]], ...] = ()


def _steps(graph: onnx.GraphProto) -> tuple[_Step, ...]:
    steps = []
    for node in graph.node:
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute
                      if a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)}
        branches = tuple((_steps(g), tuple(o.name for o in g.output))
                         for g in (_branch(node, "then_branch"), _branch(node, "else_branch")) if g is not None)
        steps.append(_Step(node.op_type, tuple(node.input), tuple(node.output), attributes, branches))
    return tuple(steps)


def _branch(node: onnx.NodeProto, name: str) -> onnx.GraphProto | None:
    return next((a.g for a in node.attribute if a.name == name and a.type == onnx.AttributeProto.GRAPH), None)


def _run(steps: Sequence[_Step], values: dict[str, torch.Tensor]) -> None:
    """Runs ``steps`` in order, each reading and writing ``values`` by name (an If's branch sees every value
    computed before it)."""
    for step in steps:
        if step.op_type == "If":
            taken, results = step.branches[0 if bool(values[step.inputs[0]]) else 1]
            inner = dict(values)
            _run(taken, inner)
            outputs: tuple[torch.Tensor, ...] = tuple(inner[name] for name in results)
        else:
            result = TORCH_GENERIC_OPS[step.op_type]([values[t] if t else None for t in step.inputs], step.attributes)
            outputs = result if isinstance(result, tuple) else (result,)
        values.update((name, value) for name, value in zip(step.outputs, outputs) if name)


def _without_torch_form(graph: onnx.GraphProto) -> set[str]:
    """The operators of ``graph`` (its branches included) that have no torch function here."""
    missing = set()
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            missing.add(f"{node.domain}.{node.op_type}")
        elif node.op_type == "If":
            for name in ("then_branch", "else_branch"):
                branch = _branch(node, name)
                missing |= {"If"} if branch is None else _without_torch_form(branch)
        elif node.op_type not in TORCH_GENERIC_OPS or any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            missing.add(node.op_type)
    return missing


def _ints(t: torch.Tensor | None) -> list[int]:
    return [] if t is None else [int(v) for v in t.reshape(-1).tolist()]


def _unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> TorchOp:
    return lambda xs, a: fn(xs[0])  # type: ignore[arg-type]


def _binary(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> TorchOp:
    return lambda xs, a: fn(xs[0], xs[1])  # type: ignore[arg-type]


def _variadic(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> TorchOp:
    return lambda xs, a: functools.reduce(fn, [x for x in xs if x is not None])


def _reduce(fn: Callable[..., torch.Tensor]) -> TorchOp:
    """ReduceX at opset 18 and ReduceSum at 13: axes as an input (earlier ReduceX: an attribute)."""

    def reduce(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
        x = xs[0]
        assert x is not None
        axes = _ints(xs[1]) if len(xs) > 1 else list(a.get("axes", []))
        keep = bool(a.get("keepdims", 1))
        if not axes:
            if a.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.dim()))
        return fn(x, dim=tuple(axes), keepdim=keep)

    return reduce


def _arg(largest: bool) -> TorchOp:
    def arg(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
        x = xs[0]
        assert x is not None
        axis, keep = int(a.get("axis", 0)), bool(a.get("keepdims", 1))
        if a.get("select_last_index", 0):
            x = x.flip(axis)
            found = (torch.argmax if largest else torch.argmin)(x, dim=axis, keepdim=keep)
            return x.shape[axis] - 1 - found
        return (torch.argmax if largest else torch.argmin)(x, dim=axis, keepdim=keep)

    return arg


def _topk(xs: Operands, a: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    x = xs[0]
    assert x is not None
    values, indices = torch.topk(x, _ints(xs[1])[0], dim=int(a.get("axis", -1)), largest=bool(a.get("largest", 1)),
                                 sorted=bool(a.get("sorted", 1)))
    return values, indices


def _cast(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    return x.to(_ONNX_TO_TORCH_DTYPE.get(int(a["to"]), torch.float32))


def _where(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    cond, x, y = xs
    assert cond is not None and x is not None and y is not None
    return torch.where(cond.bool(), x, y)


def _gather(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    data, indices = xs
    assert data is not None and indices is not None
    axis = int(a.get("axis", 0)) % data.dim()
    flat = indices.reshape(-1).long() % data.shape[axis]
    picked = data.index_select(axis, flat)
    return picked.reshape(data.shape[:axis] + indices.shape + data.shape[axis + 1:])


def _gather_elements(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    data, indices = xs
    assert data is not None and indices is not None
    axis = int(a.get("axis", 0))
    return torch.gather(data, axis, indices.long() % data.shape[axis])


def _softmax(log: bool) -> TorchOp:
    return lambda xs, a: (F.log_softmax if log else F.softmax)(xs[0], dim=int(a.get("axis", -1)))


def _cumsum(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    axis = _ints(xs[1])[0]
    if a.get("reverse", 0):
        x = x.flip(axis)
    out = torch.cumsum(x, axis)
    if a.get("exclusive", 0):
        out = out - x
    return out.flip(axis) if a.get("reverse", 0) else out


def _mod(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x, y = xs
    assert x is not None and y is not None
    return torch.fmod(x, y) if a.get("fmod", 0) else torch.remainder(x, y)


def _elu(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    return F.elu(xs[0], alpha=float(a.get("alpha", 1.0)))  # type: ignore[arg-type]


def _selu(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    alpha, gamma = float(a.get("alpha", 1.67326319217681884765625)), float(a.get("gamma", 1.05070102214813232421875))
    return gamma * torch.where(x > 0, x, alpha * (torch.exp(x) - 1))


def _squeeze(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    axes = _ints(xs[1]) if len(xs) > 1 else [i for i, d in enumerate(x.shape) if d == 1]
    for axis in sorted((ax % x.dim() for ax in axes), reverse=True):
        x = x.squeeze(axis)
    return x


def _unsqueeze(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    rank = x.dim() + len(_ints(xs[1]))
    for axis in sorted(ax % rank for ax in _ints(xs[1])):
        x = x.unsqueeze(axis)
    return x


def _reshape(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    shape = [x.shape[i] if d == 0 and not a.get("allowzero", 0) else d for i, d in enumerate(_ints(xs[1]))]
    return x.reshape(shape)


def _slice(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    starts, ends = _ints(xs[1]), _ints(xs[2])
    axes = _ints(xs[3]) if len(xs) > 3 and xs[3] is not None else list(range(len(starts)))
    steps = _ints(xs[4]) if len(xs) > 4 and xs[4] is not None else [1] * len(starts)
    index: list[slice] = [slice(None)] * x.dim()
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step < 0:
            raise NotImplementedError("a Slice with a negative step")
        size = x.shape[axis]
        index[axis] = slice(max(min(start, size), -size), max(min(end, size), -size - 1), step)
    return x[tuple(index)]


def _split(xs: Operands, a: Mapping[str, Any]) -> tuple[torch.Tensor, ...]:
    x = xs[0]
    assert x is not None
    axis = int(a.get("axis", 0))
    sizes = _ints(xs[1]) if len(xs) > 1 and xs[1] is not None else list(a.get("split", []))
    if not sizes:
        parts = int(a.get("num_outputs", 0)) or 1
        chunk = -(-x.shape[axis] // parts)
        sizes = [min(chunk, x.shape[axis] - i * chunk) for i in range(parts)]
    return tuple(torch.split(x, sizes, dim=axis))


def _clip(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    low = None if len(xs) < 2 or xs[1] is None else float(xs[1])
    high = None if len(xs) < 3 or xs[2] is None else float(xs[2])
    return torch.clamp(x, low, high)


def _pad(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    pads = _ints(xs[1])
    axes = _ints(xs[3]) if len(xs) > 3 and xs[3] is not None else list(range(x.dim()))
    value = 0.0 if len(xs) < 3 or xs[2] is None else float(xs[2])
    mode = a.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode != "constant":
        raise NotImplementedError(f"a {mode} Pad")
    begins, ends = [0] * x.dim(), [0] * x.dim()
    for k, axis in enumerate(axes):
        begins[axis], ends[axis] = pads[k], pads[len(axes) + k]
    return _padded(x, begins + ends, value)


def _flatten(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    x = xs[0]
    assert x is not None
    axis = int(a.get("axis", 1)) % (x.dim() + 1)
    return x.reshape(math.prod(x.shape[:axis]), -1)


def _same_pads(a: Mapping[str, Any], x: torch.Tensor, kernel: Sequence[int], strides: Sequence[int],
               dilations: Sequence[int]) -> list[int]:
    """ONNX pads (begins, then ends) of ``a``, computed for SAME_UPPER and SAME_LOWER."""
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        return list(a.get("pads", [0] * 2 * (x.dim() - 2)))
    begins, ends = same_padding(x.shape[2:], kernel, strides, dilations, lower=auto == "SAME_LOWER")
    return [*begins, *ends]


def _padded(x: torch.Tensor, pads: Sequence[int], value: float = 0.0) -> torch.Tensor:
    rank = len(pads) // 2
    torch_pads: list[int] = []
    for axis in reversed(range(rank)):  # F.pad lists the last axis first
        torch_pads += [pads[axis], pads[rank + axis]]
    return F.pad(x, torch_pads, value=value) if any(pads) else x


def _conv(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    """Conv of any spatial rank (the 2-D ones are CONV layers; 1-D and 3-D come here)."""
    x, w = xs[0], xs[1]
    assert x is not None and w is not None
    bias = xs[2] if len(xs) > 2 else None
    rank = w.dim() - 2
    kernel = list(a.get("kernel_shape", w.shape[2:]))
    strides, dilations = list(a.get("strides", [1] * rank)), list(a.get("dilations", [1] * rank))
    x = _padded(x, _same_pads(a, x, kernel, strides, dilations))
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[rank]
    return fn(x, w, bias, stride=strides, dilation=dilations, groups=int(a.get("group", 1)))


def _pool(is_max: bool) -> TorchOp:
    def pool(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
        x = xs[0]
        assert x is not None
        rank = x.dim() - 2
        kernel = list(a["kernel_shape"])
        strides, dilations = list(a.get("strides", [1] * rank)), list(a.get("dilations", [1] * rank))
        if any(d != 1 for d in dilations) and not is_max:
            raise NotImplementedError("an average pool with dilations")
        pads = _same_pads(a, x, kernel, strides, dilations)
        ceil = bool(a.get("ceil_mode", 0))
        if is_max:
            x = _padded(x, pads, float("-inf"))
            fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[rank]
            return fn(x, kernel, strides, dilation=dilations, ceil_mode=ceil)
        include = bool(a.get("count_include_pad", 0))
        if not include and any(pads):
            raise NotImplementedError("an average pool that leaves its padding out of the count")
        x = _padded(x, pads)
        fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[rank]
        return fn(x, kernel, strides, ceil_mode=ceil)

    return pool


def _shape(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    """Shape, from ``start`` to ``end`` (clamped to the rank as Python slices are, as ONNX says)."""
    x = xs[0]
    assert x is not None
    end = a.get("end")
    return torch.tensor(x.shape[int(a.get("start", 0)):None if end is None else int(end)], dtype=torch.int64)


def _constant_of_shape(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    value = a.get("value")
    fill = torch.from_numpy(numpy_helper.to_array(value).copy()).reshape(()) if value is not None else torch.tensor(0.0)
    return torch.full(_ints(xs[0]), fill.item(), dtype=fill.dtype)


def _range(xs: Operands, a: Mapping[str, Any]) -> torch.Tensor:
    start, limit, delta = xs
    assert start is not None and limit is not None and delta is not None
    return torch.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)


def _prod(x: torch.Tensor, dim: tuple[int, ...], keepdim: bool) -> torch.Tensor:
    for axis in sorted((d % x.dim() for d in dim), reverse=True):  # the last first: the others keep their index
        x = x.prod(axis, keepdim=keepdim)
    return x


TORCH_GENERIC_OPS: Mapping[str, TorchOp] = MappingProxyType({
    "Neg": _unary(torch.neg), "Abs": _unary(torch.abs), "Sqrt": _unary(torch.sqrt),
    "Reciprocal": _unary(torch.reciprocal), "Erf": _unary(torch.erf), "Floor": _unary(torch.floor),
    "Ceil": _unary(torch.ceil), "Round": _unary(torch.round), "Sin": _unary(torch.sin), "Cos": _unary(torch.cos),
    "Sign": _unary(torch.sign), "Not": _unary(torch.logical_not), "Exp": _unary(torch.exp), "Log": _unary(torch.log),
    "Sigmoid": _unary(torch.sigmoid), "Tanh": _unary(torch.tanh), "Relu": _unary(torch.relu),
    "Softsign": _unary(F.softsign), "IsNaN": _unary(torch.isnan), "IsInf": _unary(torch.isinf),
    "Identity": _unary(lambda x: x), "Elu": _elu, "Selu": _selu,
    "Add": _binary(torch.add), "Sub": _binary(torch.sub), "Mul": _binary(torch.mul), "Div": _binary(torch.div),
    "Pow": _binary(torch.pow), "Equal": _binary(torch.eq), "Less": _binary(torch.lt), "Greater": _binary(torch.gt),
    "LessOrEqual": _binary(torch.le), "GreaterOrEqual": _binary(torch.ge), "And": _binary(torch.logical_and),
    "Or": _binary(torch.logical_or), "Xor": _binary(torch.logical_xor), "Mod": _mod,
    "Min": _variadic(torch.minimum), "Max": _variadic(torch.maximum), "Sum": _variadic(torch.add),
    "Where": _where, "Cast": _cast,
    "ReduceSum": _reduce(torch.sum), "ReduceMean": _reduce(torch.mean), "ReduceMax": _reduce(torch.amax),
    "ReduceMin": _reduce(torch.amin), "ReduceProd": _reduce(lambda x, dim, keepdim: _prod(x, dim, keepdim)),
    "ReduceL1": _reduce(lambda x, dim, keepdim: x.abs().sum(dim=dim, keepdim=keepdim)),
    "ReduceL2": _reduce(lambda x, dim, keepdim: x.square().sum(dim=dim, keepdim=keepdim).sqrt()),
    "ReduceSumSquare": _reduce(lambda x, dim, keepdim: x.square().sum(dim=dim, keepdim=keepdim)),
    "ReduceLogSumExp": _reduce(torch.logsumexp),
    "ArgMax": _arg(largest=True), "ArgMin": _arg(largest=False), "TopK": _topk,
    "Tile": lambda xs, a: xs[0].repeat(_ints(xs[1])),  # type: ignore[union-attr]
    "Einsum": lambda xs, a: torch.einsum(str(a["equation"].decode() if isinstance(a["equation"], bytes)
                                             else a["equation"]), *[x for x in xs if x is not None]),
    "MatMul": _binary(torch.matmul), "Gather": _gather, "GatherElements": _gather_elements,
    "Softmax": _softmax(log=False), "LogSoftmax": _softmax(log=True), "CumSum": _cumsum,
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Reshape": _reshape, "Slice": _slice, "Split": _split,
    "Clip": _clip, "Pad": _pad, "Transpose": lambda xs, a: xs[0].permute(*a["perm"]),  # type: ignore[union-attr]
    "Concat": lambda xs, a: torch.cat([x for x in xs if x is not None], dim=int(a["axis"])),
    "Flatten": _flatten,
    "LeakyRelu": lambda xs, a: F.leaky_relu(xs[0], float(a.get("alpha", 0.01))),  # type: ignore[arg-type]
    "HardSigmoid": lambda xs, a: torch.clamp(float(a.get("alpha", 0.2)) * xs[0] + float(a.get("beta", 0.5)), 0, 1),  # type: ignore[operator]
    "Conv": _conv, "MaxPool": _pool(is_max=True), "AveragePool": _pool(is_max=False),
    "GlobalAveragePool": lambda xs, a: xs[0].mean(dim=tuple(range(2, xs[0].dim())), keepdim=True),  # type: ignore[union-attr]
    "GlobalMaxPool": lambda xs, a: xs[0].amax(dim=tuple(range(2, xs[0].dim())), keepdim=True),  # type: ignore[union-attr]
    "HardSwish": _unary(F.hardswish), "Softplus": _unary(F.softplus), "Mish": _unary(F.mish),
    "Gelu": lambda xs, a: F.gelu(xs[0], approximate="tanh" if a.get("approximate") in (b"tanh", "tanh") else "none"),  # type: ignore[arg-type]
    "Expand": lambda xs, a: xs[0] * torch.ones(_ints(xs[1]), dtype=xs[0].dtype),  # type: ignore[union-attr]
    "Shape": _shape, "Size": lambda xs, a: torch.tensor(xs[0].numel(), dtype=torch.int64),  # type: ignore[union-attr]
    "ConstantOfShape": _constant_of_shape, "Range": _range,
})
