"""The core of the ONNX importer: the converter that walks the graph, and the node and result types of the
per-operator handlers (``_onnx_table``) that it calls.

Nodes that do not touch an activation (constants, shape arithmetic on ``Shape`` outputs) are skipped; the rest map
to IR layers by the rule of their operator. A stored tensor that an Add, Sub or Concat combines with an activation
becomes a CONSTANT layer, a Transpose of the last two axes read only by MatMul nodes is read by them transposed,
quantised operators compute in float with their layers marked int8, and a node no rule maps becomes a generic
layer (``_onnx_generic``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from nnperf.errors import InvalidNetworkError, ShapeInferenceError
from nnperf.ir._network import Layer, Network, TensorSpec
from nnperf.ir._ops import Attributes, OpType
from nnperf.ir._shapes import Shape, numel
from nnperf.ir.importers._common import NameTable, Unsupported, one_value
from nnperf.ir.importers._onnx_generic import (
    FLOAT_TYPES,
    GenericRefusal,
    generic_attrs,
    outer_names,
    shape_only_operands,
)
from nnperf.ir.importers._onnx_quantized import QUANTIZED_FORMS, float_form
from nnperf.ir.importers._onnx_read import elem_type_name, literal_list, static_shapes
from nnperf.ir.importers._onnx_run_shapes import element_types
from nnperf.ir.importers._table import ImportRule

Mapped = tuple[OpType, Attributes]
"""An op and its attributes, for a layer that reads the node's first activation and writes its output."""
Result = tuple[OpType, Attributes, list[str], str]
"""A mapped node: its op and attributes, the activation tensors it reads and the tensor it writes."""
_METADATA_OPS = frozenset({"Shape", "Size"})
"""Operators that read only a tensor's size; in strict mode they are never layers."""
_INT8_OPS = frozenset({"Conv", "Gemm", "MatMul"})
"""Operators that run in int8 when their activation comes through a DequantizeLinear (ONNX Runtime's QDQ format)."""


