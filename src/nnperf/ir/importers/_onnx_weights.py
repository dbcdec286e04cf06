"""A file's own parameters for the layers of its IR, in the layout and names the graph builders use
(``nnperf.measure.backends``' ``layer_weights``), so that a network rebuilt from the IR computes what the file
computes and can be checked against ONNX Runtime on the file.

Each layer with parameters is followed back to the node that writes its output (``Converter.layer_of``) and the
stored tensors that node and the nodes fused into it read:

- CONV, CONV_TRANSPOSE: the weight and bias as ONNX stores them (the builders' layout);
- LINEAR: Gemm's B as (out, in) (transposed unless ``transB``) times ``alpha``, ``beta`` times C; or a MatMul's
  (in, out) weight transposed, and the vector the fused Add adds;
- BATCH_NORM: scale, B, mean and var; SCALE: the Mul's factors (or the Div's reciprocals) and the fused Add's
  shift; PRELU: the slopes;
- LAYER_NORM, GROUP_NORM: LayerNormalization's or InstanceNormalization's scale and B, or the Mul and Add after
  the exporter's decomposed form (ones and zeros where it has none);
- CONSTANT: the stored tensor; GENERIC: the operands its node carries as shapes only (``w0``, ``w1``, ...).

Values the importer did not load (large initializers) are read from the file once, when first needed. A layer
whose parameters are computed by other nodes, or held in 8 bits, is listed as missing: the builders give it
random ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from nnperf.ir._network import Layer, Network
from nnperf.ir._ops import GroupNormAttrs, NormAttrs, OpType
from nnperf.ir.importers._onnx_converter import Converter
from nnperf.ir.importers._onnx_generic import outer_names
from nnperf.ir.importers._onnx_run_shapes import values_by_running


@dataclass(frozen=True)
class FileWeights:
    """The parameters a file gives the layers of its IR."""

    layers: Mapping[str, Mapping[str, np.ndarray]]
    """layer name -> parameter name -> values (float32 for float parameters)"""
    missing: tuple[str, ...] = ()
    """layers with parameters the file does not give as stored tensors (computed, or 8-bit): built at random"""
    tensors: Mapping[str, str] = field(default_factory=dict)
    """layer name -> the file's tensor it computes (to compare a layer's output with the file's)"""


@dataclass
class _Values:
    """The value of a stored tensor: the converter's (small initializers, Constant nodes, folded constants),
    else the file's, read once when a value the importer did not load is first asked for; a tensor that nodes
    compute from stored tensors alone is noted (``wanted``) until :meth:`compute` finds it."""

    converter: Converter
    path: Path
    wanted: set[str] = field(default_factory=set)
    _computed: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _file: dict[str, onnx.TensorProto] | None = field(default=None, repr=False)
    _stored_only: set[str] | None = field(default=None, repr=False)

    def __call__(self, tensor: str) -> np.ndarray | None:
        if not tensor:
            return None
        value = self.converter.value_of(tensor)
        if value is None and tensor in self.converter.initializers:
            if self._file is None:
                self._file = {t.name: t for t in onnx.load(str(self.path)).graph.initializer}
            proto = self._file.get(tensor)
            value = None if proto is None else numpy_helper.to_array(proto)
        if value is None:
            value = self._computed.get(tensor)
        if value is None:
            if self._stored_only is None:
                self._stored_only = _computed_from_stored(self.converter.model.graph)
            if tensor in self._stored_only:
                self.wanted.add(tensor)
            return None
        value = np.asarray(value)
        return value.astype(np.float32) if value.dtype.kind == "f" else value

    def compute(self) -> None:
        """Finds the values of the ``wanted`` tensors in one run of the file in ONNX Runtime."""
        found, _ = values_by_running(self.converter.model, sorted(self.wanted), self.path)
        self._computed.update(found)
        self.wanted.clear()


def _computed_from_stored(graph: onnx.GraphProto) -> set[str]:
    """The tensors nodes compute from stored tensors alone (no graph input reaches them)."""
    initializers = {t.name for t in graph.initializer}
    reached = {v.name for v in graph.input if v.name not in initializers}
    computed = set()
    for node in graph.node:
        reads = [*node.input, *outer_names(node)]
        (reached if any(t in reached for t in reads) else computed).update(t for t in node.output if t)
    return computed


