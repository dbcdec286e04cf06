"""ExecuTorch (PyTorch's on-device runtime) running IR networks lowered to its XNNPACK delegate, or to its portable
kernels alone.

The route: the torch module nnperf builds of the IR (:func:`~nnperf.measure.backends.build_torch`,
:func:`~nnperf.measure.backends.layer_module`) is exported with ``torch.export``, lowered with
``to_edge_transform_and_lower`` and XNNPACK's partitioner, serialised to a program (a ``.pte`` file's bytes, kept
in memory) and run by ExecuTorch's C++ runtime through its Python bindings.

Lowering is slow (about 1.2 s for a one-layer program on a 2-core VM, almost all of it ``torch.export``'s
decomposition machinery and XNNPACK's passes, whatever the size of the graph), so the programs of many layers are
lowered at once: :meth:`ExecuTorchBackend.prepare_layers` exports the layers side by side as one graph, lowers it
once with every layer in a delegate of its own, and cuts the lowered graph into one program per layer (about 0.3 s
a layer). Programs are kept by layer configuration (operator, shapes, attributes: the weights' values, drawn from
the layer's name, change no time), so a configuration met again is not lowered again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.resources
import json
import os
import pickle
import re
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Generic, TypeVar

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import Layer, Network, network_to_dict
from nnperf.measure._attribution import attribute, grouped_layers
from nnperf.measure._harness import MeasurementError, Timer
from nnperf.measure._stats import fixed_timing
from nnperf.measure.backends._base import DEFAULT_OPTIONS, Backend, BackendOptions, ProfileResult, layer_input_dtypes
from nnperf.measure.backends._executorch_lowering import (
    Lowered,
    Unlowerable,
    executorch_modules,
    lower_layers,
    lower_network,
    lower_one,
    module_layers,
    network_error,
    runnable,
    torch_inputs,
)
from nnperf.registry import Availability

T = TypeVar("T")

WARMUP_RUNS = 3
"""Runs of a profiled program before the recorded ones (the first plans memory and sets XNNPACK's operators up)."""

CACHE_BYTES = 256 * 2**20
"""Most bytes of lowered layer programs kept for reuse (least recently used dropped first); the calibration
networks' programs take about 60 MB."""

NETWORK_CACHE_BYTES = 512 * 2**20
"""Most bytes of lowered whole-network programs kept for reuse (least recently used dropped first): a calibration
times each network, then profiles it, and lowering one takes 5-10 s."""


@dataclass
class _Pool:
    """ExecuTorch's process-wide thread pool, which XNNPACK runs on: every program loaded keeps a pointer to it, and
    resetting it to another size frees it, so a program loaded before a reset must be loaded again before it runs."""

    generation: int = 0


_POOL = _Pool()


class ExecuTorchBackend(Backend):
    """ExecuTorch's runtime on the CPU; option ``delegate``: ``xnnpack`` (default: XNNPACK takes every operator it
    supports, as ``to_edge_transform_and_lower`` with its partitioner gives a deployment) or ``portable`` (no
    delegate: every operator on the portable kernels).

    Operators XNNPACK does not take stay on ExecuTorch's portable kernels: plain one-thread C++ loops written to
    run anywhere rather than fast (an average pooling that counts its padding, upsampling, group normalisation,
    reductions over an axis: tens of times slower than XNNPACK's or the other backends' kernels). A deployed
    program runs them just so; the times say what it costs. Two layers are rebuilt from kernels ExecuTorch has, with
    the same function: local response normalisation (torch's is an ``avg_pool3d``, which has no portable kernel) as
    a two-dimensional average pooling across channels, and global max pooling (``adaptive_max_pool2d`` is not in
    the core operator set ``torch.export`` lowers to) as a max pooling over the whole map; and a batch
    normalisation without scale and shift gets a scale of one and a shift of zero (XNNPACK's pass that turns a
    batch norm it cannot fuse into a depthwise convolution gives every scale-less one the same weights).

    Timings are kept honest: XNNPACK's thread pool has ``options.threads`` threads (default 1), every run feeds the
    inputs again (the program copies them into its planned memory, as an app feeding a new frame does), outputs
    are left in place (not copied out), and a timer's first run (memory planning, XNNPACK's setup) is done when the
    timer is built, before the harness's own warm-up.
    """

    name = "executorch"
    OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {"delegate": ("xnnpack", ("xnnpack", "portable"))}
    KEYED_WHEN_SET = frozenset({"delegate"})
    has_profiler = True
    PACKAGE = "executorch"
    EXTRA = "executorch"

    def __init__(self, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0) -> None:
        super().__init__(options, seed)
        self.et = executorch_modules()
        self._programs: _Cache[bytes] = _Cache(CACHE_BYTES, len)
        self._refused: dict[str, NnperfError] = {}
        self._networks: _Cache[Lowered] = _Cache(NETWORK_CACHE_BYTES, lambda lowered: 2 * len(lowered.buffer))
        _set_threads(self.et, options.threads)

    @classmethod
    def availability(cls, device: str = "cpu") -> Availability:
        try:
            import executorch  # noqa: F401
            from executorch.extension.pybindings import _C  # noqa: F401
        except ImportError:
            return Availability.no("ExecuTorch is not installed (pip install nnperf[executorch])")
        if device != "cpu":
            return Availability.no("nnperf runs ExecuTorch on the CPU only (its XNNPACK delegate and portable "
                                   "kernels; its CUDA backend is not lowered to)")
        return Availability.yes()

    def thread_settings(self) -> tuple[tuple[str, str], ...]:
        _set_threads(self.et, self.options.threads)
        with _native_stderr_silenced():
            threads = self.et.runtime._threadpool_get_thread_count()
        return (("threadpool_threads", str(threads)), ("delegate", self.option("delegate")))

    # ------------------------------------------------------------------------------------------------ timers
    def network_timer(self, network: Network) -> Timer:
        lowered = self._lower_network(network)
        return _ProgramTimer(self._load(lowered.buffer, network.name), self._network_inputs(network),
                             self.options.threads)

    def layer_timer(self, layer: Layer) -> Timer:
        key = _config_key(layer)
        if key not in self._programs and key not in self._refused:
            self.prepare_layers([layer])
        if key in self._refused:
            raise self._refused[key]
        inputs = torch_inputs(list(layer.input_shapes), self.seed, layer_input_dtypes(layer))
        return _ProgramTimer(self._load(self._programs[key], layer.name), inputs, self.options.threads)

    def prepare_layers(self, layers: Sequence[Layer]) -> None:
        """Lowers the programs :meth:`layer_timer` runs for ``layers`` all at once (see the module's docstring);
        configurations already lowered are skipped. A layer that cannot be lowered is refused when it is timed,
        with its own error; the others are lowered all the same."""
        todo: dict[str, Layer] = {}
        for layer in layers:
            key = _config_key(layer)
            if key not in self._programs and key not in self._refused:
                todo.setdefault(key, layer)
        found: list[bytes | NnperfError | None] = [None] * len(todo)
        if len(todo) > 1:
            with contextlib.suppress(Unlowerable):  # refused as a whole: each layer alone says why below
                found = lower_layers(self.et, list(todo.values()), self.seed, self.option("delegate"))
        for (key, layer), result in zip(todo.items(), found):
            if result is None:
                result = lower_one(self.et, layer, self.seed, self.option("delegate"))
            if isinstance(result, NnperfError):
                self._refused[key] = result
            else:
                self._programs[key] = result

    def profile(self, network: Network, runs: int) -> ProfileResult:
        """Per-layer times from ExecuTorch's ETDump over ``runs`` whole-network runs (after ``WARMUP_RUNS``).

        Operators on the portable kernels are events of their own, followed to IR layers by their debug handles.
        XNNPACK's delegate reports one event per XNNPACK operator, named ('Convolution (NHWC, F32) IGEMM #1') but
        without a debug handle, and timed in whole microseconds (XNNPACK's profiling unit: an operator under a
        microsecond reads 0). Its operators run in the order of the nodes of the delegate's XNNPACK graph, whose
        debug handles name the nodes of the exported graph and so the IR layers; layers fused into another's
        operator (batch norm and ReLU into a convolution) form groups as ONNX Runtime's fused nodes do, and the
        layout transposes XNNPACK adds at the delegate's edges belong to no layer (``unattributed_s``).
        ``run_timing`` is ETDump's ``Method::execute`` time of each run."""
        from nnperf.measure.backends._torch_graph import build_torch

        lowered = self._lower_network(network)
        events = self._profiled_runs(lowered.buffer, network, runs)
        owners = _node_owners(self.et, lowered, module_layers(build_torch(network, self.seed)))
        return _profile_result(network, events, owners)

    # ------------------------------------------------------------------------------------------------ internals
    def _network_inputs(self, network: Network) -> list[Any]:
        return torch_inputs([s.shape for s in network.inputs], self.seed, [s.dtype for s in network.inputs])

    def _lower_network(self, network: Network) -> Lowered:
        """``network``'s program, lowered once while it is in the cache (a campaign times a network, then profiles
        it)."""
        from nnperf.measure.backends._torch_graph import build_torch

        key = hashlib.sha256(json.dumps(network_to_dict(network), sort_keys=True).encode()).hexdigest()
        if key in self._networks:
            return self._networks[key]
        module = runnable(build_torch(network, self.seed))
        try:
            lowered = lower_network(self.et, module, self._network_inputs(network), self.option("delegate"))
        except Unlowerable as exc:
            raise network_error(network, exc, self.seed) from None
        self._networks[key] = lowered
        return lowered

    def _load(self, buffer: bytes, what: str) -> _Loaded:
        _set_threads(self.et, self.options.threads)
        return _Loaded(self.et, buffer, what)

    def _profiled_runs(self, buffer: bytes, network: Network, runs: int) -> list[_Run]:
        """ETDump's events of ``runs`` runs of ``buffer`` (after ``WARMUP_RUNS`` runs, left out)."""
        _set_threads(self.et, self.options.threads)
        inputs = self._network_inputs(network)
        with _native_stderr_silenced():
            program = self.et.runtime._load_program_from_buffer(buffer, enable_etdump=True, debug_buffer_size=0)
            method = program.load_method("forward")
            for _ in range(WARMUP_RUNS + runs):
                method(inputs, False)
        with tempfile.TemporaryDirectory(prefix="nnperf-et-") as tmp:
            path = os.path.join(tmp, "etdump.etdp")
            program.write_etdump_result_to_file(path, os.path.join(tmp, "debug.bin"))
            with open(path, "rb") as f:
                dump = self.et.etdump.deserialize_from_etdump_flatcc(f.read())
        executed = [run for run in dump.run_data if run.name == "Execute"]
        if len(executed) != WARMUP_RUNS + runs:
            raise MeasurementError(f"ExecuTorch's ETDump of {network.name!r} holds {len(executed)} runs, "
                                   f"{WARMUP_RUNS + runs} were made")
        return [_Run.of(run) for run in executed[WARMUP_RUNS:]]

    def close(self) -> None:
        self._programs.clear()
        self._refused.clear()
        self._networks.clear()


def _native_stderr_silenced() -> contextlib.AbstractContextManager[None]:
    """The C++ runtime's own log lines (cpuinfo's probing, the thread pool's resets) kept off stderr."""
    from nnperf.measure.backends._torch import _native_stderr_silenced as silenced

    return silenced()


def _set_threads(et: SimpleNamespace, threads: int) -> None:
    """Sizes ExecuTorch's thread pool (XNNPACK's) to ``threads``; a resize frees the old pool, so it counts as a new
    generation and the programs loaded before load their methods again before they run."""
    runtime = et.runtime
    with _native_stderr_silenced():
        if runtime._threadpool_get_thread_count() != threads:
            runtime._unsafe_reset_threadpool(threads)
            _POOL.generation += 1


class _Loaded:
    """A program loaded by the runtime and its ``forward`` method, loaded again when the thread pool was resized."""

    def __init__(self, et: SimpleNamespace, buffer: bytes, what: str) -> None:
        self.et, self.buffer, self.what = et, buffer, what
        try:
            with _native_stderr_silenced():
                self.program = et.runtime._load_program_from_buffer(buffer)
        except RuntimeError as exc:
            raise MeasurementError(f"ExecuTorch cannot load the program nnperf made of {what!r}: {exc}") from exc
        self.method: Any = None
        self.generation = -1

    def method_now(self) -> Any:
        """The method, loaded under the thread pool as it is now."""
        if self.generation != _POOL.generation:
            self.method = None  # dropped before the reload: it points at the pool that was freed
            try:
                with _native_stderr_silenced():
                    self.method = self.program.load_method("forward")
            except RuntimeError as exc:
                raise MeasurementError(f"ExecuTorch cannot load the method of {self.what!r}: {exc}") from exc
            self.generation = _POOL.generation
        return self.method


class _ProgramTimer:
    """Times ``n`` runs of a loaded program's method on fixed inputs with ``time.perf_counter``; the first run
    (memory planning, XNNPACK's setup) is done when the timer is built."""

    def __init__(self, loaded: _Loaded, inputs: list[Any], threads: int) -> None:
        self.loaded, self.inputs, self.threads = loaded, inputs, threads
        try:
            with _native_stderr_silenced():
                self._method()(inputs, False)
        except RuntimeError as exc:  # the bindings raise RuntimeError with the runtime's error code
            raise MeasurementError(f"ExecuTorch cannot run the program of {loaded.what!r}: {exc}") from exc

    def _method(self) -> Any:
        _set_threads(self.loaded.et, self.threads)  # process-wide: another backend may have resized the pool
        return self.loaded.method_now()

    def time_block(self, n: int) -> float:
        method, inputs = self._method(), self.inputs
        start = time.perf_counter()
        for _ in range(n):
            method(inputs, False)
        return time.perf_counter() - start


def _config_key(layer: Layer) -> str:
    """What makes two layers time the same: the operator, the shapes and the attributes (not the name, which
    only draws the weights' values)."""
    return hashlib.sha256(pickle.dumps((layer.op, layer.input_shapes, layer.output_shape, layer.attrs))).hexdigest()


class _Cache(Generic[T]):
    """Values by key, the least recently used dropped past ``limit_bytes`` (each value's size as ``size`` says)."""

    def __init__(self, limit_bytes: int, size: Callable[[T], int]) -> None:
        self.limit_bytes, self.size = limit_bytes, size
        self._items: OrderedDict[str, T] = OrderedDict()
        self._bytes = 0

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def __getitem__(self, key: str) -> T:
        self._items.move_to_end(key)
        return self._items[key]

    def __setitem__(self, key: str, value: T) -> None:
        if key in self._items:
            self._bytes -= self.size(self._items.pop(key))
        self._bytes += self.size(value)
        self._items[key] = value
        while self._bytes > self.limit_bytes and len(self._items) > 1:
            self._bytes -= self.size(self._items.popitem(last=False)[1])

    def clear(self) -> None:
        self._items.clear()
        self._bytes = 0


# ---------------------------------------------------------------------------------------------------- profiling
@dataclass(frozen=True)
class _Event:
    """One ETDump profiling event of a run: an instruction's (``OPERATOR_CALL``, ``DELEGATE_CALL``), the run's
    (``Method::execute``), or an XNNPACK operator's (``in_delegate``, named by XNNPACK, its delegate's
    instruction)."""

    name: str
    instruction: int
    duration_s: float
    in_delegate: bool


@dataclass(frozen=True)
class _Run:
    events: tuple[_Event, ...]

    @classmethod
    def of(cls, run: Any) -> _Run:
        """A run of ETDump's (its ``RunData``); times are the runtime's ticks, nanoseconds on Linux."""
        events = []
        for event in run.events or []:
            p = event.profile_event
            if p is not None:
                named = p.delegate_debug_id_str
                events.append(_Event(named or p.name or "", p.instruction_id, (p.end_time - p.start_time) / 1e9,
                                     named is not None))
        return cls(tuple(events))


@dataclass(frozen=True)
class _Owners:
    """Who each profiled event ran for: an instruction's graph node (its label and IR layer), and each delegate
    instruction's XNNPACK nodes in order (their type and IR layer)."""

    operators: Mapping[int, tuple[str, str | None]]
    delegates: Mapping[int, tuple[tuple[str, str | None], ...]] = field(default_factory=dict)


def _node_owners(et: SimpleNamespace, lowered: Lowered, names: Mapping[str, str]) -> _Owners:
    """The owners of ``lowered``'s instructions: graph nodes by the debug handles ExecuTorch's emitter mapped each
    instruction to, and each XNNPACK delegate's nodes (read from its serialised graph) by theirs."""
    handles = {index: _handles(h) for index, h in lowered.instructions.items()}
    operators: dict[int, tuple[str, str | None]] = {}
    for index, found in handles.items():
        node = next((lowered.nodes[h] for h in found if h in lowered.nodes), None)
        if node is not None and index not in lowered.delegated:
            operators[index] = (node[0], names.get(node[1] or ""))
    delegates: dict[int, tuple[tuple[str, str | None], ...]] = {}
    for delegate in lowered.delegates:
        index = max(lowered.delegated, key=lambda i: len(set(handles.get(i, ())) & set(delegate.inside)), default=None)
        if index is not None and delegate.backend_id == "XnnpackBackend":
            delegates[index] = tuple((kind, names.get(delegate.inside.get(h) or ""))
                                     for kind, h in _xnnpack_nodes(et, delegate.processed))
    return _Owners(operators, delegates)


def _handles(value: Any) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, list | tuple) else (int(value),)


