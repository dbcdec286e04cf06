"""Reading a .tflite file for the importer: the flatbuffer unpacked with LiteRT's own schema (ai-edge-litert's
``schema_py_generated``, no TensorFlow), the values of its stored tensors, and the layout of every tensor.

Unpacking is pure data decoding: nothing in the file is executed. TFLite stores 4-D image tensors NHWC while the
IR is NCHW; :func:`image_tensors` finds which 4-D tensors hold images (see its docstring), and :class:`Layout`
converts their shapes and axes.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nnperf.errors import ModelFileError
from nnperf.ir._shapes import Shape

LITERT_MISSING = "reading .tflite files needs ai-edge-litert (pip install nnperf[litert])"

NUMPY_TYPES: dict[int, str] = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool",
                               7: "int16", 9: "int8", 10: "float64", 12: "uint64", 15: "uint32", 16: "uint16"}
"""LiteRT's TensorType -> the numpy element type of its values (the others: strings, resources, 4-bit)."""

FLOAT_TYPES = frozenset({0, 1, 10, 18})
"""float32, float16, float64 and bfloat16: computed in float32 by nnperf's backends."""
INT8_TYPES = frozenset({3, 9})
"""uint8 and int8: a quantised activation when it carries a scale."""

NHWC_TO_NCHW = (0, 3, 1, 2)
"""IR axis i of a 4-D image tensor is TFLite axis ``NHWC_TO_NCHW[i]``."""
NCHW_OF_NHWC = (0, 2, 3, 1)
"""TFLite axis k of a 4-D image tensor is IR axis ``NCHW_OF_NHWC[k]``."""

_IDENTIFIER = b"TFL3"


@dataclass(frozen=True)
class TfliteFile:
    """A .tflite file unpacked: ``model`` is the schema's ``ModelT``; ``data`` the file's bytes (buffers stored
    after the flatbuffer, in files over 2 GB, are read from them); ``sha256`` their digest."""

    path: Path
    model: Any
    data: bytes
    sha256: str


