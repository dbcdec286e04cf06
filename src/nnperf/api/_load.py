"""Turn what a user names (a zoo network, an ONNX, .tflite or IR file, a PyTorch module, an IR network) into a
Network."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from nnperf.errors import ModelFileError, NnperfError, ParameterError
from nnperf.ir import Network, Shape, load_network_json
from nnperf.zoo import zoo_network

if TYPE_CHECKING:
    import torch

ModelLike = Union[str, "os.PathLike[str]", Network, "torch.nn.Module"]
"""What :func:`load_model` accepts."""

InputShape = Sequence[int] | Mapping[str, Sequence[int]]
"""One input's shape (batch first) or a mapping of ONNX input names to shapes."""

MODEL_SUFFIXES = (".onnx", ".tflite", ".json")


def load_model(model: ModelLike, input_shape: InputShape | None = None, *, name: str | None = None,
               strict: bool = False) -> Network:
    """The IR :class:`~nnperf.ir.Network` of ``model``.

    Parameters
    ----------
    model : str, path-like, Network or torch.nn.Module
        A zoo name (``nnperf zoo`` lists them), an ``.onnx`` file, a
        ``.tflite`` file (LiteRT; needs ai-edge-litert), an nnperf IR
        ``.json`` file, an IR network (returned as it is) or a PyTorch
        module (traced with torch.fx on a random input of ``input_shape``).
    input_shape : sequence of int or mapping of str to sequence of int, optional
        Batch first, e.g. ``(1, 3, 224, 224)``. Required for a module; for an
        ONNX file it fixes the dynamic dimensions of its input (a single
        shape for a one-input model, else ``{input name: shape}``). Zoo
        networks, .tflite and IR files have their own shapes.
    name : str, optional
        The network's name (default: the module's class name; a file's name
        or a zoo name otherwise).
    strict : bool, default False
        Refuse an ONNX or .tflite file with operators nnperf has no dedicated layer type for, naming them, instead
        of importing them as generic layers; and a module torch.fx cannot trace or map, instead of importing it
        through torch.export and ONNX.

    Raises
    ------
    UnknownModelError, ModelFileError, NnperfError
        A name that is no zoo network or file, a file of an unknown type or
        that cannot be read, an input shape that does not apply.
    """
    if isinstance(model, Network):
        if input_shape is not None:
            raise NnperfError(f"{model.name}: an IR network has its shapes; input_shape does not apply")
        return model
    if isinstance(model, (str, os.PathLike)):
        return _load_named(os.fspath(model), input_shape, strict)
    return _load_module(model, input_shape, name, strict)


def _load_named(spec: str, input_shape: InputShape | None, strict: bool = False) -> Network:
    path = Path(spec)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        from nnperf.ir.importers import from_onnx

        return from_onnx(path, input_shapes=_onnx_shapes(path, input_shape), strict=strict)
    if suffix == ".tflite":
        if input_shape is not None:
            raise NnperfError(f"{path}: a .tflite file has its shapes; input_shape applies to ONNX files and modules")
        from nnperf.ir.importers import from_tflite

        return from_tflite(path, strict=strict)
    if suffix == ".json":
        if input_shape is not None:
            raise NnperfError(f"{path}: an IR file has its shapes; input_shape applies to ONNX files and modules")
        return load_network_json(path)
    if path.exists():
        raise ModelFileError(f"{path}: unknown model file type {suffix or '(no suffix)'!r}; "
                             f"nnperf reads {', '.join(MODEL_SUFFIXES)} files and zoo names")
    if input_shape:
        raise ParameterError(f"{spec}: {{input_shape}} applies to ONNX files only", "input_shape")
    return zoo_network(spec)


def _onnx_shapes(path: Path, input_shape: InputShape | None) -> dict[str, Shape] | None:
    """``input_shape`` as ONNX input name -> shape; a bare shape names the model's only input ('' for the
    importer, which takes it for the single input)."""
    if input_shape is None:
        return None
    if isinstance(input_shape, Mapping):
        return {str(k): _shape(v, f"{path} input {k!r}") for k, v in input_shape.items()} or None
    return {"": _shape(input_shape, str(path))}


def _load_module(module: Any, input_shape: InputShape | None, name: str | None, strict: bool = False) -> Network:
    import torch

    if not isinstance(module, torch.nn.Module):
        raise NnperfError(f"cannot load a model from a {type(module).__name__}: give a zoo name, an .onnx, .tflite or "
                          "IR .json file, an nnperf Network or a torch.nn.Module")
    if input_shape is None or isinstance(input_shape, Mapping):
        raise NnperfError(f"{type(module).__name__}: a PyTorch module needs input_shape, one shape batch first, "
                          "e.g. (1, 3, 224, 224)")
    from nnperf.ir.importers import from_torch

    shape = _shape(input_shape, type(module).__name__)
    generator = torch.Generator().manual_seed(0)
    return from_torch(module, torch.randn(shape, generator=generator), name=name or type(module).__name__,
                      strict=strict)


def _shape(value: Sequence[int], what: str) -> Shape:
    shape = tuple(value)
    if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        raise NnperfError(f"{what}: an input shape is a sequence of positive integers, got {value!r}")
    return shape
