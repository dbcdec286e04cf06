"""Measuring a network from Python: per layer and whole, every measurement stored as it is taken."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._predict import Progress
from nnperf.api._session import DEFAULT_SYSTEM, StoreLike, opened_store, settings
from nnperf.measure import System

if TYPE_CHECKING:
    from nnperf.campaign import ProfileReport
    from nnperf.measure import HarnessConfig


def profile(model: ModelLike, system: System | str = DEFAULT_SYSTEM, store: StoreLike = None, *,
            per_layer: str = "isolated", energy: str | None = None, harness: HarnessConfig | None = None,
            profiler_runs: int = 50, gap_s: float = 0.0, input_shape: InputShape | None = None,
            progress: Progress | None = None, model_name: str | None = None) -> ProfileReport:
    """Measures ``model`` on a backend: each layer and the whole network, stored as they are taken.

    Parameters
    ----------
    model : str, path-like, Network or torch.nn.Module
        Anything :func:`load_model` takes.
    system : System or str, default System()
        The system on this host: :class:`nnperf.System` settings or a backend name (as for :func:`calibrate`;
        default: torch on the CPU, one thread).
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
    model_name : str, optional
        The name the run is stored under (default: ``model`` when it is a
        name or path, else the network's name).

    Returns
    -------
    ProfileReport
        The per-layer and whole-network timings, the run id, whether an
        interrupted campaign resumed, and drift warnings.
    """
    from nnperf.campaign import ProfileConfig, profile_network
    from nnperf.measure import HarnessConfig
    from nnperf.measure.power import get_meter

    chosen = settings(system, "profile")
    network = load_model(model, input_shape)
    config = ProfileConfig(per_layer=per_layer, harness=harness or HarnessConfig(), profiler_runs=profiler_runs,
                           gap_s=gap_s)
    meter = get_meter(energy) if energy else None
    name = model_name or (os.fspath(model) if isinstance(model, (str, os.PathLike)) else network.name)
    with opened_store(store) as opened, chosen.open() as runner:
        return profile_network(network, runner, opened, config, meter=meter, progress=progress, model=name)