@dataclass(frozen=True)
class _Site:
    """A layer, the node that writes its output and the lookups the extractors use."""

    layer: Layer
    node: onnx.NodeProto
    value: _Values
    producer: Mapping[str, onnx.NodeProto]

    def stored(self, node: onnx.NodeProto | None, index: int) -> np.ndarray | None:
        """The value of ``node``'s input ``index`` (None when it is no stored tensor)."""
        return None if node is None or len(node.input) <= index else self.value(node.input[index])

    def split(self, node: onnx.NodeProto | None) -> tuple[str, np.ndarray] | None:
        """A binary node's activation operand and the value of its stored one (through a CastLike of a stored
        tensor, as torch.onnx writes); None unless exactly one operand is stored."""
        if node is None or len(node.input) != 2:
            return None
        found = [(i, self._stored_through_cast(t)) for i, t in enumerate(node.input)]
        stored = [(i, v) for i, v in found if v is not None]
        if len(stored) != 1:
            return None
        index, value = stored[0]
        return node.input[1 - index], value

    def _stored_through_cast(self, tensor: str) -> np.ndarray | None:
        value = self.value(tensor)
        cast = self.producer.get(tensor)
        if value is None and cast is not None and cast.op_type == "CastLike":
            value = self.value(cast.input[0])
        return value


Params = dict[str, np.ndarray]
_Extractor = Callable[[_Site], Params | None]


def file_weights(c: Converter, network: Network, path: Path) -> FileWeights:
    """The parameters the file at ``path`` gives the layers of ``network``, which ``c`` converted from it."""
    written: dict[str, str] = {}
    for tensor, layer_name in c.layer_of.items():  # a layer's own output first, aliases of it after
        written.setdefault(layer_name, tensor)
    values = _Values(c, path)
    found, missing = _extracted(c, network.layers, written, values)
    if missing and values.wanted:  # parameters computed from stored tensors: one run of the file gives them
        values.compute()
        again, missing = _extracted(c, [layer for layer in network.layers if layer.name in missing], written, values)
        found.update(again)
    computed = {layer.name: written[layer.name] for layer in network.layers if layer.name in written}
    return FileWeights(found, tuple(missing), computed)


def _extracted(c: Converter, layers: Sequence[Layer], written: Mapping[str, str],
               values: _Values) -> tuple[dict[str, Params], list[str]]:
    """The parameters found for ``layers``, and the names of the layers with parameters not found."""
    producer = {out: node for node in c.model.graph.node for out in node.output if out}
    found: dict[str, Params] = {}
    missing = []
    for layer in layers:
        tensor = written.get(layer.name, "")
        if layer.op not in _EXTRACTORS or (layer.op is OpType.GENERIC and not c.shape_only.get(tensor)):
            continue
        extract, node = _EXTRACTORS[layer.op], producer.get(tensor)
        if layer.op is OpType.CONSTANT:
            params = _constant(layer, values(tensor))
        elif layer.op is OpType.GENERIC:
            params = _generic_operands(c.shape_only[tensor], values)
        else:
            params = None if node is None or extract is None else extract(_Site(layer, node, values, producer))
        if params is None:
            missing.append(layer.name)
        else:
            found[layer.name] = params
    return found, missing


def _conv(s: _Site) -> Params | None:
    if s.node.op_type not in ("Conv", "ConvTranspose"):
        return None
    weight, bias = s.stored(s.node, 1), s.stored(s.node, 2)
    if weight is None or (len(s.node.input) > 2 and s.node.input[2] and bias is None):
        return None
    return {"weight": weight} | ({} if bias is None else {"bias": bias.reshape(-1)})


