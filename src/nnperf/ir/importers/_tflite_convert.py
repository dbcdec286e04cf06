"""The core of the .tflite importer: the converter that walks the main subgraph, and the operator and step types
of the per-operator handlers (``_tflite_ops``) that it calls.

Operators that read no activation (a DEQUANTIZE of float16 or int8 weights, what the converter left unfolded), and
SHAPE, which reads only a size, compute constants, not layers. QUANTIZE and DEQUANTIZE of an activation make no layer: their output stands for
the activation they convert, as the ONNX importer reads QuantizeLinear and DequantizeLinear (the IR computes in
float; ``Network.int8_layers`` names the convolutions and matrix products the file runs in int8). Every other
operator maps by its rule to one or more steps, each an IR layer; a fused activation (``fused_activation_function``
RELU, RELU6, TANH, RELU_N1_TO_1) becomes its own layer after the operator's, named after it. An operator no rule
maps becomes a generic layer when an ONNX operator computes the same on the IR's tensors (its ``TfliteTwin``:
element-wise operators, depth to space), unless ``strict``; every other is listed, all at once, in an
:class:`~nnperf.errors.UnsupportedOperatorError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from nnperf.errors import InvalidNetworkError, ShapeInferenceError
from nnperf.ir._network import Layer, Network, TensorSpec
from nnperf.ir._ops import Attributes, ClipAttrs, NoAttrs, OpType
from nnperf.ir._shapes import Shape
from nnperf.ir.importers._common import NameTable, Unsupported
from nnperf.ir.importers._table import ImportRule
from nnperf.ir.importers._tflite_read import (
    FLOAT_TYPES,
    NUMPY_TYPES,
    Layout,
    TfliteFile,
    broadcast_shape,
    dequantised,
    image_tensors,
    is_stored,
    operator_name,
    quantised,
    tensor_value,
    text,
    vector,
)


@dataclass(frozen=True)
class Op:
    """An operator as its handler sees it: its builtin name, tensors (-1 for an omitted input) and options."""

    index: int
    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Any
    activations: tuple[int, ...]
    """the inputs that are activations, in order"""

    @property
    def x(self) -> int:
        """The first activation input."""
        return self.activations[0]

    def option(self, key: str, default: Any) -> Any:
        return getattr(self.options, key, default) if self.options is not None else default

    def input(self, position: int) -> int:
        """Input ``position`` (-1 when the operator has fewer or leaves it out)."""
        return self.inputs[position] if position < len(self.inputs) else -1


PREVIOUS = -2
"""A step's input that is the result of the step before it."""


@dataclass(frozen=True)
class Step:
    """One IR layer of an operator. It reads ``inputs``: tensors (activations, or stored operands, which become
    CONSTANT layers), or :data:`PREVIOUS`, the result of the step before (what a step without inputs reads). Its
    result is tensor ``output``, or an intermediate of IR shape ``shape`` named after the operator with ``role``
    appended."""

    op: OpType
    attrs: Attributes = field(default_factory=NoAttrs)
    inputs: tuple[int, ...] = ()
    output: int | None = None
    shape: Shape | None = None
    role: str = ""


@dataclass(frozen=True)
class TfliteTwin:
    """The ONNX operator a TFLite operator is kept as, as a generic layer: ``constant`` is an operand added after
    the file's (RSQRT is ``Pow(x, -0.5)``), ``attributes`` the node's fixed ones and ``options`` those taken from
    the operator's options (ONNX attribute -> option), stated at ``opset``."""

    operator: str
    constant: float | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)
    opset: int = 17


TfliteHandler = Callable[["Converter", Op], "list[Step] | None"]
"""Maps one operator, or returns None when its options or operands are not supported."""

_FUSED = {1: (OpType.RELU, NoAttrs()), 2: (OpType.CLIP, ClipAttrs(-1.0, 1.0)), 3: (OpType.RELU6, NoAttrs()),
          4: (OpType.TANH, NoAttrs())}
"""``fused_activation_function`` -> the layer it becomes (SIGN_BIT, 5, has none: such an operator is refused)."""
_INT8_OPERATORS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "BATCH_MATMUL"})
_INT8_LAYERS = frozenset({OpType.CONV, OpType.LINEAR, OpType.MATMUL, OpType.CONV_TRANSPOSE})
_SIZES_ONLY = frozenset({"SHAPE"})
"""Operators that read only the size of an activation: constants, not layers."""
_UNSAFE = re.compile(r"[\s,;\"']+")


