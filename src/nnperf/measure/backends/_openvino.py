"""OpenVINO on its CPU plugin, running the ONNX model nnperf builds from the IR (read from memory, not a file)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nnperf.errors import UnsupportedOperatorError
from nnperf.ir import Layer, Network
from nnperf.measure._attribution import Attribution, attribute, match_node
from nnperf.measure._harness import MeasurementError, Timer
from nnperf.measure._stats import fixed_timing
from nnperf.measure._types import LayerMeasurement, Method
from nnperf.measure.backends._base import (
    DEFAULT_OPTIONS,
    Backend,
    BackendOptionError,
    BackendOptions,
    ProfileResult,
    random_inputs,
)
from nnperf.measure.backends._timers import LoopTimer
from nnperf.registry import Availability

DEVICE = "CPU"
"""The OpenVINO plugin nnperf runs (its GPU and NPU plugins are for Intel devices, not CUDA)."""

WARMUP_RUNS = 5
"""Runs of a profiled model before the recorded ones: the first pays for allocations and weight packing, and the
tiny test network takes about five to settle (325, 153, 114, 105 us, then 87 us). Few, because each one widens what
the counters can say about the profiled runs (:func:`node_means_s`)."""

_BACKEND_FOR_THE_REST = "measure it with --backend onnxruntime"
_NO_RULE = re.compile(r"No conversion rule found for operations:\s*(.+)")
_FAILED_OP = re.compile(r"^-- (\S+) with a message:")
_VERSION_SUFFIX = re.compile(r"-\d+$")
_NOISE = re.compile(r"^(Exception from |Check '.*' failed at |FrontEnd API failed with |Model wasn't fully converted"
                    r"|Summary:|To facilitate the conversion)")


class OpenVinoBackend(Backend):
    """OpenVINO's CPU plugin; option ``precision``: ``f32`` (default) or ``bf16`` (where the CPU has bf16
    instructions: OpenVINO would otherwise run f32 silently, so nnperf refuses it).

    Every compiled model is fixed to what makes times comparable with the other backends' (:meth:`config`):
    ``options.threads`` inference threads, one stream, the latency hint, no core pinning, the precision asked for
    (OpenVINO picks bf16 by itself on CPUs that have it), and no model cache (a cached blob would skip compilation
    but change nothing timed; it is left off so that nothing is read from or written to disk).
    """

    name = "openvino"
    PACKAGE = "openvino"
    EXTRA = "openvino"
    OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {"precision": ("f32", ("f32", "bf16"))}
    KEYED_WHEN_SET = frozenset({"precision"})
    has_profiler = True

    def __init__(self, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0) -> None:
        super().__init__(options, seed)
        import openvino as ov

        self.ov = ov
        self.core = ov.Core()
        self.ov_version = ov.get_version().split("-")[0]
        if self.option("precision") == "bf16":
            capabilities = list(self.core.get_property(DEVICE, "OPTIMIZATION_CAPABILITIES"))
            if "BF16" not in capabilities:
                raise BackendOptionError(f"backend 'openvino' option precision=bf16: this CPU has no bf16 support "
                                         f"(OpenVINO's CPU capabilities: {', '.join(capabilities)}), OpenVINO would "
                                         "run f32 instead; use precision=f32")

    @classmethod
    def availability(cls, device: str = "cpu") -> Availability:
        try:
            import openvino as ov
        except ImportError:
            return Availability.no("OpenVINO is not installed (pip install nnperf[openvino])")
        if device != "cpu":
            return Availability.no("nnperf runs OpenVINO on its CPU plugin only (OpenVINO has no CUDA device; its "
                                   "GPU plugin drives Intel GPUs)")
        if DEVICE not in ov.Core().available_devices:
            return Availability.no(f"OpenVINO {ov.__version__} finds no CPU device here")
        return Availability.yes()

    def config(self, profiling: bool = False) -> dict[str, Any]:
        """The compile configuration: property name -> value, names as OpenVINO 2026.4 spells them."""
        return {
            "INFERENCE_NUM_THREADS": self.options.threads,
            "INFERENCE_PRECISION_HINT": self.option("precision"),
            "ENABLE_CPU_PINNING": False,  # on a shared machine a pinned thread waits for its core; others move
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "CACHE_DIR": "",
            "PERF_COUNT": profiling,
        }

    def thread_settings(self) -> tuple[tuple[str, str], ...]:
        """The CPU plugin's thread settings as a compiled model reports them (a one-layer model, compiled with
        :meth:`config`)."""
        from nnperf.ir import Layer, OpType
        from nnperf.measure.backends._onnx_graph import layer_onnx

        compiled = self.compile(layer_onnx(Layer("relu", OpType.RELU, ("x",), ((1, 4),), (1, 4)), self.seed))
        read = {key: compiled.get_property(key) for key in ("INFERENCE_NUM_THREADS", "NUM_STREAMS",
                                                             "ENABLE_CPU_PINNING", "INFERENCE_PRECISION_HINT")}
        read["INFERENCE_PRECISION_HINT"] = read["INFERENCE_PRECISION_HINT"].get_type_name()
        return tuple((key, str(value)) for key, value in read.items())

    def compile(self, model: Any, profiling: bool = False) -> Any:
        """``model`` (an ONNX ``ModelProto``) compiled for the CPU plugin with :meth:`config`; an operator
        OpenVINO cannot convert raises :class:`UnsupportedOperatorError`, anything else it refuses
        :class:`MeasurementError`, each one line."""
        what = model.graph.name
        try:
            read = self.core.read_model(model.SerializeToString())
        except Exception as exc:  # OpenVINO raises RuntimeError (OpConversionFailure, GeneralFailure) with C++ context
            raise _refusal(model, what, exc, self.ov_version) from exc
        try:
            compiled = self.core.compile_model(read, DEVICE, self.config(profiling))
        except Exception as exc:
            raise MeasurementError(f"OpenVINO cannot compile the graph nnperf made of {what!r}: "
                                   f"{_reason(exc)}") from exc
        precision = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        if precision != self.option("precision"):
            raise MeasurementError(f"OpenVINO compiled {what!r} in {precision}, not the {self.option('precision')} "
                                   "asked for")
        return compiled

    def _request(self, compiled: Any) -> Any:
        """An infer request of ``compiled`` with its inputs set once to fixed random tensors."""
        ports = list(compiled.inputs)
        shapes = [tuple(int(d) for d in port.get_shape()) for port in ports]
        dtypes = [np.dtype(port.get_element_type().to_dtype()).name for port in ports]
        request = compiled.create_infer_request()
        for i, array in enumerate(random_inputs(shapes, self.seed, dtypes)):
            request.set_input_tensor(i, self.ov.Tensor(array))
        return request

    def _timer(self, model: Any) -> Timer:
        request = self._request(self.compile(model))

        def run() -> None:
            # inputs set once, outputs left in the request's own buffers: no per-call copies to time
            request.infer(share_outputs=True)

        run()  # the first inference allocates and primes; the harness never times compilation
        return LoopTimer(run)

    def network_timer(self, network: Network) -> Timer:
        from nnperf.measure.backends._onnx_graph import build_onnx

        return self._timer(build_onnx(network, self.seed))

    def layer_timer(self, layer: Layer) -> Timer:
        from nnperf.measure.backends._onnx_graph import layer_onnx

        return self._timer(layer_onnx(layer, self.seed))

    def profile(self, network: Network, runs: int) -> ProfileResult:
        """Per-layer times from OpenVINO's performance counters (``PERF_COUNT``), each executed node followed back
        to the IR layers it holds through the execution graph's ``originalLayersNames``; ``run_timing`` is the
        wall clock of each profiled inference.

        OpenVINO keeps no per-run node times: a node's counter is its mean over every run since compilation, each
        run's time cut to whole microseconds. So the counters are read after ``WARMUP_RUNS`` runs and after the
        ``runs`` profiled ones, and their difference is each node's mean over the profiled runs (within about a
        microsecond, :func:`node_means_s`). A node's time in run *k* is that mean scaled by run *k*'s wall clock
        over the mean run's: each layer's median is its mean at the median run, and its spread is the run's.
        """
        from nnperf.measure.backends._onnx_graph import build_onnx, onnx_node_layers

        if runs < 1:
            raise MeasurementError(f"the OpenVINO profiler needs at least one run, got {runs}")
        model = build_onnx(network, self.seed)
        compiled = self.compile(model, profiling=True)
        request = self._request(compiled)
        for _ in range(WARMUP_RUNS):
            request.infer(share_outputs=True)
        before = self._counters(request)
        run_times: list[float] = []
        for _ in range(runs):
            start = time.perf_counter()
            request.infer(share_outputs=True)
            run_times.append(time.perf_counter() - start)
        means_s = node_means_s(before, self._counters(request), WARMUP_RUNS, runs)
        held = node_layers(compiled, onnx_node_layers(model), network)
        return _profile_result(network, means_s, {node: held.get(node, []) for node in means_s}, run_times)

    def _counters(self, request: Any) -> dict[str, int]:
        """The executed nodes' counters: node -> mean microseconds per run since compilation (OpenVINO's
        ``real_time``, whole microseconds); NOT_RUN and OPTIMIZED_OUT nodes took no time and are left out."""
        executed = self.ov.ProfilingInfo.Status.EXECUTED
        counters: dict[str, int] = {}
        for info in request.get_profiling_info():
            if info.status == executed:
                counters[info.node_name] = counters.get(info.node_name, 0) + _whole_us(info.real_time)
        return counters


def node_means_s(before: Mapping[str, int], after: Mapping[str, int], warmup_runs: int, runs: int) -> dict[str, float]:
    """Each node's mean seconds over the ``runs`` runs between two readings of OpenVINO's counters.

    A counter is ``floor(total / n)`` after ``n`` runs, ``total`` the sum of each run's time cut to whole
    microseconds: the total is known to within ``n - 1`` microseconds, taken at the middle of that range. The
    difference of the two totals over ``runs`` is the mean (off by at most ``(2 warmup_runs + runs) / (2 runs)``
    microseconds), and half a microsecond is added for what cutting each run's time drops on average.
    """
    def total_us(mean_us: int, n: int) -> float:
        return mean_us * n + (n - 1) / 2

    end = warmup_runs + runs
    return {node: max(0.0, total_us(mean_us, end) - (total_us(before[node], warmup_runs) if node in before else 0.0))
            / runs * 1e-6 + 0.5e-6 for node, mean_us in after.items()}


def _whole_us(delta: Any) -> int:
    """A ``datetime.timedelta`` (OpenVINO's ``real_time``) in whole microseconds."""
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def node_layers(compiled: Any, layer_of: Mapping[str, str], network: Network) -> dict[str, list[str]]:
    """Each node of ``compiled``'s execution graph -> the IR layers it computes, in topological order: its
    ``originalLayersNames`` (the ONNX nodes it holds, comma separated) through ``layer_of`` (ONNX node -> layer).
    Reorders and input or output conversions hold no layer."""
    order = {layer.name: i for i, layer in enumerate(network.layers)}
    held: dict[str, list[str]] = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        names = str(info["originalLayersNames"].astype(str)) if "originalLayersNames" in info else ""
        layers = {match_node(name.strip(), layer_of) for name in names.split(",") if name.strip()}
        held[op.get_friendly_name()] = sorted((lay for lay in layers if lay in order), key=order.__getitem__)
    return held


def _profile_result(network: Network, means_s: Mapping[str, float], held: Mapping[str, Sequence[str]],
                    run_times: Sequence[float]) -> ProfileResult:
    """Node means grouped as :func:`~nnperf.measure._attribution.attribute` groups the layers, every layer a node
    holds named (the node after the last, the group's output, as ONNX Runtime names a fused node; the others
    through stand-in nodes), so that the layers no node holds (folded away, renamed) join the groups they were
    fused into; then the groups of the layers one node holds are merged, since OpenVINO says exactly which layers it
    fused. Each run's share of a group is the group's mean scaled by that run's wall clock over the mean run's."""
    named: dict[str, str | None] = {}
    for node, layers in held.items():
        named[node] = layers[-1] if layers else None
        named.update({f"{node}\n{i}": layer for i, layer in enumerate(layers[:-1])})
    groups = _merge_held(network, attribute(network, named), held)
    runs = np.asarray(run_times, dtype=float)
    scale = runs / runs.mean()
    group_means: dict[str, float] = {}
    unattributed: dict[str, float] = {}
    for node, mean_s in means_s.items():
        group = groups.node_group.get(node)
        if group is None:
            unattributed[node] = mean_s * float(np.median(scale))
        else:
            group_means[group] = group_means.get(group, 0.0) + mean_s
    sizes = groups.group_sizes
    layers = [LayerMeasurement(layer.name, layer.op.value, Method.PROFILER,
                               fixed_timing(list(group_means[groups.owner[layer.name]] * scale)),
                               groups.owner[layer.name], sizes[groups.owner[layer.name]])
              for layer in network.layers if groups.owner[layer.name] in group_means]
    return ProfileResult(tuple(layers), fixed_timing(list(run_times)), unattributed)


def _merge_held(network: Network, groups: Attribution, held: Mapping[str, Sequence[str]]) -> Attribution:
    """``groups`` with the groups of the layers each node holds joined into one, named after its first member."""
    parent = {group: group for group in groups.owner.values()}

    def root(group: str) -> str:
        while parent[group] != group:
            parent[group] = parent[parent[group]]
            group = parent[group]
        return group

    for layers in held.values():
        for layer in layers[1:]:
            parent[root(groups.owner[layer])] = root(groups.owner[layers[0]])
    head: dict[str, str] = {}
    for layer in network.layers:
        head.setdefault(root(groups.owner[layer.name]), layer.name)
    owner = {layer: head[root(group)] for layer, group in groups.owner.items()}
    node_group = {node: head[root(group)] for node, group in groups.node_group.items()}
    return Attribution(owner, node_group)


def _refusal(model: Any, what: str, exc: Exception, version: str) -> Exception:
    """The one-line error for a model OpenVINO's ONNX reader refuses: the operators it cannot convert with the
    layers that use them, or the reason it gives."""
    from nnperf.measure.backends._onnx_graph import onnx_node_layers

    text = str(exc)
    operators: dict[str, str] = {}
    match = _NO_RULE.search(text)
    if match:
        for name in match.group(1).split(","):
            operators[_VERSION_SUFFIX.sub("", name.strip())] = f"OpenVINO {version} has no conversion for it"
    lines = [line.strip() for line in text.splitlines()]
    for i, line in enumerate(lines):
        failed = _FAILED_OP.match(line)
        if failed:
            why = next((later for later in lines[i + 1:] if later and not _NOISE.match(later)), "")
            operators[_VERSION_SUFFIX.sub("", failed.group(1))] = f"OpenVINO {version} cannot convert it: {_short(why)}"
    layer_of = onnx_node_layers(model)
    problems: dict[str, list[str]] = {}
    for operator, why in operators.items():
        layers = [layer_of[node.name] for node in model.graph.node
                  if (f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type)
                  == operator]
        problems[f"ONNX {operator} ({why}; {_BACKEND_FOR_THE_REST})"] = list(dict.fromkeys(layers)) or [what]
    if problems:
        return UnsupportedOperatorError(what, problems)
    return MeasurementError(f"OpenVINO cannot read the graph nnperf made of {what!r}: {_reason(exc)}")


def _reason(exc: Exception) -> str:
    """The first informative line of an OpenVINO exception (its first lines name C++ source files)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return _short(next((line for line in lines if not _NOISE.match(line)), lines[0] if lines else type(exc).__name__))


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