def _linear(s: _Site) -> Params | None:
    node, out = s.node, s.layer.output_shape[-1]
    if node.op_type == "Gemm":
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        b, c = s.stored(node, 1), s.stored(node, 2)
        if b is None or (len(node.input) > 2 and node.input[2] and c is None):
            return None
        weight = (b if attrs.get("transB", 0) else b.T) * np.float32(attrs.get("alpha", 1.0))
        params = {"weight": np.ascontiguousarray(weight)}
        if c is not None:
            params["bias"] = (np.broadcast_to(c, (1, out)).reshape(out) * np.float32(attrs.get("beta", 1.0)))
        return params
    bias = None
    if node.op_type == "Add":  # a MatMul and the Add of a bias after it
        split = s.split(node)
        if split is None:
            return None
        bias = np.broadcast_to(split[1], (1, out)).reshape(out)
        node = s.producer.get(split[0])
    weight = s.stored(node, 1) if node is not None and node.op_type == "MatMul" else None
    if weight is None:
        return None
    return {"weight": np.ascontiguousarray(weight.T)} | ({} if bias is None else {"bias": bias})


def _batch_norm(s: _Site) -> Params | None:
    if s.node.op_type != "BatchNormalization":
        return None
    found = {key: s.stored(s.node, i) for i, key in enumerate(("weight", "bias", "mean", "var"), start=1)}
    if any(v is None for v in found.values()):
        return None
    return {key: v.reshape(-1) for key, v in found.items() if v is not None}


def _scale(s: _Site) -> Params | None:
    node, bias = s.node, None
    if node.op_type == "Add":  # the shift after the factors
        split = s.split(node)
        if split is None:
            return None
        bias = split[1].reshape(-1)
        node = s.producer.get(split[0])
    split = s.split(node) if node is not None and node.op_type in ("Mul", "Div") else None
    if split is None or node is None or (node.op_type == "Div" and node.input[0] != split[0]):
        return None
    factors = split[1].reshape(-1)
    scale = (np.float32(1.0) / factors if node.op_type == "Div" else factors).astype(np.float32)
    return {"scale": scale} | ({} if bias is None else {"bias": bias})


def _prelu(s: _Site) -> Params | None:
    slope = s.stored(s.node, 1) if s.node.op_type == "PRelu" else None
    return None if slope is None else {"slope": slope.reshape(-1)}


def _norm(s: _Site) -> Params | None:
    """LayerNormalization or InstanceNormalization's scale and B, or the decomposed form's Mul and Add."""
    attrs = s.layer.attrs
    assert isinstance(attrs, (NormAttrs, GroupNormAttrs))
    size = s.layer.input_shape[attrs.axis] if isinstance(attrs, NormAttrs) else s.layer.input_shape[1]
    if s.node.op_type in ("LayerNormalization", "InstanceNormalization"):
        weight, bias = s.stored(s.node, 1), s.stored(s.node, 2)
        if weight is None or (len(s.node.input) > 2 and s.node.input[2] and bias is None):
            return None
        return {"weight": weight.reshape(-1), "bias": np.zeros(size, np.float32) if bias is None else bias.reshape(-1)}
    if not attrs.affine:
        return {"weight": np.ones(size, np.float32), "bias": np.zeros(size, np.float32)}
    shift = s.split(s.node) if s.node.op_type == "Add" else None
    mul = None if shift is None else s.producer.get(shift[0])
    factors = s.split(mul) if mul is not None and mul.op_type == "Mul" else None
    if shift is None or factors is None:
        return None
    return {"weight": factors[1].reshape(-1), "bias": shift[1].reshape(-1)}


def _constant(layer: Layer, value: np.ndarray | None) -> Params | None:
    if value is None:
        return None
    return {"value": np.asarray(value, np.float32).reshape(layer.output_shape)}


def _generic_operands(tensors: list[str], value: _Values) -> Params | None:
    """A generic layer's shape-only operands ``w0``, ``w1``, ... (those its node reads, in order)."""
    found = {f"w{k}": value(t) for k, t in enumerate(tensors)}
    return None if any(v is None for v in found.values()) else {k: v for k, v in found.items() if v is not None}


_EXTRACTORS: Mapping[OpType, _Extractor | None] = {
    OpType.CONV: _conv,
    OpType.CONV_TRANSPOSE: _conv,
    OpType.LINEAR: _linear,
    OpType.BATCH_NORM: _batch_norm,
    OpType.SCALE: _scale,
    OpType.PRELU: _prelu,
    OpType.LAYER_NORM: _norm,
    OpType.GROUP_NORM: _norm,
    OpType.CONSTANT: None,  # the stored tensor itself (see file_weights)
    OpType.GENERIC: None,  # its shape-only operands
}
"""IR ops with parameters -> how they are read from the file."""
