"""Import an ONNX file into the IR, using onnx's checker and shape inference.

The file is parsed as data only: nothing in it is executed. Nodes that do not
touch an activation (constants, shape arithmetic on ``Shape`` outputs) are
folded away; the rest map to IR layers by the rule of their operator in
``ONNX_IMPORTERS`` (one handler per ``op_type``), with three exporter patterns
fused back: Sigmoid+Mul into SiLU, MatMul+Add into a fully connected layer with a
bias, and Mul+Add by per-channel constants into a scale layer with a bias.
Issue 17 adds GELU's Erf form and torch.export's softplus (``_onnx_patterns``),
a Split as one slice layer per output, and Reshape-Transpose-Reshape as one
channel shuffle (``fuse_channel_shuffle``, shared with the torch importer).
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper, numpy_helper, shape_inference

from nnperf.errors import InvalidNetworkError, ModelFileError, NnperfWarning, ShapeInferenceError
from nnperf.ir._network import Layer, Network, TensorSpec
from nnperf.ir._ops import (
    Attributes,
    AxisAttrs,
    BatchNormAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    GatherAttrs,
    GroupNormAttrs,
    HardSigmoidAttrs,
    LeakyReluAttrs,
    LinearAttrs,
    LrnAttrs,
    MatmulAttrs,
    NoAttrs,
    NormAttrs,
    OpType,
    PadAttrs,
    PoolAttrs,
    PReluAttrs,
    ReduceAttrs,
    ScaleAttrs,
    SliceAttrs,
    TransposeAttrs,
    UpsampleAttrs,
)
from nnperf.ir._shapes import Shape, numel, same_padding, shape_text
from nnperf.ir._transforms import fuse_channel_shuffle, remove_noops
from nnperf.ir.importers._common import NameTable, Unsupported, one_value, reshape_op, scale_kind
from nnperf.ir.importers._onnx_fold import fold_constants
from nnperf.ir.importers._onnx_generic import FLOAT_TYPES, GenericRefusal, generic_attrs, outer_names
from nnperf.ir.importers._onnx_patterns import gelu_erf_pattern, softplus_pattern
from nnperf.ir.importers._onnx_quantized import QUANTIZED_FORMS, float_form
from nnperf.ir.importers._onnx_run_shapes import element_types, shapes_by_running
from nnperf.ir.importers._table import ImportRule, rule

Mapped = tuple[OpType, Attributes]
_Result = tuple[OpType, Attributes, list[str], str]
"""A mapped node: its op and attributes, the activation tensors it reads and the tensor it writes."""
_METADATA_OPS = frozenset({"Shape", "Size"})
_INT8_OPS = frozenset({"Conv", "Gemm", "MatMul"})
"""Operators that run in int8 when their activation comes through a DequantizeLinear (ONNX Runtime's QDQ format)."""
MAX_FOLD_ROUNDS = 16
"""Folding and inference alternate until nothing more folds (torch's exporter chains ``chunk`` after ``chunk``,
each Slice bound computed from the shape of the one before), at most this many times."""
_MAX_LOADED_ELEMENTS = 65536
"""Initializers larger than this keep only their shapes: their values are never needed."""


def from_onnx(
    path: str | Path,
    input_shapes: Mapping[str, Shape] | None = None,
    name: str | None = None,
    keep_noops: bool = False,
    strict: bool = False,
) -> Network:
    """The IR of the ONNX model at ``path``.

    A symbolic batch dimension of a graph input is fixed to 1; other symbolic
    dimensions need ``input_shapes`` (input name -> full shape). Identity and
    dropout nodes are dropped unless ``keep_noops`` is set. A node no rule maps becomes a generic layer (the
    node kept as it is, see ``_onnx_generic``) unless ``strict`` is set, which refuses the file naming them.
    """
    path = Path(path)
    model = _read_model(path)
    _fix_input_shapes(model, dict(input_shapes or {}), path)
    _drop_large_weights(model)
    inferred = _folded(_inferred(model, path), path)
    if _add_shapes_from_a_run(inferred, path):  # sizes of other domains' operators: what they feed can fold now
        inferred = _folded(inferred, path)
    network = _Converter(inferred, name or path.stem, str(path), strict).convert()
    if keep_noops:
        return network
    try:
        return fuse_channel_shuffle(remove_noops(network))
    except InvalidNetworkError as exc:  # nothing but identities and dropouts
        raise InvalidNetworkError(f"{path}: {exc} once its identity and dropout nodes are dropped (they cost "
                                  "nothing to predict)") from exc


def _inferred(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """``model`` with every tensor's shape that can be inferred."""
    try:
        return shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError, ValueError) as exc:
        # ValueError: a tensor data type that onnx does not know (the checker lets it through)
        raise ShapeInferenceError(f"{path}: shapes cannot be inferred: {_one_line(exc)}") from exc


def _folded(inferred: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """``inferred`` with its shape computations and constant subgraphs folded, inferred again after each round."""
    for _ in range(MAX_FOLD_ROUNDS):  # a chain computed from the shape of another chain's result needs a round more
        if not fold_constants(inferred, _static_shapes(inferred)):
            break
        inferred = _inferred(inferred, path)  # computed bounds and shapes became constants
    return inferred


def _add_shapes_from_a_run(model: onnx.ModelProto, path: Path) -> bool:
    """Gives the tensors whose sizes depend on values (NonZero, Unique, computed axes) or come from operators onnx
    does not know (ONNX Runtime's QLinearAdd) the shapes of one run in ONNX Runtime (``_onnx_run_shapes``), with
    a warning naming the operators; nothing when every shape is known or ONNX Runtime cannot run the file (the
    importer then names the nodes whose shapes are unknown). Whether any shape was added."""
    shapes = _static_shapes(model)
    unknown = {t: node.op_type for node in model.graph.node for t in node.output if t and shapes.get(t) is None}
    if not unknown:
        return False
    found = shapes_by_running(model, list(unknown), path)
    if not found:
        return False
    empty = sorted({unknown[t] for t, (shape, _) in found.items() if 0 in shape})
    found = {t: (tuple(max(d, 1) for d in shape), elem) for t, (shape, elem) in found.items()}
    values: dict[str, list[onnx.ValueInfoProto]] = {}
    for value in (*model.graph.value_info, *model.graph.output):
        values.setdefault(value.name, []).append(value)
    for tensor, (shape, elem_type) in found.items():
        if tensor not in values:
            values[tensor] = [model.graph.value_info.add()]
            values[tensor][0].name = tensor
        for value in values[tensor]:
            value.type.tensor_type.elem_type = elem_type
            value.type.tensor_type.shape.Clear()
            for size in shape:
                value.type.tensor_type.shape.dim.add().dim_value = size
    operators = ", ".join(sorted({unknown[t] for t in found}))
    empties = f"; an empty result ({', '.join(empty)}) counts as one element" if empty else ""
    warnings.warn(f"{path}: shape inference left {len(found)} tensor size(s) unknown ({operators}: sizes that "
                  "depend on values, or operators onnx does not know); nnperf took them from one run of ONNX Runtime "
                  f"on random inputs{empties}", NnperfWarning, stacklevel=3)
    return True


def _static_shapes(model: onnx.ModelProto) -> dict[str, Shape | None]:
    """The static shape of every graph input, output, inferred value and initializer (None where unknown)."""
    graph = model.graph
    shapes: dict[str, Shape | None] = {v.name: _static_shape(v) for v in (*graph.input, *graph.value_info, *graph.output)}
    shapes.update({t.name: tuple(int(d) for d in t.dims) for t in graph.initializer})
    return shapes


def _one_line(exc: Exception, limit: int = 300) -> str:
    """onnx's multi-line messages folded into one line (the CLI prints one line per error)."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read_model(path: Path) -> onnx.ModelProto:
    if not path.exists():
        raise ModelFileError(f"{path}: no such file")
    if not path.is_file():
        raise ModelFileError(f"{path}: not a file")
    data = path.read_bytes()
    if not data:
        raise ModelFileError(f"{path}: the file is empty")
    model = onnx.ModelProto()
    try:  # parsing is pure data decoding: nothing in the file is executed
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelFileError(f"{path}: not a valid ONNX model (the file is truncated or not ONNX: {exc})") from exc
    if not model.opset_import or not model.graph.node or not model.ir_version:
        raise ModelFileError(f"{path}: not an ONNX model (no graph, opset or IR version found)")
    bad_text = _non_utf8_field(model)
    if bad_text is not None:
        raise ModelFileError(f"{path}: not a valid ONNX model (a {bad_text} field holds text that is not UTF-8; "
                             "the file is corrupted)")
    _check_known_operators(model, path)
    still_external = _load_small_external_data(model, path)
    try:  # external data is checked next to the model file (a model in memory would be checked against the cwd)
        onnx.checker.check_model(str(path) if still_external else model)
    except onnx.checker.ValidationError as exc:
        raise ModelFileError(f"{path}: invalid ONNX model: {_one_line(exc)}") from exc
    return model


def _non_utf8_field(message: Any) -> str | None:
    """The name of the first string field of ``message`` (searched depth first) that is not UTF-8, if any.

    protobuf parses such a field without complaint and hands it over as bytes; onnx's checker then fails with a
    UnicodeDecodeError while quoting it, and a name in bytes would break every string operation after it.
    """
    for field in message.DESCRIPTOR.fields:  # not ListFields(): that would copy every tensor's raw bytes
        if field.type == field.TYPE_STRING:
            value = getattr(message, field.name)
            if any(not isinstance(v, str) for v in (value if field.is_repeated else (value,))):
                return f"{message.DESCRIPTOR.name}.{field.name}"
        elif field.type == field.TYPE_MESSAGE:
            if field.is_repeated:
                items = list(getattr(message, field.name))
            else:
                items = [getattr(message, field.name)] if message.HasField(field.name) else []
            for item in items:
                found = _non_utf8_field(item)
                if found is not None:
                    return found
    return None


def _load_small_external_data(model: onnx.ModelProto, path: Path, max_elements: int = _MAX_LOADED_ELEMENTS) -> bool:
    """Reads the values of small initializers stored outside ``path`` from the model's folder.

    External data locations are relative to the model file, not to the working
    directory. Large tensors stay external (only their shapes are used; see
    ``_drop_large_weights``). True when any initializer is still external.
    """
    still_external = False
    for init in model.graph.initializer:
        if init.data_location != onnx.TensorProto.EXTERNAL:
            continue
        if math.prod(init.dims) > max_elements:
            still_external = True
            continue
        try:
            external_data_helper.load_external_data_for_tensor(init, str(path.parent))
        except (OSError, ValueError, onnx.checker.ValidationError) as exc:
            raise ModelFileError(
                f"{path}: the data of tensor {init.name!r} cannot be read from beside the model: {_one_line(exc)}"
            ) from exc
    return still_external


def _check_known_operators(model: onnx.ModelProto, path: Path) -> None:
    """Lists every operator ONNX itself does not define, before the checker stops at the first."""
    unknown = Unsupported(str(path))
    for index, node in enumerate(model.graph.node):
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            unknown.add(node.op_type, node.name or f"{node.op_type}_{index}")
    unknown.raise_if_any()


def _drop_large_weights(model: onnx.ModelProto, max_elements: int = _MAX_LOADED_ELEMENTS) -> None:
    """Forgets the values of large initializers, keeping their shapes.

    Only shapes and a few small constants (biases, clip bounds, axes) matter
    here; without the bulk, shape inference on VGG-16 took 0.6 ms instead of 4.6 s.
    """
    for init in model.graph.initializer:
        if math.prod(init.dims) > max_elements and init.data_location != onnx.TensorProto.EXTERNAL:
            for data_field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data"):
                init.ClearField(data_field)
            init.data_location = onnx.TensorProto.EXTERNAL
            entry = init.external_data.add()
            entry.key, entry.value = "location", "(values not loaded by nnperf)"


def _fix_input_shapes(model: onnx.ModelProto, wanted: dict[str, Shape], path: Path) -> None:
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    if "" in wanted:  # a shape given without a name is for the only input
        if len(graph_inputs) != 1:
            raise ShapeInferenceError(
                f"{path}: the model has {len(graph_inputs)} inputs; name the one to shape "
                f"(inputs: {', '.join(i.name for i in graph_inputs)})"
            )
        wanted[graph_inputs[0].name] = wanted.pop("")
    unknown = set(wanted) - {i.name for i in graph_inputs}
    if unknown:
        raise ShapeInferenceError(
            f"{path}: no graph input named {', '.join(sorted(unknown))} "
            f"(inputs: {', '.join(i.name for i in graph_inputs)})"
        )
    hint = _size_hint(model)
    for value in graph_inputs:
        dims = value.type.tensor_type.shape.dim
        if value.name not in wanted and hint is not None:
            hinted = _hinted_shape(dims, hint[1])
            if hinted is not None:
                wanted[value.name] = hinted
                warnings.warn(f"{path}: input {value.name!r} has dynamic sizes; nnperf uses "
                              f"{'x'.join(map(str, hinted))} from the file's metadata ({hint[0]}={hint[2]}); give "
                              "--input-shape to choose another", NnperfWarning, stacklevel=3)
        if value.name in wanted:
            shape = wanted[value.name]
            if len(shape) != len(dims):
                raise ShapeInferenceError(f"{path}: input {value.name!r} has rank {len(dims)}, got shape {shape}")
            for dim, size in zip(dims, shape):
                dim.Clear()
                dim.dim_value = int(size)
            continue
        for index, dim in enumerate(dims):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                continue
            if index == 0:
                dim.Clear()
                dim.dim_value = 1  # a symbolic batch: predict for one sample
                continue
            raise ShapeInferenceError(
                f"{path}: input {value.name!r} has a dynamic dimension {index} "
                f"({dim.dim_param or 'unknown'}); give its shape, e.g. --input-shape {value.name}=1x3x224x224"
            )


@dataclass
class _Converter:
    model: onnx.ModelProto
    name: str
    source: str
    strict: bool = False

    def __post_init__(self) -> None:
        graph = self.model.graph
        self.opset = next((o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.initializers = {t.name: t for t in graph.initializer}
        self.shapes = _static_shapes(self.model)
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

    def convert(self) -> Network:
        graph = self.model.graph
        specs = []
        data: set[str] = set()
        for value in graph.input:
            if value.name in self.initializers:
                continue
            shape = self._shape(value.name, "graph input") or (1,)  # a scalar input is one element
            self.shapes[value.name] = shape
            spec = TensorSpec(self.names.unique(value.name), shape, _elem_type(value))
            specs.append(spec)
            self.layer_of[value.name] = spec.name
            data.add(value.name)
        layers: list[Layer] = []
        for index, node in enumerate(graph.node):
            if node.op_type == "Constant":
                self._record_constant(node)
            if node.op_type == "CastLike" and node.input[0] not in data:  # issue 17: a constant cast like a tensor
                value = self._value(node.input[0])
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
            layers.extend(self._constant_layers(node, data))  # issue 17: stored tensors combined with activations
            if self._defer_transpose(node):  # issue 17: a swap of the last two axes read only by MatMul
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

    # ---- helpers -------------------------------------------------------------------------------
    def _shape(self, tensor: str, what: str) -> Shape:
        shape = self.shapes.get(tensor)
        if shape is None:
            raise ShapeInferenceError(
                f"{self.source}: the shape of {what} {tensor!r} cannot be inferred statically "
                "(fix the input size or re-export with static shapes)"
            )
        return shape

    def _record_constant(self, node: onnx.NodeProto) -> None:
        for attr in node.attribute:
            if attr.name == "value":
                self.constants[node.output[0]] = numpy_helper.to_array(attr.t)
            elif attr.name in ("value_float", "value_int"):
                self.constants[node.output[0]] = np.array(onnx.helper.get_attribute_value(attr))
            elif attr.name in ("value_floats", "value_ints"):
                self.constants[node.output[0]] = np.array(list(onnx.helper.get_attribute_value(attr)))

    def _value(self, tensor: str) -> np.ndarray | None:
        """The value of a constant tensor, when the file stores it (never computed)."""
        if not tensor:
            return None
        if tensor in self.constants:
            return self.constants[tensor]
        init = self.initializers.get(tensor)
        if init is not None and init.data_location != onnx.TensorProto.EXTERNAL:
            return numpy_helper.to_array(init)
        return None

    def _sole_consumer(self, tensor: str, op_type: str) -> onnx.NodeProto | None:
        users = self.consumers.get(tensor, [])
        if len(users) == 1 and users[0].op_type == op_type and tensor not in self.graph_outputs:
            return users[0]
        return None

    def _convert_node(self, node: onnx.NodeProto, index: int, data: set[str], rewritten: bool = False) -> list[Layer]:
        """The layers of ``node`` (``rewritten``: the float form of a quantised operator, whose layers are int8)."""
        node_name = _readable_name(node) or node.name or f"{node.op_type}_{index}"
        if any(t in self.failed for t in node.input):
            # downstream of an unsupported node: its shapes are unknown, so only name it if it is unsupported too
            if self.strict and node.op_type not in ONNX_IMPORTERS:
                self.unsupported.add(_describe(node), node_name)
            self.failed.update(node.output)
            return []
        int8 = rewritten or (node.op_type in _INT8_OPS and any(t in self.dequantized for t in node.input))
        rule = ONNX_IMPORTERS.get(node.op_type) if self._computes_in_float(node, data) else None
        mapped = None if rule is None else rule.handler(self, _Node.of(node, data, self.shapes))
        can_be_generic = not self.strict and not rewritten  # a float form's stored operands are still 8-bit
        if mapped is None and can_be_generic:
            mapped = self._generic(node, node_name, data)
        if mapped is None:
            if node_name not in self.unsupported.nodes():
                self.unsupported.add(_describe(node), node_name)
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

    def _layer(self, node: onnx.NodeProto, node_name: str, result: _Result) -> Layer:
        op, attrs, inputs, output = result
        producers = tuple(self.layer_of[t] for t in inputs)
        in_shapes = tuple(self._shape(t, "tensor") or (1,) for t in inputs)  # a rank-0 tensor: one element
        name = self.names.unique(node_name if len(node.output) == 1 else f"{node_name}.{output}")
        try:
            return Layer(name, op, producers, in_shapes, self._shape(output, f"output of {node_name}") or (1,), attrs)
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

    def _generic(self, node: onnx.NodeProto, node_name: str, data: set[str]) -> list[_Result] | None:
        """One generic layer per output of ``node`` that is read (None, the reason recorded, when it cannot
        run alone)."""
        activations = list(dict.fromkeys(t for t in [*node.input, *outer_names(node)] if t in data))
        used = [k for k, out in enumerate(node.output)
                if out and (out in self.consumers or out in self.graph_outputs)] or [0]
        results: list[_Result] = []
        try:
            for k in used:
                if self.shapes.get(node.output[k]) is None:
                    raise GenericRefusal(f"{node.op_type} (its output shape cannot be inferred)")
                attrs = generic_attrs(node, activations, k, self._value, self.shapes.get, self.types, self.opset,
                                      self.initializers.keys() | self.constants.keys())
                results.append((OpType.GENERIC, attrs, activations, node.output[k]))
        except GenericRefusal as exc:
            self.unsupported.add(str(exc), node_name)
            return None
        return results

    def _has_bias(self, node: onnx.NodeProto) -> bool:
        """Whether a Conv or Gemm adds a bias; an all-zero stored bias (an exporter's filler) does not count."""
        if len(node.input) < 3 or not node.input[2]:
            return False
        value = self._value(node.input[2])
        return value is None or bool(np.any(value))

    def _pads(self, attrs: dict[str, Any], x_shape: Shape, kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int]) -> tuple[int, int, int, int]:
        auto_pad = attrs.get("auto_pad", b"NOTSET")
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            begin, end = same_padding(x_shape[2:4], kernel, strides, dilations, lower=auto_pad == "SAME_LOWER")
            return (begin[0], begin[1], end[0], end[1])
        pads = tuple(int(p) for p in attrs.get("pads", (0, 0, 0, 0)))
        return (pads[0], pads[1], pads[2], pads[3])

    def _clip(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> Mapped | None:
        if self.opset < 11:
            low, high = attrs.get("min"), attrs.get("max")
        else:
            lo = self._value(node.input[1]) if len(node.input) > 1 else None
            hi = self._value(node.input[2]) if len(node.input) > 2 else None
            if (len(node.input) > 1 and node.input[1] and lo is None) or (
                len(node.input) > 2 and node.input[2] and hi is None
            ):
                return None
            low = None if lo is None else one_value(lo)
            high = None if hi is None else one_value(hi)
            if (lo is not None and low is None) or (hi is not None and high is None):
                return None  # bounds of more than one value: no clip layer
        if low == 0.0 and high == 6.0:
            return OpType.RELU6, NoAttrs()
        if low == 0.0 and (high is None or np.isinf(high)):
            return OpType.RELU, NoAttrs()
        if low is None and high is None:  # issue 17: any other bounds are a CLIP layer
            return None
        return OpType.CLIP, ClipAttrs(low=-math.inf if low is None else _f32(low),
                                      high=math.inf if high is None else _f32(high))

    def _is_vector_constant(self, add: onnx.NodeProto, tensor: str, length: int, data: set[str]) -> bool:
        other = [t for t in add.input if t != tensor]
        return len(other) == 1 and other[0] not in data and numel(self.shapes.get(other[0]) or (0,)) == length

    def _is_scale_bias(self, add: onnx.NodeProto, tensor: str, x_shape: Shape, data: set[str]) -> bool:
        other = [t for t in add.input if t != tensor]
        return len(other) == 1 and other[0] not in data and scale_kind(self.shapes.get(other[0]), x_shape) is not None

    # resizing, normalisation and attention (issue 17)
    def _defer_transpose(self, node: onnx.NodeProto) -> bool:
        """Records a Transpose of the last two axes whose readers are all MatMul nodes, which then read its
        input with ``transpose_a`` or ``transpose_b`` (True when the node is deferred so)."""
        if not hasattr(self, "swapped"):
            self.swapped: dict[str, str] = {}
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
        x_shape = self._shape(first, "tensor") or (1,)  # a rank-0 tensor: one element
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


@dataclass(frozen=True)
class _Node:
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
    def of(cls, node: onnx.NodeProto, data: set[str], shapes: Mapping[str, Shape | None]) -> _Node:
        data_inputs = [t for t in node.input if t in data]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        return cls(node, attrs, data_inputs, [t for t in node.input if t and t not in data], data, data_inputs[0],
                   shapes.get(data_inputs[0]) or (), node.output[0])

    def single(self, mapped: Mapped | None) -> _Result | None:
        """A layer reading the first activation input and writing the node's output."""
        return None if mapped is None else (mapped[0], mapped[1], self.data_inputs[:1], self.out)

    def text(self, key: str, default: str) -> str:
        """A string attribute (ONNX stores bytes)."""
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else str(value)


OnnxHandler = Callable[[_Converter, _Node], _Result | list[_Result] | None]
"""Maps one node, or returns None when its attributes or operands are not supported."""


# ---------------------------------------------------------------------- one handler per ONNX operator
def _conv(c: _Converter, n: _Node) -> _Result | None:
    if len(n.x_shape) != 4 or n.proto.input[0] != n.x or len(n.data_inputs) != 1:
        return None
    w_shape = c._shape(n.proto.input[1], "weight")
    groups = int(n.attrs.get("group", 1))
    out_shape = c._shape(n.out, "tensor")
    if len(w_shape) != 4 or w_shape[1] * groups != n.x_shape[1] or w_shape[0] != out_shape[1]:
        raise ShapeInferenceError(
            f"{c.source}: Conv node {n.proto.name or n.out!r}: weight {shape_text(w_shape)} with groups={groups} "
            f"does not fit input {shape_text(n.x_shape)} and output {shape_text(out_shape)}"
        )
    kernel = tuple(n.attrs.get("kernel_shape", w_shape[2:]))
    strides = tuple(n.attrs.get("strides", (1, 1)))
    dilations = tuple(n.attrs.get("dilations", (1, 1)))
    pads = c._pads(n.attrs, n.x_shape, kernel, strides, dilations)
    return n.single((OpType.CONV, ConvAttrs(kernel=_ints2(kernel), stride=_ints2(strides), padding=pads,
                                            dilation=_ints2(dilations), groups=groups, bias=c._has_bias(n.proto))))


def _gemm(c: _Converter, n: _Node) -> _Result | None:
    if len(n.data_inputs) != 1 or n.proto.input[0] != n.x or n.attrs.get("transA", 0):
        return None
    return n.single((OpType.LINEAR, LinearAttrs(bias=c._has_bias(n.proto))))


def _matmul(c: _Converter, n: _Node) -> _Result | None:
    """MatMul by a 2-D constant; with the Add of a vector after it, a fully connected layer with a bias."""
    weight = n.proto.input[1]
    if len(n.data_inputs) != 1 or n.proto.input[0] != n.x or len(c.shapes.get(weight) or ()) != 2:
        return None
    n_out = (c.shapes.get(weight) or (0, 0))[1]
    add = c._sole_consumer(n.out, "Add")
    if add is not None and c._is_vector_constant(add, n.out, n_out, n.data):
        c.absorbed.add(id(add))
        return OpType.LINEAR, LinearAttrs(bias=True), [n.x], add.output[0]
    return n.single((OpType.LINEAR, LinearAttrs(bias=False)))


def _pool(c: _Converter, n: _Node) -> _Result | None:
    if len(n.x_shape) != 4 or any(d != 1 for d in n.attrs.get("dilations", (1, 1))):
        return None
    is_max = n.proto.op_type == "MaxPool"
    kernel = tuple(n.attrs["kernel_shape"])
    strides = tuple(n.attrs.get("strides", (1, 1)))
    pads = c._pads(n.attrs, n.x_shape, kernel, strides, (1, 1))
    return n.single((OpType.MAX_POOL if is_max else OpType.AVG_POOL,
                     PoolAttrs(kernel=_ints2(kernel), stride=_ints2(strides), padding=pads,
                               ceil_mode=bool(n.attrs.get("ceil_mode", 0)),
                               count_include_pad=is_max or bool(n.attrs.get("count_include_pad", 0)))))


def _reduce(c: _Converter, n: _Node) -> _Result | None:
    """ReduceMean or ReduceMax over H and W: a global pool (axes an attribute, or an input from opset 18)."""
    axes = n.attrs.get("axes")
    if axes is None and len(n.proto.input) > 1:
        value = c._value(n.proto.input[1])
        axes = None if value is None else value.tolist()
    if len(n.x_shape) != 4 or axes is None or {int(a) % 4 for a in axes} != {2, 3}:
        return None
    return n.single((OpType.GLOBAL_AVG_POOL if n.proto.op_type == "ReduceMean" else OpType.GLOBAL_MAX_POOL,
                     NoAttrs()))


def _batch_norm(c: _Converter, n: _Node) -> _Result | None:
    return n.single((OpType.BATCH_NORM, BatchNormAttrs(eps=_f32(n.attrs.get("epsilon", 1e-5)), affine=True)))


def _sigmoid(c: _Converter, n: _Node) -> _Result | None:
    """Sigmoid, or SiLU when its only consumer multiplies it by its own input (how exporters write SiLU)."""
    mul = c._sole_consumer(n.out, "Mul")
    if mul is not None and set(mul.input) == {n.x, n.out}:
        c.absorbed.add(id(mul))
        return OpType.SILU, NoAttrs(), [n.x], mul.output[0]
    return n.single((OpType.SIGMOID, NoAttrs()))


def _plain(op: OpType) -> ImportRule[OnnxHandler]:
    """The rule of an operator that maps to ``op`` whatever its attributes."""

    def handle(c: _Converter, n: _Node) -> _Result | None:
        return n.single((op, NoAttrs()))

    return rule({op}, handle)


def _leaky_relu(c: _Converter, n: _Node) -> _Result | None:
    return n.single((OpType.LEAKY_RELU, LeakyReluAttrs(negative_slope=_f32(n.attrs.get("alpha", 0.01)))))


def _clip(c: _Converter, n: _Node) -> _Result | None:
    return n.single(c._clip(n.proto, n.attrs))


def _eltwise(op: OpType) -> OnnxHandler:
    """Add, Sum or Max of two or more activations."""

    def handle(c: _Converter, n: _Node) -> _Result | None:
        return (op, NoAttrs(), n.data_inputs, n.out) if len(n.data_inputs) >= 2 else None

    return handle


def _mul(c: _Converter, n: _Node) -> _Result | None:
    """Mul of activations, or by a scalar or per-channel constant: a scale layer, with the Add of a bias after it."""
    softplus = softplus_pattern(c, n)  # issue 17
    if softplus is not None:
        return softplus
    if len(n.data_inputs) >= 2:
        return OpType.MUL, NoAttrs(), n.data_inputs, n.out
    if len(n.consts) != 1:
        return None
    kind = scale_kind(c.shapes.get(n.consts[0]), n.x_shape)
    if kind is None:
        return None
    per_channel = kind == "channel"
    add = c._sole_consumer(n.out, "Add")
    if add is not None and c._is_scale_bias(add, n.out, n.x_shape, n.data):
        c.absorbed.add(id(add))
        return OpType.SCALE, ScaleAttrs(bias=True, per_channel=per_channel), [n.x], add.output[0]
    return n.single((OpType.SCALE, ScaleAttrs(bias=False, per_channel=per_channel)))


def _concat(c: _Converter, n: _Node) -> _Result | None:
    return OpType.CONCAT, AxisAttrs(axis=int(n.attrs["axis"]) % len(n.x_shape)), n.data_inputs, n.out


def _softmax(c: _Converter, n: _Node) -> _Result | None:
    default = -1 if c.opset >= 13 else 1  # opset 13 moved the default axis to the last
    return n.single((OpType.SOFTMAX, AxisAttrs(axis=int(n.attrs.get("axis", default)) % len(n.x_shape))))


def _lrn(c: _Converter, n: _Node) -> _Result | None:
    return n.single((OpType.LRN, LrnAttrs(size=int(n.attrs["size"]), alpha=_f32(n.attrs.get("alpha", 1e-4)),
                                          beta=_f32(n.attrs.get("beta", 0.75)), k=_f32(n.attrs.get("bias", 1.0)))))


def _reshape(c: _Converter, n: _Node) -> _Result | None:
    return n.single(reshape_op(n.x_shape, c._shape(n.out, "tensor")))


def _resize(c: _Converter, n: _Node) -> _Result | None:
    mode = n.text("mode", "nearest")
    return n.single((OpType.UPSAMPLE, UpsampleAttrs(mode=mode))) if mode in ("nearest", "linear") else None


def _pad(c: _Converter, n: _Node) -> _Result | None:
    mode = n.text("mode", "constant")
    mode = {"edge": "replicate"}.get(mode, mode)
    if c.opset < 11:  # the fill value was an attribute before opset 11, an input since
        value = n.attrs.get("value")
    else:
        value = c._value(n.proto.input[2]) if len(n.proto.input) > 2 and n.proto.input[2] else None
    fill = 0.0 if value is None else one_value(value)
    if fill is None:
        return None  # a fill of more than one value: not ONNX's Pad
    return n.single((OpType.PAD, PadAttrs(mode=mode, value=_f32(fill))))


# activations and data movement (issue 17)
def _hard_sigmoid(c: _Converter, n: _Node) -> _Result | None:
    return n.single((OpType.HARD_SIGMOID, HardSigmoidAttrs(alpha=_f32(n.attrs.get("alpha", 0.2)),
                                                           beta=_f32(n.attrs.get("beta", 0.5)))))


def _prelu(c: _Converter, n: _Node) -> _Result | None:
    """PRelu by a constant slope: one per channel or a single one."""
    if len(n.consts) != 1 or n.proto.input[0] != n.x:
        return None
    kind = scale_kind(c.shapes.get(n.consts[0]), n.x_shape)
    return None if kind is None else n.single((OpType.PRELU, PReluAttrs(per_channel=kind == "channel")))


def _gelu(c: _Converter, n: _Node) -> _Result | None:
    return n.single((OpType.GELU, NoAttrs())) if n.text("approximate", "none") == "none" else None


def _split(c: _Converter, n: _Node) -> list[_Result] | None:
    """One SLICE layer per output of a Split (sizes from the inferred output shapes)."""
    rank = len(n.x_shape)
    axis = int(n.attrs.get("axis", 0)) % rank
    results: list[_Result] = []
    start = 0
    for output in n.proto.output:
        shape = c._shape(output, "tensor")
        results.append((OpType.SLICE, SliceAttrs(axis=axis, start=start, end=start + shape[axis]), [n.x], output))
        start += shape[axis]
    return results if n.proto.input[0] == n.x else None


def _slice(c: _Converter, n: _Node) -> _Result | None:
    """Slice by constant starts, ends, axes and steps that select part of one axis."""
    if n.proto.input[0] != n.x or len(n.data_inputs) != 1:
        return None
    starts, ends, axes, steps = (c._value(t) for t in (list(n.proto.input) + [""] * 4)[1:5])
    if starts is None or ends is None:
        return None
    rank = len(n.x_shape)
    axes = list(range(len(starts))) if axes is None else [int(a) % rank for a in axes.tolist()]
    steps = [1] * len(axes) if steps is None else [int(s) for s in steps.tolist()]
    chosen = []
    for axis, begin, end, step in zip(axes, starts.tolist(), ends.tolist(), steps):
        first, last, stride = slice(int(begin), int(end), step).indices(n.x_shape[axis])
        if (first, last, stride) != (0, n.x_shape[axis], 1):
            chosen.append(SliceAttrs(axis=axis, start=first, end=last, step=stride))
    if len(chosen) != 1 or chosen[0].step < 1 or chosen[0].start >= chosen[0].end:
        return None
    return n.single((OpType.SLICE, chosen[0]))


def _transpose(c: _Converter, n: _Node) -> _Result | None:
    perm = n.attrs.get("perm", list(reversed(range(len(n.x_shape)))))
    return n.single((OpType.TRANSPOSE, TransposeAttrs(perm=tuple(int(p) for p in perm))))


def _gather(c: _Converter, n: _Node) -> _Result | None:
    """Gather by constant 1-D indices (a scalar index, which drops the axis, is not supported)."""
    indices = c._value(n.proto.input[1]) if len(n.proto.input) > 1 else None
    if indices is None or indices.ndim != 1 or n.proto.input[0] != n.x:
        return None
    axis = int(n.attrs.get("axis", 0)) % len(n.x_shape)
    return n.single((OpType.GATHER, GatherAttrs(axis=axis, indices=tuple(int(i) % n.x_shape[axis] for i in indices))))


def _expand(c: _Converter, n: _Node) -> _Result | None:
    return n.single((OpType.EXPAND, NoAttrs())) if n.proto.input[0] == n.x and len(n.data_inputs) == 1 else None


_RESHAPES = (OpType.FLATTEN, OpType.RESHAPE)
ONNX_IMPORTERS: Mapping[str, ImportRule[OnnxHandler]] = MappingProxyType({
    "Conv": rule({OpType.CONV}, _conv, "Conv (only 2-D)"),
    "Gemm": rule({OpType.LINEAR}, _gemm),
    "MaxPool": rule({OpType.MAX_POOL}, _pool, "MaxPool (only 2-D)"),
    "AveragePool": rule({OpType.AVG_POOL}, _pool, "AveragePool (only 2-D)"),
    "GlobalAveragePool": _plain(OpType.GLOBAL_AVG_POOL),
    "GlobalMaxPool": _plain(OpType.GLOBAL_MAX_POOL),
    "BatchNormalization": rule({OpType.BATCH_NORM}, _batch_norm),
    "Relu": _plain(OpType.RELU),
    "Clip": rule({OpType.RELU, OpType.RELU6, OpType.CLIP}, _clip, "Clip (bounds that are not constants)"),
    "LeakyRelu": rule({OpType.LEAKY_RELU}, _leaky_relu),
    "Sigmoid": rule({OpType.SIGMOID, OpType.SILU}, _sigmoid),
    "Tanh": _plain(OpType.TANH),
    "HardSwish": _plain(OpType.HARDSWISH),
    "Add": rule({OpType.ADD}, _eltwise(OpType.ADD)),
    "Sum": rule({OpType.ADD}, _eltwise(OpType.ADD)),
    "Max": rule({OpType.MAX}, _eltwise(OpType.MAX)),
    "Mul": rule({OpType.MUL, OpType.SCALE}, _mul, "Mul by a constant that is neither a scalar nor per-channel"),
    "Concat": rule({OpType.CONCAT}, _concat),
    "Softmax": rule({OpType.SOFTMAX}, _softmax),
    "LRN": rule({OpType.LRN}, _lrn),
    "Flatten": rule(_RESHAPES, _reshape),
    "Squeeze": rule(_RESHAPES, _reshape),
    "Unsqueeze": rule(_RESHAPES, _reshape),
    "Resize": rule({OpType.UPSAMPLE}, _resize),
    "Upsample": rule({OpType.UPSAMPLE}, _resize),
    "Pad": rule({OpType.PAD}, _pad),
    "Identity": _plain(OpType.IDENTITY),
    "Dropout": _plain(OpType.DROPOUT),
    # activations and data movement (issue 17)
    "HardSigmoid": rule({OpType.HARD_SIGMOID}, _hard_sigmoid),
    "PRelu": rule({OpType.PRELU}, _prelu, "PRelu (slope neither per-channel nor a constant scalar)"),
    "Gelu": rule({OpType.GELU}, _gelu, "Gelu (only approximate='none')"),
    "Softplus": _plain(OpType.SOFTPLUS),
    "Mish": _plain(OpType.MISH),
    "Exp": _plain(OpType.EXP),
    "Log": _plain(OpType.LOG),
    "Split": rule({OpType.SLICE}, _split),
    "Slice": rule({OpType.SLICE}, _slice, "Slice (only constant bounds selecting along one axis)"),
    "Transpose": rule({OpType.TRANSPOSE, OpType.CHANNEL_SHUFFLE}, _transpose),  # shuffle: fuse_channel_shuffle
    "Gather": rule({OpType.GATHER}, _gather, "Gather (only by constant 1-D indices)"),
    "Expand": rule({OpType.EXPAND}, _expand),
})
"""ONNX ``op_type`` -> the rule that maps its nodes (some only for some attributes and operands)."""

# resizing, normalisation and attention (issue 17)
def _conv_transpose(c: _Converter, n: _Node) -> _Result | None:
    if len(n.x_shape) != 4 or n.proto.input[0] != n.x or len(n.data_inputs) != 1 or "output_shape" in n.attrs:
        return None
    auto_pad = n.text("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID"):
        return None
    w_shape = c._shape(n.proto.input[1], "weight")
    pads = tuple(int(p) for p in n.attrs.get("pads", (0, 0, 0, 0)))
    return n.single((OpType.CONV_TRANSPOSE, ConvTransposeAttrs(
        kernel=_ints2(n.attrs.get("kernel_shape", w_shape[2:])), stride=_ints2(n.attrs.get("strides", (1, 1))),
        padding=(pads[0], pads[1], pads[2], pads[3]), output_padding=_ints2(n.attrs.get("output_padding", (0, 0))),
        dilation=_ints2(n.attrs.get("dilations", (1, 1))), groups=int(n.attrs.get("group", 1)),
        bias=c._has_bias(n.proto))))


def _layer_normalization(c: _Converter, n: _Node) -> _Result | None:
    rank = len(n.x_shape)
    axis = int(n.attrs.get("axis", -1)) % rank
    if axis != rank - 1 or len(n.data_inputs) != 1:
        return None
    # ONNX's scale (and shift) are inputs it always has: counted as learnt, whatever their values
    return n.single((OpType.LAYER_NORM, NormAttrs(axis=-1, eps=_f32(n.attrs.get("epsilon", 1e-5)), affine=True)))


def _instance_normalization(c: _Converter, n: _Node) -> _Result | None:
    """Instance normalisation: group normalisation with one channel per group."""
    if len(n.data_inputs) != 1 or len(n.x_shape) < 3:
        return None
    return n.single((OpType.GROUP_NORM, GroupNormAttrs(groups=n.x_shape[1], eps=_f32(n.attrs.get("epsilon", 1e-5)),
                                                       affine=True)))  # scale and shift are inputs it always has


def _reduce_axes(c: _Converter, n: _Node) -> tuple[int, ...] | None:
    axes = n.attrs.get("axes")
    if axes is None and len(n.proto.input) > 1:
        value = c._value(n.proto.input[1])
        axes = None if value is None else value.reshape(-1).tolist()
    if axes is None:
        return None
    return tuple(sorted({int(a) % len(n.x_shape) for a in axes}))


def _constant_value(c: _Converter, tensor: str) -> np.ndarray | None:
    """The value of a stored tensor or of a Constant node, also one later in the graph than the reader."""
    value = c._value(tensor)
    if value is None:
        for node in c.model.graph.node:
            if node.op_type == "Constant" and tensor in node.output:
                c._record_constant(node)
                return c._value(tensor)
    return value


def _layer_norm_pattern(c: _Converter, n: _Node, axes: tuple[int, ...]) -> _Result | None:
    """The exporter's decomposed layer norm, fused into one layer:
    ReduceMean(x) -> Sub(x, mean) -> Pow(., 2) -> ReduceMean -> Add(eps) -> Sqrt -> Div(sub, sqrt) [-> Mul(scale)
    -> Add(shift)], the mean over the last axis or the channels."""
    rank = len(n.x_shape)
    if axes not in ((rank - 1,), (1,)) or not n.attrs.get("keepdims", 1):
        return None
    sub = c._sole_consumer(n.out, "Sub")
    if sub is None or list(sub.input) != [n.x, n.out]:
        return None
    users = {u.op_type: u for u in c.consumers.get(sub.output[0], [])}
    pow_, div = users.get("Pow"), users.get("Div")
    if len(c.consumers.get(sub.output[0], [])) != 2 or pow_ is None or div is None:
        return None
    exponent = _constant_value(c, pow_.input[1])
    mean2 = c._sole_consumer(pow_.output[0], "ReduceMean")
    add = None if mean2 is None else c._sole_consumer(mean2.output[0], "Add")
    sqrt = None if add is None else c._sole_consumer(add.output[0], "Sqrt")
    eps = None if add is None else _constant_value(c, add.input[1])
    if exponent is None or one_value(exponent) != 2.0 or sqrt is None or eps is None or eps.size != 1 \
            or c._sole_consumer(sqrt.output[0], "Div") is not div or list(div.input) != [sub.output[0], sqrt.output[0]]:
        return None
    chain = [sub, pow_, mean2, add, sqrt, div]
    out, affine = div.output[0], False
    mul = c._sole_consumer(out, "Mul")
    if mul is not None and all(t in (out,) or (t not in n.data and t in c.initializers) for t in mul.input):
        shift = c._sole_consumer(mul.output[0], "Add")
        if shift is not None and all(t == mul.output[0] or (t not in n.data and t in c.initializers)
                                     for t in shift.input):
            chain += [mul, shift]
            out, affine = shift.output[0], True
    c.absorbed.update(id(node) for node in chain)
    return OpType.LAYER_NORM, NormAttrs(axis=1 if axes == (1,) else -1, eps=_f32(one_value(eps)), affine=affine), \
        [n.x], out


def _reduce_any(c: _Converter, n: _Node) -> _Result | None:
    """A global pool over H and W (as before), the exporter's layer norm pattern, or a mean or max over axes."""
    pooled = _reduce(c, n)
    if pooled is not None:
        return pooled
    axes = _reduce_axes(c, n)
    if axes is None or len(n.data_inputs) != 1:
        return None
    if n.proto.op_type == "ReduceMean":
        fused = _layer_norm_pattern(c, n, axes)
        if fused is not None:
            return fused
    op = OpType.REDUCE_MEAN if n.proto.op_type == "ReduceMean" else OpType.REDUCE_MAX
    return n.single((op, ReduceAttrs(axes=axes, keepdims=bool(n.attrs.get("keepdims", 1)))))


def _matmul_any(c: _Converter, n: _Node) -> _Result | None:
    """A product of two activations (either read through a deferred Transpose of its last two axes), else (as
    before) a fully connected layer by a 2-D constant."""
    swapped = getattr(c, "swapped", {})
    if len(n.data_inputs) == 2:
        a, b = n.proto.input[0], n.proto.input[1]
        attrs = MatmulAttrs(transpose_a=a in swapped, transpose_b=b in swapped)
        return OpType.MATMUL, attrs, [swapped.get(a, a), swapped.get(b, b)], n.out
    return _matmul(c, n)


def _binary(op: OpType) -> OnnxHandler:
    """Sub, Div or Pow of two activations; Div by a scalar or per-channel constant is a scale layer."""

    def handle(c: _Converter, n: _Node) -> _Result | None:
        if len(n.data_inputs) >= 2:
            return op, NoAttrs(), n.data_inputs, n.out
        if op is not OpType.DIV or n.proto.input[0] != n.x or len(n.consts) != 1:
            return None
        kind = scale_kind(c.shapes.get(n.consts[0]), n.x_shape)
        return None if kind is None else n.single((OpType.SCALE, ScaleAttrs(bias=False, per_channel=kind == "channel")))

    return handle


def _producer(c: _Converter, tensor: str) -> onnx.NodeProto | None:
    return next((node for node in c.model.graph.node if tensor in node.output), None)


def _stored_operand(c: _Converter, node: onnx.NodeProto, tensor: str) -> tuple[str, onnx.NodeProto | None] | None:
    """The other operand of a binary ``node`` when it is stored (directly or through a CastLike of a stored
    tensor, as torch.onnx writes), with that CastLike; None when it is an activation."""
    others = [t for t in node.input if t != tensor]
    if len(others) != 1:
        return None
    if others[0] in c.initializers:
        return others[0], None
    cast = _producer(c, others[0])
    if cast is not None and cast.op_type == "CastLike" and cast.input[0] in c.initializers:
        return cast.input[0], cast
    return None


def _sole_user(c: _Converter, tensor: str, op_type: str) -> onnx.NodeProto | None:
    """As ``_sole_consumer``, not counting the CastLike nodes that read ``tensor`` only for its type."""
    users = [u for u in c.consumers.get(tensor, []) if not (u.op_type == "CastLike" and list(u.input)[1:] == [tensor])]
    if len(users) == 1 and users[0].op_type == op_type and tensor not in c.graph_outputs:
        return users[0]
    return None


def _group_norm_pattern(c: _Converter, n: _Node) -> _Result | None:
    """The exporter's group normalisation, fused into one layer: Reshape to (N, G, -1) -> InstanceNormalization
    (unit scale, zero shift) -> Reshape back [-> Mul by the per-channel scale -> Add of the shift]."""
    out_shape = c.shapes.get(n.out) or ()
    norm = c._sole_consumer(n.out, "InstanceNormalization")
    if len(n.x_shape) < 3 or len(out_shape) != 3 or out_shape[0] != n.x_shape[0] or norm is None:
        return None
    back = c._sole_consumer(norm.output[0], "Reshape")
    if back is None or c.shapes.get(back.output[0]) != n.x_shape:
        return None
    eps = next((onnx.helper.get_attribute_value(a) for a in norm.attribute if a.name == "epsilon"), 1e-5)
    chain, out, affine = [norm, back], back.output[0], False
    mul = _sole_user(c, out, "Mul")
    scale = None if mul is None else _stored_operand(c, mul, out)
    if mul is not None and scale is not None and scale_kind(c.shapes.get(scale[0]), n.x_shape) == "channel":
        add = _sole_user(c, mul.output[0], "Add")
        shift = None if add is None else _stored_operand(c, add, mul.output[0])
        if add is not None and shift is not None:
            chain += [mul, add] + [cast for _, cast in (scale, shift) if cast is not None]
            out, affine = add.output[0], True
    c.absorbed.update(id(node) for node in chain)
    return OpType.GROUP_NORM, GroupNormAttrs(groups=out_shape[1], eps=_f32(eps), affine=affine), [n.x], out


def _reshape_any(c: _Converter, n: _Node) -> _Result | None:
    """The exporter's group normalisation pattern, else (as before) a flatten or reshape."""
    return _group_norm_pattern(c, n) or _reshape(c, n)


def _div_any(c: _Converter, n: _Node) -> _Result | None:
    """The exporters' GELU pattern (which starts with a Div by sqrt 2), else a division."""
    return gelu_erf_pattern(c, n) or _binary(OpType.DIV)(c, n)


_REDUCE_OPS = {OpType.GLOBAL_AVG_POOL, OpType.GLOBAL_MAX_POOL, OpType.REDUCE_MEAN, OpType.REDUCE_MAX,
               OpType.LAYER_NORM}
ONNX_IMPORTERS = MappingProxyType({  # Div, MatMul, ReduceMax, ReduceMean and Reshape are defined here only
    **ONNX_IMPORTERS,
    "ConvTranspose": rule({OpType.CONV_TRANSPOSE}, _conv_transpose, "ConvTranspose (only 2-D, without output_shape)"),
    "LayerNormalization": rule({OpType.LAYER_NORM}, _layer_normalization,
                               "LayerNormalization (only over the last axis)"),
    "InstanceNormalization": rule({OpType.GROUP_NORM}, _instance_normalization),
    "ReduceMean": rule(_REDUCE_OPS, _reduce_any, "ReduceMean (axes not stored in the file)"),
    "ReduceMax": rule(_REDUCE_OPS, _reduce_any, "ReduceMax (axes not stored in the file)"),
    "MatMul": rule({OpType.LINEAR, OpType.MATMUL}, _matmul_any),
    "Sub": rule({OpType.SUB}, _binary(OpType.SUB), "Sub of a constant that is not a stored tensor operand"),
    "Div": rule({OpType.DIV, OpType.SCALE, OpType.GELU}, _div_any, "Div by a constant that is not per-channel"),
    "Pow": rule({OpType.POW}, _binary(OpType.POW), "Pow with a constant (only of two activations)"),
    "Reshape": rule({*_RESHAPES, OpType.GROUP_NORM}, _reshape_any),
})

ONNX_NOT_IMPORTED: frozenset[OpType] = frozenset({OpType.CONSTANT, OpType.GENERIC})
"""IR ops no one ONNX operator maps to: CONSTANT, made of a stored tensor operand (see ``_constant_layers``), and
GENERIC, made of any node no rule maps (see ``_onnx_generic``); SiLU comes from the Sigmoid+Mul that exporters
write."""


def _f32(value: Any) -> float:
    """A float attribute as the decimal it was written as (ONNX stores float32: 1e-5 reads 9.99999974e-06); a
    one-element array of any rank counts as its element."""
    number = one_value(value)
    if number is None:
        raise ValueError(f"expected one number, got {value!r}")
    return float(f"{number:.7g}")


def _readable_name(node: onnx.NodeProto) -> str | None:
    """The PyTorch module path torch.onnx records for a node (e.g. 'layer1.0.conv1'), if any."""
    meta = {p.key: p.value for p in node.metadata_props}
    scopes = _literal_list(meta.get("pkg.torch.onnx.name_scopes", "[]"))
    classes = _literal_list(meta.get("pkg.torch.onnx.class_hierarchy", "[]")) or []
    if not scopes or not all(isinstance(x, str) for x in scopes):
        return None
    if len(scopes) >= 2 and len(classes) == len(scopes) and str(classes[-2]).startswith("torch.nn.modules."):
        return scopes[-2] or None
    return scopes[-1] or None


SIZE_HINT_KEYS = ("imgsz", "img_size", "image_size", "input_size", "input_shape")
"""Model metadata keys under which exporters record the input size they were made for (Ultralytics writes
``imgsz``, e.g. ``[640, 640]``)."""


def _size_hint(model: onnx.ModelProto) -> tuple[str, list[int], str] | None:
    """(key, sizes, raw text) of the first size the model's metadata records under :data:`SIZE_HINT_KEYS`: one
    number (a square image), two (height and width) or a whole shape; None when there is none."""
    meta = {p.key: p.value for p in model.metadata_props}
    for key in SIZE_HINT_KEYS:
        text = meta.get(key, "").strip()
        if not text:
            continue
        sizes = [int(text)] if text.isdigit() else _literal_list(text)
        if sizes and all(isinstance(s, int) and not isinstance(s, bool) and 0 < s < 1 << 20 for s in sizes):
            return key, sizes, text
    return None


def _hinted_shape(dims: Sequence[Any], sizes: list[int]) -> Shape | None:
    """The input's shape with its dynamic sizes taken from ``sizes`` (see :func:`_size_hint`): a whole shape of
    the input's rank, or the last one or two sizes (an image's height and width) of an input of rank 3 or more;
    a dynamic batch is 1. None when the sizes do not fit the input or contradict a fixed size."""
    fixed = [int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else None for d in dims]
    if all(f is not None for f in fixed[1:]):
        return None  # nothing but the batch is dynamic: it is 1 without a hint
    if len(sizes) == len(fixed):
        chosen = list(sizes)
    elif len(sizes) in (1, 2) and len(fixed) >= 3:
        spatial = sizes * 2 if len(sizes) == 1 else sizes
        chosen = fixed[:-2] + spatial
    else:
        return None
    shape = [f if f is not None else c for f, c in zip(fixed, chosen)]
    shape[0] = shape[0] if fixed[0] is not None else 1
    if any(s is None for s in shape) or any(f is not None and f != c for f, c in zip(fixed[1:], chosen[1:])):
        return None
    return tuple(int(s) for s in shape)  # type: ignore[arg-type]


def _literal_list(text: str) -> list[Any] | None:
    """The Python list literal torch.onnx writes into a node's metadata, or None for anything else.

    The metadata only gives a layer a readable name, so text that is no list literal is ignored rather than
    refused: deeply nested text ('-' * 100000 + '1', '1+1+...') makes Python's parser itself fail with a
    MemoryError or RecursionError, and a set of lists ('{[]}') with a TypeError.
    """
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def _static_shape(value: onnx.ValueInfoProto) -> Shape | None:
    tensor_type = value.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = []
    for dim in tensor_type.shape.dim:
        if not dim.HasField("dim_value") or dim.dim_value <= 0:
            return None
        dims.append(int(dim.dim_value))
    return tuple(dims)


def _elem_type(value: onnx.ValueInfoProto) -> str:
    elem = value.type.tensor_type.elem_type
    return onnx.helper.tensor_dtype_to_np_dtype(elem).name if elem else "float32"


def _ints2(values: Sequence[int]) -> tuple[int, int]:
    v = tuple(int(x) for x in values)
    if len(v) != 2:
        raise ShapeInferenceError(f"expected two spatial values, got {v}")
    return (v[0], v[1])


def _describe(node: onnx.NodeProto) -> str:
    """How an unsupported node is named: its rule's refusal, else the operator (with a foreign domain)."""
    rule = ONNX_IMPORTERS.get(node.op_type)
    if rule is not None and rule.refusal:
        return rule.refusal
    domain = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
    return f"{domain}{node.op_type}"
