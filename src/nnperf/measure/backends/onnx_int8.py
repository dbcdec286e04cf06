"""Static int8 in ONNX Runtime's QDQ format: the one quantisation scheme nnperf measures and synthesises.

Calibrating a system with ``--option precision=int8`` (:class:`~nnperf.measure.backends.OrtBackend`) and
synthesising an int8 program (``nnperf.optimize.synthesize``) quantise the same way, so a calibration predicts
the programs the synthesis builds:

* batch normalisation that alone follows a convolution is folded into it first (:func:`fold_batch_norms`), as ORT
  does when it optimises a float session, so no float BN sits between a DequantizeLinear and a QuantizeLinear;
* Conv, Gemm and MatMul nodes with a constant weight (:data:`QUANTIZABLE_OPS`) are quantised: weights int8 per
  output channel, activations per tensor, asymmetric (uint8 by default); a ReLU or Clip that alone reads a
  quantised layer's output is quantised with it (:func:`fused_activations`), which is how ORT fuses it into
  QLinearConv;
* ranges are MinMax over the calibration samples;
* on x86 CPUs without VNNI, uint8 activations with int8 weights take 7-bit weights (``reduce_range``,
  :func:`u8s8_saturates`).

:class:`NodeOwners` charges the time of a node in ORT's profile of such a model back to a node of the file.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

QUANTIZABLE_OPS = ("Conv", "Gemm", "MatMul")
"""Ops whose int8 kernels (QLinearConv, QGemm, MatMulInteger) ORT's CPU provider runs from a QDQ model."""

ACTIVATION_TYPES = ("uint8", "int8")

FUSED_ACTIVATIONS = ("Relu", "Clip")
WALK_BACK_OPS = ("BatchNormalization", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "Tanh")
DATA_MOVEMENT_OPS = ("Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze")

RANDOM_CALIBRATION_SAMPLES = 4
"""Random input batches the ranges of :func:`int8_model` are calibrated on (its times do not depend on them)."""


def u8s8_saturates(flags: Collection[str] | None = None, machine: str | None = None) -> bool:
    """Whether ONNX Runtime's uint8 x int8 kernels may saturate on this CPU: an x86 CPU without VNNI
    (``avx512_vnni`` or ``avx_vnni``) adds pairs of uint8 x int8 products in 16 bits (``vpmaddubsw``), which
    overflows for large products. ONNX Runtime's quantisation guide gives the remedy, 7-bit weights
    (``reduce_range``), for exactly these machines. Here a 4-layer network's int8 outputs strayed 4.0% from
    fp32 on an AVX2-only AMD EPYC, against about 0.5% on AVX-512 VNNI. ``flags`` and ``machine`` default to
    this CPU's (/proc/cpuinfo, ``platform.machine()``)."""
    import platform

    machine = machine if machine is not None else platform.machine()
    if machine.lower() not in ("x86_64", "amd64", "i686", "x86"):
        return False
    if flags is None:
        flags = _cpu_flags()
    return not ({"avx512_vnni", "avx_vnni"} & set(flags))


def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def int8_nodes(model: onnx.ModelProto) -> tuple[str, ...]:
    """Names of the nodes int8 can run, in graph order: Conv, Gemm and MatMul nodes whose weight (input 1) is an
    initializer (static quantisation stores it as int8 per output channel, which needs it known before the run).
    Nodes must be named (``nnperf.optimize.synthesize.named_model`` names a file's unnamed ones)."""
    initializers = {tensor.name for tensor in model.graph.initializer}
    return tuple(node.name for node in model.graph.node
                 if node.op_type in QUANTIZABLE_OPS and len(node.input) > 1 and node.input[1] in initializers)


