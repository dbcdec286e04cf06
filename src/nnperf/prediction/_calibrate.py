"""Calibration (PreVIous IV-C and IV-D): profile the calibration networks once, fit the models, store them.

Every measurement goes to the store as it is taken; networks whose campaign
already finished on this system are reused, and an interrupted campaign
resumes, so an interrupted calibration picks up where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nnperf.campaign import Measurer, ProfileConfig, runner_for
from nnperf.errors import NnperfError
from nnperf.ir import Layer, Network
from nnperf.measure import REFERENCE, HarnessConfig, read_reference
from nnperf.measure.backends import Backend
from nnperf.measure.power import PowerMeter
from nnperf.prediction._base import CalibrationSet, fit_network_predictors
from nnperf.prediction._features import features, model_key
from nnperf.prediction._model import MODEL_KIND, SystemModel
from nnperf.prediction._previous import fit_coefficient
from nnperf.prediction._ridge import RidgeModel, fit_ridge
from nnperf.prediction._runs import MeasuredNetwork, RunsProgress, measure_networks
from nnperf.prediction.baselines import RooflineModel, measure_roofline
from nnperf.prediction.kernel import LAYER_SAMPLES, sample_layers
from nnperf.store import Store

FUSION_PROFILER_RUNS = 10
"""Profiled whole-network runs per calibration network: enough to see which layers the backend fuses."""

RIDGE_SAMPLED_TYPES = frozenset({"max_pool", "avg_pool"})
"""Layer types whose sampled layers also join PreVIous' latency Ridge of their type. Sampled convolutions stay out:
one linear model over dense, pointwise, depthwise and grouped kernels cannot take them in (on torch at 1 thread
they took the composition's held-out MAPE from 12.7% to 36.2%); they feed the kernel-aware models only."""

CALIBRATION_HARNESS = HarnessConfig(warmup_s=0.02, target_ci=0.02, budget_s=0.5)
"""Per-layer effort during calibration: 2% CI of the median or half a second per layer."""


class MissingCalibrationError(NnperfError):
    """No fitted model for the system asked about."""


def calibration_networks() -> list[Network]:
    """The IR of every calibration network in the zoo (PreVIousNet-01 configurations, -02, nnperf's -03)."""
    from nnperf import zoo
    from nnperf.zoo import zoo_network

    return [zoo_network(name) for name in zoo.calibration_names()]


def fit_system_model(runs: Sequence[MeasuredNetwork], system_key: str, system_label: str,
                     alpha: float = 1.0, profiled: Sequence[MeasuredNetwork] = (),
                     roofline: RooflineModel | None = None,
                     layer_samples: Sequence[tuple[Layer, float]] = (),
                     ridge_sampled_types: Collection[str] | None = None) -> SystemModel:
    """Ridge models per layer type on the isolated layer medians, then every registered network predictor
    (c, the composition, the baselines, ...) that the calibration can fit, on the whole-network medians.

    ``profiled`` are the same networks measured with the framework profiler:
    their node groups give the fusion rules of the composition. ``roofline``
    carries the peaks measured on the system; without it the roofline is not
    fitted (``calibration['not_fitted']`` says so). ``layer_samples`` (sampled layers measured alone, with
    their seconds) feed the kernel-aware predictor; those of ``ridge_sampled_types`` (default
    :data:`RIDGE_SAMPLED_TYPES`, the pools) also join the latency Ridge of their layer type.
    """
    ridge_types = RIDGE_SAMPLED_TYPES if ridge_sampled_types is None else frozenset(ridge_sampled_types)
    rows: dict[str, list[np.ndarray]] = {}
    latency: dict[str, list[float]] = {}
    energy: dict[str, list[float | None]] = {}
    for run in runs:
        measured = {r.layer: r for r in run.layers}
        for layer in run.network.layers:
            record = measured.get(layer.name)
            if record is None:
                raise NnperfError(f"calibration run {run.run.id} of {run.network.name} lacks layer {layer.name!r}")
            key = model_key(layer)
            rows.setdefault(key, []).append(features(layer))
            latency.setdefault(key, []).append(record.median_s)
            energy.setdefault(key, []).append(record.energy_j)
    energy_rows = {k: np.array(v) for k, v in rows.items()}  # the samples carry no energy
    for layer, seconds in layer_samples:
        key = model_key(layer)
        if key in ridge_types:
            rows.setdefault(key, []).append(features(layer))
            latency.setdefault(key, []).append(seconds)
    latency_models = {k: fit_ridge(k, "latency_s", np.array(rows[k]), latency[k], alpha) for k in rows}
    energy_models: dict[str, RidgeModel] = {}
    for k, values in energy.items():
        if values and all(v is not None for v in values):
            energy_models[k] = fit_ridge(k, "energy_j", energy_rows[k], [float(v or 0.0) for v in values], alpha)
    layer_model = SystemModel(system_key, system_label, latency_models, {}, energy_models)
    layer_predictions = [layer_model.predict_layers(run.network) for run in runs]
    energy_c = None
    if energy_models and all(run.whole.energy_j is not None for run in runs):
        sums = [float(sum(lp.energy_j or 0.0 for lp in p)) for p in layer_predictions]
        energy_c = fit_coefficient(sums, [float(run.whole.energy_j or 0.0) for run in runs])
    calibration_set = CalibrationSet(
        runs, [{p.layer: p.latency_s for p in layers} for layers in layer_predictions], profiled,
        None if roofline is None else roofline.ops_per_s_, None if roofline is None else roofline.bytes_per_s_,
        {LAYER_SAMPLES: tuple(layer_samples)})
    skipped: dict[str, str] = {}
    predictors = fit_network_predictors(calibration_set, on_skip=skipped.__setitem__)
    calibration = {
        "networks": [run.network.name for run in runs],
        "layers": sum(len(run.layers) for run in runs),
        "runs": [run.run.id for run in runs],
        "profiler_runs": [m.run.id for m in profiled],
        "alpha": alpha,
        "layer_samples": len(layer_samples),
        "not_fitted": skipped,
    }
    return SystemModel(system_key, system_label, latency_models, predictors, energy_models, energy_c, calibration)


@dataclass(frozen=True)
class RooflineItem:
    """The roofline peaks measured on a system, as an item (:class:`nnperf.campaign.Item`) for a fleet."""

    label: str = "roofline peaks"

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> RooflineModel:
        return measure_roofline(backend)


@dataclass(frozen=True)
class ReferenceItem:
    """One reading of the machine-speed reference (:data:`nnperf.measure.REFERENCE`), as an item for a fleet."""

    label: str = "reference workload"

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> float:
        return read_reference(backend)


def calibrate(measurer: Measurer, store: Store, networks: Sequence[Network] | None = None,
              config: ProfileConfig | None = None, meter: PowerMeter | None = None,
              progress: RunsProgress | None = None, sample_budget_s: float = 0.0,
              machine_check: Mapping[str, Any] | None = None) -> SystemModel:
    """Profiles the calibration networks (resuming), fits the system's model and stores it.

    ``machine_check`` is the document of the machine check taken before (``nnperf check``'s), stored with the
    calibration so that a later doubt about its figures can look at the state of the machine then.

    With ``sample_budget_s``, sampled convolutions and pools are also measured alone for about that long, placed
    where the kernel models err most (:func:`nnperf.prediction.kernel.sample_layers`; stored and resumed too).

    ``measurer`` is a backend or a runner (a fleet of one system): everything is
    measured as items through one runner, into the same runs either way.
    """
    started = time.perf_counter()
    runner = runner_for(measurer)
    networks = list(networks) if networks is not None else calibration_networks()
    config = config or ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS)
    # one progress scale over all three phases, so a bar's ETA covers the whole calibration: the isolated
    # phase counts each layer and whole network, the (much shorter) profiler phase one unit per network,
    # the roofline peaks one unit
    isolated_units = sum(len(n.layers) + 1 for n in networks)
    total = isolated_units + len(networks) + 1
    # the machine's speed, read before and after: a later run scales what it measures to this speed by
    # timing the same reference beside it
    reference_readings_s = [runner.run_one(ReferenceItem())]
    runs = measure_networks(runner, store, networks, config, meter,
                            _phase(progress, "isolated: ", 0, 1.0, total))
    profiled = measure_networks(runner, store, networks, replace(config, per_layer="profiler",
                                                                  profiler_runs=FUSION_PROFILER_RUNS),
                                progress=_phase(progress, "profiler: ", isolated_units,
                                                len(networks) / isolated_units, total))
    if progress is not None:
        progress("roofline peaks", total - 1, total)
    roofline = runner.run_one(RooflineItem())
    reference_readings_s.append(runner.run_one(ReferenceItem()))
    if progress is not None:
        progress("roofline peaks", total, total)
    samples: list[tuple[Layer, float]] = []
    if sample_budget_s > 0:
        samples = sample_layers(runner, store, sample_budget_s, config.harness,
                                progress=None if progress is None else
                                lambda what, done, part: progress(f"sampling: {what}", total, total),
                                reference_s=sentinel_reference_s(r.whole.extra for r in runs))
    system = runner.system()
    model = fit_system_model(runs, system.key, system.label, profiled=profiled, roofline=roofline,
                             layer_samples=samples)
    calibration = dict(model.calibration)
    calibration.update({"wall_s": time.perf_counter() - started, "reused_networks": sum(r.reused for r in runs),
                        "harness": {"target_ci": config.harness.target_ci, "budget_s": config.harness.budget_s},
                        "sample_budget_s": sample_budget_s,
                        **({"machine_check": dict(machine_check)} if machine_check is not None else {}),
                        "reference": {"workload": REFERENCE, "readings_s": reference_readings_s,
                                      "median_s": float(np.median(reference_readings_s))}})
    model = replace(model, calibration=calibration)
    store.save_model(store.add_system(system).id, MODEL_KIND, model.to_dict())
    return model


