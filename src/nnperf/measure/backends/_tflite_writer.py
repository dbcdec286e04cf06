"""The pieces a LiteRT (.tflite) model is written with: the flatbuffer graph, the writer every op's emitter
(:mod:`nnperf.measure.backends._tflite_ops`) adds its operators through, and the layout and fusion rules they share
(see :mod:`nnperf.measure.backends._tflite_graph` for how a network becomes a model)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from nnperf.ir import BatchNormAttrs, Layer, OpType, Shape
from nnperf.measure.backends._weights import layer_weights

MIN_VERSIONS = {"BROADCAST_TO": 2}
"""Operators whose first version in the builtin resolver is not 1."""
FLOAT32, INT32 = 0, 2
"""TensorType values of the schema (``schema_py_generated.TensorType``): fixed by the file format."""
ACTIVATION = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}
"""ActivationFunctionType values of the schema."""
PADDING = {"SAME": 0, "VALID": 1}
"""Padding values of the schema."""
MIRROR_REFLECT = 0
"""MirrorPadMode.REFLECT of the schema."""

NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)
NHWC_AXIS = (0, 3, 1, 2)
"""Where each NCHW axis is in NHWC (the channels are last)."""

SCHEMA_VERSION = 3
BUFFER_ALIGNMENT = 16
"""Bytes a constant's data is aligned to, as the TFLite converter writes them (XNNPACK reads them in place)."""


class TfliteUnsupported(Exception):
    """A layer (or a setting of one) the writer cannot express; the message says why."""


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: int = FLOAT32
    data: np.ndarray | None = None


@dataclass
class _Operator:
    code: str
    """the BuiltinOperator's name (``CONV_2D``)"""
    inputs: list[int]
    outputs: list[int]
    options: tuple[str, dict[str, Any]] | None
    """the BuiltinOptions table's name and its fields, or None for an operator without options"""
    group: str | None
    label: str


