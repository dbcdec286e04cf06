"""ONNX Runtime on its CPU execution provider (CUDA provider when present), on models built from the IR."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from nnperf.ir import Layer, Network
from nnperf.measure._attribution import attribute, grouped_layers, match_node
from nnperf.measure._harness import MeasurementError, Timer
from nnperf.measure._stats import fixed_timing
from nnperf.measure.backends._base import DEFAULT_OPTIONS, Backend, BackendOptions, ProfileResult, random_inputs
from nnperf.measure.backends._timers import LoopTimer
from nnperf.registry import Availability

OPT_LEVELS = ("disable", "basic", "extended", "all")

WARMUP_RUNS = 3
"""Runs of a profiling session before the profiled ones (the first pays for allocations and caches)."""


class OrtBackend(Backend):
    """ONNX Runtime; options: ``opt_level`` (graph optimisation), ``inter_threads``, ``execution`` mode and
    ``precision``: ``fp32``, or ``int8`` (static QDQ, :mod:`nnperf.measure.backends.onnx_int8`: every
    convolution, Gemm and MatMul with a constant weight quantised, ranges calibrated on random inputs; the
    other layers stay fp32), with ``int8_weights`` scaled ``per_channel`` (default) or ``per_tensor``."""

    name = "onnxruntime"
    PACKAGE = "onnxruntime"
    OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {
        "opt_level": ("all", OPT_LEVELS),
        "inter_threads": ("1", ()),
        "execution": ("sequential", ("sequential", "parallel")),
        "precision": ("fp32", ("fp32", "int8")),
        "int8_weights": ("per_channel", ("per_channel", "per_tensor")),
    }
    KEYED_WHEN_SET = frozenset({"precision", "int8_weights"})
    has_profiler = True
    has_trace = True

    def __init__(self, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0) -> None:
        super().__init__(options, seed)
        import onnxruntime as ort

        self.ort = ort
        inter = self.option("inter_threads")
        if not inter.isdigit() or int(inter) < 1:
            from nnperf.measure.backends._base import BackendOptionError

            raise BackendOptionError(f"onnxruntime option inter_threads must be a positive integer, got {inter!r}")
        self.providers = ["CUDAExecutionProvider"] if options.device.startswith("cuda") else ["CPUExecutionProvider"]
        if options.device.startswith("cuda:"):
            self.providers = [("CUDAExecutionProvider", {"device_id": int(options.device.split(":")[1])})]

    @classmethod
    def availability(cls, device: str = "cpu") -> Availability:
        try:
            import onnxruntime as ort
        except ImportError:
            return Availability.no("onnxruntime is not installed (pip install onnxruntime)")
        if device == "cpu":
            return Availability.yes()
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            return Availability.no("this onnxruntime build has no CUDA execution provider "
                                   "(pip install onnxruntime-gpu on a machine with an NVIDIA GPU)")
        return Availability.yes()

    def thread_settings(self) -> tuple[tuple[str, str], ...]:
        so = self._session_options()
        return (("intra_op_num_threads", str(so.intra_op_num_threads)),
                ("inter_op_num_threads", str(so.inter_op_num_threads)),
                ("execution_mode", "parallel" if so.execution_mode == self.ort.ExecutionMode.ORT_PARALLEL
                 else "sequential"))

    def _session_options(self, profile_prefix: str | None = None) -> Any:
        ort = self.ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.options.threads
        so.inter_op_num_threads = int(self.option("inter_threads"))
        so.execution_mode = (ort.ExecutionMode.ORT_PARALLEL if self.option("execution") == "parallel"
                             else ort.ExecutionMode.ORT_SEQUENTIAL)
        level = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
                 "all": "ORT_ENABLE_ALL"}[self.option("opt_level")]
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        so.log_severity_level = 3
        if profile_prefix is not None:
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        return so

    def _session(self, model: Any, profile_prefix: str | None = None) -> tuple[Any, dict[str, np.ndarray]]:
        try:
            session = self.ort.InferenceSession(model.SerializeToString(), self._session_options(profile_prefix),
                                                providers=self.providers)
        except Exception as exc:  # onnxruntime raises its own Fail, InvalidGraph, ... for a graph it refuses
            raise MeasurementError(f"ONNX Runtime cannot build the graph nnperf made of {model.graph.name!r}: "
                                   f"{str(exc).strip()}") from exc
        shapes = [tuple(int(d) for d in i.shape) for i in session.get_inputs()]
        dtypes = [ort_numpy_type(i.type) for i in session.get_inputs()]
        feeds = dict(zip([i.name for i in session.get_inputs()], random_inputs(shapes, self.seed, dtypes)))
        return session, feeds

    def _timer(self, model: Any) -> Timer:
        session, feeds = self._session(model)

        def run() -> None:
            session.run(None, feeds)

        return LoopTimer(run)

    def _in_precision(self, model: Any) -> Any:
        """``model`` as this backend runs it: as built (fp32), or quantised to int8."""
        if self.option("precision") == "int8":
            from nnperf.measure.backends.onnx_int8 import int8_model

            return int8_model(model, self.seed, per_channel=self.option("int8_weights") == "per_channel")
        return model

    def network_timer(self, network: Network) -> Timer:
        from nnperf.measure.backends._onnx_graph import build_onnx

        return self._timer(self._in_precision(build_onnx(network, self.seed)))

    def layer_timer(self, layer: Layer) -> Timer:
        from nnperf.measure.backends._onnx_graph import layer_onnx

        return self._timer(self._in_precision(layer_onnx(layer, self.seed)))

    def profile(self, network: Network, runs: int) -> ProfileResult:
        """Per-node kernel times from ONNX Runtime's profiling JSON, fused nodes followed back to IR layers."""
        from nnperf.measure.backends._onnx_graph import build_onnx, onnx_node_layers

        model = self._in_precision(build_onnx(network, self.seed))
        events = self._profiled_runs(model, runs)
        rename = None
        if self.option("precision") == "int8":
            from nnperf.measure.backends.onnx_int8 import NodeOwners

            rename = NodeOwners(model).owner  # QLinearConv, Q/DQ nodes -> the file's node they run for
        return _parse_profile(network, events, onnx_node_layers(model), WARMUP_RUNS, rename)

    def trace(self, network: Network, runs: int) -> dict[str, Any]:
        """ONNX Runtime's own profile of ``runs`` runs (a Chrome trace-event list, wrapped in a document):
        the session's initialisation and each ``model_run`` with its node kernels; the warm-up runs are
        left out."""
        from nnperf.measure.backends._onnx_graph import build_onnx

        events = self._profiled_runs(self._in_precision(build_onnx(network, self.seed)), runs)
        runs_at = sorted(e["ts"] for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
        warm_from, warm_to = (runs_at[0], runs_at[WARMUP_RUNS]) if len(runs_at) > WARMUP_RUNS else (0, 0)
        kept = [e for e in events if not warm_from <= e.get("ts", 0) < warm_to]
        return {"traceEvents": kept, "displayTimeUnit": "ms"}

    def _profiled_runs(self, model: Any, runs: int) -> list[dict[str, Any]]:
        """ONNX Runtime's profiling events of ``WARMUP_RUNS`` + ``runs`` runs of ``model`` in a new session."""
        with tempfile.TemporaryDirectory(prefix="nnperf-ort-") as tmp:
            session, feeds = self._session(model, profile_prefix=os.path.join(tmp, "profile"))
            for _ in range(WARMUP_RUNS + runs):
                session.run(None, feeds)
            events: list[dict[str, Any]] = json.loads(Path(session.end_profiling()).read_text())
        return events


def _parse_profile(network: Network, events: list[dict[str, Any]], layer_of: Mapping[str, str],
                   skip_runs: int, rename: Callable[[str], str] | None = None) -> ProfileResult:
    run_windows = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                         if e.get("cat") == "Session" and e.get("name") == "model_run")[skip_runs:]
    if not run_windows:
        raise RuntimeError("ONNX Runtime's profile has no model_run events")
    node_runs: dict[str, list[float]] = {}
    for event in events:
        name = str(event.get("name", ""))
        if event.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        ts = event["ts"]
        run = next((i for i, (start, end) in enumerate(run_windows) if start <= ts <= end), None)
        if run is None:
            continue
        node = name[: -len("_kernel_time")]
        if rename is not None:
            node = rename(node)
        times = node_runs.setdefault(node, [0.0] * len(run_windows))
        times[run] += event["dur"] / 1e6  # microseconds
    node_layer = {node: match_node(node, layer_of) for node in node_runs}
    layers, unattributed = grouped_layers(network, attribute(network, node_layer), node_runs)
    run_times = [(end - start) / 1e6 for start, end in run_windows]
    return ProfileResult(layers, fixed_timing(run_times), unattributed)


def ort_numpy_type(ort_type: str) -> str:
    """ONNX Runtime's name of an input type ('tensor(float)', 'tensor(int64)', ...) as a numpy type name."""
    element = ort_type.removeprefix("tensor(").removesuffix(")")
    return {"float": "float32", "double": "float64", "bool": "bool"}.get(element, element)
