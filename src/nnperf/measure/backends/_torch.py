"""PyTorch eager execution on CPU (and CUDA, timed with CUDA events) of networks rebuilt from the IR."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from nnperf.ir import Layer, Network
from nnperf.measure._harness import Timer
from nnperf.measure._stats import fixed_timing
from nnperf.measure._types import LayerMeasurement, Method
from nnperf.measure.backends._base import (
    DEFAULT_OPTIONS,
    Backend,
    BackendOptions,
    ProfileResult,
    layer_input_dtypes,
    random_inputs,
)
from nnperf.measure.backends._timers import CudaEventTimer, LoopTimer
from nnperf.registry import Availability

RUN_LABEL = "nnperf::run"
"""The record_function span around each profiled whole-network run."""


class TorchBackend(Backend):
    """torch eager mode; options: ``memory_format`` nchw | channels_last, ``precision`` fp32 | bf16 (weights and
    activations in bfloat16: oneDNN's bf16 kernels on a CPU with AVX512-BF16 or AMX, emulated and slow without)."""

    name = "torch"
    PACKAGE = "torch"
    OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {"memory_format": ("nchw", ("nchw", "channels_last")),
                                                          "precision": ("fp32", ("fp32", "bf16"))}
    has_profiler = True
    has_trace = True

    def __init__(self, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0) -> None:
        super().__init__(options, seed)
        import torch

        self.torch = torch
        torch.set_num_threads(options.threads)
        self.device = torch.device(options.device)

    @classmethod
    def availability(cls, device: str = "cpu") -> Availability:
        try:
            import torch
        except ImportError:
            return Availability.no("torch is not installed (pip install torch)")
        if device == "cpu":
            return Availability.yes()
        if not torch.cuda.is_available():
            return Availability.no(f"no CUDA device (torch {torch.__version__}, CUDA build: "
                                   f"{torch.version.cuda or 'no'})")
        index = int(device.split(":", 1)[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            return Availability.no(f"{device} does not exist ({torch.cuda.device_count()} CUDA device(s))")
        return Availability.yes()

    def thread_settings(self) -> tuple[tuple[str, str], ...]:
        self.torch.set_num_threads(self.options.threads)  # process-wide: another backend may have changed it
        return (("intra-op threads", str(self.torch.get_num_threads())),
                ("inter-op threads", str(self.torch.get_num_interop_threads())))

    def device_name(self) -> str:
        if self.device.type == "cuda":
            return str(self.torch.cuda.get_device_name(self.device))
        return super().device_name()

    def _prepare(self, module: Any, shapes: list[tuple[int, ...]], dtypes: list[str]) -> tuple[Any, list[Any]]:
        torch = self.torch
        torch.set_num_threads(self.options.threads)  # process-wide: another backend may have changed it
        channels_last = self.option("memory_format") == "channels_last"
        dtype = torch.bfloat16 if self.option("precision") == "bf16" else torch.float32
        if dtype is torch.bfloat16:
            _float_only_in_fp32(module)
        module = module.to(self.device, dtype)
        if channels_last:
            module = module.to(memory_format=torch.channels_last)
        inputs = []
        for array in random_inputs(shapes, self.seed, dtypes):
            t = torch.from_numpy(array)
            t = t.to(self.device, dtype) if t.is_floating_point() else t.to(self.device)
            if channels_last and t.dim() == 4:
                t = t.contiguous(memory_format=torch.channels_last)
            inputs.append(t)
        return module, inputs

    def _timer(self, module: Any, inputs: list[Any]) -> Timer:
        torch = self.torch

        def run() -> None:
            with torch.inference_mode():
                module(*inputs)

        return CudaEventTimer(run, str(self.device)) if self.device.type == "cuda" else LoopTimer(run)

    def network_timer(self, network: Network) -> Timer:
        from nnperf.measure.backends._torch_graph import build_torch

        module, inputs = self._prepare(build_torch(network, self.seed), [s.shape for s in network.inputs],
                                      [s.dtype for s in network.inputs])
        return self._timer(module, inputs)

    def layer_timer(self, layer: Layer) -> Timer:
        from nnperf.measure.backends._torch_graph import layer_module

        module, inputs = self._prepare(layer_module(layer, self.seed), list(layer.input_shapes),
                                      layer_input_dtypes(layer))
        return self._timer(module, inputs)

    def context_timer(self, network: Network, layer: str) -> Timer:
        """Times ``layer`` in place during whole-network runs: host clock on CPU, CUDA events on a GPU."""
        from nnperf.measure.backends._torch_graph import build_torch

        network.layer(layer)  # an unknown name fails here, not inside the timed runs
        module, inputs = self._prepare(build_torch(network, self.seed), [s.shape for s in network.inputs],
                                      [s.dtype for s in network.inputs])
        return _LayerInPlaceTimer(self.torch, module, inputs, layer, self.device)

    def profile(self, network: Network, runs: int) -> ProfileResult:
        """Per-layer times from torch.profiler: each layer call is labelled with record_function."""
        prof = self._profiled(network, runs)
        names = {layer.name for layer in network.layers}
        per_layer: dict[str, list[float]] = {name: [] for name in names}
        run_times: list[float] = []
        cuda = self.device.type == "cuda"
        for event in prof.events():
            if event.name == RUN_LABEL:
                run_times.append(_event_s(event, cuda))
            elif event.name in per_layer:
                per_layer[event.name].append(_event_s(event, cuda))
        layers = []
        for layer in network.layers:
            times = per_layer[layer.name]
            if times:
                layers.append(LayerMeasurement(layer.name, layer.op.value, Method.PROFILER, fixed_timing(times),
                                               layer.name))
        return ProfileResult(tuple(layers), fixed_timing(run_times), {})

    def trace(self, network: Network, runs: int) -> dict[str, Any]:
        """torch.profiler's Chrome trace (``export_chrome_trace``) of ``runs`` runs, each layer a
        record_function span named after it inside an ``nnperf::run`` span."""
        prof = self._profiled(network, runs)
        with tempfile.TemporaryDirectory(prefix="nnperf-torch-") as tmp:
            path = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(path))
            document: dict[str, Any] = json.loads(path.read_text())
        return document

    def _profiled(self, network: Network, runs: int) -> Any:
        """A stopped torch.profiler session over ``runs`` whole-network runs (three warm-up runs before it),
        each run inside a ``nnperf::run`` record_function and each layer call inside one named after it."""
        from nnperf.measure.backends._torch_graph import build_torch

        torch = self.torch
        module, inputs = self._prepare(build_torch(network, self.seed), [s.shape for s in network.inputs],
                                      [s.dtype for s in network.inputs])
        module.layer_hook = torch.profiler.record_function
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.inference_mode():
            for _ in range(3):  # warm-up outside the profiler
                module(*inputs)
            prof = torch.profiler.profile(activities=activities)
            with _native_stderr_silenced():  # kineto prints a "USDT: profiler_start" line on each start and stop
                prof.start()
            try:
                for _ in range(runs):
                    with torch.profiler.record_function(RUN_LABEL):
                        module(*inputs)
                    if self.device.type == "cuda":
                        torch.cuda.synchronize(self.device)
            finally:
                with _native_stderr_silenced():
                    prof.stop()
        return prof


class _LayerInPlaceTimer:
    """Runs a network ``n`` times and returns the seconds spent inside one layer (its ``layer_hook``)."""

    def __init__(self, torch: Any, module: Any, inputs: list[Any], layer: str, device: Any) -> None:
        self.torch, self.module, self.inputs, self.layer, self.device = torch, module, inputs, layer, device
        self.cuda = device.type == "cuda"
        self.elapsed_s = 0.0
        self.events: list[tuple[Any, Any]] = []
        module.layer_hook = self._hook

    @contextlib.contextmanager
    def _hook(self, name: str) -> Iterator[None]:
        if name != self.layer:
            yield
            return
        if self.cuda:
            start, end = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
            self.events.append((start, end))
        else:
            began = time.perf_counter()
            yield
            self.elapsed_s += time.perf_counter() - began

    def time_block(self, n: int) -> float:
        self.elapsed_s, self.events = 0.0, []
        with self.torch.inference_mode():
            for _ in range(n):
                self.module(*self.inputs)
        if self.cuda:
            self.torch.cuda.synchronize(self.device)
            return sum(float(a.elapsed_time(b)) for a, b in self.events) / 1e3
        return self.elapsed_s


def _float_only_in_fp32(module: Any) -> None:
    """Runs the submodules torch has no bf16 CPU kernel for (local response norm: its avg_pool3d) in fp32,
    casting around them, as a bf16 program must."""
    import torch

    def to_fp32(_: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(a.float() if isinstance(a, torch.Tensor) else a for a in args)

    def back(_: Any, __: Any, output: Any) -> Any:
        return output.to(torch.bfloat16)

    for sub in module.modules():
        if isinstance(sub, torch.nn.LocalResponseNorm):
            sub.register_forward_pre_hook(to_fp32)
            sub.register_forward_hook(back)


def _event_s(event: Any, cuda: bool) -> float:
    """A profiler event's duration in seconds: CPU wall time, or the GPU time of its kernels on CUDA."""
    if cuda:
        return float(getattr(event, "device_time_total", 0.0)) / 1e6 or float(event.cpu_time_total) / 1e6
    return float(event.cpu_time_total) / 1e6


@contextlib.contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """Points file descriptor 2 at /dev/null for the block: silences native libraries' own logging."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
