"""LiteRT (TensorFlow Lite's runtime, ``ai_edge_litert``) running .tflite models written from the IR, through its
interpreter with the XNNPACK delegate, or a user's own .tflite file as it is."""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from nnperf.ir import Layer, Network
from nnperf.measure._harness import MeasurementError, Timer
from nnperf.measure._stats import fixed_timing
from nnperf.measure._types import LayerMeasurement, Method
from nnperf.measure.backends._base import DEFAULT_OPTIONS, Backend, BackendOptions, ProfileResult, random_inputs
from nnperf.measure.backends._timers import LoopTimer
from nnperf.registry import Availability

PROFILE_BLOCK_S = 1e-3
"""Least time of one profiling sample (seconds): a group of a few microseconds is invoked back to back for about
this long and the sample is the time per invocation, so the clock's and the call's own cost stay small beside it."""

PROFILE_WARMUP_RUNS = 3
"""Invocations of each profiled program before its samples (the first packs weights and plans memory)."""


class LiteRtBackend(Backend):
    """LiteRT's interpreter on the CPU; option ``delegate``: ``xnnpack`` (default: the XNNPACK delegate that
    LiteRT's builtin op resolver applies to every model, as a deployment gets it; operators it does not take run on
    the builtin kernels between its partitions) or ``none`` (the builtin kernels alone).

    Timings are kept honest: the thread count is fixed (``threads``, default 1; XNNPACK's pool gets threads - 1
    workers), no XNNPACK weight cache file is given (the delegate packs the weights in memory when the interpreter
    is built), and a timer's first invocation (which plans memory and finishes packing) is done when the timer is
    built, before the harness's own warm-up.

    A network imported from a .tflite file (``network.source`` of format ``tflite``, the file still there with the
    digest imported) is timed by running that file's bytes; every other network runs the model nnperf writes of its
    IR (:mod:`nnperf.measure.backends._tflite_graph`).
    """

    name = "litert"
    OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {"delegate": ("xnnpack", ("xnnpack", "none"))}
    KEYED_WHEN_SET = frozenset({"delegate"})
    has_profiler = True
    profiles_in_isolation = True
    PACKAGE = "ai-edge-litert"
    EXTRA = "litert"

    def __init__(self, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0) -> None:
        super().__init__(options, seed)
        from ai_edge_litert import interpreter

        self.lite = interpreter
        self._profiled: tuple[Network, Any, dict[str, Any]] | None = None

    @classmethod
    def availability(cls, device: str = "cpu") -> Availability:
        try:
            import ai_edge_litert.interpreter
            import ai_edge_litert.schema_py_generated  # noqa: F401
            import flatbuffers  # noqa: F401
        except ImportError:
            return Availability.no("ai-edge-litert is not installed (pip install nnperf[litert])")
        if device != "cpu":
            return Availability.no("nnperf runs LiteRT on the CPU only (its interpreter with XNNPACK or the builtin "
                                   "kernels)")
        return Availability.yes()

    def thread_settings(self) -> tuple[tuple[str, str], ...]:
        """The interpreter's ``num_threads`` (LiteRT reads none back; XNNPACK's pool has that many threads, the
        caller's among them) and the delegate its op resolver applies."""
        delegate = "XNNPACK (the builtin op resolver's default)" if self.option("delegate") == "xnnpack" else "none"
        return (("num_threads", str(self.options.threads)), ("delegate", delegate))

    # ------------------------------------------------------------------ interpreters
    def interpreter(self, content: bytes, what: str) -> Any:
        """An interpreter of the model ``content`` with its tensors allocated, its inputs set to the fixed random
        arrays of this backend's seed, and its first invocation done; MeasurementError naming ``what`` when LiteRT
        refuses the model."""
        lite = self.lite
        resolver = (lite.OpResolverType.BUILTIN if self.option("delegate") == "xnnpack"
                    else lite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        try:
            interpreter = lite.Interpreter(model_content=content, num_threads=self.options.threads,
                                           experimental_op_resolver_type=resolver)
            interpreter.allocate_tensors()
            details = interpreter.get_input_details()
            shapes = [tuple(int(d) for d in detail["shape"]) for detail in details]
            dtypes = [np.dtype(detail["dtype"]).name for detail in details]
            for detail, array in zip(details, random_inputs(shapes, self.seed, dtypes)):
                interpreter.set_tensor(detail["index"], array)
            interpreter.invoke()
        except (ValueError, RuntimeError) as exc:  # LiteRT raises these for a model it cannot prepare or run
            raise MeasurementError(f"LiteRT cannot run {what}: {str(exc).strip()}") from exc
        return interpreter

    def network_timer(self, network: Network) -> Timer:
        content = source_bytes(network)
        if content is None:
            from nnperf.measure.backends._tflite_graph import build_tflite

            return LoopTimer(self.interpreter(build_tflite(network, self.seed).content,
                                              f"the model nnperf wrote of {network.name!r}").invoke)
        assert network.source is not None
        return LoopTimer(self.interpreter(content, f"the file {network.source.path}").invoke)

    def layer_timer(self, layer: Layer) -> Timer:
        from nnperf.measure.backends._tflite_graph import layer_tflite

        return LoopTimer(self.interpreter(layer_tflite(layer, self.seed).content,
                                          f"the model nnperf wrote of layer {layer.name!r}").invoke)

    # ------------------------------------------------------------------ per-layer times
    def profile(self, network: Network, runs: int) -> ProfileResult:
        """Per-layer times from single-group programs: LiteRT's Python API has no per-operator profiler (neither
        the interpreter nor ``CompiledModel`` gives one), so each group the model runs as one unit (a convolution
        with the batch norm folded into it and its fused ReLU, or one layer) is cut out of the network's model with
        exactly the operators it has there (the layout transposes it reads through included) and timed alone, in
        samples of at least :data:`PROFILE_BLOCK_S`; every member of a group carries the group's time, ``group_size``
        saying how many share it. The network's entry and exit transposes are timed the same way and reported as
        unattributed. ``run_timing`` is from ``runs`` whole-network invocations. Always the IR's model, even for a
        network imported from a .tflite file (its operators are the ones that can be followed back to layers)."""
        model, programs = self._programs(network)
        run_times = _samples(self.interpreter(model.content, f"the model nnperf wrote of {network.name!r}").invoke,
                             runs)
        times = {key: _samples(interpreter.invoke, runs) for key, interpreter in programs.items()}
        layers = []
        for group, members in model.groups.items():
            group_times = times.get(group, [0.0] * runs)
            for member in members:
                layers.append(LayerMeasurement(member, network.layer(member).op.value, Method.PROFILER,
                                               fixed_timing(group_times), group, len(members)))
        order = {layer.name: i for i, layer in enumerate(network.layers)}
        layers.sort(key=lambda m: order[m.layer])
        unattributed = {label: float(np.median(times[label])) for label in model.boundary_operators()}
        return ProfileResult(tuple(layers), fixed_timing(run_times), unattributed)

    def _programs(self, network: Network) -> tuple[Any, dict[str, Any]]:
        """The network's model and a ready interpreter of each group's operators (and of each entry or exit
        transpose, by its label), kept for the last network profiled (a sweep profiles one network in rounds)."""
        if self._profiled is not None and self._profiled[0] is network:
            return self._profiled[1], self._profiled[2]
        from nnperf.measure.backends._tflite_graph import build_tflite

        model = build_tflite(network, self.seed)
        parts = {group: ops for group, ops in model.group_operators().items() if ops}
        parts.update({label: [index] for label, index in model.boundary_operators().items()})
        programs = {key: self.interpreter(model.graph.part(ops).serialize(),
                                          f"the operators of {key!r} in the model nnperf wrote of {network.name!r}")
                    for key, ops in parts.items()}
        self._profiled = (network, model, programs)
        return model, programs

    def close(self) -> None:
        self._profiled = None


def source_bytes(network: Network) -> bytes | None:
    """The bytes of the .tflite file ``network`` was imported from, when it is still there unchanged (its sha256
    the one recorded); None otherwise (the network is then built from its IR)."""
    source = network.source
    if source is None or source.format != "tflite":
        return None
    try:
        content = Path(source.path).read_bytes()
    except OSError:
        return None
    return content if hashlib.sha256(content).hexdigest() == source.sha256 else None


def _samples(run: Callable[[], Any], count: int) -> list[float]:
    """``count`` times per call of ``run`` (seconds), each from a block of calls lasting at least
    :data:`PROFILE_BLOCK_S`, after :data:`PROFILE_WARMUP_RUNS` calls."""
    for _ in range(PROFILE_WARMUP_RUNS):
        run()
    start = time.perf_counter()
    run()
    once_s = time.perf_counter() - start
    block = max(1, math.ceil(PROFILE_BLOCK_S / max(once_s, 1e-9)))
    times = []
    for _ in range(count):
        start = time.perf_counter()
        for _ in range(block):
            run()
        times.append((time.perf_counter() - start) / block)
    return times