@dataclass
class TfliteGraph:
    """The tensors and operators of one subgraph, in execution order, and which tensors are its inputs and
    outputs; :meth:`serialize` writes it as a .tflite model, :meth:`part` cuts a program of some operators."""

    tensors: list[_Tensor] = field(default_factory=list)
    operators: list[_Operator] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def part(self, indices: Sequence[int]) -> TfliteGraph:
        """A program of the operators ``indices`` alone: the activations they read from elsewhere become its
        inputs, and what they write that is read elsewhere (or is an output) its outputs."""
        chosen = set(indices)
        ops = [self.operators[i] for i in sorted(chosen)]
        produced = {t for op in ops for t in op.outputs}
        read_elsewhere = {t for i, op in enumerate(self.operators) if i not in chosen for t in op.inputs}
        inputs = list(dict.fromkeys(t for op in ops for t in op.inputs
                                    if t >= 0 and t not in produced and self.tensors[t].data is None))
        outputs = list(dict.fromkeys(t for op in ops for t in op.outputs
                                     if t in read_elsewhere or t in self.outputs)) or ops[-1].outputs
        used = sorted({t for op in ops for t in op.inputs + op.outputs if t >= 0})
        index = {old: new for new, old in enumerate(used)}
        return TfliteGraph([self.tensors[t] for t in used],
                           [replace(op, inputs=[index.get(t, -1) for t in op.inputs],
                                    outputs=[index[t] for t in op.outputs]) for op in ops],
                           [index[t] for t in inputs], [index[t] for t in outputs])

    def serialize(self) -> bytes:
        """The .tflite flatbuffer of this graph (one subgraph, every operator at version 1)."""
        import flatbuffers
        from ai_edge_litert import schema_py_generated as schema

        buffer_class = _aligned_buffer_class(schema)
        model = schema.ModelT()
        model.version = SCHEMA_VERSION
        model.description = "nnperf"
        model.buffers = [schema.BufferT()]  # buffer 0 is the empty one every activation points to
        codes: dict[str, int] = {}
        model.operatorCodes = []
        subgraph = schema.SubGraphT()
        subgraph.tensors = []
        for tensor in self.tensors:
            t = schema.TensorT()
            t.name, t.shape, t.type = tensor.name, list(tensor.shape), tensor.dtype
            if tensor.data is not None:
                buffer = buffer_class()
                buffer.data = np.ascontiguousarray(tensor.data).reshape(-1).view(np.uint8)
                model.buffers.append(buffer)
                t.buffer = len(model.buffers) - 1
            subgraph.tensors.append(t)
        subgraph.operators = []
        for op in self.operators:
            if op.code not in codes:
                code = schema.OperatorCodeT()
                code.builtinCode = getattr(schema.BuiltinOperator, op.code)
                # codes past 127 live in the newer field; the old one holds the placeholder
                code.deprecatedBuiltinCode = min(code.builtinCode, schema.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES)
                code.version = MIN_VERSIONS.get(op.code, 1)
                codes[op.code] = len(model.operatorCodes)
                model.operatorCodes.append(code)
            operator = schema.OperatorT()
            operator.opcodeIndex = codes[op.code]
            operator.inputs, operator.outputs = list(op.inputs), list(op.outputs)
            if op.options is not None:
                table, fields = op.options
                options = getattr(schema, table + "T")()
                for key, value in fields.items():
                    if not hasattr(options, key):
                        raise AttributeError(f"{table} has no field {key!r}")
                    setattr(options, key, value)
                operator.builtinOptionsType = getattr(schema.BuiltinOptions, table)
                operator.builtinOptions = options
            subgraph.operators.append(operator)
        subgraph.inputs, subgraph.outputs = list(self.inputs), list(self.outputs)
        subgraph.name = "main"
        model.subgraphs = [subgraph]
        data_bytes = sum(t.data.nbytes for t in self.tensors if t.data is not None)
        builder = flatbuffers.Builder(data_bytes + 64 * len(self.tensors) + 1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


_BUFFER_CLASSES: dict[int, type] = {}


def _aligned_buffer_class(schema: Any) -> type:
    """``schema.BufferT`` whose data is written aligned to :data:`BUFFER_ALIGNMENT` bytes (the generated one aligns
    a byte vector to one byte)."""
    key = id(schema)
    if key not in _BUFFER_CLASSES:
        class AlignedBuffer(schema.BufferT):  # type: ignore[name-defined,misc]
            def Pack(self, builder: Any) -> int:
                data = None
                if self.data is not None:
                    payload = bytes(self.data)
                    builder.StartVector(1, len(payload), BUFFER_ALIGNMENT)
                    builder.head = builder.head - len(payload)
                    builder.Bytes[builder.head:builder.head + len(payload)] = payload
                    builder.vectorNumElems = len(payload)
                    data = builder.EndVector()
                schema.BufferStart(builder)
                if data is not None:
                    schema.BufferAddData(builder, data)
                return int(schema.BufferEnd(builder))

        _BUFFER_CLASSES[key] = AlignedBuffer
    return _BUFFER_CLASSES[key]


@dataclass(frozen=True)
class TfliteModel:
    """A written model: its graph, the IR layers of each group (named after its first layer, in the network's
    order), and whether each graph input and output is NHWC (else in the IR's order). ``content`` is the .tflite
    file's bytes."""

    graph: TfliteGraph
    groups: Mapping[str, tuple[str, ...]]
    inputs_nhwc: tuple[bool, ...] = ()
    outputs_nhwc: tuple[bool, ...] = ()

    @cached_property
    def content(self) -> bytes:
        return self.graph.serialize()

    def group_operators(self) -> dict[str, list[int]]:
        """Each group -> the indices of the operators it runs (a group of constants alone runs none)."""
        found: dict[str, list[int]] = {group: [] for group in self.groups}
        for i, op in enumerate(self.graph.operators):
            if op.group is not None:
                found[op.group].append(i)
        return found

    def boundary_operators(self) -> dict[str, int]:
        """The network's entry and exit transposes, by label -> operator index (they belong to no layer)."""
        return {op.label: i for i, op in enumerate(self.graph.operators) if op.group is None}

    def operator_codes(self) -> list[str]:
        """The BuiltinOperator name of every operator, in execution order."""
        return [op.code for op in self.graph.operators]


@dataclass(frozen=True)
class Fold:
    """What a group's first layer writes for the rest of the group: the IR value it defines (the group's last
    layer), the per-output-channel affine ``scale``/``shift`` of the batch norms and scales folded into its weights
    (None when there are none), and its fused activation (``NONE``, ``RELU``, ``RELU6``)."""

    out: str
    scale: np.ndarray | None = None
    shift: np.ndarray | None = None
    activation: str = "NONE"

    def weights(self, weight: np.ndarray, bias: np.ndarray, out_axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``weight`` and ``bias`` with the folded scale and shift applied (output channels along ``out_axis``)."""
        if self.scale is None or self.shift is None:
            return weight, bias
        shape = [1] * weight.ndim
        shape[out_axis] = -1
        scale = np.broadcast_to(self.scale, bias.shape).astype(np.float32)
        return ((weight * scale.reshape(shape)).astype(np.float32),
                (bias * scale + self.shift).astype(np.float32))


FOLDING_HEADS = frozenset({OpType.CONV, OpType.CONV_TRANSPOSE, OpType.LINEAR})
"""Layers whose weights take a following batch norm or scale, and whose operator takes a fused activation."""
ACTIVATION_HEADS = FOLDING_HEADS | {OpType.ADD, OpType.SUB, OpType.MUL, OpType.DIV}
"""Layers whose TFLite operator takes a following RELU or RELU6 as its fused activation."""
FUSED_ACTIVATIONS = {OpType.RELU: "RELU", OpType.RELU6: "RELU6"}
"""IR activations the converter fuses (a fused TANH is not taken: XNNPACK refuses it, so the operator would fall
back to the builtin kernel (checked: XNNPACK leaves a CONV_2D with a fused TANH to it) and the time would not be a
deployment's)."""
ALIASES = frozenset({OpType.IDENTITY, OpType.DROPOUT})
"""Layers that write no operator in a network: their value is their producer's."""


class TfliteWriter:
    """Collects the tensors and operators of a model; emitters read IR values through :meth:`read` and define them
    with :meth:`define`. Operators added belong to ``group`` (None: the network's entry and exit)."""

    def __init__(self, seed: int) -> None:
        self.graph = TfliteGraph()
        self.seed = seed
        self.group: str | None = None
        self.shapes: dict[str, Shape] = {}
        """the IR (NCHW) shape of every value"""
        self.tensors: dict[str, dict[bool, int]] = {}
        """value -> {in NHWC: tensor}; a value of another rank than 4 is only ever 'not NHWC' (the IR's order)"""
        self.constants: dict[str, np.ndarray] = {}
        self.pending: dict[str, int] = {}
        """a one-layer program's inputs not yet read -> their position (created in the layout first read in)"""
        self.input_positions: list[int] = []
        """the position of each graph input among the layer's operands (a one-layer program's)"""
        self.inputs_nhwc: list[bool] = []
        self.entry: set[str] = set()

    # ------------------------------------------------------------------ tensors and operators
    def tensor(self, shape: Sequence[int], name: str, dtype: int = FLOAT32) -> int:
        self.graph.tensors.append(_Tensor(name, tuple(int(d) for d in shape), dtype))
        return len(self.graph.tensors) - 1

    def const(self, value: np.ndarray, name: str) -> int:
        """A constant tensor (float32, or int32 for integer arrays)."""
        array = np.ascontiguousarray(value, np.int32 if np.asarray(value).dtype.kind in "iu" else np.float32)
        self.graph.tensors.append(_Tensor(name, array.shape, INT32 if array.dtype == np.int32 else FLOAT32, array))
        return len(self.graph.tensors) - 1

    def shape(self, tensor: int) -> tuple[int, ...]:
        return self.graph.tensors[tensor].shape

    def op(self, code: str, inputs: Sequence[int], outputs: Sequence[int], label: str,
           options: tuple[str, dict[str, Any]] | None = None) -> None:
        self.graph.operators.append(_Operator(code, list(inputs), list(outputs), options, self.group, label))

    def node(self, code: str, inputs: Sequence[int], shape: Sequence[int], name: str,
             options: tuple[str, dict[str, Any]] | None = None) -> int:
        """An operator with one float output of ``shape``, tensor and operator named ``name``; returns the output."""
        out = self.tensor(shape, name)
        self.op(code, inputs, [out], name, options)
        return out

    def reshape(self, tensor: int, shape: Sequence[int], name: str) -> int:
        """``tensor`` as ``shape`` (no operator when it has that shape already)."""
        shape = tuple(int(d) for d in shape)
        if self.shape(tensor) == shape:
            return tensor
        return self.node("RESHAPE", [tensor, self.const(np.array(shape), name + "_shape")], shape, name,
                         ("ReshapeOptions", {"newShape": list(shape)}))

    def permute(self, tensor: int, perm: Sequence[int], name: str) -> int:
        """``tensor`` transposed by ``perm`` (output axis i is input axis perm[i]): a RESHAPE when its non-unit axes
        keep their order, which moves no element."""
        shape = self.shape(tensor)
        out = tuple(shape[p] for p in perm)
        if list(perm) == list(range(len(perm))):
            return tensor
        if keeps_order(shape, perm):
            return self.reshape(tensor, out, name)
        return self.node("TRANSPOSE", [tensor, self.const(np.array(perm), name + "_perm")], out, name)

    # ------------------------------------------------------------------ IR values
    def is_4d(self, name: str) -> bool:
        return len(self.shapes[name]) == 4

    def layouts(self, name: str) -> set[bool]:
        """The layouts ``name`` can be read in without an operator (NHWC: True)."""
        if name in self.constants or name in self.pending:
            return {True, False} if self.is_4d(name) else {False}
        return set(self.tensors.get(name, {}))

    def defined(self, name: str) -> bool:
        return name in self.tensors or name in self.constants or name in self.pending

    def read(self, name: str, nhwc: bool) -> int:
        """The tensor of IR value ``name`` in NHWC (``nhwc``, for a 4-D value) or in the IR's order, converted
        (and the conversion kept for later readers) when it exists only in the other."""
        shape = self.shapes[name]
        nhwc = nhwc and len(shape) == 4
        have = self.tensors.setdefault(name, {})
        if nhwc in have:
            return have[nhwc]
        if name in self.constants:
            value = self.constants[name]
            have[nhwc] = self.const(value.transpose(NCHW_TO_NHWC) if nhwc else value, name + ("/nhwc" if nhwc else ""))
        elif name in self.pending:
            position = self.pending.pop(name)
            have[nhwc] = self.tensor(nhwc_shape(shape) if nhwc else shape, name)
            self.graph.inputs.append(have[nhwc])
            self.input_positions.append(position)
            self.inputs_nhwc.append(nhwc)
        else:
            group = self.group
            if name in self.entry:  # the network's entry belongs to no layer
                self.group = None
            have[nhwc] = self.permute(have[not nhwc], NCHW_TO_NHWC if nhwc else NHWC_TO_NCHW,
                                      f"{name}/{'nhwc' if nhwc else 'nchw'}")
            self.group = group
        return have[nhwc]

    def read_any(self, name: str) -> tuple[int, bool]:
        """The tensor of ``name`` in a layout it exists in (NHWC first), and whether that is NHWC."""
        nhwc = True in self.layouts(name)
        return self.read(name, nhwc), nhwc

    def read_ir_order(self, name: str) -> int:
        """A tensor whose elements are in the IR's row-major order: the IR tensor, or the NHWC one where the
        conversion would only reshape (a 1x1 map), without writing that reshape."""
        if False in self.layouts(name) or not self.is_4d(name):
            return self.read(name, False)
        if keeps_order(nhwc_shape(self.shapes[name]), NHWC_TO_NCHW):
            return self.read(name, True)
        return self.read(name, False)

    def define(self, name: str, tensor: int, nhwc: bool) -> None:
        self.tensors[name] = {nhwc and self.is_4d(name): tensor}

    def alias(self, name: str, source: str) -> None:
        """``name`` is ``source``'s value (its conversions shared)."""
        if source in self.constants:
            self.constants[name] = self.constants[source]
        else:
            self.tensors[name] = self.tensors.setdefault(source, {})


def keeps_order(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether transposing ``shape`` by ``perm`` keeps the order of its non-unit axes (so moves no element)."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def nhwc_shape(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(shape[p] for p in NCHW_TO_NHWC)


def layout_axis(axis: int, rank: int, nhwc: bool) -> int:
    """IR axis ``axis`` (negative counts from the end) in a tensor of ``rank`` in NHWC or the IR's order."""
    axis %= rank
    return NHWC_AXIS[axis] if nhwc and rank == 4 else axis


def layout_shape(shape: Sequence[int], nhwc: bool) -> tuple[int, ...]:
    return nhwc_shape(shape) if nhwc and len(shape) == 4 else tuple(shape)


# ---------------------------------------------------------------------- groups and fusions
def same_pads(size: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
              dilation: Sequence[int] = (1, 1)) -> tuple[int, int, int, int]:
    """The (top, left, bottom, right) padding TFLite's SAME gives a window (the odd element at the end)."""
    pads = []
    for n, k, s, d in zip(size, kernel, stride, dilation):
        total = max(0, (math.ceil(n / s) - 1) * s + d * (k - 1) + 1 - n)
        pads.append((total // 2, total - total // 2))
    return pads[0][0], pads[1][0], pads[0][1], pads[1][1]


def affine_of(layer: Layer, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-channel y = x * scale + shift a batch norm or a scale computes."""
    w = layer_weights(layer, seed)
    if layer.op is OpType.BATCH_NORM:
        assert isinstance(layer.attrs, BatchNormAttrs)
        scale = w["weight"] / np.sqrt(w["var"].astype(np.float64) + layer.attrs.eps)
        return scale.astype(np.float32), (w["bias"] - w["mean"] * scale).astype(np.float32)
    return w["scale"], w.get("bias", np.zeros_like(w["scale"]))