def read_tflite(path: Path) -> TfliteFile:
    """The model in the .tflite file at ``path`` (ModelFileError naming the file when it is missing, empty,
    truncated or no TFLite model, or when ai-edge-litert is not installed)."""
    try:
        from ai_edge_litert import schema_py_generated as schema
    except ImportError as exc:
        raise ModelFileError(f"{path}: {LITERT_MISSING}") from exc
    if not path.exists():
        raise ModelFileError(f"{path}: no such file")
    if not path.is_file():
        raise ModelFileError(f"{path}: not a file")
    data = path.read_bytes()
    if not data:
        raise ModelFileError(f"{path}: the file is empty")
    if len(data) < 8 or data[4:8] != _IDENTIFIER:
        raise ModelFileError(f"{path}: not a TFLite model (no 'TFL3' file identifier: the file is not a .tflite "
                             "flatbuffer)")
    try:  # unpacking only decodes data; a truncated file points past its end
        model = schema.ModelT.InitFromPackedBuf(data, 0)
        _check_references(model)
    except (struct.error, IndexError, ValueError, TypeError, OverflowError, UnicodeDecodeError, MemoryError,
            RecursionError, AttributeError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelFileError(f"{path}: not a valid TFLite model (the file is truncated or corrupted: "
                             f"{detail[:200]})") from exc
    if not model.subgraphs or not model.subgraphs[0].operators:
        raise ModelFileError(f"{path}: not a TFLite model (no subgraph with operators)")
    return TfliteFile(path, model, data, hashlib.sha256(data).hexdigest())


def _check_references(model: Any) -> None:
    """Raises IndexError for an operator or tensor that points at a tensor, buffer or operator code the file
    does not have (what a corrupted file shows even where its bytes decode)."""
    tensors_of = [len(graph.tensors or ()) for graph in model.subgraphs or ()]
    for graph, count in zip(model.subgraphs or (), tensors_of):
        for tensor in graph.tensors or ():
            if not 0 <= tensor.buffer < max(len(model.buffers or ()), 1):
                raise IndexError(f"tensor {text(tensor.name)!r} names buffer {tensor.buffer}, which is not there")
        for op in graph.operators or ():
            if not 0 <= op.opcodeIndex < len(model.operatorCodes or ()):
                raise IndexError(f"an operator names operator code {op.opcodeIndex}, which is not there")
            for index in [*vector(op.inputs), *vector(op.outputs)]:
                if not -1 <= index < count:
                    raise IndexError(f"an operator names tensor {index}, which is not there")
        for index in [*vector(graph.inputs), *vector(graph.outputs)]:
            if not 0 <= index < count:
                raise IndexError(f"the subgraph names tensor {index}, which is not there")


def vector(values: Any) -> tuple[int, ...]:
    """An integer vector of the schema (a numpy array, a list, or None when the file leaves it out) as a tuple."""
    return () if values is None else tuple(int(v) for v in values)


def text(value: bytes | str | None) -> str:
    """A name the schema hands over as bytes, as text."""
    if value is None:
        return ""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def operator_name(schema: Any, opcode: Any) -> str:
    """An operator code's name: its BuiltinOperator name (``CONV_2D``), or ``CUSTOM name`` for a custom one.

    Codes past 127 are stored in ``builtinCode``, older files only in ``deprecatedBuiltinCode``: the larger of
    the two is the operator, as LiteRT reads it."""
    number = max(int(opcode.builtinCode), int(opcode.deprecatedBuiltinCode))
    names = _builtin_names(schema)
    name = names.get(number, f"BUILTIN_{number}")
    if name == "CUSTOM":
        return f"CUSTOM {text(opcode.customCode) or '(unnamed)'}"
    return name


def _builtin_names(schema: Any) -> dict[int, str]:
    return {value: key for key, value in vars(schema.BuiltinOperator).items() if not key.startswith("_")}


def tensor_value(file: TfliteFile, tensor: Any) -> np.ndarray | None:
    """The values a stored tensor holds, in its file shape (None for an activation, or a type numpy lacks)."""
    if tensor.buffer <= 0:
        return None
    buffer = file.model.buffers[tensor.buffer]
    raw: Any = None
    if buffer.data is not None and len(buffer.data):
        raw = np.asarray(buffer.data, dtype=np.uint8)
    elif buffer.offset > 1 and buffer.size > 0:  # stored after the flatbuffer (files over 2 GB)
        if buffer.offset + buffer.size > len(file.data):
            raise ModelFileError(f"{file.path}: tensor {text(tensor.name)!r} is stored past the end of the file "
                                 "(the file is truncated)")
        raw = np.frombuffer(file.data, dtype=np.uint8, count=buffer.size, offset=buffer.offset)
    dtype = NUMPY_TYPES.get(tensor.type)
    if raw is None or dtype is None:
        return None
    shape = vector(tensor.shape)
    itemsize = np.dtype(dtype).itemsize
    if raw.size != int(np.prod(shape, dtype=np.int64)) * itemsize:
        return None  # sparse or packed storage: only the shape counts
    return raw.view(dtype).reshape(shape)


def is_stored(file: TfliteFile, tensor: Any) -> bool:
    """Whether the file stores the tensor's values (a weight or another constant operand)."""
    if tensor.buffer <= 0 or tensor.isVariable:
        return False
    buffer = file.model.buffers[tensor.buffer]
    return (buffer.data is not None and len(buffer.data) > 0) or (buffer.offset > 1 and buffer.size > 0)


def quantised(tensor: Any) -> bool:
    """Whether a tensor is an 8-bit tensor with a scale: what the file computes in int8."""
    q = tensor.quantization
    return tensor.type in INT8_TYPES and q is not None and q.scale is not None and len(q.scale) > 0


def dequantised(tensor: Any, value: np.ndarray) -> np.ndarray:
    """A stored 8-bit or float16 tensor as the float32 values it stands for (a DEQUANTIZE of a weight)."""
    q = tensor.quantization
    if q is None or q.scale is None or not len(q.scale):
        return value.astype(np.float32)
    scale = np.asarray(q.scale, dtype=np.float32)
    zero = np.asarray(q.zeroPoint if q.zeroPoint is not None else [0], dtype=np.float32)
    if scale.size > 1 and value.ndim:  # one scale per slice of the quantised dimension
        shape = [1] * value.ndim
        shape[int(q.quantizedDimension)] = -1
        scale, zero = scale.reshape(shape), zero.reshape(shape) if zero.size > 1 else zero
    return ((value.astype(np.float32) - zero) * scale).astype(np.float32)


# ---------------------------------------------------------------------- layout: which 4-D tensors are images
LAYOUT_KEEPING = frozenset({
    "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW", "SQUARED_DIFFERENCE", "RELU", "RELU6", "RELU_N1_TO_1",
    "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU", "PRELU", "GELU", "ELU", "EXP", "LOG", "ABS",
    "NEG", "SQRT", "RSQRT", "SQUARE", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "SIGN", "QUANTIZE", "DEQUANTIZE",
    "CONCATENATION", "PAD", "PADV2", "MIRROR_PAD", "SOFTMAX", "SPLIT", "SPLIT_V", "SLICE", "STRIDED_SLICE", "ADD_N",
    "CAST", "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "GATHER", "MEAN", "REDUCE_MAX", "REDUCE_MIN",
    "SUM", "REDUCE_PROD", "FULLY_CONNECTED", "BROADCAST_TO",
})
"""Operators whose 4-D activations all share one layout (element-wise, joining and cutting operators, and
reductions and fully connected layers that keep their input's rank)."""

SPATIAL = frozenset({
    "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D",
    "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "LOCAL_RESPONSE_NORMALIZATION",
})
"""Operators that read and write 4-D NHWC images."""


def image_tensors(graph: Any, names: Sequence[str], stored: Iterable[int]) -> frozenset[int]:
    """The 4-D activations that hold NHWC images (their IR shapes are NCHW); every other tensor keeps its shape.

    A 4-D tensor is an image when it is read or written by a spatial operator (a convolution, a pool, a resize),
    or shares a layout-keeping operator (element-wise, concatenation, padding, slicing, (de)quantisation) with one
    that is. Any other keeps its shape, so that its axes mean what the file says: the attention maps of a
    transformer (4-D operands of BATCH_MATMUL, reached through RESHAPE and TRANSPOSE), and the NCHW input of a
    model converted from PyTorch, which a TRANSPOSE turns into the NHWC image its convolutions read.
    """
    rank4 = {i for i, t in enumerate(graph.tensors) if t.shape is not None and len(t.shape) == 4} - set(stored)
    parent = {i: i for i in rank4}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    seeds: set[int] = set()
    for op, name in zip(graph.operators, names):
        touched = [i for i in [*vector(op.inputs), *vector(op.outputs)] if i in rank4]
        if name in SPATIAL:
            seeds.update(touched)
        if name in LAYOUT_KEEPING or name in SPATIAL:
            for other in touched[1:]:
                parent[root(other)] = root(touched[0])
    image_roots = {root(i) for i in seeds}
    return frozenset(i for i in rank4 if root(i) in image_roots)


@dataclass(frozen=True)
class Layout:
    """The IR shape and axes of a tensor: a 4-D image's NHWC becomes NCHW, every other tensor is kept."""

    image: bool

    def shape(self, shape: Sequence[int]) -> Shape:
        dims = tuple(int(d) for d in shape) or (1,)  # a scalar: one element
        return tuple(dims[k] for k in NHWC_TO_NCHW) if self.image else dims

    def axis(self, axis: int, rank: int) -> int:
        """The IR axis of TFLite axis ``axis`` (negative counts from the end)."""
        axis %= max(rank, 1)
        return NCHW_OF_NHWC[axis] if self.image else axis

    def file_axis(self, ir_axis: int) -> int:
        """The TFLite axis of IR axis ``ir_axis``."""
        return NHWC_TO_NCHW[ir_axis] if self.image else ir_axis


def broadcast_shape(shape: Sequence[int], rank: int, image: bool) -> Shape:
    """The IR shape of a stored operand broadcast against a tensor of ``rank`` (an image's NHWC when ``image``):
    NumPy's rule aligns trailing axes, so a per-channel (C,) becomes (1, C, 1, 1) against an image."""
    dims = tuple(int(d) for d in shape)
    if image and len(dims) <= 4 == rank:
        dims = (1,) * (4 - len(dims)) + dims
        return tuple(dims[k] for k in NHWC_TO_NCHW)
    return dims or (1,)
