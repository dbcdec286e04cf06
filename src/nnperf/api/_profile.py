"""Measuring a network from Python: per layer and whole, every measurement stored as it is taken; and a power
analyser's trace of a profile turned into per-layer energies."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._predict import Progress
from nnperf.api._session import (
    DEFAULT_SYSTEM,
    MeasuringSystem,
    StoreLike,
    measuring_on,
    opened_here,
    opened_store,
    settings,
)
from nnperf.errors import ParameterError
from nnperf.measure import System

if TYPE_CHECKING:
    from nnperf.campaign import Measurer, ProfileReport
    from nnperf.ir import Network
    from nnperf.measure import HarnessConfig
    from nnperf.measure.power import WindowEnergy

TRACE_RUNS = 5
"""Whole-network runs in a framework trace by default: enough to see run-to-run variation, small to open."""

TRACE_SOURCES = ("auto", "framework", "layers")
"""What :func:`profile` writes as its trace (see :func:`profile_trace_source`)."""


def profile(model: ModelLike, system: MeasuringSystem = DEFAULT_SYSTEM, store: StoreLike = None, *,
            per_layer: str = "isolated", energy: str | None = None, harness: HarnessConfig | None = None,
            profiler_runs: int = 50, gap_s: float = 0.0, input_shape: InputShape | None = None, strict: bool = False,
            progress: Progress | None = None, model_name: str | None = None, trace: str | os.PathLike[str] | None = None,
            trace_source: str = "auto", trace_runs: int = TRACE_RUNS) -> ProfileReport:
    """Measures ``model`` on a backend: each layer and the whole network, stored as they are taken.

    Parameters
    ----------
    model : str, path-like, Network or torch.nn.Module
        Anything :func:`load_model` takes.
    system : System, backend name, backend or runner, default System()
        Where it is measured (see :data:`MeasuringSystem`): :class:`nnperf.System` settings on this host or a
        backend name (as for :func:`calibrate`; default: torch on the CPU, one thread), or a runner of a fleet's
        nodes (:func:`fleet_runner`).
    store : Store, path or None, default None
        Where the measurements go (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    per_layer : {'isolated', 'profiler', 'none'}, default 'isolated'
        Each layer alone on its real inputs (PreVIous), the framework
        profiler's per-node times in whole-network runs, or no layers.
    energy : str, optional
        A power meter ('nvml', 'rapl'); this CPU VM has none.
    harness : HarnessConfig, optional
        Warm-up, confidence target (default 2%) and budget (default 3 s) per measurement.
    profiler_runs : int, default 50
        Whole-network runs the profiler method averages.
    gap_s : float, default 0
        Idle seconds between layers, so that a power trace separates them (PreVIous used 0.3).
    input_shape, strict
        As for :func:`load_model`.
    model_name : str, optional
        The name the run is stored under (default: ``model`` when it is a
        name or path, else the network's name).
    trace : path, optional
        Also write a Chrome trace-event file of the profile there (open it in ui.perfetto.dev).
    trace_source : {'auto', 'framework', 'layers'}, default 'auto'
        What ``trace`` holds (:func:`profile_trace_source`): nnperf's spans of the stored medians laid out layer
        after layer, or the framework's own profiler trace of ``trace_runs`` more whole-network runs.

    Returns
    -------
    ProfileReport
        The per-layer and whole-network timings, the run id, whether an
        interrupted campaign resumed, and drift warnings.
    """
    from nnperf.campaign import ProfileConfig, profile_network
    from nnperf.measure import HarnessConfig
    from nnperf.measure.power import get_meter

    network = load_model(model, input_shape, strict=strict)
    config = ProfileConfig(per_layer=per_layer, harness=harness or HarnessConfig(), profiler_runs=profiler_runs,
                           gap_s=gap_s)
    source = profile_trace_source(system, per_layer, trace_source) if trace is not None else None
    meter = get_meter(energy) if energy else None
    name = model_name or (os.fspath(model) if isinstance(model, (str, os.PathLike)) else network.name)
    with opened_store(store) as opened, measuring_on(system, "profile") as runner:
        report = profile_network(network, runner, opened, config, meter=meter, progress=progress, model=name)
        if trace is not None:
            _write_trace(Path(trace), source == "framework", network, runner, report, trace_runs)
    return report


def writes_trace(backend: str) -> bool:
    """Whether the backend named writes a trace of its own (torch.profiler, ONNX Runtime's profiler)."""
    from nnperf.measure.backends import BACKENDS

    return bool(BACKENDS.create(backend).has_trace)


def profile_trace_source(system: MeasuringSystem = DEFAULT_SYSTEM, per_layer: str = "isolated",
                         source: str = "auto") -> str:
    """What :func:`profile`'s trace holds, 'framework' or 'layers', for ``source``: 'layers' (nnperf's spans of the
    stored medians), 'framework' (the framework's own profiler trace; refused for a backend without one, and on a
    fleet) or 'auto': 'framework' when the layers are timed in whole-network runs (``per_layer`` 'profiler' or
    'none') and the backend has such a trace, else 'layers'."""
    if source not in TRACE_SOURCES:
        raise ParameterError(f"{{trace_source}} must be one of {', '.join(TRACE_SOURCES)}, got {source!r}",
                             "trace_source")
    if opened_here(system):
        backend = settings(system, "profile").backend
        has_trace = writes_trace(backend)
    else:  # an open backend, or a fleet's runner (which has none)
        backend = getattr(system, "name", type(system).__name__)
        has_trace = bool(getattr(system, "has_trace", False))
    if source == "framework" and not has_trace:
        raise ParameterError(f"backend {backend!r} writes no trace of its own; use {{trace_source}} layers",
                             "trace_source")
    if source == "auto":
        return "framework" if has_trace and per_layer != "isolated" else "layers"
    return source


def _write_trace(path: Path, framework: bool, network: Network, runner: Measurer, report: ProfileReport,
                 runs: int) -> None:
    """The profile's trace: the framework's own of ``runs`` more whole-network runs, or the stored medians'."""
    from nnperf.report.trace import framework_trace, measured_trace, write_trace

    if framework:
        document = framework_trace(runner.trace(network, runs), network,  # type: ignore[union-attr]
                                   report.system_label, runner.name)  # type: ignore[union-attr]
    else:
        document = measured_trace(network, report)
    write_trace(document, path)


def attach_power_trace(model: str, trace: str | os.PathLike[str], system: System | str = DEFAULT_SYSTEM,
                       store: StoreLike = None, *, offset_s: float = 0.0) -> list[WindowEnergy]:
    """Per-layer energies of the latest finished isolated run of ``model`` (the name it is stored under) on
    ``system``, from a power analyser's trace recorded during it: a CSV of time_s,power_w, ``offset_s`` added to
    its times to put them on Unix time. The energies are stored with the run's layers (as PreVIous measured them,
    with ``gap_s`` between layers)."""
    from nnperf.campaign import attach_trace
    from nnperf.measure.power import read_trace_csv

    chosen = settings(system, "attach_power_trace")
    path = Path(trace)
    with opened_store(store) as opened, chosen.open() as backend:
        return attach_trace(opened, backend.system(), model, read_trace_csv(path), offset_s, source=path.name)