@dataclass(frozen=True)
class Node:
    """A node as its handler sees it: attributes decoded, inputs split into activations and constants."""

    proto: onnx.NodeProto
    attrs: dict[str, Any]
    data_inputs: list[str]
    consts: list[str]
    data: set[str]
    """every activation tensor so far"""
    x: str
    """the first activation input"""
    x_shape: Shape
    out: str

    @classmethod
    def of(cls, node: onnx.NodeProto, data: set[str], shapes: Mapping[str, Shape | None]) -> Node:
        data_inputs = [t for t in node.input if t in data]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        return cls(node, attrs, data_inputs, [t for t in node.input if t and t not in data], data, data_inputs[0],
                   shapes.get(data_inputs[0]) or (), node.output[0])

    def single(self, mapped: Mapped | None) -> Result | None:
        """A layer reading the first activation input and writing the node's output."""
        return None if mapped is None else (mapped[0], mapped[1], self.data_inputs[:1], self.out)

    def text(self, key: str, default: str) -> str:
        """A string attribute (ONNX stores bytes)."""
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class Converter:
    """Maps the nodes of an inferred and folded model to the layers of a network, each by its operator's rule in
    ``rules`` (a node no rule maps becomes a generic layer, unless ``strict``); the handlers read the model
    through its lookups (shapes, constant values, consumers) and mark the nodes they absorb."""

    model: onnx.ModelProto
    name: str
    source: str
    rules: Mapping[str, ImportRule[OnnxHandler]]
    strict: bool = False
    not_run: str = ""
    """why ONNX Runtime could not run the file to find the sizes shape inference left unknown (none: it ran)"""

    def __post_init__(self) -> None:
        graph = self.model.graph
        self.opset = next((o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.initializers = {t.name: t for t in graph.initializer}
        self.shapes = static_shapes(self.model)
        self.types = element_types(self.model)
        self.constants: dict[str, np.ndarray] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for tensor in node.input:
                self.consumers.setdefault(tensor, []).append(node)
        self.graph_outputs = {o.name for o in graph.output}
        self.unsupported = Unsupported(self.source)
        self.names = NameTable()
        self.layer_of: dict[str, str] = {}  # activation tensor -> IR name producing it
        self.absorbed: set[int] = set()  # ids of nodes fused into another layer
        self.failed: set[str] = set()  # tensors computed from an unsupported node's output
        self.quantized: set[str] = set()  # tensors the file holds in 8 bits and the IR computes in float
        self.dequantized: set[str] = set()  # outputs of a DequantizeLinear of an activation
        self.int8_layers: set[str] = set()
        self.swapped: dict[str, str] = {}  # output of a deferred Transpose of the last two axes -> its input
        self.shape_only: dict[str, list[str]] = {}  # a generic layer's output -> its operands carried as shapes

    def convert(self) -> Network:
        """The network of the model's nodes that compute on activations."""
        graph = self.model.graph
        specs = []
        data: set[str] = set()
        for value in graph.input:
            if value.name in self.initializers:
                continue
            shape = self.shape_of(value.name, "graph input") or (1,)  # a scalar input is one element
            self.shapes[value.name] = shape
            spec = TensorSpec(self.names.unique(value.name), shape, elem_type_name(value))
            specs.append(spec)
            self.layer_of[value.name] = spec.name
            data.add(value.name)
        layers: list[Layer] = []
        for index, node in enumerate(graph.node):
            if node.op_type == "Constant":
                self.record_constant(node)
            if node.op_type == "CastLike" and node.input[0] not in data:  # a constant cast like a tensor
                value = self.value_of(node.input[0])
                if value is not None:
                    self.constants[node.output[0]] = value
                continue
            reads = [*node.input, *outer_names(node)]  # a subgraph's reads from outside are the node's too
            if (node.op_type in _METADATA_OPS and self.strict) or not any(t in data for t in reads):
                continue  # constant folding or shape arithmetic: not an activation
            # (a Shape the folding left reads a size that depends on values: a generic layer, and what it computes)
            data.update(t for t in node.output if t)
            if id(node) in self.absorbed or self._quantization_alias(node):
                continue
            rewritten = node.op_type in QUANTIZED_FORMS  # QLinearConv and its kin: the float operator, marked int8
            if rewritten:
                node = float_form(node)
            layers.extend(self._constant_layers(node, data))  # stored tensors combined with activations
            if self._defer_transpose(node):  # a swap of the last two axes read only by MatMul
                continue
            layers.extend(self._convert_node(node, index, data, rewritten))
        self.unsupported.raise_if_any()
        outputs = tuple(self.layer_of[o.name] for o in graph.output if o.name in self.layer_of)
        if not outputs:
            raise ShapeInferenceError(f"{self.source}: no graph output is computed from a graph input")
        if not layers:
            raise InvalidNetworkError(f"{self.source}: no node computes anything to predict (only conversions "
                                      "between 8-bit and float, and shape computations)")
        return Network(self.name, tuple(specs), tuple(layers), tuple(dict.fromkeys(outputs)),
                       frozenset(self.int8_layers))

    # ---- the lookups the handlers use -----------------------------------------------------------
    def shape_of(self, tensor: str, what: str) -> Shape:
        """The static shape of ``tensor`` (``what`` names it in the error when it has none)."""
        shape = self.shapes.get(tensor)
        if shape is None:
            raise ShapeInferenceError(
                f"{self.source}: the shape of {what} {tensor!r} cannot be inferred statically "
                "(fix the input size or re-export with static shapes)"
            )
        return shape

    def record_constant(self, node: onnx.NodeProto) -> None:
        """Keeps the value a Constant node writes."""
        for attr in node.attribute:
            if attr.name == "value":
                self.constants[node.output[0]] = numpy_helper.to_array(attr.t)
            elif attr.name in ("value_float", "value_int"):
                self.constants[node.output[0]] = np.array(onnx.helper.get_attribute_value(attr))
            elif attr.name in ("value_floats", "value_ints"):
                self.constants[node.output[0]] = np.array(list(onnx.helper.get_attribute_value(attr)))

    def value_of(self, tensor: str) -> np.ndarray | None:
        """The value of a constant tensor, when the file stores it (never computed)."""
        if not tensor:
            return None
        if tensor in self.constants:
            return self.constants[tensor]
        init = self.initializers.get(tensor)
        if init is not None and init.data_location != onnx.TensorProto.EXTERNAL:
            return numpy_helper.to_array(init)
        return None

    def sole_consumer(self, tensor: str, op_type: str) -> onnx.NodeProto | None:
        """The one node that reads ``tensor``, when it is an ``op_type`` node and ``tensor`` no graph output."""
        users = self.consumers.get(tensor, [])
        if len(users) == 1 and users[0].op_type == op_type and tensor not in self.graph_outputs:
            return users[0]
        return None

    def producer(self, tensor: str) -> onnx.NodeProto | None:
        """The node that writes ``tensor`` (None for a graph input or a stored tensor)."""
        return next((node for node in self.model.graph.node if tensor in node.output), None)

    # ---- mapping one node ----------------------------------------------------------------------
    def _convert_node(self, node: onnx.NodeProto, index: int, data: set[str], rewritten: bool = False) -> list[Layer]:
        """The layers of ``node`` (``rewritten``: the float form of a quantised operator, whose layers are int8)."""
        node_name = _readable_name(node) or node.name or f"{node.op_type}_{index}"
        if any(t in self.failed for t in node.input):
            # downstream of an unsupported node: its shapes are unknown, so only name it if it is unsupported too
            if self.strict and node.op_type not in self.rules:
                self.unsupported.add(self._describe(node), node_name)
            self.failed.update(node.output)
            return []
        int8 = rewritten or (node.op_type in _INT8_OPS and any(t in self.dequantized for t in node.input))
        rule = self.rules.get(node.op_type) if self._computes_in_float(node, data) else None
        mapped = None if rule is None else rule.handler(self, Node.of(node, data, self.shapes))
        can_be_generic = not self.strict and not rewritten  # a float form's stored operands are still 8-bit
        if mapped is None and can_be_generic:
            mapped = self._generic(node, node_name, data)
        if mapped is None:
            if node_name not in self.unsupported.nodes():
                self.unsupported.add(self._describe(node), node_name)
            self.failed.update(node.output)
            return []
        results = mapped if isinstance(mapped, list) else [mapped]  # a Split: several
        try:
            layers = [self._layer(node, node_name, result) for result in results]
        except InvalidNetworkError as exc:
            generic = (self._generic(node, node_name, data) if can_be_generic and results[0][0] is not OpType.GENERIC
                       else None)
            if generic is None:  # a dedicated layer type whose rules these shapes break (a 1-D MatMul operand)
                raise InvalidNetworkError(f"{self.source}: node {node_name!r}: {exc}") from exc
            results = generic
            layers = [self._layer(node, node_name, result) for result in results]
        for layer, (_, _, _, output) in zip(layers, results):
            self.layer_of[output] = layer.name
            if int8 and layer.op in (OpType.CONV, OpType.LINEAR, OpType.MATMUL):
                self.int8_layers.add(layer.name)
        return layers

    def _layer(self, node: onnx.NodeProto, node_name: str, result: Result) -> Layer:
        op, attrs, inputs, output = result
        producers = tuple(self.layer_of[t] for t in inputs)
        in_shapes = tuple(self.shape_of(t, "tensor") or (1,) for t in inputs)  # a rank-0 tensor: one element
        name = self.names.unique(node_name if len(node.output) == 1 else f"{node_name}.{output}")
        try:
            return Layer(name, op, producers, in_shapes, self.shape_of(output, f"output of {node_name}") or (1,), attrs)
        except InvalidNetworkError:
            self.names.release(name)
            raise

    def _quantization_alias(self, node: onnx.NodeProto) -> bool:
        """Whether ``node`` is a QuantizeLinear or DequantizeLinear of an activation: no layer, its output stands
        for the activation it converts (the IR computes in float; ``int8_layers`` says what the file runs in
        int8). A node that reads an 8-bit tensor and writes one (a MaxPool between a QLinearConv and a
        DequantizeLinear) computes in float in the IR too."""
        source = node.input[0] if node.input else ""
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and source in self.layer_of:
            self.layer_of[node.output[0]] = self.layer_of[source]
            if node.op_type == "QuantizeLinear":
                self.quantized.add(node.output[0])
                self.types[node.output[0]] = onnx.TensorProto.FLOAT
            else:
                self.dequantized.add(node.output[0])
            return True
        if any(t in self.quantized for t in node.input):
            for out in node.output:
                if self.types.get(out) in (onnx.TensorProto.UINT8, onnx.TensorProto.INT8):
                    self.types[out] = onnx.TensorProto.FLOAT
                    self.quantized.add(out)
        return False

    def _computes_in_float(self, node: onnx.NodeProto, data: set[str]) -> bool:
        """Whether every activation the node reads or writes is a float tensor (or of unknown type): the
        dedicated layers compute in float; a node on integers or booleans is kept as a generic layer."""
        tensors = [t for t in node.input if t in data] + [t for t in node.output if t]
        return all(self.types.get(t, 0) in FLOAT_TYPES or not self.types.get(t) for t in tensors)

    def _generic(self, node: onnx.NodeProto, node_name: str, data: set[str]) -> list[Result] | None:
        """One generic layer per output of ``node`` that is read (None, the reason recorded, when it cannot
        run alone)."""
        activations = list(dict.fromkeys(t for t in [*node.input, *outer_names(node)] if t in data))
        used = [k for k, out in enumerate(node.output)
                if out and (out in self.consumers or out in self.graph_outputs)] or [0]
        results: list[Result] = []
        try:
            for k in used:
                if self.shapes.get(node.output[k]) is None:
                    why = f", and ONNX Runtime cannot run the file to find it: {self.not_run}" if self.not_run else ""
                    raise GenericRefusal(f"{node.op_type} (its output shape cannot be inferred{why})")
                attrs = generic_attrs(node, activations, k, self.value_of, self.shapes.get, self.types, self.opset,
                                      self.initializers.keys() | self.constants.keys())
                results.append((OpType.GENERIC, attrs, activations, node.output[k]))
                self.shape_only[node.output[k]] = shape_only_operands(node, activations, self.value_of)
        except GenericRefusal as exc:
            self.unsupported.add(str(exc), node_name)
            return None
        return results

    def _defer_transpose(self, node: onnx.NodeProto) -> bool:
        """Records a Transpose of the last two axes whose readers are all MatMul nodes, which then read its
        input with ``transpose_a`` or ``transpose_b`` (True when the node is deferred so)."""
        if node.op_type != "Transpose" or node.input[0] not in self.layer_of or node.output[0] in self.graph_outputs:
            return False
        rank = len(self.shapes.get(node.input[0]) or ())
        perm = [int(p) for p in onnx.helper.get_attribute_value(node.attribute[0])] if node.attribute else []
        if rank < 2 or perm != list(range(rank - 2)) + [rank - 1, rank - 2]:
            return False
        users = self.consumers.get(node.output[0], [])
        if not users or any(u.op_type != "MatMul" for u in users):
            return False
        if any(t in self.initializers or t in self.constants for u in users for t in u.input):
            return False  # a product by a stored weight: a fully connected layer, which reads no transpose
        self.swapped[node.output[0]] = node.input[0]
        return True

    def _constant_layers(self, node: onnx.NodeProto, data: set[str]) -> list[Layer]:
        """A CONSTANT layer for each stored tensor an Add or Sub node combines with an activation (of any shape:
        the binary op broadcasts it, as ONNX does; an Add that ends a scale was absorbed before), and for each
        one a Concat joins that is not a scalar; the tensor then counts as an activation of the node. (A Mul by a
        tensor that is neither a scalar nor per-channel stays unsupported: it is no scale layer.)"""
        if node.op_type not in ("Concat", "Add", "Sub") or any(t in self.failed for t in node.input):
            return []
        if not self._computes_in_float(node, data):
            return []  # kept as a generic layer with its stored operands
        first = next((t for t in node.input if t in data), None)
        if first is None or first not in self.layer_of:
            return []
        x_shape = self.shape_of(first, "tensor") or (1,)  # a rank-0 tensor: one element
        made = []
        for tensor in node.input:
            shape = self.shapes.get(tensor)
            if not tensor or tensor in data or shape is None or (node.op_type == "Concat" and numel(shape) == 1):
                continue
            shape = self.shapes[tensor] = shape or (1,)  # a rank-0 scalar broadcasts as one element
            layer = Layer(self.names.unique(tensor), OpType.CONSTANT, (self.layer_of[first],), (x_shape,), shape)
            self.layer_of[tensor] = layer.name
            data.add(tensor)
            made.append(layer)
        return made

    def _describe(self, node: onnx.NodeProto) -> str:
        """How an unsupported node is named: its rule's refusal, else the operator (with a foreign domain)."""
        rule = self.rules.get(node.op_type)
        if rule is not None and rule.refusal:
            return rule.refusal
        domain = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
        return f"{domain}{node.op_type}"


OnnxHandler = Callable[[Converter, Node], Result | list[Result] | None]
"""Maps one node, or returns None when its attributes or operands are not supported."""


def f32(value: Any) -> float:
    """A float attribute as the decimal it was written as (ONNX stores float32: 1e-5 reads 9.99999974e-06); a
    one-element array of any rank counts as its element."""
    number = one_value(value)
    if number is None:
        raise ValueError(f"expected one number, got {value!r}")
    return float(f"{number:.7g}")


def _readable_name(node: onnx.NodeProto) -> str | None:
    """The PyTorch module path torch.onnx records for a node (e.g. 'layer1.0.conv1'), if any."""
    meta = {p.key: p.value for p in node.metadata_props}
    scopes = literal_list(meta.get("pkg.torch.onnx.name_scopes", "[]"))
    classes = literal_list(meta.get("pkg.torch.onnx.class_hierarchy", "[]")) or []
    if not scopes or not all(isinstance(x, str) for x in scopes):
        return None
    if len(scopes) >= 2 and len(classes) == len(scopes) and str(classes[-2]).startswith("torch.nn.modules."):
        return scopes[-2] or None
    return scopes[-1] or None
