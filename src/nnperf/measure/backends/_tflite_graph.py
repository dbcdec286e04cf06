"""LiteRT (.tflite) models written from IR networks, with the deterministic weights of :func:`layer_weights`.

There is no TensorFlow here: the model is written with the flatbuffer schema LiteRT ships as Python
(``ai_edge_litert.schema_py_generated``, schema version 3, file identifier ``TFL3``), imported only when a model is
serialised. Each op's operators come from its emitter in :mod:`nnperf.measure.backends._tflite_ops`.

Layout: TFLite computes in NHWC. Every 4-D activation is kept in NHWC inside the model and the attributes are
converted (a concat over the channels joins axis 3, a pool pads H and W); an op whose meaning depends on NCHW order
(the flattening of a 4-D tensor, a matrix product over its last two axes) reads the tensor through a TRANSPOSE back
to NCHW first, as onnx2tf does, and a TRANSPOSE whose non-unit axes keep their order is written as the RESHAPE it
is. A network's inputs and outputs keep the IR's NCHW shapes, through a TRANSPOSE at the entry and at the exit, so
its feeds are the arrays every other backend gets. A one-layer program (:func:`layer_tflite`) instead takes each
input in the layout its operator reads it in, so that no conversion the network would not run is timed.

Fusions: as the TFLite converter does to real models, a batch norm or a per-channel scale that directly follows a
convolution, a transposed convolution or a fully connected layer is folded into its weights, and a following RELU
or RELU6 becomes the ``fused_activation_function`` of that operator or of an ADD, SUB, MUL or DIV. Such a chain
is one *group*, named after its first layer; every other layer is a group of its own, but a constant (a stored
tensor, no operator) joins its first consumer's group and an identity or a dropout its producer's. Every operator
written records its group (None for the network's entry and exit transposes), so the times of a group's operators
belong to exactly the layers in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from nnperf.errors import UnsupportedOperatorError
from nnperf.ir import GenericAttrs, Layer, Network, OpType, TensorSpec
from nnperf.measure._memory import require_memory
from nnperf.measure.backends._tflite_ops import EMITTERS
from nnperf.measure.backends._tflite_writer import (
    ACTIVATION_HEADS,
    ALIASES,
    FOLDING_HEADS,
    FUSED_ACTIVATIONS,
    Fold,
    TfliteModel,
    TfliteUnsupported,
    TfliteWriter,
    affine_of,
)


def _sole_consumer(network: Network, name: str) -> Layer | None:
    """The one layer that reads ``name``, where ``name`` is no network output and that layer reads nothing else."""
    consumers = network.consumers(name)
    if len(consumers) != 1 or name in network.outputs:
        return None
    consumer = network.layer(consumers[0])
    return consumer if set(consumer.inputs) == {name} and len(consumer.inputs) == 1 else None


def _foldable(head: Layer, successor: Layer) -> bool:
    """Whether ``successor`` (a batch norm or scale over axis 1) scales the head's output channels."""
    if successor.op not in (OpType.BATCH_NORM, OpType.SCALE) or head.op not in FOLDING_HEADS:
        return False
    return head.op is not OpType.LINEAR or len(head.output_shape) == 2


def plan_groups(network: Network, seed: int) -> tuple[dict[str, Fold], dict[str, str]]:
    """The fused chains (first layer -> what it writes for the chain) and every layer's group."""
    folds: dict[str, Fold] = {}
    group_of: dict[str, str] = {}
    for layer in network.layers:
        if layer.name in group_of:
            continue
        group_of[layer.name] = layer.name
        if layer.op not in ACTIVATION_HEADS:
            continue
        scale: np.ndarray | None = None
        shift: np.ndarray | None = None
        activation, current = "NONE", layer
        while (successor := _sole_consumer(network, current.name)) is not None:
            if _foldable(layer, successor):
                s, t = affine_of(successor, seed)
                scale, shift = (s, t) if scale is None or shift is None else (scale * s, shift * s + t)
            elif successor.op in FUSED_ACTIVATIONS:
                activation = FUSED_ACTIVATIONS[successor.op]
            else:
                break
            group_of[successor.name] = layer.name
            current = successor
            if activation != "NONE":
                break
        if current is not layer:
            folds[layer.name] = Fold(current.name, scale, shift, activation)
    for layer in network.layers:  # producers first: an identity of an identity joins the first producer's group
        if layer.op in ALIASES and layer.inputs[0] in group_of:
            group_of[layer.name] = group_of[layer.inputs[0]]
    for layer in reversed(network.layers):  # consumers first: a constant read by a constant ...
        if layer.op is OpType.CONSTANT:
            consumers = network.consumers(layer.name)
            if consumers:
                group_of[layer.name] = group_of[consumers[0]]
    return folds, group_of


