"""Whether the networks the backends rebuild from an ONNX file's IR compute what the file computes.

:func:`check_rebuild` imports the file with its own parameters (``from_onnx_with_weights``), rebuilds the network
on torch (``build_torch``) and on ONNX Runtime (``build_onnx``), runs each once on the inputs the backends measure
with (``random_inputs``, seed 0), and compares with one run of ONNX Runtime on the file itself. It compares the
network's outputs and the input of its last layer with parameters (its head): a classifier whose head starts at
zero (ViT's, exported untrained) has an output of zeros whatever the rest computes. Each stage that fails is
reported with its reason in one line, not raised.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from nnperf.errors import NnperfError
from nnperf.ir import Network, Shape
from nnperf.ir.importers import FileWeights, from_onnx_with_weights
from nnperf.measure.backends._base import random_inputs

REBUILD_TOLERANCE = 1e-4
"""A rebuilt tensor matches the file's when its largest difference is at most this fraction of the file's
largest magnitude (float32 sums in another order: ResNet-18's logits differ by 4e-7 of theirs on torch)."""

CHECKED_BACKENDS = ("torch", "onnxruntime")
"""The backends whose graph builders :func:`check_rebuild` checks."""

_MAX_PROTO_BYTES = (1 << 31) - 1
"""protobuf's limit on a serialised message: a larger model goes to ONNX Runtime as a file with external data."""


@dataclass(frozen=True)
class BackendCheck:
    """One backend's rebuild of a file: built, ran, and how far its tensors are from the file's."""

    backend: str
    built: bool = False
    ran: bool = False
    max_abs_diff: float | None = None
    """the largest absolute difference over the compared tensors"""
    relative_diff: float | None = None
    """the largest, over the compared tensors, of that difference over the file's largest magnitude"""
    error: str = ""

    @property
    def matches(self) -> bool:
        """Whether every compared tensor is within :data:`REBUILD_TOLERANCE` of the file's."""
        return self.relative_diff is not None and self.relative_diff <= REBUILD_TOLERANCE


@dataclass(frozen=True)
class RebuildCheck:
    """An ONNX file imported, rebuilt on each backend and compared with ONNX Runtime's run of the file."""

    path: str
    imported: bool = False
    error: str = ""
    """why the file did not import, or why ONNX Runtime could not run the file itself"""
    layers: int = 0
    compared: tuple[str, ...] = ()
    """the file's tensors compared: its outputs, then its head's input"""
    scales: tuple[float, ...] = ()
    """the file's largest magnitude in each compared tensor"""
    weights_missing: tuple[str, ...] = ()
    """layers whose parameters the file does not store as such (built with random ones)"""
    backends: tuple[BackendCheck, ...] = ()

    @property
    def verified(self) -> bool:
        """Whether the file imported and every backend's rebuild matches it."""
        return self.imported and bool(self.backends) and all(b.matches for b in self.backends)


def check_rebuild(path: str | Path, backends: Sequence[str] = CHECKED_BACKENDS,
                  input_shapes: Mapping[str, Shape] | None = None) -> RebuildCheck:
    """Imports the ONNX file at ``path`` with its own parameters, rebuilds it on each of ``backends`` (torch,
    onnxruntime) and compares each rebuild's outputs and head input with ONNX Runtime's run of the file."""
    path = Path(path)
    try:
        network, weights = from_onnx_with_weights(path, input_shapes)
    except NnperfError as exc:
        return RebuildCheck(str(path), error=_one_line(exc))
    network = _with_head_input(network, weights)
    compared = tuple(weights.tensors.get(name, name) for name in network.outputs)
    inputs = random_inputs([s.shape for s in network.inputs], 0, [s.dtype for s in network.inputs])
    found = RebuildCheck(str(path), True, layers=len(network.layers), compared=compared,
                         weights_missing=weights.missing)
    try:
        expected = _run_file(path, compared, dict(zip([s.name for s in network.inputs], inputs)))
    except Exception as exc:  # noqa: BLE001 - ONNX Runtime raises its own types: the file itself does not run
        return dataclasses.replace(found, error=f"ONNX Runtime cannot run the file itself: {_one_line(exc)}")
    scales = tuple(float(np.max(np.abs(e))) if e.size else 0.0 for e in expected)
    checks = tuple(_check_backend(name, network, weights, inputs, expected) for name in backends)
    return dataclasses.replace(found, scales=scales, backends=checks)


def _with_head_input(network: Network, weights: FileWeights) -> Network:
    """``network`` with the input of its last layer with parameters (read from a layer) as one more output."""
    names = {layer.name for layer in network.layers}
    head = next((layer for layer in reversed(network.layers)
                 if layer.name in weights.layers and layer.inputs and layer.inputs[0] in names), None)
    if head is None or head.inputs[0] in network.outputs:
        return network
    return dataclasses.replace(network, outputs=(*network.outputs, head.inputs[0]))


def _check_backend(backend: str, network: Network, weights: FileWeights, inputs: list[np.ndarray],
                   expected: list[np.ndarray]) -> BackendCheck:
    try:
        run = _rebuilt_runner(backend, network, weights)
    except Exception as exc:  # noqa: BLE001 - a builder's refusal or a framework's error, reported as such
        return BackendCheck(backend, error=_one_line(exc))
    try:
        got = run(inputs)
    except Exception as exc:  # noqa: BLE001
        return BackendCheck(backend, built=True, error=_one_line(exc))
    finally:
        del run
        gc.collect()
    diffs, relative = [], []
    for g, e in zip(got, expected):
        if g.shape != e.shape:
            return BackendCheck(backend, True, True, error=f"a rebuilt tensor of shape {g.shape}, the file's {e.shape}")
        diff = float(np.max(np.abs(g.astype(np.float64) - e))) if e.size else 0.0
        scale = float(np.max(np.abs(e))) if e.size else 0.0
        diffs.append(diff)
        relative.append(diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf))
    return BackendCheck(backend, True, True, max(diffs), max(relative))


