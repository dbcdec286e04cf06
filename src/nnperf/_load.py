"""Turn what a user names (a zoo network, an ONNX file, an IR JSON file) into a Network."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nnperf.errors import ModelFileError, UnknownModelError
from nnperf.ir import Network, Shape, load_network_json

MODEL_SUFFIXES = (".onnx", ".json")


def load_model(spec: str, input_shapes: Mapping[str, Shape] | None = None) -> Network:
    """The network named by ``spec``: a zoo name, a ``.onnx`` file or an nnperf IR ``.json`` file.

    ``input_shapes`` fixes dynamic input dimensions of an ONNX file (input name -> shape).
    """
    path = Path(spec)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        from nnperf.ir.importers import from_onnx

        return from_onnx(path, input_shapes=input_shapes)
    if suffix == ".json":
        return load_network_json(path)
    if path.exists():
        raise ModelFileError(f"{path}: unknown model file type {suffix or '(no suffix)'!r}; "
                             f"nnperf reads {', '.join(MODEL_SUFFIXES)} files and zoo names")
    if input_shapes:
        raise UnknownModelError(f"{spec}: --input-shape applies to ONNX files only")
    return zoo_network(spec)


def zoo_network(name: str) -> Network:
    """The IR of a zoo network at its canonical input size.

    The module is built on PyTorch's meta device: shapes propagate without
    allocating or initialising weights, so even VGG-19 imports in a blink.
    """
    import torch

    from nnperf import zoo
    from nnperf.ir.importers import from_torch

    entry = zoo.get(name)
    with torch.device("meta"):
        module = entry.factory()
    return from_torch(module, torch.empty(entry.input_shape, device="meta"), name=entry.name)
