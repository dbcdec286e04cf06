"""Normalising an ONNX graph before it is mapped: shape computations and constant subgraphs folded into constants.

Exporters compute what is constant for a fixed input size: torch's exporter writes ``chunk`` and ``split`` as
Slice nodes whose bounds come from ``Shape -> Gather -> Div -> Cast -> Unsqueeze`` chains, Reshape targets from
``Shape -> Concat``, Resize scales and Expand shapes likewise; Paddle2ONNX and Ultralytics' exports do the same.
Once the graph inputs have static shapes (``_fix_input_shapes``), every such chain has one value, and the mapper
reads it as a constant.

:func:`fold_constants` walks the nodes in graph order, knowing the value of every stored initializer (the small
ones: large weights keep only their shapes), every Constant node's output, and the shape of every tensor shape
inference gave. A node is folded when

- it is a Shape or Size of a tensor whose shape is static (its value is the shape: no data needed), or
- it is a deterministic standard op (:data:`FOLDABLE`) whose inputs all have known values,

and none of its outputs has more than :data:`MAX_FOLDED_ELEMENTS` elements. A folded node's outputs become
initializers and the node is removed; the graph is then inferred again, so the shapes that depended on the
chain become static too. The values are computed by ``onnx.reference.ReferenceEvaluator``, the ONNX project's
own executable specification, one node at a time.

Why this and not a library pass: ONNX Runtime's offline basic optimisation (already a dependency) folds
constants too, but it keeps a symbolic batch symbolic, so the chains that start at ``Shape`` of a dynamic-batch
input stay, and it fuses nodes, so the layers would no longer be the file's; on the exporter-written files of
``bench/onnx_import_coverage.py`` it let 17 of 22 import, this folding 20. onnxsim and onnxslim were not tried:
each is one more dependency for what the reference evaluator does here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

MAX_FOLDED_ELEMENTS = 65536
"""A node whose outputs hold more elements than this is not folded (a constant tensor of that size is data, not
a shape computation, and storing it would bloat the graph)."""

FOLDABLE = frozenset({
    "Abs", "Add", "And", "Cast", "CastLike", "Ceil", "Concat", "ConstantOfShape", "Div", "Equal", "Expand",
    "Flatten", "Floor", "Gather", "Greater", "GreaterOrEqual", "Identity", "Less", "LessOrEqual", "Max", "Min",
    "Mod", "Mul", "Neg", "Not", "Or", "Pow", "Range", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSum",
    "Reshape", "Shape", "Size", "Slice", "Split", "Sqrt", "Squeeze", "Sub", "Tile", "Transpose", "Unsqueeze",
    "Where",
})
"""Deterministic standard ops that shape computations use; a node of another op (or another domain) is never
folded."""


def fold_constants(model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...] | None]) -> int:
    """Folds the shape computations and constant subgraphs of ``model``'s main graph in place (see the module
    docstring); ``shapes`` holds the static shape of each tensor shape inference resolved (None where it did
    not). Returns how many nodes were folded."""
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    values = _stored_values(graph)
    kept: list[onnx.NodeProto] = []
    folded: list[onnx.TensorProto] = []
    for node in graph.node:
        outputs = _fold(node, values, shapes, opset)
        if outputs is None:
            kept.append(node)
            continue
        for name, value in zip(node.output, outputs):
            if name:
                values[name] = value
                folded.append(numpy_helper.from_array(value, name))
    if not folded:
        return 0
    used = {t for node in kept for t in node.input} | {o.name for o in graph.output}
    count = len(graph.node) - len(kept)
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(t for t in folded if t.name in used)
    _forget_inferred(graph, {t.name for t in folded})
    return count


def _forget_inferred(graph: onnx.GraphProto, names: set[str]) -> None:
    """Drops the inferred shapes of ``names``, folded into initializers: an earlier inference's symbolic sizes
    (ViT's class token expanded to ``unk__1 x unk__2 x 768``) would otherwise stand beside the stored shape, and
    inference would read them and leave what the tensor feeds unknown."""
    kept = [v for v in graph.value_info if v.name not in names]
    if len(kept) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(kept)


def _stored_values(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """The values the file stores as initializers (the small ones: not dropped, not external); Constant nodes'
    outputs join as the walk folds them."""
    values = {}
    for init in graph.initializer:
        if init.data_location != onnx.TensorProto.EXTERNAL:
            values[init.name] = numpy_helper.to_array(init)
    return values


def _fold(node: onnx.NodeProto, values: dict[str, np.ndarray], shapes: Mapping[str, tuple[int, ...] | None],
          opset: int) -> list[np.ndarray] | None:
    """The values of ``node``'s outputs when it folds, else None."""
    if node.domain not in ("", "ai.onnx") or any(g.type == onnx.AttributeProto.GRAPH for g in node.attribute):
        return None
    if node.op_type == "Constant":
        return _evaluated(node, {}, opset)
    if node.op_type in ("Shape", "Size"):
        shape = shapes.get(node.input[0]) if node.input[0] not in values else values[node.input[0]].shape
        if shape is None:
            return None
        if node.op_type == "Size":
            return [np.array(math.prod(shape), dtype=np.int64)]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        start, end = attrs.get("start", 0), attrs.get("end")
        return [np.array(shape[slice(start, end)], dtype=np.int64)]
    if node.op_type not in FOLDABLE:
        return None
    inputs = [t for t in node.input if t]
    if not inputs or any(t not in values for t in inputs):
        return None
    return _evaluated(node, {t: values[t] for t in inputs}, opset)


def _evaluated(node: onnx.NodeProto, feeds: dict[str, np.ndarray], opset: int) -> list[np.ndarray] | None:
    try:
        results = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
    except Exception:  # noqa: BLE001 - a node the reference evaluator cannot run stays a node
        return None
    arrays = [np.asarray(r) for r in results]
    if any(a.dtype == object or a.size > MAX_FOLDED_ELEMENTS for a in arrays):
        return None
    return arrays