def quantize_qdq(prepared: Path, out: Path, nodes: Collection[str], *, activation_type: str = "uint8",
                 ranges: Path | None = None, calibration: Sequence[dict[str, np.ndarray]] = (),
                 per_channel: bool = True) -> None:
    """Writes to ``out`` the QDQ int8 model of the BN-folded model at ``prepared`` in which exactly ``nodes`` (and
    the activations they fuse) run in int8. Ranges come from ``ranges`` (ORT's calibration cache, written once
    and reused) or else are calibrated on the ``calibration`` feeds. Weights get a scale per output channel
    (default) or, with ``per_channel`` False, one per tensor."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    model = onnx.load(str(prepared), load_external_data=False)
    chosen = frozenset(nodes)
    reader = None if ranges is not None else _FeedReader(calibration)
    with quiet_logging():
        quantize_static(
            prepared, out, calibration_data_reader=reader, quant_format=QuantFormat.QDQ,
            per_channel=per_channel, reduce_range=activation_type == "uint8" and u8s8_saturates(),
            activation_type=QuantType.QUInt8 if activation_type == "uint8" else QuantType.QInt8,
            weight_type=QuantType.QInt8, nodes_to_quantize=sorted(chosen | fused_activations(model, chosen)),
            calibration_cache_path=ranges)


def int8_model(model: onnx.ModelProto, seed: int = 0, per_channel: bool = True) -> onnx.ModelProto:
    """``model`` (named nodes, fixed input shapes) with every node int8 can run quantised, its ranges calibrated
    on :data:`RANDOM_CALIBRATION_SAMPLES` random input batches, its weights scaled per output channel or, with
    ``per_channel`` False, per tensor: what the ``precision=int8`` backend times. A model with no such node is
    returned as it is."""
    import onnx

    from nnperf.measure.backends._base import random_inputs

    folded = fold_batch_norms(model)
    nodes = int8_nodes(folded)
    if not nodes:
        return model
    initializers = {tensor.name for tensor in folded.graph.initializer}
    inputs = [(value.name, tuple(d.dim_value for d in value.type.tensor_type.shape.dim))
              for value in folded.graph.input if value.name not in initializers]
    feeds = [{name: array for (name, _), array in zip(inputs, random_inputs([shape for _, shape in inputs],
                                                                            seed + index))}
             for index in range(RANDOM_CALIBRATION_SAMPLES)]
    with tempfile.TemporaryDirectory(prefix="nnperf-int8-") as tmp:
        prepared, out = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        onnx.save(folded, str(prepared))
        quantize_qdq(prepared, out, nodes, calibration=feeds, per_channel=per_channel)
        return onnx.load(str(out))


class _FeedReader:
    """Feeds calibration inputs to ORT's calibrator (its CalibrationDataReader protocol: ``get_next``)."""

    def __init__(self, feeds: Sequence[dict[str, np.ndarray]]) -> None:
        self._feeds = iter(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


@contextlib.contextmanager
def quiet_logging() -> Iterator[None]:
    """Silences the quantiser's advice to pre-process (done here: BN folding; ORT fuses the rest)."""
    level = logging.root.level
    logging.root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logging.root.setLevel(level)


def fused_activations(model: onnx.ModelProto, chosen: frozenset[str]) -> set[str]:
    """The ReLU/Clip nodes that read only a chosen layer's output, which is read by nothing else."""
    producer = {out: node.name for node in model.graph.node for out in node.output}
    readers: dict[str, int] = defaultdict(int)
    for node in model.graph.node:
        for name in node.input:
            readers[name] += 1
    graph_outputs = {out.name for out in model.graph.output}
    return {node.name for node in model.graph.node
            if node.op_type in FUSED_ACTIVATIONS and producer.get(node.input[0]) in chosen
            and readers[node.input[0]] == 1 and node.input[0] not in graph_outputs}


def fold_batch_norms(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` in which each BatchNormalization that alone reads a Conv's output is folded into
    that Conv: W' = W * s and b' = (b - mean) * s + beta per output channel, with s = gamma / sqrt(var + eps).
    The Conv keeps its name and takes the BN's output tensor."""
    import onnx
    from onnx import numpy_helper

    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    graph = folded.graph
    weights = {tensor.name: tensor for tensor in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    readers: dict[str, int] = defaultdict(int)
    for node in graph.node:
        for name in node.input:
            readers[name] += 1
    graph_outputs = {out.name for out in graph.output}
    removed = []
    for bn in graph.node:
        if bn.op_type != "BatchNormalization":  # a Constant, say, has no input at all
            continue
        conv = producer.get(bn.input[0])
        if (conv is None or conv.op_type != "Conv"
                or readers[bn.input[0]] != 1 or bn.input[0] in graph_outputs
                or not all(name in weights for name in list(bn.input[1:5]) + list(conv.input[1:]))
                or any(a.name == "training_mode" and a.i for a in bn.attribute)):
            continue
        gamma, beta, mean, var = (numpy_helper.to_array(weights[name]).astype(np.float64) for name in bn.input[1:5])
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        scale = gamma / np.sqrt(var + eps)
        w = numpy_helper.to_array(weights[conv.input[1]]).astype(np.float64)
        b = numpy_helper.to_array(weights[conv.input[2]]).astype(np.float64) if len(conv.input) > 2 else 0.0
        w_name, b_name = f"{conv.name}_bn_folded_weight", f"{conv.name}_bn_folded_bias"
        graph.initializer.append(numpy_helper.from_array((w * scale.reshape(-1, *[1] * (w.ndim - 1)))
                                                         .astype(np.float32), w_name))
        graph.initializer.append(numpy_helper.from_array(((b - mean) * scale + beta).astype(np.float32), b_name))
        del conv.input[1:]
        conv.input.extend([w_name, b_name])
        conv.output[0] = bn.output[0]
        removed.append(bn)
    for bn in removed:
        graph.node.remove(bn)
    drop_unused_initializers(graph)
    return folded


def drop_unused_initializers(graph: onnx.GraphProto) -> None:
    used = {name for node in graph.node for name in node.input}
    keep = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)


class NodeOwners:
    """Charges an ORT node (by the name in a profile) to a node of the model file ORT optimised.

    ORT's names, as checked on ONNX Runtime 1.32: a fused node (Conv+BN, FusedConv, QLinearConv and QGemm
    from a QDQ group) keeps the name of the Conv/Gemm it replaces, or that name plus ``_token_<n>`` when it
    is rewritten again (the NHWC int8 convolutions of ORT_ENABLE_ALL); an NCHWc node is named after its output
    tensor plus ``_nchwc``, the tensor of the last op fused into it (BN or ReLU), so it is traced back to the
    Conv or MaxPool that produced it; a node ORT copies gets ``/duplicated``.  A QuantizeLinear or
    DequantizeLinear that ORT did not fuse is charged to the int8 layer it converts for: a DequantizeLinear of
    a weight to its reader, a DequantizeLinear of an int8 layer's output to that layer, a QuantizeLinear to
    the one int8 layer that reads it (else to the int8 layer that wrote it).  A QuantizeLinear that ORT's QDQ
    propagation moved up across a Reshape/Flatten/Transpose is named ``<tensor>_q`` and is followed down to
    the QuantizeLinear of the file it stands for.
    """

    def __init__(self, model: onnx.ModelProto) -> None:
        self._nodes = {node.name: node for node in model.graph.node}
        self._producer = {out: node for node in model.graph.node for out in node.output}
        self._readers: dict[str, list[Any]] = defaultdict(list)
        for node in model.graph.node:
            for name in node.input:
                self._readers[name].append(node)
        self._initializers = {tensor.name for tensor in model.graph.initializer}

    def owner(self, ort_name: str) -> str:
        name = ort_name.removesuffix("/duplicated")
        while name not in self._nodes and "_token_" in name:
            name = name.rsplit("_token_", 1)[0]
        node = self._nodes.get(name)
        if node is None and name.endswith("_nchwc"):
            node = self._walk_back(name.removesuffix("_nchwc"))
        if node is None and name.endswith("_q"):
            node = self._moved_quantize(name.removesuffix("_q"))
        if node is None:
            return ort_name
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            owner = self._qdq_owner(node)
            return owner.name if owner is not None else ort_name
        return str(node.name)

    def _walk_back(self, tensor: str) -> Any:
        node = self._producer.get(tensor)
        while node is not None and node.op_type in WALK_BACK_OPS:
            node = self._producer.get(node.input[0])
        return node

    def _moved_quantize(self, tensor: str) -> Any:
        """The QuantizeLinear that ORT's QDQ propagation moved up to ``tensor`` across data-movement ops."""
        while len(self._readers[tensor]) == 1:
            reader = self._readers[tensor][0]
            if reader.op_type == "QuantizeLinear":
                return reader
            if reader.op_type not in DATA_MOVEMENT_OPS:
                return None
            tensor = reader.output[0]
        return None

    def _is_int8_layer(self, node: Any) -> bool:
        if node is None or node.op_type not in QUANTIZABLE_OPS or len(node.input) < 2:
            return False
        weight = self._producer.get(node.input[1])
        return weight is not None and weight.op_type == "DequantizeLinear"

    def _qdq_owner(self, node: Any) -> Any:
        if node.op_type == "DequantizeLinear" and node.input[0] in self._initializers:
            readers = self._readers[node.output[0]]
            return readers[0] if len(readers) == 1 else None
        quantize = node if node.op_type == "QuantizeLinear" else self._producer.get(node.input[0])
        if quantize is None or quantize.op_type != "QuantizeLinear":
            return None
        writer = self._walk_back(quantize.input[0])
        readers = [reader for dq in self._readers[quantize.output[0]] for reader in self._readers[dq.output[0]]
                   if self._is_int8_layer(reader)]
        if node.op_type == "DequantizeLinear" and self._is_int8_layer(writer):
            return writer
        if len(readers) == 1:
            return readers[0]
        return writer if self._is_int8_layer(writer) else None