def sentinel_reference_s(extras: Iterable[Mapping[str, float]]) -> float | None:
    """The drift sentinel's median time over the readings in the extras of the calibration networks' whole
    measurements (None when none holds one): the speed the sampled layers are scaled to."""
    readings = [extra[k] for extra in extras for k in ("sentinel_start_s", "sentinel_end_s") if extra.get(k, 0) > 0]
    return float(np.median(readings)) if readings else None


def _phase(progress: RunsProgress | None, prefix: str, offset: int, scale: float,
           total: int) -> RunsProgress | None:
    """A phase's progress (its own ``done`` of ``measure_networks``' units) on the calibration's scale:
    ``offset + done * scale`` of ``total``, rounded."""
    if progress is None:
        return None
    return lambda what, done, _total: progress(prefix + what, offset + round(done * scale), total)


def load_system_model(store: Store, system_key: str, label: str, backend: str = "torch") -> SystemModel:
    """The latest stored model of a system; a missing one says how to calibrate."""
    record = store.find_system(system_key)
    document = None if record is None else store.latest_model(record.id, MODEL_KIND)
    if document is None:
        raise missing_calibration(label, store.path, backend)
    return SystemModel.from_dict(document)


def missing_calibration(label: str, path: object, backend: str) -> MissingCalibrationError:
    """The error for a system with no calibration in the store at ``path``, naming the command that makes one."""
    return MissingCalibrationError(
        f"no calibration for {label} in {path}: run `nnperf calibrate --backend {backend}` "
        "(with the same --device, --threads and --option settings) first"
    )


def load_stored_model(store: Store, system: int | str) -> SystemModel:
    """The latest model of a stored system named by id or key prefix (see ``nnperf systems``)."""
    record = store.system(system)
    document = store.latest_model(record.id, MODEL_KIND)
    if document is None:
        raise MissingCalibrationError(
            f"system {record.id} ({record.label}) in {store.path} has measurements but no calibration: run "
            f"`nnperf calibrate --backend {record.backend}` with its settings first"
        )
    return SystemModel.from_dict(document)