def _xnnpack_nodes(et: SimpleNamespace, processed: bytes) -> list[tuple[str, int]]:
    """The nodes of a serialised XNNPACK graph in order: their type ('XNNConv2d') and debug handle (65535 for nodes
    XNNPACK's passes added, the layout transposes at the delegate's edges)."""
    header_class = et.xnn_serialize.XNNHeader
    try:
        header = header_class.from_bytes(processed[:header_class.EXPECTED_LENGTH])
        flat = processed[header.flatbuffer_offset:header.flatbuffer_offset + header.flatbuffer_size]
    except Exception:  # noqa: BLE001 - a graph written without the header: the flatbuffer is the whole
        flat = processed
    schema = importlib.resources.files("executorch.backends.xnnpack.serialization").joinpath("schema.fbs")
    with tempfile.TemporaryDirectory(prefix="nnperf-et-") as tmp:
        with open(os.path.join(tmp, "schema.fbs"), "wb") as f:
            f.write(schema.read_bytes())
        with open(os.path.join(tmp, "graph.bin"), "wb") as f:
            f.write(flat)
        et.flatbuffer._flatc_decompile(tmp, os.path.join(tmp, "schema.fbs"), os.path.join(tmp, "graph.bin"),
                                       ["--raw-binary"])
        with open(os.path.join(tmp, "graph.json")) as f:
            text = f.read()
    text = re.sub(r":\s*nan\b", ": NaN", re.sub(r":\s*(-?)inf\b", r": \1Infinity", text))  # flatc's non-JSON
    return [(node["xnode_union_type"], int(node.get("debug_handle", 0))) for node in json.loads(text)["xnodes"]]


