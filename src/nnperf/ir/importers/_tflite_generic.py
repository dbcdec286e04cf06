"""Generic layers of a .tflite file: an operator no IR layer type has, kept as the ONNX operator that computes the
same on the IR's NCHW tensors (its :class:`~nnperf.ir.importers._tflite_convert.TfliteTwin`), so that the
backends can run it as they run an ONNX file's generic layers (``_onnx_generic``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from onnx import helper

from nnperf.ir._ops import OpType
from nnperf.ir._shapes import Shape
from nnperf.ir.importers._onnx_generic import GenericRefusal, generic_attrs
from nnperf.ir.importers._tflite_convert import Converter, Op, Step, TfliteHandler, TfliteTwin
from nnperf.ir.importers._tflite_read import FLOAT_TYPES, NHWC_TO_NCHW, broadcast_shape, quantised


def twin_handler(twin: TfliteTwin) -> TfliteHandler:
    """The handler that keeps an operator as a generic layer of its ONNX ``twin``."""

    def handle(c: Converter, op: Op) -> list[Step] | None:
        return twin_step(c, op, twin)

    return handle


def twin_step(c: Converter, op: Op, twin: TfliteTwin) -> list[Step] | None:
    """The generic layer of ``op`` as its ONNX ``twin`` on float tensors (None when an operand is not float, or
    a stored operand's values are not in the file)."""
    if len(op.outputs) != 1:
        return None
    out = op.outputs[0]
    operands = [t for t in op.inputs if t >= 0]
    if not all(c.tensors[t].type in FLOAT_TYPES or quantised(c.tensors[t]) for t in [*operands, out]):
        return None  # integer tensors: no float twin computes them
    x_rank, image = len(c.file_shape(op.x)), c.layout(op.x).image
    shapes: dict[str, Shape] = {f"t{out}": c.shape(out)}
    values: dict[str, np.ndarray] = {}
    for tensor in operands:
        name = f"t{tensor}"
        if tensor in op.activations:
            shapes[name] = c.shape(tensor)
            continue
        value = c.value(tensor)
        if value is None:
            return None
        values[name] = _broadcast_value(np.asarray(value, dtype=np.float32), x_rank, image)
        shapes[name] = values[name].shape or (1,)
    inputs = [f"t{t}" for t in operands]
    if twin.constant is not None:
        values["k"] = np.asarray(twin.constant, dtype=np.float32)
        inputs.append("k")
    attributes = {**twin.attributes, **{key: op.option(option, 0) for key, option in twin.options.items()}}
    node = helper.make_node(twin.operator, inputs, [f"t{out}"], **attributes)
    activations = list(dict.fromkeys(f"t{t}" for t in op.activations))
    types = {name: onnx.TensorProto.FLOAT for name in [*shapes, *values]}
    try:
        attrs = generic_attrs(node, activations, 0, values.get, shapes.get, types, twin.opset, set(values))
    except GenericRefusal:
        return None
    if twin.constant is not None:  # the twin's own operand (RSQRT's -0.5) is no weight of the file
        attrs = dataclasses.replace(attrs, stored_elements=attrs.stored_elements - 1)
    return [Step(OpType.GENERIC, attrs, tuple(dict.fromkeys(op.activations)), out)]


def _broadcast_value(value: np.ndarray, rank: int, image: bool) -> np.ndarray:
    """A stored operand's values in the IR layout they broadcast in against an activation of ``rank``
    (:func:`~nnperf.ir.importers._tflite_read.broadcast_shape`)."""
    shape = broadcast_shape(value.shape, rank, image)
    if image and value.ndim <= 4 == rank:
        return value.reshape((1,) * (4 - value.ndim) + value.shape).transpose(NHWC_TO_NCHW)
    return value.reshape(shape)