# ---------------------------------------------------------------------- networks and layers
def build_tflite(network: Network, seed: int = 0) -> TfliteModel:
    """``network`` as a .tflite model, NCHW at its inputs and outputs, its weights those of :func:`layer_weights`.

    Raises UnsupportedOperatorError naming every layer it cannot express (generic layers: LiteRT runs nnperf's
    dedicated layer types only), and InsufficientMemoryError when its weights and tensors would not fit in the
    free memory.
    """
    _refuse_generic(network.name, network.layers)
    require_memory(network.layers, [s.shape for s in network.inputs], f"network {network.name!r}")
    writer = TfliteWriter(seed)
    for spec in network.inputs:
        writer.shapes[spec.name] = spec.shape
        writer.define(spec.name, writer.tensor(spec.shape, spec.name), False)
        writer.graph.inputs.append(writer.tensors[spec.name][False])
        writer.entry.add(spec.name)
    folds, group_of = plan_groups(network, seed)
    _write_layers(writer, network, folds, group_of)
    writer.group = None  # the exit belongs to no layer
    for name in network.outputs:
        writer.graph.outputs.append(writer.read(name, False))
    return _model(writer, network, group_of, (False,) * len(network.inputs), (False,) * len(network.outputs))


def layer_tflite(layer: Layer, seed: int = 0) -> TfliteModel:
    """One layer alone as a .tflite program, its weights as in :func:`build_tflite`: its inputs (``in0``,
    ``in1``, ...) in the layout its operators read them in (NHWC for a convolution's), its output as it writes it.
    A layer that writes no operator in a network (a constant, an identity) writes a RESHAPE (a copy) here, so the
    program runs something."""
    _refuse_generic(layer.name, [layer])
    require_memory([layer], layer.input_shapes, f"layer {layer.name!r}")
    names = [f"in{i}" for i in range(len(layer.inputs))]
    alone = replace(layer, inputs=tuple(names))
    network = Network(layer.name, tuple(TensorSpec(n, s) for n, s in zip(names, layer.input_shapes)), (alone,),
                      (layer.name,))
    writer = TfliteWriter(seed)
    for i, (name, shape) in enumerate(zip(names, layer.input_shapes)):
        writer.shapes[name] = shape
        writer.pending[name] = i
    _write_layers(writer, network, {}, {layer.name: layer.name})
    if not writer.graph.operators:  # a constant, an identity: a program must run something
        source, nhwc = writer.read_any(layer.name)
        copied = writer.node("RESHAPE", [source, writer.const(np.array(writer.shape(source)), layer.name + "/shape")],
                             writer.shape(source), layer.name + "/copy")
        writer.define(layer.name, copied, nhwc)
    output, output_nhwc = writer.read_any(layer.name)
    writer.graph.outputs.append(output)
    order = sorted(range(len(writer.graph.inputs)), key=lambda i: writer.input_positions[i])
    writer.graph.inputs = [writer.graph.inputs[i] for i in order]
    return _model(writer, network, {layer.name: layer.name}, tuple(writer.inputs_nhwc[i] for i in order),
                  (output_nhwc,))


def _model(writer: TfliteWriter, network: Network, group_of: Mapping[str, str], inputs_nhwc: tuple[bool, ...],
           outputs_nhwc: tuple[bool, ...]) -> TfliteModel:
    groups: dict[str, list[str]] = {}
    for layer in network.layers:
        groups.setdefault(group_of[layer.name], []).append(layer.name)
    return TfliteModel(writer.graph, {group: tuple(members) for group, members in groups.items()}, inputs_nhwc,
                       outputs_nhwc)


def _write_layers(writer: TfliteWriter, network: Network, folds: Mapping[str, Fold],
                  group_of: Mapping[str, str]) -> None:
    """Writes every layer's operators (a fused chain's by its first layer), collecting the ones it cannot express."""
    for layer in network.layers:
        writer.shapes[layer.name] = layer.output_shape
    problems: dict[str, list[str]] = {}
    for layer in network.layers:
        if group_of[layer.name] != layer.name and layer.name not in folds and layer.op not in ALIASES | {
                OpType.CONSTANT}:
            continue  # written by its chain's first layer
        if not all(writer.defined(name) for name in layer.inputs):
            continue  # downstream of a layer already refused
        writer.group = group_of[layer.name]
        emitter = EMITTERS.get(layer.op)
        try:
            if emitter is None:
                raise TfliteUnsupported("no LiteRT writer for this op")
            emitter(writer, layer, folds.get(layer.name, Fold(layer.name)))
        except TfliteUnsupported as exc:
            problems.setdefault(f"{layer.op.value} ({exc})", []).append(layer.name)
    if problems:
        raise UnsupportedOperatorError(network.name, problems)


def _refuse_generic(what: str, layers: Sequence[Layer]) -> None:
    """Generic layers (ONNX operators kept as they are) are named, each with its layers, and the backend that runs
    them."""
    by_operator: dict[str, list[str]] = {}
    for layer in layers:
        if isinstance(layer.attrs, GenericAttrs):
            by_operator.setdefault(f"generic {layer.attrs.operator} (LiteRT runs nnperf's dedicated layer types only; "
                                   "measure it with --backend onnxruntime)", []).append(layer.name)
    if by_operator:
        raise UnsupportedOperatorError(what, by_operator)