_XNNPACK_NAMES = {
    "Conv2d": ("convolution", "fullyconnected"), "DepthwiseConv2d": ("convolution",),
    "ConvTranspose2d": ("deconvolution",), "GlobalAvgPooling2d": ("mean", "globalaveragepooling"),
    "AvgPooling2d": ("averagepooling",), "Div": ("divide",), "Multiply": ("multiply", "square"),
    "StaticReshape": ("reshape", "copy"), "Concatenate": ("copy", "concatenate"),
    "StaticConstantPad": ("constantpad",), "StaticResizeBilinear2D": ("resizebilinear",),
    "BatchMatrixMultiply": ("batchmatrixmultiply",),
}
"""The words XNNPACK's runtime names the operator of a graph node by, where they are not the node type's own
(a 1x1 convolution runs as a fully connected operator, a concatenation as copies)."""


@functools.cache
def _named_for(kind: str, operator: str) -> bool:
    """Whether XNNPACK's operator ``operator`` ('Convolution (NHWC, F32) IGEMM #2') can run a graph node of type
    ``kind`` ('XNNConv2d')."""
    kind = kind.removeprefix("XNN")
    words = next((names for prefix, names in _XNNPACK_NAMES.items() if re.fullmatch(rf"{prefix}\d?", kind)), None)
    if words is None:
        words = (re.sub(r"\d+[dD]?$", "", kind.removeprefix("Static")).lower(),)
    name = operator.lower().replace(" ", "")
    return any(word in name for word in words)