class Converter:
    """Maps the operators of a .tflite file's main subgraph to the layers of a network, each by its rule in
    ``rules`` (an operator no rule maps is kept as a generic layer by its handler in ``twins`` unless ``strict``);
    the handlers read the file through its lookups (IR shapes, layouts, stored values, readers)."""

    def __init__(self, file: TfliteFile, name: str, rules: Mapping[str, ImportRule[TfliteHandler]],
                 twins: Mapping[str, TfliteHandler], strict: bool = False) -> None:
        from ai_edge_litert import schema_py_generated as schema

        self.file, self.name, self.rules, self.twins, self.strict = file, name, rules, twins, strict
        self.source = str(file.path)
        self.schema = schema
        self.graph = file.model.subgraphs[0]
        self.tensors: list[Any] = list(self.graph.tensors or ())
        self.operators: list[Any] = list(self.graph.operators or ())
        codes = file.model.operatorCodes or ()
        self.op_names = [operator_name(schema, codes[op.opcodeIndex]) for op in self.operators]
        self.stored = {i for i, t in enumerate(self.tensors) if is_stored(file, t)}
        self.images = image_tensors(self.graph, self.op_names, self.stored)
        self.constants: dict[int, np.ndarray | None] = {}  # tensor -> value (None: computed, shape only)
        self.readers: dict[int, list[int]] = {}
        for index, op in enumerate(self.operators):
            for tensor in vector(op.inputs):
                self.readers.setdefault(tensor, []).append(index)
        self.graph_outputs = set(vector(self.graph.outputs))
        self.unsupported = Unsupported(self.source)
        self.names = NameTable()
        self.layer_of: dict[int, str] = {}  # activation tensor -> the IR layer (or input) producing it
        self.constant_layers: dict[tuple[int, Shape], str] = {}
        self.failed: set[int] = set()  # tensors computed from an unsupported operator's output
        self.absorbed: set[int] = set()  # operators fused into another's layer
        self.int8_layers: set[str] = set()

    def convert(self) -> Network:
        """The network of the operators that compute on activations."""
        specs = tuple(self._input_spec(t) for t in vector(self.graph.inputs))
        layers: list[Layer] = []
        for index, raw in enumerate(self.operators):
            inputs, outputs = vector(raw.inputs), vector(raw.outputs)
            reads = tuple(t for t in inputs if t >= 0 and (t in self.layer_of or t in self.failed))
            op = Op(index, self.op_names[index], inputs, outputs, raw.builtinOptions, reads)
            if not reads or op.name in _SIZES_ONLY:
                self._constant_operator(op)
            elif index not in self.absorbed and not self._quantisation_alias(op):
                layers.extend(self._convert(op))
        self.unsupported.raise_if_any()
        outputs = tuple(dict.fromkeys(self.layer_of[t] for t in vector(self.graph.outputs) if t in self.layer_of))
        if not outputs:
            raise ShapeInferenceError(f"{self.source}: no output of the model is computed from its inputs")
        if not layers:
            raise InvalidNetworkError(f"{self.source}: no operator computes anything to predict (only conversions "
                                      "between 8-bit and float)")
        return Network(self.name, specs, tuple(layers), outputs, frozenset(self.int8_layers))

    # ---- the lookups the handlers use -----------------------------------------------------------
    def layout(self, tensor: int) -> Layout:
        return Layout(tensor in self.images)

    def file_shape(self, tensor: int) -> Shape:
        """The tensor's shape as the file states it (NHWC for an image; () for a scalar, as LiteRT reads a tensor
        without one)."""
        shape = vector(self.tensors[tensor].shape)
        if any(d <= 0 for d in shape):
            raise ShapeInferenceError(f"{self.source}: tensor {self.tensor_name(tensor)!r} has the shape {shape} "
                                      "(a size the file leaves to run time)")
        return shape

    def shape(self, tensor: int) -> Shape:
        """The tensor's IR shape: NCHW for an image, as the file states it otherwise."""
        return self.layout(tensor).shape(self.file_shape(tensor))

    def is_constant(self, tensor: int) -> bool:
        """Whether the file stores the tensor (or computes it from stored tensors alone)."""
        return tensor >= 0 and (tensor in self.stored or tensor in self.constants)

    def value(self, tensor: int) -> np.ndarray | None:
        """A constant's values in the file's shape (None for an activation or a value not stored)."""
        if tensor in self.constants:
            return self.constants[tensor]
        return tensor_value(self.file, self.tensors[tensor]) if tensor in self.stored else None

    def ints(self, tensor: int) -> list[int] | None:
        """A small stored operand (axes, a shape, paddings) as integers (None when not stored)."""
        value = self.value(tensor) if tensor >= 0 else None
        return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]

    def tensor_name(self, tensor: int) -> str:
        return text(self.tensors[tensor].name) or f"tensor_{tensor}"

    def sole_reader(self, tensor: int, name: str) -> Op | None:
        """The one operator that reads ``tensor``, when it is a ``name`` operator and ``tensor`` no graph output."""
        readers = self.readers.get(tensor, [])
        if len(readers) != 1 or tensor in self.graph_outputs or self.op_names[readers[0]] != name:
            return None
        raw = self.operators[readers[0]]
        inputs = vector(raw.inputs)
        return Op(readers[0], name, inputs, vector(raw.outputs), raw.builtinOptions,
                  tuple(t for t in inputs if t >= 0 and not self.is_constant(t)))

    def computes_in_int8(self, op: Op) -> bool:
        """Whether a convolution or matrix product runs in int8: its activation is an 8-bit tensor with a scale, or
        a float one by int8 weights (dynamic-range quantisation: LiteRT quantises the activation on the fly)."""
        if op.name not in _INT8_OPERATORS:
            return False
        weights = [t for t in op.inputs[1:] if t >= 0 and t in self.stored]
        return quantised(self.tensors[op.x]) or (
            self.tensors[op.x].type in FLOAT_TYPES and any(quantised(self.tensors[t]) for t in weights[:1]))

    # ---- mapping one operator ------------------------------------------------------------------
    def _input_spec(self, tensor: int) -> TensorSpec:
        t = self.tensors[tensor]
        dtype = NUMPY_TYPES.get(t.type, "float32")
        if t.type in FLOAT_TYPES or quantised(t):  # the IR computes in float
            dtype = "float32"
        spec = TensorSpec(self.names.unique(self._valid(self.tensor_name(tensor))), self.shape(tensor), dtype)
        self.layer_of[tensor] = spec.name
        return spec

    def _constant_operator(self, op: Op) -> None:
        """An operator of stored tensors alone, or of sizes alone, computes constants: a DEQUANTIZE of weights
        their float values, a SHAPE the static shape of what it reads (a RESHAPE whose target is computed from it
        has its output's shape in the file)."""
        value = None
        if op.name == "SHAPE" and op.inputs:
            value = np.asarray(self.file_shape(op.inputs[0]), dtype=np.int32)
        elif op.name == "DEQUANTIZE" and op.inputs and op.inputs[0] in self.stored:
            stored = tensor_value(self.file, self.tensors[op.inputs[0]])
            value = None if stored is None else dequantised(self.tensors[op.inputs[0]], stored)
        for tensor in op.outputs:
            self.constants[tensor] = value

    def _quantisation_alias(self, op: Op) -> bool:
        """A QUANTIZE or DEQUANTIZE of an activation makes no layer: its output stands for its input."""
        if op.name not in ("QUANTIZE", "DEQUANTIZE") or len(op.outputs) != 1:
            return False
        if op.x in self.failed:  # after an unsupported operator: nothing more to name
            self.failed.add(op.outputs[0])
        else:
            self.layer_of[op.outputs[0]] = self.layer_of[op.x]
        return True

    def _convert(self, op: Op) -> list[Layer]:
        """The layers of ``op`` (none, the operator recorded, when it is unsupported)."""
        label = self._label(op)
        if any(t in self.failed for t in op.inputs):
            # downstream of an unsupported operator: its shapes are unknown, so only name it if it is unsupported too
            if op.name not in self.rules and (self.strict or op.name not in self.twins):
                self.unsupported.add(self._describe(op), label)
            self.failed.update(op.outputs)
            return []
        rule = self.rules.get(op.name)
        steps = None if rule is None else rule.handler(self, op)
        if steps is not None:
            steps = self._with_fused_activation(op, steps)
        if steps is None and not self.strict and op.name in self.twins:
            steps = self.twins[op.name](self, op)
        if steps is None:
            self.unsupported.add(self._describe(op), label)
            self.failed.update(op.outputs)
            return []
        try:
            layers = self._layers(op, label, steps)
        except InvalidNetworkError as exc:
            raise InvalidNetworkError(f"{self.source}: operator {label!r} ({op.name}): {exc}") from exc
        if self.computes_in_int8(op):
            self.int8_layers.update(layer.name for layer in layers if layer.op in _INT8_LAYERS)
        return layers

    def _with_fused_activation(self, op: Op, steps: list[Step]) -> list[Step] | None:
        """``steps`` with the operator's fused activation as a layer of its own after them (None for SIGN_BIT)."""
        fused = int(op.option("fusedActivationFunction", 0) or 0)
        if not fused:
            return steps
        if fused not in _FUSED or steps[-1].output is None:
            return None
        last = steps[-1]
        act, attrs = _FUSED[fused]
        return [*steps[:-1], replace(last, output=None, shape=last.shape or self.shape(last.output)),
                Step(act, attrs, output=last.output, role=act.value)]

    def _layers(self, op: Op, label: str, steps: list[Step]) -> list[Layer]:
        made: list[Layer] = []
        previous: Layer | None = None
        for step in steps:
            producers, shapes = [], []
            for tensor in step.inputs or (PREVIOUS,):
                if tensor == PREVIOUS:
                    assert previous is not None
                    producers.append(previous.name)
                    shapes.append(previous.output_shape)
                elif tensor in self.layer_of:
                    producers.append(self.layer_of[tensor])
                    shapes.append(self.shape(tensor))
                else:  # a stored operand combined with an activation: a CONSTANT layer, broadcast as the file does
                    name, shape, constant = self._constant_input(op, tensor)
                    made.extend([constant] if constant is not None else [])
                    producers.append(name)
                    shapes.append(shape)
            shape = step.shape if step.output is None or step.shape is not None else self.shape(step.output)
            assert shape is not None
            # a step writing another tensor than the operator's first (a SPLIT's, a fused reader's) is named after it
            base = label if step.output in (None, op.outputs[0]) else self._valid(self.tensor_name(step.output))
            name = self.names.unique(f"{base}.{step.role}" if step.role else base)
            previous = Layer(name, step.op, tuple(producers), tuple(shapes), shape, step.attrs)
            made.append(previous)
            if step.output is not None:
                self.layer_of[step.output] = name
        return made

    def _constant_input(self, op: Op, tensor: int) -> tuple[str, Shape, Layer | None]:
        """The CONSTANT layer of a stored operand that ``op`` combines with its first activation, in the IR shape
        it broadcasts as against it: its name, shape, and the layer when it is new (one per operand and shape)."""
        shape = broadcast_shape(self.file_shape(tensor), len(self.file_shape(op.x)), op.x in self.images)
        key = (tensor, shape)
        if key in self.constant_layers:
            return self.constant_layers[key], shape, None
        layer = Layer(self.names.unique(self._valid(self.tensor_name(tensor))), OpType.CONSTANT,
                      (self.layer_of[op.x],), (self.shape(op.x),), shape)
        self.constant_layers[key] = layer.name
        return layer.name, shape, layer

    def _label(self, op: Op) -> str:
        """The operator's layer name: its first output tensor's, made valid (see :meth:`_valid`) and unique later."""
        return self._valid(self.tensor_name(op.outputs[0])) if op.outputs else f"{op.name.lower()}_{op.index}"

    @staticmethod
    def _valid(name: str) -> str:
        """A tensor name as a layer name: the first of the names the TFLite converter joins with ';' (the
        operation whose result the tensor is), without spaces, commas or quotes (a layer name is also typed on
        the command line)."""
        first = name.split(";")[0].strip()
        return _UNSAFE.sub("_", first).strip("_") or "layer"

    def _describe(self, op: Op) -> str:
        """How an unsupported operator is named: its rule's refusal, else the operator."""
        rule = self.rules.get(op.name)
        return rule.refusal if rule is not None and rule.refusal else op.name
