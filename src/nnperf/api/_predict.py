"""The main job from Python: calibrate a system once, predict any network, verify against a measurement."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._session import StoreLike, open_backend, opened_store
from nnperf.campaign import CALIBRATION_HARNESS
from nnperf.campaign import calibrate as calibrate_system
from nnperf.errors import FormatVersionError, MissingStoreError, NnperfError, NnperfWarning
from nnperf.ir import Network
from nnperf.measure import REFERENCE, ComparisonProtocol, RoundsConfig, SpeedReading, resolve_protocol
from nnperf.measure.backends import Backend
from nnperf.prediction import (
    MissingCalibrationError,
    NetworkPrediction,
    SystemModel,
    Verification,
    load_stored_model,
    load_system_model,
    missing_calibration,
)
from nnperf.store import Store, default_store_path

Progress = Callable[[str, int, int], None]
"""Called with (what is being measured, done, total)."""

System = int | str | SystemModel | None
"""A stored system's id or key prefix (``nnperf systems``), a :class:`~nnperf.prediction.SystemModel`, or None for
the system the backend settings describe on this host."""


CHECK_NOISE_S = 5.0
"""Seconds of the reference workload timed back to back by the machine check before a calibration."""

VERIFY_ROUNDS = RoundsConfig(min_rounds=10, max_rounds=40, target_ci=0.01, budget_s=20.0)
"""The rounds behind a verdict (PreVIous measured once; one is no ground truth here): 10 to 40 rounds of the
network beside the reference, until their ratio is known within 1%, for at most 20 s."""


def calibrate(backend: str = "torch", device: str = "cpu", threads: int = 1,
              options: Mapping[str, str] | None = None, store: StoreLike = None, *, if_needed: bool = False,
              energy: str | None = None, budget_s: float | None = None, target_ci: float | None = None,
              sample_budget_s: float = 0.0, progress: Progress | None = None, check: bool = True,
              check_noise_s: float = CHECK_NOISE_S) -> SystemModel:
    """Profiles the calibration networks on a system and fits its models (PreVIous IV-C/IV-D).

    Every measurement is stored as it is taken: an interrupted calibration
    resumes, and networks already calibrated on the system are reused. About
    1.5 minutes per backend on a 2-core VM.

    Parameters
    ----------
    backend : str, default 'torch'
        'torch', 'onnxruntime' or 'opencv' (``nnperf backends`` says which run here).
    device : str, default 'cpu'
        'cpu', 'cuda' or 'cuda:N'.
    threads : int, default 1
        Intra-op threads (one is the quietest on a shared machine).
    options : mapping of str to str, optional
        Backend options, e.g. ``{"memory_format": "channels_last"}`` (torch).
    store : Store, path or None, default None
        The measurement store (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    if_needed : bool, default False
        Return the stored model without measuring when the system has one.
    energy : str, optional
        A power meter ('nvml', 'rapl') to fit energy models as well.
    budget_s, target_ci : float, optional
        Per-layer time budget in seconds (default 0.5) and median CI target (default 0.02).
    sample_budget_s : float, default 0
        Seconds of sampled convolutions and pools measured alone besides the calibration networks, placed where the
        kernel-aware models err most (nn-Meter's adaptive sampling; :func:`nnperf.campaign.sample_layers`).
    progress : callable, optional
        Called with (what, done, total) as the calibration goes.
    check : bool, default True
        Check the machine first (``nnperf check``: busy processes, load, pressure, and ``check_noise_s`` seconds
        of the reference workload timed back to back) and store the findings with the calibration. A machine
        found busy is calibrated all the same: the calibration says so (``calibration['machine_check']``).

    Returns
    -------
    SystemModel
        The fitted models, also stored.
    """
    harness = CALIBRATION_HARNESS
    if budget_s is not None:
        harness = replace(harness, budget_s=budget_s)
    if target_ci is not None:
        harness = replace(harness, target_ci=target_ci)
    from nnperf.campaign import ProfileConfig
    from nnperf.measure.power import get_meter

    meter = get_meter(energy) if energy else None
    with opened_store(store) as opened, open_backend(backend, device, threads, options) as runner:
        if if_needed:
            try:
                existing = stored_calibration(opened, runner)
            except FormatVersionError:  # an older nnperf's model: refit (the stored measurements are reused)
                existing = None
            if existing is not None:
                return existing
        found = None
        if check:
            from nnperf.measure import check_document, check_machine, reference_workload

            if progress is not None:
                progress("checking the machine", 0, 1)
            found = check_document(check_machine(reference_workload().timer(runner), noise_s=check_noise_s), threads)
        return calibrate_system(runner, opened, config=ProfileConfig(per_layer="isolated", harness=harness),
                                meter=meter, progress=progress, sample_budget_s=sample_budget_s,
                                machine_check=found)


def stored_calibration(store: Store, backend: Backend) -> SystemModel | None:
    """The stored model of ``backend``'s system, or None when it has none.

    Raises :class:`~nnperf.errors.FormatVersionError` for a model an older
    nnperf stored in a format this one cannot read (calibrating refits it from
    the stored measurements).
    """
    try:
        return _system_model(store, backend, None)
    except MissingCalibrationError:
        return None


def predict(model: ModelLike, system: System = None, store: StoreLike = None, *, backend: str = "torch",
            device: str = "cpu", threads: int = 1, options: Mapping[str, str] | None = None,
            input_shape: InputShape | None = None) -> NetworkPrediction:
    """Predicts a network's per-layer and total latency from a calibration, without running it.

    Parameters
    ----------
    model : str, path-like, Network or torch.nn.Module
        Anything :func:`load_model` takes.
    system : int, str, SystemModel or None, default None
        The calibrated system: a stored system's id or key prefix, a fitted
        :class:`~nnperf.prediction.SystemModel`, or None for the system that
        ``backend``, ``device``, ``threads`` and ``options`` describe on this host.
    store : Store, path or None, default None
        Where the calibration is stored (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    backend, device, threads, options
        The system's settings when ``system`` is None (as for :func:`calibrate`).
    input_shape : optional
        As for :func:`load_model`.

    Returns
    -------
    NetworkPrediction
        Per-layer latencies (seconds), every network predictor's total
        (``network_latency_s``), ``latency_s`` (the composed one) and ``hotspots()``.

    Raises
    ------
    MissingCalibrationError
        The system has no calibration (the message names the command that makes one).
    UncoveredLayersError
        A layer type the calibration does not cover (every such layer is named).
    """
    network = load_model(model, input_shape)
    if isinstance(system, SystemModel):
        return _predicted(system, network)
    if system is not None:
        with opened_store(store, create=False) as opened:
            return _predicted(load_stored_model(opened, system), network)
    with open_backend(backend, device, threads, options) as runner:
        try:
            with opened_store(store, create=False) as opened:
                return _predicted(_system_model(opened, runner, None), network)
        except MissingStoreError as exc:  # no store yet: say how to calibrate this system
            raise missing_calibration(runner.system().label, store or default_store_path(), runner.name) from exc


def _predicted(system_model: SystemModel, network: Network) -> NetworkPrediction:
    """``system_model``'s prediction of ``network``, with a warning when the file runs layers in int8 and the
    calibration is not of int8 programs (its layers are then predicted as float ones)."""
    if network.int8_layers and "precision=int8" not in system_model.system_label:
        warnings.warn(f"{network.name}: the file runs {len(network.int8_layers)} layer(s) in int8, but the "
                      f"calibration of {system_model.system_label} is of float programs, so they are predicted as "
                      "float: calibrate and predict with --backend onnxruntime --option precision=int8 to predict "
                      "them as int8", NnperfWarning, stacklevel=3)
    return system_model.predict(network)


def _system_model(store: Store, backend: Backend, system: int | str | SystemModel | None) -> SystemModel:
    """The model of ``system`` (default: ``backend``'s), refused when it is not the system ``backend`` measures."""
    spec = backend.system()
    if system is None:
        return load_system_model(store, spec.key, spec.label, backend.name)
    model = system if isinstance(system, SystemModel) else load_stored_model(store, system)
    if model.system_key != spec.key:
        named = "" if isinstance(system, SystemModel) else f" {system}"
        raise NnperfError(
            f"verify measures on {spec.label} here, but system{named} is {model.system_label} "
            f"({model.system_key[:8]}, see `nnperf systems`): give that system's backend, device, threads and "
            "options (--backend, --device, --threads, --option), on its host")
    return model


def verify(model: ModelLike, system: int | str | SystemModel | None = None, store: StoreLike = None, *,
           backend: str = "torch", device: str = "cpu", threads: int = 1, options: Mapping[str, str] | None = None,
           input_shape: InputShape | None = None, progress: Progress | None = None,
           model_name: str | None = None, protocol: str | ComparisonProtocol = "auto",
           rounds: RoundsConfig = VERIFY_ROUNDS) -> Verification:
    """Predicts ``model`` and measures it on the same system (each layer alone, then whole), then compares.

    The whole network is timed beside the machine-speed reference under ``protocol`` ('auto', the default: what a
    quick machine check recommends, :func:`nnperf.measure.resolve_protocol`; 'interleaved': both in
    every round of ``rounds``, in random order; 'duet': both at once on two cores; 'sequential': one after the
    other), and stored in a run of its own with the reference's reading. The verdict carries the raw error
    (against the network's median time now) and, when the calibration read a reference (it is the one timed
    here), the speed-adjusted error (against the network's time at the calibration's speed: its median per-round ratio to
    the reference times the reference's calibration time), with the noise floor (the spread of the rounds).

    Parameters are those of :func:`predict`; ``system``, when given, must be
    the system the backend settings describe here. The measurement is stored
    as a new run (a finished run is never overwritten) under ``model_name``
    (default: ``model`` when it is a name or path, else the network's name);
    ``progress`` is called with (what, done, total) as it goes.
    """
    from nnperf.campaign import ProfileConfig, profile_network, store_referenced, time_with_reference

    chosen = resolve_protocol(protocol, threads=threads).protocol
    network = load_model(model, input_shape)
    name = model_name or (os.fspath(model) if isinstance(model, (str, os.PathLike)) else network.name)
    with opened_store(store) as opened, open_backend(backend, device, threads, options) as runner:
        system_model = _system_model(opened, runner, system)
        prediction = _predicted(system_model, network)
        report = profile_network(network, runner, opened, ProfileConfig(per_layer="isolated"), progress=progress,
                                 model=name)
        if progress is not None:
            progress(f"whole network beside the reference ({chosen.value})", 0, 1)
        calibrated = system_model.reference_s  # the calibration's own reference, so that its reading applies
        reference = calibrated[0] if calibrated is not None else REFERENCE
        timing = store_referenced(opened, runner, network, name,
                                  time_with_reference(network, runner, chosen, rounds, reference))
        if progress is not None:
            progress(f"whole network beside the reference ({chosen.value})", 1, 1)
        path = str(opened.path)
    speed = None if calibrated is None else SpeedReading(calibrated[0], calibrated[1], timing.reference_s)
    return Verification(prediction, timing.latency_s, report.layer_sum_s,
                        {m.layer: m.timing.stats.median_s for m in report.layers}, report.run_id, path,
                        tuple(report.warnings), timing.round_times_s, chosen.value, timing.ratio, speed)