def _aligned(operators: Sequence[str], nodes: Sequence[tuple[str, str | None]]) -> list[str | None]:
    """The IR layer of each XNNPACK operator. The runtime makes the operators of the graph's nodes in order, but
    folds some nodes into a neighbour and adds a clamp after a node that carries an activation; so the two lists
    are matched as a longest common subsequence of operators named for their nodes (:func:`_named_for`). A clamp
    left over belongs to the operator before it; any other, to no layer."""
    rows, cols = len(nodes), len(operators)
    best = np.zeros((rows + 1, cols + 1), dtype=np.int32)
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            paired = best[i + 1, j + 1] + 1 if _named_for(nodes[i][0], operators[j]) else 0
            best[i, j] = max(paired, best[i + 1, j], best[i, j + 1])
    layers: list[str | None] = [None] * cols
    i = j = 0
    while i < rows and j < cols:
        if _named_for(nodes[i][0], operators[j]) and best[i, j] == best[i + 1, j + 1] + 1:
            layers[j] = nodes[i][1]
            i, j = i + 1, j + 1
        elif best[i + 1, j] >= best[i, j + 1]:
            i += 1
        else:
            j += 1
    for j in range(1, cols):
        if layers[j] is None and operators[j].lower().startswith("clamp"):
            layers[j] = layers[j - 1]
    return layers


