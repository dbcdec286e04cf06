"""Generic layers: an ONNX node no rule maps, kept as it is so that the backends can run it.

A node with subgraphs (If, Loop, Scan) is kept too: the tensors its subgraphs read from outside
(:func:`outer_names`) become the layer's inputs, given their names back by Identity nodes before it.

Each output of the node that something reads becomes one GENERIC layer (:class:`~nnperf.ir.GenericAttrs`)
holding the node in a one-node ``GraphProto``: its activation inputs renamed ``in0``, ``in1``, ..., its stored
operands as initializers (or, when the file's values were too large to load, as typed graph inputs ``w0``,
``w1``, ... that the builders fill with random values), its outputs renamed ``out0``, ``out1``, ... The node is
restated at :data:`GENERIC_OPSET` when the file's opset is older, the opset the graph builders write by default,
so that its semantics do not depend on an old opset; a node of a newer opset stays at the file's (Gelu exists from
opset 20, Cast's ``saturate`` from 19), and the builders then write that opset. Float types are computed as
float32 by the backends: a cast to a float type casts to float32, and stored float operands are float32.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper, version_converter

from nnperf.ir._ops import GenericAttrs
from nnperf.ir._shapes import Shape, numel

GENERIC_OPSET = 17
"""The default-domain opset a generic node is stored at (the graph builders' default)."""

FLOAT_TYPES = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                         onnx.TensorProto.BFLOAT16})
"""Element types the backends compute as float32; a generic node records them as FLOAT."""

MAX_STORED_ELEMENTS = 1 << 22
"""Stored operands larger than this travel as shapes only (``w0``, ...): the builders fill them with random values."""


TYPE_ATTRIBUTES = frozenset({"to", "dtype", "output_dtype"})
"""Attributes that name an element type (Cast's ``to``, EyeLike's ``dtype``, ...)."""


class GenericRefusal(Exception):
    """A node that cannot become a generic layer; the message is the reason, named in the import error."""


def computed_type(elem_type: int) -> int:
    """The element type a backend computes a tensor of ``elem_type`` in (float32 for every float type)."""
    return onnx.TensorProto.FLOAT if elem_type in FLOAT_TYPES or not elem_type else elem_type


def generic_attrs(node: onnx.NodeProto, activations: Sequence[str], output_index: int,
                  value_of: Callable[[str], np.ndarray | None], shape_of: Callable[[str], Shape | None],
                  type_of: Mapping[str, int], opset: int, stored_names: Collection[str]) -> GenericAttrs:
    """The attributes of the generic layer computing output ``output_index`` of ``node``.

    ``activations`` are the node's inputs that are activations (in order); every other non-empty input is a
    stored operand (one of ``stored_names``: initializers and Constant outputs) or a constant the folding computed,
    whose value ``value_of`` gives (None when the file keeps only a large initializer's shape, then ``shape_of``
    must know it). A node with subgraphs (If, Loop, Scan) reads the tensors of :func:`outer_names` too: each
    comes in as an input (or stored operand) and an Identity gives it its name again before the node. Raises
    :class:`GenericRefusal` for a node that cannot run alone: one whose operands' shapes or types are unknown.
    """
    outer = outer_names(node)
    operands = _operands(node, outer, activations, value_of, shape_of, type_of, stored_names)
    graph = _one_node_graph(node, outer, activations, output_index, operands, shape_of, type_of)
    stated_at = GENERIC_OPSET
    if not node.domain or node.domain == "ai.onnx":
        graph, stated_at = _at_generic_opset(graph, opset)
    operator = node.op_type if not node.domain or node.domain == "ai.onnx" else f"{node.domain}.{node.op_type}"
    return GenericAttrs(
        operator=operator, node=base64.b64encode(graph.SerializeToString()).decode("ascii"),
        input_types=tuple(computed_type(type_of.get(t, 0)) for t in activations),
        output_type=computed_type(type_of.get(node.output[output_index], 0)), output_index=output_index,
        stored_elements=operands.stored, opset=stated_at)


@dataclass(frozen=True)
class _Operands:
    """What the node's copy reads: a name for each of its inputs and outer tensors ('' for an omitted input), and
    its stored operands, as initializers or as typed graph inputs, with their number of elements."""

    names: list[str]
    initializers: list[onnx.TensorProto]
    graph_inputs: list[onnx.ValueInfoProto]
    stored: int


def _operands(node: onnx.NodeProto, outer: Sequence[str], activations: Sequence[str],
              value_of: Callable[[str], np.ndarray | None], shape_of: Callable[[str], Shape | None],
              type_of: Mapping[str, int], stored_names: Collection[str]) -> _Operands:
    """Names the node's inputs and outer tensors ``in0``, ... (activations), ``c0``, ... (stored operands small
    enough to carry) or ``w0``, ... (stored operands that travel as shapes only)."""
    graph_inputs, initializers, names = [], [], []
    stored = 0
    for tensor in [*node.input, *outer]:
        if not tensor:
            names.append("")
        elif tensor in activations:
            name = f"in{activations.index(tensor)}"
            names.append(name)
        else:
            value = value_of(tensor)
            if _carried(value):
                name = f"c{len(initializers)}"
                value = np.asarray(value)
                if value.dtype.kind == "f":
                    value = value.astype(np.float32)
                initializers.append(numpy_helper.from_array(value, name))
                stored += int(value.size)
            else:
                shape = shape_of(tensor)
                if tensor not in stored_names:
                    raise GenericRefusal(f"{node.op_type} (an operand computed from sizes that nnperf could not "
                                         "fold into a constant)")
                if shape is None or not type_of.get(tensor):
                    raise GenericRefusal(f"{node.op_type} (a stored operand of unknown shape)")
                name = f"w{len(graph_inputs)}"
                graph_inputs.append(helper.make_tensor_value_info(name, computed_type(type_of[tensor]), shape))
                stored += numel(shape)
            names.append(name)
    return _Operands(names, initializers, graph_inputs, stored)


