"""What every measurement backend provides, and the options they share."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Self

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import GenericAttrs, Layer, Network
from nnperf.measure._harness import Timer
from nnperf.measure._host import cpu_model, host_info, package_version
from nnperf.measure._types import LayerMeasurement, SystemSpec, Timing, fused_sum_s
from nnperf.measure.backends._generic_node import input_dtype
from nnperf.registry import Availability, UnavailableError


class BackendOptionError(NnperfError):
    """A backend option that is unknown or has a value the backend does not accept."""


@dataclass(frozen=True)
class BackendOptions:
    """How a backend runs: the device, the thread count and backend-specific settings.

    ``threads`` defaults to 1: one thread is the quietest setting on shared
    machines (bench/measure_backends.py: whole-network IQR 1-6% at 1 thread,
    up to 30% for torch at 2 threads).
    ``extra`` holds backend-specific options by name (see each backend's
    ``OPTIONS``), validated when the backend is created.
    """

    device: str = "cpu"
    threads: int = 1
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.threads, int) or self.threads < 1:
            raise BackendOptionError(f"the thread count must be a positive integer, got {self.threads!r}")
        if self.device != "cpu" and not (self.device == "cuda" or self.device.startswith("cuda:")):
            raise BackendOptionError(f"unknown device {self.device!r}; use cpu, cuda or cuda:N")


DEFAULT_OPTIONS = BackendOptions()


@dataclass(frozen=True)
class ProfileResult:
    """Per-layer times from the framework's profiler over ``runs`` whole-network runs.

    ``run_timing`` is the whole-run time as the profiler saw it;
    ``unattributed_s`` sums framework nodes that belong to no IR layer (e.g.
    ONNX Runtime's layout reorders), by node name (median seconds per run).
    """

    layers: tuple[LayerMeasurement, ...]
    run_timing: Timing
    unattributed_s: Mapping[str, float]

    @property
    def profiler_sum_s(self) -> float:
        """Sum of the median node times, each fused group counted once, plus unattributed nodes."""
        return fused_sum_s(self.layers, self.unattributed_s)


class Backend(abc.ABC):
    """A framework that runs IR networks and layers and times them.

    Subclasses set ``name`` and ``OPTIONS`` (option name -> (default, allowed
    values)), and implement the timers. Creating a backend validates its options
    and applies process-wide settings (thread counts).
    """

    name: str = ""
    OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {}
    has_profiler: bool = False
    profiles_in_isolation: bool = False
    """Whether :meth:`profile`'s per-layer times come from each fused group run alone (a framework with no
    per-operator profiler): their sum then carries every group's call overhead, and can pass the whole run's."""
    has_trace: bool = False
    """Whether :meth:`trace` gives the framework's own trace."""
    PACKAGE: str = ""
    """The distribution that provides the framework (its version is recorded with every system the backend
    measures, and ``nnperf backends`` shows it)."""
    EXTRA: str = ""
    """The nnperf extra that installs the framework when it is optional (``pip install nnperf[EXTRA]``)."""
    KEYED_WHEN_SET: frozenset[str] = frozenset({"precision"})
    """Options added after systems were stored, whose default is how the backend ran before them: they join the
    system's identity only when set away from their default, so stored calibrations keep their keys."""

    def __init__(self, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0) -> None:
        unknown = sorted(set(options.extra) - set(self.OPTIONS))
        if unknown:
            known = ", ".join(sorted(self.OPTIONS)) or "none"
            raise BackendOptionError(f"backend {self.name!r} has no option {', '.join(unknown)}; its options: {known}")
        for key, value in options.extra.items():
            allowed = self.OPTIONS[key][1]
            if allowed and value not in allowed:
                raise BackendOptionError(f"backend {self.name!r} option {key}={value!r}: use one of "
                                         f"{', '.join(allowed)}")
        available = self.availability(options.device)
        if not available.ok:
            raise UnavailableError(f"backend {self.name!r} cannot run here: {available.reason}")
        self.options = options
        self.seed = seed

    @classmethod
    @abc.abstractmethod
    def availability(cls, device: str = "cpu") -> Availability:
        """Whether this backend can run on ``device`` here, and if not, why."""

    def option(self, key: str) -> str:
        """The value of backend option ``key`` (its default when not given)."""
        return self.options.extra.get(key, self.OPTIONS[key][0])

    def resolved_options(self) -> tuple[tuple[str, str], ...]:
        """Every option that shapes the times, defaults included, sorted (part of the system's identity)."""
        opts = {key: self.option(key) for key in self.OPTIONS
                if key not in self.KEYED_WHEN_SET or self.option(key) != self.OPTIONS[key][0]}
        opts["threads"] = str(self.options.threads)
        return tuple(sorted(opts.items()))

    def system(self) -> SystemSpec:
        """The system this backend measures: device, framework, options and host (whose package versions
        include this framework's)."""
        host = host_info()
        recorded = dict(host.versions)
        if self.PACKAGE and self.PACKAGE not in recorded and self.version():
            host = replace(host, versions=tuple(sorted({**recorded, self.PACKAGE: self.version()}.items())))
        return SystemSpec(self.name, self.options.device, self.device_name(), self.resolved_options(), host)

    @classmethod
    def version(cls) -> str:
        """The installed version of the framework's distribution (``PACKAGE``), '' when it is not installed."""
        return package_version(cls.PACKAGE) if cls.PACKAGE else ""

    def thread_settings(self) -> tuple[tuple[str, str], ...]:
        """The framework's own thread settings as this backend applies them, read back from the framework where
        it tells (``nnperf check`` shows them), in its own words."""
        return (("threads", str(self.options.threads)),)

    def device_name(self) -> str:
        return cpu_model() if self.options.device == "cpu" else self.options.device

    @abc.abstractmethod
    def network_timer(self, network: Network) -> Timer:
        """A timer that runs the whole network on fixed random inputs."""

    @abc.abstractmethod
    def layer_timer(self, layer: Layer) -> Timer:
        """A timer that runs one layer alone, all its inputs fed with their real shapes."""

    def prepare_layers(self, layers: Sequence[Layer]) -> None:
        """Builds ahead what :meth:`layer_timer` will build for each of ``layers``, for a framework that builds
        many programs at once for much less than one at a time (ExecuTorch's lowering); the default builds
        nothing. A layer that cannot be built is refused when it is timed, not here."""

    def context_timer(self, network: Network, layer: str) -> Timer | None:
        """A timer of one layer inside whole-network runs: ``time_block(n)`` runs the network ``n`` times
        and returns the time spent in ``layer`` alone. None when the backend cannot time a layer in place
        (its profiler is then the way: :func:`nnperf.measure.sweep.time_in_context`)."""
        return None

    def profile(self, network: Network, runs: int) -> ProfileResult:
        """Per-layer times from the framework's own profiler over ``runs`` whole-network runs."""
        raise UnavailableError(f"backend {self.name!r} has no per-node profiler; use --per-layer isolated")

    def trace(self, network: Network, runs: int) -> dict[str, Any]:
        """The framework's own trace of ``runs`` whole-network runs (after a warm-up), as its profiler writes
        it: a Chrome trace-event document ``{"traceEvents": [...], ...}``, times in microseconds."""
        raise UnavailableError(f"backend {self.name!r} writes no trace of its own; use --trace-source layers")

    def close(self) -> None:
        """Releases sessions and caches."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def random_inputs(shapes: list[tuple[int, ...]], seed: int = 0, dtypes: Sequence[str] | None = None) -> list[np.ndarray]:
    """Deterministic inputs of the given shapes: float32 in [0, 1) for every float type (the backends compute in
    float32), random booleans, and zeros for integers (an index valid on any axis). ``dtypes`` are numpy type
    names, float32 for all when None."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in zip(shapes, dtypes or ["float32"] * len(shapes)):
        kind = np.dtype(dtype).kind
        if kind == "b":
            arrays.append(rng.random(shape) < 0.5)
        elif kind in "iu":
            arrays.append(np.zeros(shape, dtype))
        else:
            arrays.append(rng.random(shape, dtype=np.float32))
    return arrays


def layer_input_dtypes(layer: Layer) -> list[str]:
    """The numpy type of each input of ``layer`` as the backends feed it: float32, but where a generic layer
    reads integers or booleans."""
    if isinstance(layer.attrs, GenericAttrs):
        return [input_dtype(t).name for t in layer.attrs.input_types]
    return ["float32"] * len(layer.inputs)