def _profile_result(network: Network, runs: Sequence[_Run], owners: _Owners) -> ProfileResult:
    """Per-layer times of ``runs``: each event's time to its owner's IR layer, fused groups followed back."""
    node_runs: dict[str, np.ndarray] = {}
    node_layer: dict[str, str | None] = {}
    run_times: list[float] = []

    def add(label: str, layer: str | None, run: int, seconds: float) -> None:
        node_layer[label] = layer
        node_runs.setdefault(label, np.zeros(len(runs)))[run] += seconds

    for r, run in enumerate(runs):
        in_delegates: dict[int, list[_Event]] = {}
        for event in run.events:
            if event.in_delegate:
                in_delegates.setdefault(event.instruction, []).append(event)
            elif event.name == "OPERATOR_CALL":
                label, layer = owners.operators.get(event.instruction, (f"instruction {event.instruction}", None))
                add(label, layer, r, event.duration_s)
            elif event.name == "Method::execute":
                run_times.append(event.duration_s)
        for instruction, events in in_delegates.items():
            layers = _aligned([e.name for e in events], owners.delegates.get(instruction, ()))
            for event, layer in zip(events, layers):
                add(f"{event.name} (XNNPACK, instruction {instruction})", layer, r, event.duration_s)
    if len(run_times) != len(runs):
        raise MeasurementError(f"ExecuTorch's ETDump of {network.name!r} has {len(run_times)} Method::execute "
                               f"events for {len(runs)} runs")
    layers, unattributed = grouped_layers(network, attribute(network, node_layer), node_runs)
    return ProfileResult(layers, fixed_timing(run_times), unattributed)