def _carried(value: np.ndarray | None) -> bool:
    """Whether a stored operand of this value travels with its values (else as a shape only)."""
    return value is not None and value.size <= MAX_STORED_ELEMENTS


def shape_only_operands(node: onnx.NodeProto, activations: Sequence[str],
                        value_of: Callable[[str], np.ndarray | None]) -> list[str]:
    """The stored operands of ``node`` (its subgraphs' outer reads included) that its generic layer carries as
    shapes only, in the order they are named ``w0``, ``w1``, ..."""
    return [t for t in [*node.input, *outer_names(node)] if t and t not in activations and not _carried(value_of(t))]


def _one_node_graph(node: onnx.NodeProto, outer: Sequence[str], activations: Sequence[str], output_index: int,
                    operands: _Operands, shape_of: Callable[[str], Shape | None],
                    type_of: Mapping[str, int]) -> onnx.GraphProto:
    """The graph of the node's copy computing output ``output_index``, Identity nodes giving the outer tensors
    their names before it, float types as float32."""
    inputs = [helper.make_tensor_value_info(f"in{i}", computed_type(type_of.get(t, 0)), shape_of(t))
              for i, t in enumerate(activations)]
    outputs = [f"out{k}" if out else "" for k, out in enumerate(node.output)]
    captured = [helper.make_node("Identity", [source], [name])
                for source, name in zip(operands.names[len(node.input):], outer)]
    copy = helper.make_node(node.op_type, operands.names[:len(node.input)], outputs, domain=node.domain or None)
    copy.attribute.extend(node.attribute)
    for attribute in copy.attribute:  # a cast to a float type casts to the float32 the backends compute in
        if attribute.name in TYPE_ATTRIBUTES and attribute.type == onnx.AttributeProto.INT:
            attribute.i = computed_type(attribute.i)
    result = node.output[output_index]
    return helper.make_graph([*captured, copy], node.op_type, inputs + operands.graph_inputs,
                             [helper.make_tensor_value_info(f"out{output_index}",
                                                            computed_type(type_of.get(result, 0)),
                                                            shape_of(result))],
                             initializer=operands.initializers)


def outer_names(node: onnx.NodeProto) -> list[str]:
    """The tensors ``node``'s subgraphs (If's branches, a Loop's or Scan's body, at any depth) read from outside
    them, in the order they are first read; none for a node without subgraphs."""
    found: dict[str, None] = {}

    def visit(graph: onnx.GraphProto, defined: set[str]) -> None:
        local = defined | {v.name for v in graph.input} | {t.name for t in graph.initializer}
        for inner in graph.node:
            for tensor in inner.input:
                if tensor and tensor not in local:
                    found.setdefault(tensor)
            for attribute in inner.attribute:
                for sub in _subgraphs(attribute):
                    visit(sub, local)
            local |= set(inner.output)

    for attribute in node.attribute:
        for sub in _subgraphs(attribute):
            visit(sub, set())
    return list(found)


def _subgraphs(attribute: onnx.AttributeProto) -> list[onnx.GraphProto]:
    if attribute.type == onnx.AttributeProto.GRAPH:
        return [attribute.g]
    return list(attribute.graphs) if attribute.type == onnx.AttributeProto.GRAPHS else []


def rename_outer(graph: onnx.GraphProto, names: Mapping[str, str]) -> None:
    """Renames, in place, every read of ``names`` (outer tensors) inside ``graph``'s nodes and their subgraphs."""
    for node in graph.node:
        for i, tensor in enumerate(node.input):
            if tensor in names:
                node.input[i] = names[tensor]
        for attribute in node.attribute:
            for sub in _subgraphs(attribute):
                rename_outer(sub, names)


def _at_generic_opset(graph: onnx.GraphProto, opset: int) -> tuple[onnx.GraphProto, int]:
    """``graph`` (a default-domain node at ``opset``) restated at :data:`GENERIC_OPSET` when ``opset`` is older,
    with the opset it is stated at."""
    if opset >= GENERIC_OPSET:
        return graph, opset
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    try:
        converted = version_converter.convert_version(model, GENERIC_OPSET)
    except (RuntimeError, ValueError, onnx.checker.ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GenericRefusal(f"{graph.node[0].op_type} (cannot be restated from opset {opset} at opset "
                             f"{GENERIC_OPSET}: {first[:120]})") from exc
    return _constants_stored(converted.graph), GENERIC_OPSET


def _constants_stored(graph: onnx.GraphProto) -> onnx.GraphProto:
    """``graph`` with the Constant nodes a conversion wrote (an attribute become an input) as initializers, so
    that it holds the one node again."""
    for node in [n for n in graph.node if n.op_type == "Constant"]:
        attr = node.attribute[0]
        value = numpy_helper.to_array(attr.t) if attr.name == "value" else np.array(helper.get_attribute_value(attr))
        graph.initializer.append(numpy_helper.from_array(np.asarray(value), node.output[0]))
        graph.node.remove(node)
    return graph
