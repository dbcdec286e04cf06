"""Measurement backends: frameworks that run IR networks and layers and time them.

The workstation frameworks (torch, ONNX Runtime, OpenCV DNN) are always installed; the deployment runtimes
(OpenVINO, LiteRT, ExecuTorch) are optional extras (``pip install nnperf[runtimes]``).

``BACKENDS`` is the registry (third parties add theirs through the
``nnperf.backends`` entry-point group). Framework modules are imported only
when their backend is created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nnperf.measure.backends._base import (
    DEFAULT_OPTIONS,
    Backend,
    BackendOptionError,
    BackendOptions,
    ProfileResult,
    random_inputs,
)
from nnperf.measure.backends._timers import LoopTimer, SyncedLoopTimer
from nnperf.registry import Availability, Registry

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import numpy as np
    import onnx
    from torch import nn

    from nnperf.ir import Layer, Network, Shape
    from nnperf.measure.backends._rebuild_check import RebuildCheck
    from nnperf.measure.backends._torch_graph import GraphModule


def _torch() -> type[Backend]:
    from nnperf.measure.backends._torch import TorchBackend

    return TorchBackend


def _onnxruntime() -> type[Backend]:
    from nnperf.measure.backends._onnxruntime import OrtBackend

    return OrtBackend


def _opencv() -> type[Backend]:
    from nnperf.measure.backends._opencv import OpenCvBackend

    return OpenCvBackend


def _openvino() -> type[Backend]:
    from nnperf.measure.backends._openvino import OpenVinoBackend

    return OpenVinoBackend


def _litert() -> type[Backend]:
    from nnperf.measure.backends._litert import LiteRtBackend

    return LiteRtBackend


def _executorch() -> type[Backend]:
    from nnperf.measure.backends._executorch import ExecuTorchBackend

    return ExecuTorchBackend


def _fake() -> type[Backend]:
    from nnperf.measure.backends._fake import FakeBackend

    return FakeBackend


BACKENDS: Registry[type[Backend]] = Registry("backend", "nnperf.backends")
BACKENDS.register("torch", _torch)
BACKENDS.register("onnxruntime", _onnxruntime)
BACKENDS.register("opencv", _opencv)
BACKENDS.register("openvino", _openvino)
BACKENDS.register("litert", _litert)
BACKENDS.register("executorch", _executorch)
BACKENDS.register("fake", _fake)

REAL_BACKENDS = ("torch", "onnxruntime", "opencv", "openvino", "litert", "executorch")
"""The backends whose times are measurements (``fake`` is a formula, for testing the harness)."""


def create_backend(name: str, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0) -> Backend:
    """A ready backend; unknown names list the known ones, unavailable ones say why."""
    return BACKENDS.create(name)(options, seed)


def backend_report(device: str = "cpu") -> list[tuple[str, Availability]]:
    """Every registered backend with whether it can run on ``device`` here."""
    return [(name, BACKENDS.create(name).availability(device)) for name in BACKENDS.names()]


def build_torch(network: Network, seed: int = 0,
                weights: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> GraphModule:
    """``network`` as an eval-mode torch module with the torch backend's weights (``seed``), but for the layers
    ``weights`` gives the parameters of (a file's own: ``nnperf.ir.importers.from_onnx_with_weights``); imports
    torch."""
    from nnperf.measure.backends._torch_graph import build_torch as build

    return build(network, seed, weights)


def layer_module(layer: Layer, seed: int = 0) -> nn.Module:
    """One layer as an eval-mode torch module with the weights it has in :func:`build_torch`'s; imports torch."""
    from nnperf.measure.backends._torch_graph import layer_module as build

    return build(layer, seed)


def build_onnx(network: Network, seed: int = 0, opset: int = 17,
               weights: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> onnx.ModelProto:
    """``network`` as an ONNX model with the ONNX Runtime backend's weights (``seed``) at ``opset``, but for the
    layers ``weights`` gives the parameters of (as :func:`build_torch`); imports onnx."""
    from nnperf.measure.backends._onnx_graph import build_onnx as build

    return build(network, seed, opset, weights)


def check_rebuild(path: str, backends: Sequence[str] = ("torch", "onnxruntime"),
                  input_shapes: Mapping[str, Shape] | None = None) -> RebuildCheck:
    """Whether the networks torch and ONNX Runtime rebuild from the IR of the ONNX file at ``path`` (with the
    file's own parameters) compute what ONNX Runtime computes on the file (``_rebuild_check``); imports onnx."""
    from nnperf.measure.backends._rebuild_check import check_rebuild as check

    return check(path, backends, input_shapes)


def ort_numpy_type(ort_type: str) -> str:
    """ONNX Runtime's name of an input type ('tensor(float)', 'tensor(int64)', ...) as a numpy type name."""
    from nnperf.measure.backends._onnxruntime import ort_numpy_type as numpy_type

    return numpy_type(ort_type)


__all__ = [
    "BACKENDS", "DEFAULT_OPTIONS", "REAL_BACKENDS", "Backend", "BackendOptionError", "BackendOptions", "LoopTimer",
    "ProfileResult", "SyncedLoopTimer", "backend_report", "build_onnx", "build_torch", "check_rebuild",
    "create_backend", "layer_module", "ort_numpy_type", "random_inputs",
]