Runner = Callable[[list[np.ndarray]], list[np.ndarray]]


def _rebuilt_runner(backend: str, network: Network, weights: FileWeights) -> Runner:
    """A function running ``network`` rebuilt by ``backend``'s graph builder with the file's parameters."""
    if backend == "torch":
        import torch

        from nnperf.measure.backends._torch_graph import build_torch

        module = build_torch(network, weights=weights.layers)

        def run_torch(inputs: list[np.ndarray]) -> list[np.ndarray]:
            with torch.no_grad():
                out = module(*[torch.from_numpy(x) for x in inputs])
            return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]

        return run_torch
    if backend == "onnxruntime":
        from nnperf.measure.backends._onnx_graph import build_onnx

        session = _session(build_onnx(network, weights=weights.layers))

        def run_ort(inputs: list[np.ndarray]) -> list[np.ndarray]:
            return [np.asarray(r) for r in session.run(None, dict(zip([i.name for i in session.get_inputs()], inputs)))]

        return run_ort
    raise NnperfError(f"no rebuild check for backend {backend!r} (checked: {', '.join(CHECKED_BACKENDS)})")


def _run_file(path: Path, tensors: Sequence[str], inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """ONNX Runtime's values of ``tensors`` in one run of the file at ``path`` on ``inputs`` (by the network's
    input names, which are the file's; in the file's order where one differs)."""
    model = onnx.load(str(path), load_external_data=False)
    declared = {o.name for o in model.graph.output}
    types = {v.name: v.type.tensor_type.elem_type for v in model.graph.value_info}
    for name in tensors:
        if name not in declared:
            elem = types.get(name) or onnx.TensorProto.FLOAT
            model.graph.output.append(onnx.helper.make_tensor_value_info(name, elem, None))
    external = {e.value for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL
                for e in t.external_data if e.key == "location"}
    with tempfile.TemporaryDirectory(prefix="nnperf-rebuild-") as tmp:
        for location in external:  # the file's external data beside the copy that has the extra outputs
            _link_or_copy(path.parent / location, Path(tmp) / location)
        copy = Path(tmp) / path.name
        onnx.save_model(model, str(copy))
        session = _ort_session(str(copy))
        feeds = {}
        for spec, x in zip(session.get_inputs(), inputs.values()):
            x = inputs.get(spec.name, x)
            feeds[spec.name] = x.reshape(()) if len(spec.shape) == 0 else x  # the IR holds a scalar as one element
        return [np.asarray(r) for r in session.run(list(tensors), feeds)]


def _link_or_copy(source: Path, target: Path) -> None:
    """``source`` at ``target`` too: a hard link where the file system allows (ONNX Runtime refuses external data
    that a symbolic link takes out of the model's folder), else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _session(model: onnx.ModelProto) -> Any:
    """An ONNX Runtime session of ``model``, through a file with external data when it is over protobuf's limit."""
    stored = sum(len(t.raw_data) for t in model.graph.initializer)  # ByteSize() overflows past 2 GiB
    if stored < _MAX_PROTO_BYTES - (64 << 20):  # the graph and the small tensors' other fields fit in 64 MiB
        return _ort_session(model.SerializeToString())
    with tempfile.TemporaryDirectory(prefix="nnperf-rebuild-") as tmp:
        onnx.save_model(model, os.path.join(tmp, "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.data")
        return _ort_session(os.path.join(tmp, "model.onnx"))


def _ort_session(model: str | bytes) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
