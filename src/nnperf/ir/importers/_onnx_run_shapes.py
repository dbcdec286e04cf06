"""Shapes that shape inference cannot give, taken from one run of the file in ONNX Runtime.

Some sizes depend on values, not on shapes: the rows NonZero or Unique return, a Range's length, the axes a
ReduceSum or a Pad reads from a tensor it computes, a Scan's outputs. ONNX shape inference leaves them unknown
even with the input sizes fixed. :func:`shapes_by_running` runs the model once in ONNX Runtime on random inputs
of those sizes (floats in [0, 1), zeros for integers, random booleans; stored values nnperf did not load are
zeros) and reads the shapes of the tensors asked for: the sizes this input gives, which the importer names in a
warning because another input may give others.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from nnperf.ir._shapes import Shape


def shapes_by_running(model: onnx.ModelProto, tensors: Sequence[str],
                      source: Path | None = None) -> tuple[dict[str, tuple[Shape, int]], str]:
    """The shape and ONNX element type of each of ``tensors`` after one run of ``model`` (whose graph inputs
    have static shapes), its stored values that nnperf did not load read again from the file at ``source``;
    empty, with ONNX Runtime's error in one line, when ONNX Runtime cannot build or run the model."""
    values, error = values_by_running(model, tensors, source)
    return {name: (tuple(int(d) for d in np.shape(value)), helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype))
            for name, value in values.items()}, error


def values_by_running(model: onnx.ModelProto, tensors: Sequence[str],
                      source: Path | None = None) -> tuple[dict[str, np.ndarray], str]:
    """The values of ``tensors`` after one run of ``model`` as :func:`shapes_by_running` runs it (the values of
    tensors computed from stored ones alone do not depend on the inputs); empty, with ONNX Runtime's error in
    one line, when ONNX Runtime cannot build or run the model."""
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.log_severity_level = 4
        runnable = _with_outputs(model, tensors, _guessed_types(model), _unloaded_values(model, source))
        session = ort.InferenceSession(runnable.SerializeToString(), options, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds = {i.name: _random_input(i, rng) for i in session.get_inputs()}
        results = session.run(list(tensors), feeds)
    except Exception as exc:  # noqa: BLE001 - ONNX Runtime raises its own types; the importer then names the node
        text = " ".join(str(exc).split()) or type(exc).__name__
        return {}, text if len(text) <= 200 else text[:197] + "..."
    return {name: np.asarray(value) for name, value in zip(tensors, results)}, ""


def element_types(model: onnx.ModelProto) -> dict[str, int]:
    """The ONNX element type of every graph input, output, inferred value and initializer whose type is known."""
    graph = model.graph
    types = {v.name: int(v.type.tensor_type.elem_type) for v in (*graph.input, *graph.value_info, *graph.output)
             if v.type.tensor_type.elem_type}
    types.update({t.name: int(t.data_type) for t in graph.initializer})
    return types


def _guessed_types(model: onnx.ModelProto) -> dict[str, int]:
    """:func:`element_types`, and for a node's output of unknown type (an operator of another domain, which onnx
    does not know) the type of the node's first 8-bit input, else of its first typed one, as ONNX Runtime's
    quantised operators write."""
    types = element_types(model)
    for node in model.graph.node:
        typed = [types[t] for t in node.input if t in types]
        eight_bit = [t for t in typed if t in (onnx.TensorProto.UINT8, onnx.TensorProto.INT8)]
        guess = (eight_bit or typed or [onnx.TensorProto.FLOAT])[0]
        for out in node.output:
            types.setdefault(out, guess)
    return types


def _unloaded_values(model: onnx.ModelProto, source: Path | None) -> dict[str, onnx.TensorProto]:
    """The stored tensors of the file at ``source`` whose values nnperf did not load into ``model``."""
    unloaded = {t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL}
    if source is None or not unloaded:
        return {}
    return {t.name: t for t in onnx.load(str(source)).graph.initializer if t.name in unloaded}


def _with_outputs(model: onnx.ModelProto, tensors: Sequence[str], types: dict[str, int],
                  values: dict[str, onnx.TensorProto]) -> onnx.ModelProto:
    """A copy of ``model`` whose outputs are ``tensors`` (of ``types``) and whose unloaded stored tensors hold
    ``values`` (zeros for those it lacks)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    for index, init in enumerate(graph.initializer):
        if init.data_location != onnx.TensorProto.EXTERNAL:
            continue
        if init.name in values:
            graph.initializer[index].CopyFrom(values[init.name])
        else:
            zeros = np.zeros(tuple(init.dims), helper.tensor_dtype_to_np_dtype(init.data_type))
            graph.initializer[index].CopyFrom(numpy_helper.from_array(zeros, init.name))
    del graph.output[:]
    for name in tensors:  # their sizes are unknown: ONNX Runtime finds them
        graph.output.append(helper.make_tensor_value_info(name, types.get(name, onnx.TensorProto.FLOAT), None))
    return copy


def _random_input(value: object, rng: np.random.Generator) -> np.ndarray:
    """An input as the measuring backends make it (``random_inputs``, seed 0), in the file's own element type."""
    shape = tuple(int(d) for d in value.shape)  # type: ignore[attr-defined]
    element = value.type.removeprefix("tensor(").removesuffix(")")  # type: ignore[attr-defined]
    if element == "bool":
        return np.asarray(rng.random(shape) < 0.5)  # of a scalar, a 0-d array: ONNX Runtime refuses numpy's bool_
    if element in ("float", "double", "float16"):
        return rng.random(shape, dtype=np.float32).astype({"float": np.float32, "double": np.float64,
                                                           "float16": np.float16}[element])
    return np.zeros(shape, np.dtype(element))
