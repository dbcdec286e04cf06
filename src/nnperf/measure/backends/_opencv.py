"""OpenCV DNN (``cv2.dnn``) running the ONNX export of an IR network."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from nnperf.errors import UnsupportedOperatorError
from nnperf.ir import GenericAttrs, Layer, Network
from nnperf.measure._attribution import attribute, match_node
from nnperf.measure._harness import Timer
from nnperf.measure._stats import fixed_timing
from nnperf.measure._types import LayerMeasurement, Method
from nnperf.measure.backends._base import DEFAULT_OPTIONS, Backend, BackendOptions, ProfileResult, random_inputs
from nnperf.measure.backends._timers import LoopTimer
from nnperf.registry import Availability


class OpenCvBackend(Backend):
    """cv2.dnn; option ``engine``: auto | classic | new (OpenCV 5's two DNN engines)."""

    name = "opencv"
    PACKAGE = "opencv-python-headless"
    OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {"engine": ("auto", ("auto", "classic", "new"))}
    has_profiler = True

    def __init__(self, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0) -> None:
        super().__init__(options, seed)
        import cv2

        self.cv2 = cv2
        cv2.setNumThreads(options.threads)

    def thread_settings(self) -> tuple[tuple[str, str], ...]:
        self.cv2.setNumThreads(self.options.threads)  # process-wide: another backend may have changed it
        return (("cv2.getNumThreads()", str(self.cv2.getNumThreads())),)

    @classmethod
    def availability(cls, device: str = "cpu") -> Availability:
        try:
            import cv2
        except ImportError:
            return Availability.no("OpenCV is not installed (pip install opencv-python-headless)")
        if not hasattr(cv2, "dnn"):
            return Availability.no(f"this OpenCV build ({cv2.__version__}) has no dnn module")
        if device == "cpu":
            return Availability.yes()
        try:
            count = cv2.cuda.getCudaEnabledDeviceCount()
        except (AttributeError, cv2.error):
            count = 0
        if count < 1:
            return Availability.no(f"this OpenCV build ({cv2.__version__}) has no CUDA support "
                                   "(the pip wheels never do; build OpenCV with CUDA and cuDNN)")
        return Availability.yes()

    def _net(self, model: Any) -> tuple[Any, list[tuple[str, np.ndarray]]]:
        cv2 = self.cv2
        cv2.setNumThreads(self.options.threads)  # process-wide: another backend may have changed it
        with tempfile.TemporaryDirectory(prefix="nnperf-cv-") as tmp:
            path = os.path.join(tmp, "model.onnx")
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
            engine = self.option("engine")
            if hasattr(cv2.dnn, "ENGINE_AUTO"):
                code = {"auto": cv2.dnn.ENGINE_AUTO, "classic": cv2.dnn.ENGINE_CLASSIC, "new": cv2.dnn.ENGINE_NEW}
                net = cv2.dnn.readNetFromONNX(path, code[engine])
            else:
                net = cv2.dnn.readNetFromONNX(path)
        if self.options.device.startswith("cuda"):
            net.setPreferableBackend(cv2.dnn.DNN_BACKEND_CUDA)
            net.setPreferableTarget(cv2.dnn.DNN_TARGET_CUDA)
        names = [i.name for i in model.graph.input]
        shapes = [tuple(d.dim_value for d in i.type.tensor_type.shape.dim) for i in model.graph.input]
        return net, list(zip(names, random_inputs(shapes, self.seed)))

    def _timer(self, model: Any) -> Timer:
        net, feeds = self._net(model)

        def run() -> None:
            for name, array in feeds:
                net.setInput(array, name)
            net.forward()

        return LoopTimer(run)

    def network_timer(self, network: Network) -> Timer:
        from nnperf.measure.backends._onnx_graph import build_onnx

        _refuse_generic(network.name, network.layers)
        return self._timer(build_onnx(network, self.seed))

    def layer_timer(self, layer: Layer) -> Timer:
        from nnperf.measure.backends._onnx_graph import layer_onnx

        _refuse_generic(layer.name, [layer])
        return self._timer(layer_onnx(layer, self.seed))

    def profile(self, network: Network, runs: int) -> ProfileResult:
        """Per-layer times from ``Net.getPerfProfile`` after each forward, fused layers followed back."""
        from nnperf.measure.backends._onnx_graph import build_onnx, onnx_node_layers

        _refuse_generic(network.name, network.layers)
        model = build_onnx(network, self.seed)
        net, feeds = self._net(model)
        tick = self.cv2.getTickFrequency()
        node_names = list(net.getLayerNames())
        per_run: list[np.ndarray] = []
        run_times: list[float] = []
        for i in range(3 + runs):
            for name, array in feeds:
                net.setInput(array, name)
            net.forward()
            total, per_layer = net.getPerfProfile()
            if i >= 3:
                per_run.append(np.asarray(per_layer, dtype=float).ravel()[: len(node_names)] / tick)
                run_times.append(float(total) / tick)
        node_times = np.stack(per_run, axis=1)  # node x run
        layer_of = onnx_node_layers(model)
        # OpenCV's classic engine lists layers it fused into a convolution with zero time: they did not run alone
        node_layer = {node: (match_node(node, layer_of) if node_times[i].any() else None)
                      for i, node in enumerate(node_names)}
        groups = attribute(network, node_layer)
        group_times: dict[str, np.ndarray] = {}
        unattributed: dict[str, float] = {}
        for i, node in enumerate(node_names):
            group = groups.node_group.get(node)
            if group is not None:
                group_times[group] = group_times.get(group, 0) + node_times[i]
            elif node_times[i].any():
                unattributed[node] = float(np.median(node_times[i]))
        sizes = groups.group_sizes
        layers = [LayerMeasurement(layer.name, layer.op.value, Method.PROFILER,
                                   fixed_timing(list(group_times[groups.owner[layer.name]])), groups.owner[layer.name],
                                   sizes[groups.owner[layer.name]])
                  for layer in network.layers if groups.owner[layer.name] in group_times]
        return ProfileResult(tuple(layers), fixed_timing(run_times), unattributed)


def _refuse_generic(what: str, layers: Iterable[Layer]) -> None:
    """OpenCV DNN runs nnperf's dedicated layer types only: generic layers (ONNX operators kept as they are) are
    named, with the backend that runs them."""
    generic = [layer for layer in layers if isinstance(layer.attrs, GenericAttrs)]
    if generic:
        by_operator: dict[str, list[str]] = {}
        for layer in generic:
            assert isinstance(layer.attrs, GenericAttrs)
            by_operator.setdefault(f"generic {layer.attrs.operator} (OpenCV DNN runs the dedicated layer types "
                                   "only; measure it with --backend onnxruntime)", []).append(layer.name)
        raise UnsupportedOperatorError(what, by_operator)
