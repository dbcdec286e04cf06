"""The ONNX node a generic layer keeps (:class:`~nnperf.ir.GenericAttrs`), read back for the graph builders.

Both builders run the node as the file wrote it: the ONNX builder copies its nodes into the graph, the torch
builder computes it with the torch function of its operator. Stored operands whose values the file kept come
back as they were; those it kept as shapes only (graph inputs ``w0``, ``w1``, ...) take the values given for
them (``given_weights``: a file's own), else deterministic random values
(:func:`~nnperf.measure.backends._weights.layer_rng`), zeros for integers.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper, version_converter

from nnperf.ir import GenericAttrs, Layer
from nnperf.measure.backends._given_weights import given_operands
from nnperf.measure.backends._weights import layer_rng

ELEMENT_DTYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.BOOL: np.bool_}
"""Element types whose numpy type is not ``onnx.helper.tensor_dtype_to_np_dtype``'s to use for inputs."""


class GenericNodeError(Exception):
    """A generic layer the builder cannot run; the message says why."""


@dataclass(frozen=True)
class GenericNode:
    """A generic layer's graph: its nodes, its stored operands by name (values), its output index."""

    graph: onnx.GraphProto
    stored: dict[str, np.ndarray]
    output_index: int

    @property
    def node(self) -> onnx.NodeProto:
        """The node that writes the layer's output (the last one: a restated node may need helpers before)."""
        return self.graph.node[-1]

    @property
    def scalar_inputs(self) -> frozenset[int]:
        """The activation inputs the node reads as rank-0 tensors (the IR holds them as one-element vectors)."""
        return frozenset(int(v.name[2:]) for v in self.graph.input
                         if v.name.startswith("in") and not v.type.tensor_type.shape.dim)

    @property
    def scalar_output(self) -> bool:
        """Whether the node writes a rank-0 tensor (the IR holds it as a one-element vector)."""
        return not self.graph.output[0].type.tensor_type.shape.dim

    @property
    def attributes(self) -> dict[str, Any]:
        return {a.name: helper.get_attribute_value(a) for a in self.node.attribute}


def generic_node(layer: Layer, seed: int = 0, opset: int | None = None) -> GenericNode:
    """The node of generic ``layer`` restated at ``opset`` (as stored when None), with its stored operands'
    values."""
    attrs = layer.attrs
    assert isinstance(attrs, GenericAttrs)
    try:
        graph = onnx.GraphProto.FromString(base64.b64decode(attrs.node))
    except (ValueError, DecodeError) as exc:  # base64's binascii.Error is a ValueError
        raise GenericNodeError(f"its stored node cannot be read ({type(exc).__name__})") from exc
    if not graph.node:
        raise GenericNodeError("its stored node is empty")
    if opset is not None and opset != attrs.opset and not graph.node[-1].domain:
        graph = _restated(graph, attrs.opset, opset)
    stored = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    rng = layer_rng(layer, seed)
    given = given_operands(layer)
    for value in graph.input:
        if value.name.startswith("w"):
            elem = value.type.tensor_type.elem_type
            shape = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
            dtype = helper.tensor_dtype_to_np_dtype(elem)
            if value.name in given:
                stored[value.name] = np.asarray(given[value.name]).astype(dtype).reshape(shape)
                continue
            stored[value.name] = (rng.random(shape, dtype=np.float32).astype(dtype) if np.issubdtype(dtype, np.floating)
                                  else np.zeros(shape, dtype))
    return GenericNode(graph, stored, attrs.output_index)


def _restated(graph: onnx.GraphProto, stated_at: int, opset: int) -> onnx.GraphProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", stated_at)])
    try:
        return version_converter.convert_version(model, opset).graph
    except (RuntimeError, ValueError) as exc:
        raise GenericNodeError(f"{graph.node[-1].op_type} cannot be restated at opset {opset}") from exc


def input_dtype(elem_type: int) -> np.dtype[Any]:
    """The numpy type of an input of ONNX element type ``elem_type``."""
    return np.dtype(ELEMENT_DTYPES.get(elem_type) or helper.tensor_dtype_to_np_dtype(elem_type))
