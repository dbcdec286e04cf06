"""The main job from Python: calibrate a system once, predict any network, verify against a measurement."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from nnperf import zoo
from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._session import (
    DEFAULT_SYSTEM,
    MeasuringSystem,
    StoredSystem,
    StoreLike,
    measuring_on,
    opened_here,
    opened_store,
    settings,
)
from nnperf.campaign import CALIBRATION_HARNESS
from nnperf.campaign import calibrate as calibrate_system
from nnperf.errors import FormatVersionError, MissingStoreError, NnperfError, NnperfWarning
from nnperf.ir import Network
from nnperf.measure import REFERENCE, ComparisonProtocol, RoundsConfig, SpeedReading, System, resolve_protocol
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
from nnperf.prediction.kernel import zoo_prior
from nnperf.store import Store, default_store_path

if TYPE_CHECKING:
    from nnperf.campaign import Measurer, ReferencedTiming
    from nnperf.measure import HarnessConfig

Progress = Callable[[str, int, int], None]
"""Called with (what is being measured, done, total)."""


DEFAULT_SAMPLE_BUDGET_S = 40.0
"""Seconds of sampled convolutions, pools and fully connected layers a calibration measures alone by default,
drawn from the layer configurations of nnperf's reference zoo (130-150 samples here). With the calibration
networks, a calibration of ONNX Runtime took 309 s on a busy 2-core VM (bench/heldout_corpus.py): about the 5
minutes a calibration may take."""

CHECK_NOISE_S = 5.0
"""Seconds of the reference workload timed back to back by the machine check before a calibration."""

VERIFY_ROUNDS = RoundsConfig(min_rounds=10, max_rounds=40, target_ci=0.01, budget_s=20.0)
"""The rounds behind a verdict (PreVIous measured once; one is no ground truth here): 10 to 40 rounds of the
network beside the reference, until their ratio is known within 1%, for at most 20 s."""


def calibrate(system: MeasuringSystem = DEFAULT_SYSTEM, store: StoreLike = None, *, if_needed: bool = False,
              energy: str | None = None, budget_s: float | None = None, target_ci: float | None = None,
              sample_budget_s: float | None = None, held_out: Sequence[ModelLike] = (), blocks: bool = False,
              progress: Progress | None = None, check: bool = True, check_noise_s: float = CHECK_NOISE_S
              ) -> SystemModel:
    """Profiles the calibration networks on a system and fits its models (PreVIous IV-C/IV-D).

    Every measurement is stored as it is taken: an interrupted calibration resumes, and networks already
    calibrated on the system are reused. About 5 minutes per backend on a 2-core VM.

    Parameters
    ----------
    system : System, str, backend or runner, default System()
        :class:`nnperf.System` settings on this host (backend, device, threads, options; ``nnperf backends``), a
        backend name with the default settings, or a backend or runner already open (:data:`MeasuringSystem`).
    store : Store, path or None, default None
        The measurement store (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    if_needed : bool, default False
        Return the stored model without measuring when the system has one (:func:`stored_calibration`).
    energy : str, optional
        A power meter ('nvml', 'rapl') to fit energy models as well.
    budget_s, target_ci : float, optional
        Per-layer time budget in seconds (default 0.5) and median CI target (default 0.02).
    sample_budget_s : float, optional
        Seconds of sampled convolutions and pools measured alone (default :data:`DEFAULT_SAMPLE_BUDGET_S`; 0: none),
        drawn from the layer configurations of nnperf's reference zoo where the kernel-aware models err most
        (nn-Meter's adaptive sampling, :func:`nnperf.campaign.sample_layers`).
    held_out : sequence of models, optional
        Networks (files, zoo names or IR) whose layer configurations sampling must never measure: an evaluation
        on them then judges layers the calibration never saw. Their configurations leave the prior; the calibration
        records them, and ``if_needed`` reuses a stored calibration only when it held out the same ones.
    blocks : bool, default False
        Also calibrate on nnperf's PreVIousNet-06, CNN blocks chained as deployed networks chain them
        (:func:`nnperf.zoo.block_calibration_names`); ``if_needed`` then reuses only a calibration that has them.
    progress : callable, optional
        Called with (what, done, total) as the calibration goes.
    check : bool, default True
        Check the machine first (``nnperf check``, ``check_noise_s`` seconds of noise) unless the system is given
        open, and store the findings; a busy machine is calibrated all the same (``calibration['machine_check']``).

    Returns
    -------
    SystemModel
        The fitted models, also stored.
    """
    from nnperf.campaign import ProfileConfig, networks_to_calibrate
    from nnperf.measure.power import get_meter

    here = settings(system, "calibrate") if opened_here(system) else None
    meter = get_meter(energy) if energy else None
    budget = DEFAULT_SAMPLE_BUDGET_S if sample_budget_s is None else sample_budget_s
    prior = zoo_prior([load_model(model) for model in held_out]) if held_out and budget > 0 else None
    with opened_store(store) as opened, measuring_on(here or system, "calibrate") as runner:
        existing = _readable_calibration(opened, runner) if if_needed else None
        if existing is not None and _reusable(existing, prior.held_out if prior is not None else (), blocks):
            return existing
        found = _machine_check(runner, here, check_noise_s, progress) if check else None
        config = ProfileConfig(per_layer="isolated", harness=_harness(budget_s, target_ci))
        return calibrate_system(runner, opened, networks_to_calibrate(blocks), config=config, meter=meter,
                                progress=progress, sample_budget_s=budget, machine_check=found, prior=prior)


def _reusable(model: SystemModel, held_out: Sequence[str], blocks: bool) -> bool:
    """Whether ``model`` serves a calibration asked to hold out the networks named ``held_out`` and, with
    ``blocks``, to include PreVIousNet-06 (:func:`nnperf.zoo.block_calibration_names`)."""
    has_blocks = set(zoo.block_calibration_names()) <= set(model.calibration.get("networks", ()))
    return _holds_out(model, held_out) and (has_blocks or not blocks)


def _holds_out(model: SystemModel, names: Sequence[str]) -> bool:
    """Whether ``model``'s sampling held out the networks named ``names`` (any calibration will do when none is
    asked to be held out)."""
    if not names:
        return True
    recorded = model.calibration.get("prior", {})
    return isinstance(recorded, dict) and set(recorded.get("held_out", ())) == set(names)


def _harness(budget_s: float | None, target_ci: float | None) -> HarnessConfig:
    """The calibration's harness with the per-layer budget and CI target replaced where given."""
    harness = CALIBRATION_HARNESS
    if budget_s is not None:
        harness = replace(harness, budget_s=budget_s)
    if target_ci is not None:
        harness = replace(harness, target_ci=target_ci)
    return harness


def _machine_check(runner: Measurer, opened: System | None, noise_s: float,
                   progress: Progress | None) -> dict[str, object] | None:
    """The machine check stored with a calibration (``nnperf check``, timing the reference on ``runner``), when
    ``runner`` is the backend of the settings ``opened`` here (None: a backend or runner given open)."""
    from nnperf.measure import check_document, check_machine, reference_workload

    if opened is None or not isinstance(runner, Backend):
        return None
    if progress is not None:
        progress("checking the machine", 0, 1)
    return check_document(check_machine(reference_workload().timer(runner), noise_s=noise_s), opened.threads)


def _readable_calibration(store: Store, runner: Backend) -> SystemModel | None:
    """The stored model of ``runner``'s system; None when it has none or an older nnperf stored it in a format
    this one cannot read (calibrating refits it: the stored measurements are reused)."""
    try:
        return _stored_model(store, runner)
    except FormatVersionError:
        return None


def stored_calibration(system: System | str = DEFAULT_SYSTEM, store: StoreLike = None,
                       held_out: Sequence[ModelLike] = (), blocks: bool = False) -> SystemModel | None:
    """The stored calibration of ``system`` on this host, or None when it has none (or no store exists yet), or,
    with ``held_out``, when its sampling did not hold out exactly those networks, or, with ``blocks``, when it was
    not calibrated on PreVIousNet-06 (as :func:`calibrate` with ``if_needed`` decides).

    Parameters
    ----------
    system : System or str, default System()
        The system's settings (as for :func:`calibrate`).
    store : Store, path or None, default None
        Where calibrations are stored (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    held_out : sequence of models, optional
        Networks (files, zoo names or IR) the calibration's sampling must have held out (as for
        :func:`calibrate`).
    blocks : bool, default False
        The calibration must have been made on PreVIousNet-06 too (as for :func:`calibrate`).

    Raises
    ------
    FormatVersionError
        The stored model is in a format an older nnperf wrote, which this one cannot read (calibrating refits
        it from the stored measurements).
    """
    chosen = settings(system, "stored_calibration")
    names = [load_model(model).name for model in held_out]
    try:
        with opened_store(store, create=False) as opened, chosen.open() as runner:
            model = _stored_model(opened, runner)
    except MissingStoreError:
        return None
    return model if model is not None and _reusable(model, names, blocks) else None


def _stored_model(store: Store, runner: Backend) -> SystemModel | None:
    try:
        return _system_model(store, runner, None)
    except MissingCalibrationError:
        return None


def predict(model: ModelLike | Sequence[ModelLike], system: System | StoredSystem | None = None,
            store: StoreLike = None, *, input_shape: InputShape | None = None
            ) -> NetworkPrediction | list[NetworkPrediction]:
    """Predicts a network's per-layer and total latency from a calibration, without running it.

    Parameters
    ----------
    model : str, path-like, Network or torch.nn.Module, or a list or tuple of them
        Anything :func:`load_model` takes; a list or tuple is predicted with the calibration read once, and a
        list of predictions comes back (:func:`predict_many` gives only the totals, far faster).
    system : System, int, str, SystemModel or None, default None
        The calibrated system: :class:`nnperf.System` settings (the calibration of the system they make on
        this host), a stored system's id or key prefix (``nnperf systems``, any host), a fitted
        :class:`~nnperf.prediction.SystemModel`, or None for ``nnperf.System()`` (torch on the CPU, one thread).
    store : Store, path or None, default None
        Where the calibration is stored (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    input_shape : optional
        As for :func:`load_model`.

    Returns
    -------
    NetworkPrediction, or a list of them for a list of models
        Per-layer latencies (seconds), every network predictor's total
        (``network_latency_s``), ``latency_s`` (the composed one) and ``hotspots()``.

    Raises
    ------
    MissingCalibrationError
        The system has no calibration (the message names the command that makes one).
    UncoveredLayersError
        A layer type the calibration does not cover (every such layer is named).
    NnperfError
        ``system`` is none of the above.
    """
    if isinstance(model, (list, tuple)):
        networks = [load_model(m, input_shape) for m in model]
        system_model = calibrated_model(system, store)
        return [_predicted(system_model, network) for network in networks]
    network = load_model(model, input_shape)
    return _predicted(calibrated_model(system, store), network)


def predict_many(models: Sequence[ModelLike], system: System | StoredSystem | None = None, store: StoreLike = None,
                 *, method: str | None = None, input_shape: InputShape | None = None) -> np.ndarray:
    """Every network's predicted latency in seconds, the calibration read once and each distinct layer
    predicted once: the oracle of an architecture search (thousands of networks a second from IR networks).

    ``models`` are anything :func:`load_model` takes (IR networks are the fast path: a PyTorch module is traced
    first); ``system`` and ``store`` are as for :func:`predict`, and a :class:`~nnperf.prediction.SystemModel`
    loaded once (:func:`calibrated_model`) keeps repeated calls from reading the store. ``method`` names a
    network predictor (``composed``, ``kernel``, ``previous``, ``macs``, ``roofline``; default the one
    :attr:`NetworkPrediction.latency_s` uses). The numbers are :func:`predict`'s.
    """
    networks = [model if isinstance(model, Network) else load_model(model, input_shape) for model in models]
    return calibrated_model(system, store).predict_many(networks, method)


def calibrated_model(system: System | StoredSystem | None = None, store: StoreLike = None) -> SystemModel:
    """The fitted model of a calibrated system, read from the store once, to predict with again and again:
    ``system`` and ``store`` as for :func:`predict` (a :class:`~nnperf.prediction.SystemModel` comes back as
    it is)."""
    if isinstance(system, SystemModel):
        return system
    if isinstance(system, (int, str)) and not isinstance(system, bool):
        with opened_store(store, create=False) as opened:
            return load_stored_model(opened, system)
    if system is not None and not isinstance(system, System):
        raise NnperfError(f"predict: the system is nnperf.System settings, a stored system's id or key prefix, or "
                          f"a SystemModel, not a {type(system).__name__} ({system!r})")
    with (system or DEFAULT_SYSTEM).open() as runner:
        try:
            with opened_store(store, create=False) as opened:
                return _system_model(opened, runner, None)
        except MissingStoreError as exc:  # no store yet: say how to calibrate this system
            raise missing_calibration(runner.system().label, store or default_store_path(), runner.name) from exc


def _predicted(system_model: SystemModel, network: Network) -> NetworkPrediction:
    """``system_model``'s prediction of ``network``, with a warning when the file runs layers in int8 and the
    calibration is not of int8 programs (its layers are then predicted as float ones)."""
    if network.int8_layers and "precision=int8" not in system_model.system_label:
        warnings.warn(f"{network.name}: the file runs {len(network.int8_layers)} layer(s) in int8, but the "
                      f"calibration of {system_model.system_label} is of float programs, so they are predicted as "
                      "float: calibrate and predict on onnxruntime with the option precision=int8 to predict them "
                      "as int8", NnperfWarning, stacklevel=3)
    return system_model.predict(network)


def _system_model(store: Store, backend: Backend, system: StoredSystem | None) -> SystemModel:
    """The model of ``system`` (default: ``backend``'s), refused when it is not the system ``backend`` measures."""
    spec = backend.system()
    if system is None:
        return load_system_model(store, spec, spec.label, backend.name)
    model = system if isinstance(system, SystemModel) else load_stored_model(store, system)
    if model.system_key not in (spec.key, spec.legacy_key):
        named = "" if isinstance(system, SystemModel) else f" {system}"
        raise NnperfError(
            f"verify measures on {spec.label} here, but system{named} is {model.system_label} "
            f"({model.system_key[:8]}, see `nnperf systems`): give that system's backend, device, threads and "
            "options, on its host")
    return model


def verify(model: ModelLike, system: System | str = DEFAULT_SYSTEM, store: StoreLike = None, *,
           calibration: StoredSystem | None = None, input_shape: InputShape | None = None,
           progress: Progress | None = None, model_name: str | None = None,
           protocol: str | ComparisonProtocol = "auto", rounds: RoundsConfig = VERIFY_ROUNDS) -> Verification:
    """Predicts ``model`` and measures it on the same system (each layer alone, then whole), then compares.

    The whole network is timed beside the machine-speed reference under ``protocol`` ('auto', the default: what a
    quick machine check recommends, :func:`nnperf.measure.resolve_protocol`; 'interleaved': both in
    every round of ``rounds``, in random order; 'duet': both at once on two cores; 'sequential': one after the
    other), and stored in a run of its own with the reference's reading. The verdict carries the raw error
    (against the network's median time now) and, when the calibration read a reference (it is the one timed
    here), the speed-adjusted error (against the network's time at the calibration's speed: its median per-round ratio to
    the reference times the reference's calibration time), with the noise floor (the spread of the rounds).

    Parameters
    ----------
    model : str, path-like, Network or torch.nn.Module
        Anything :func:`load_model` takes.
    system : System or str, default System()
        Where it is measured: :class:`nnperf.System` settings on this host, or a backend name (as for
        :func:`calibrate`).
    store : Store, path or None, default None
        Where the calibration is, and where the measurement is stored as a new run (a finished run is never
        overwritten).
    calibration : int, str or SystemModel, optional
        The stored calibration to predict with (id, key prefix or model; default: ``system``'s own); it must be
        the system ``system`` makes here.
    input_shape : optional
        As for :func:`load_model`.
    progress : callable, optional
        Called with (what, done, total) as it goes.
    model_name : str, optional
        The name the run is stored under (default: ``model`` when it is a name or path, else the network's name).
    protocol, rounds
        How the whole network is timed beside the reference (see above).

    Returns
    -------
    Verification
        The prediction, the measurement and their errors.
    """
    from nnperf.campaign import ProfileConfig, profile_network

    measured_on = settings(system, "verify")
    chosen = resolve_protocol(protocol, threads=measured_on.threads).protocol
    network = load_model(model, input_shape)
    name = model_name or (os.fspath(model) if isinstance(model, (str, os.PathLike)) else network.name)
    with opened_store(store) as opened, measured_on.open() as runner:
        system_model = _system_model(opened, runner, calibration)
        prediction = _predicted(system_model, network)
        report = profile_network(network, runner, opened, ProfileConfig(per_layer="isolated"), progress=progress,
                                 model=name)
        calibrated = system_model.reference_s  # the calibration's own reference, so that its reading applies
        timing = _beside_reference(opened, runner, network, name, chosen, rounds,
                                   calibrated[0] if calibrated is not None else REFERENCE, progress)
        path = str(opened.path)
    speed = None if calibrated is None else SpeedReading(calibrated[0], calibrated[1], timing.reference_s)
    return Verification(prediction, timing.latency_s, report.layer_sum_s,
                        {m.layer: m.timing.stats.median_s for m in report.layers}, report.run_id, path,
                        tuple(report.warnings), timing.round_times_s, chosen.value, timing.ratio, speed)


def _beside_reference(store: Store, runner: Backend, network: Network, name: str, protocol: ComparisonProtocol,
                      rounds: RoundsConfig, reference: str, progress: Progress | None) -> ReferencedTiming:
    """The whole network timed beside ``reference`` under ``protocol``, stored in a run of its own."""
    from nnperf.campaign import store_referenced, time_with_reference

    if progress is not None:
        progress(f"whole network beside the reference ({protocol.value})", 0, 1)
    timing = store_referenced(store, runner, network, name, time_with_reference(network, runner, protocol, rounds,
                                                                                reference))
    if progress is not None:
        progress(f"whole network beside the reference ({protocol.value})", 1, 1)
    return timing
