"""Reading an ONNX file for the importer: the model parsed and checked as data, its inputs' shapes fixed, the
values of large weights dropped, and what the model states about its tensors (static shapes, element types).

Parsing is pure data decoding: nothing in the file is executed.
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper

from nnperf.errors import ModelFileError, NnperfWarning, ShapeInferenceError
from nnperf.ir._shapes import Shape
from nnperf.ir.importers._common import Unsupported

_MAX_LOADED_ELEMENTS = 65536
"""Initializers larger than this keep only their shapes: their values are never needed."""


def read_model(path: Path) -> onnx.ModelProto:
    """The model in the file at ``path``, parsed, its small external data loaded and checked by onnx's checker
    (ModelFileError naming what is wrong)."""
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
        raise ModelFileError(f"{path}: invalid ONNX model: {one_line(exc)}") from exc
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
    ``drop_large_weights``). True when any initializer is still external.
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
                f"{path}: the data of tensor {init.name!r} cannot be read from beside the model: {one_line(exc)}"
            ) from exc
    return still_external


def _check_known_operators(model: onnx.ModelProto, path: Path) -> None:
    """Lists every operator ONNX itself does not define, before the checker stops at the first."""
    unknown = Unsupported(str(path))
    for index, node in enumerate(model.graph.node):
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            unknown.add(node.op_type, node.name or f"{node.op_type}_{index}")
    unknown.raise_if_any()


def drop_large_weights(model: onnx.ModelProto, max_elements: int = _MAX_LOADED_ELEMENTS) -> None:
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


def fix_input_shapes(model: onnx.ModelProto, wanted: dict[str, Shape], path: Path) -> None:
    """Gives the graph inputs static shapes: those ``wanted`` (input name, or "" for the only input -> shape),
    else the size the file's metadata records, else a symbolic batch of 1; ShapeInferenceError for a dynamic
    size no one gives."""
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
                              "--input-shape to choose another", NnperfWarning, stacklevel=4)
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


def forget_negative_sizes(model: onnx.ModelProto) -> None:
    """Makes each size the file states as negative for an intermediate tensor or an output (some exporters
    write -1 for a dynamic size) unknown, as a symbolic size is: strict shape inference would otherwise read it
    as a contradiction once the input's sizes are fixed."""
    for value in (*model.graph.value_info, *model.graph.output):
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value < 0:
                dim.Clear()


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
        sizes = [int(text)] if text.isdigit() else literal_list(text)
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


def literal_list(text: str) -> list[Any] | None:
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


def static_shapes(model: onnx.ModelProto) -> dict[str, Shape | None]:
    """The static shape of every graph input, output, inferred value and initializer (None where unknown)."""
    graph = model.graph
    shapes: dict[str, Shape | None] = {v.name: _static_shape(v) for v in (*graph.input, *graph.value_info, *graph.output)}
    shapes.update({t.name: tuple(int(d) for d in t.dims) for t in graph.initializer})
    return shapes


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


def elem_type_name(value: onnx.ValueInfoProto) -> str:
    """The NumPy name of a value's element type (float32 when it has none)."""
    elem = value.type.tensor_type.elem_type
    return onnx.helper.tensor_dtype_to_np_dtype(elem).name if elem else "float32"


def one_line(exc: Exception, limit: int = 300) -> str:
    """onnx's multi-line messages folded into one line (the CLI prints one line per error)."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
