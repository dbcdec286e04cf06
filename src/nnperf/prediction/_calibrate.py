"""Fitting a calibration (PreVIous IV-C and IV-D): the system's models from the calibration networks' stored
measurements, and reading a stored calibration back.

Measuring the calibration (the networks, the roofline peaks, the reference
workload, the sampled layers) is a campaign: ``nnperf.campaign.calibrate``
measures and then fits here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import Layer, OpType
from nnperf.measure import SystemSpec
from nnperf.prediction._base import CalibrationSet, fit_network_predictors
from nnperf.prediction._features import features, model_key, model_keys
from nnperf.prediction._model import MODEL_KIND, LayerPrediction, SystemModel, with_split_models
from nnperf.prediction._previous import fit_coefficient
from nnperf.prediction._ridge import RidgeModel, fit_ridge
from nnperf.prediction._runs import MeasuredNetwork
from nnperf.prediction.baselines import RooflineModel
from nnperf.prediction.kernel import LAYER_SAMPLES
from nnperf.store import Store

RIDGE_SAMPLED_TYPES = frozenset({OpType.MAX_POOL.value, OpType.AVG_POOL.value, OpType.LINEAR.value})
"""Layer types whose sampled layers also join PreVIous' latency Ridge of their type: the pools (sizes the
calibration networks lack) and fully connected layers (the calibration's have one row, so their operations and
weights are collinear; sampled layers of many rows tell the two apart). Sampled convolutions stay out: one linear
model over dense, pointwise, depthwise and grouped kernels cannot take them in (on torch at 1 thread they took the
composition's held-out MAPE from 12.7% to 36.2%); they feed the kernel-aware models only."""


class MissingCalibrationError(NnperfError):
    """No fitted model for the system asked about."""


def fit_system_model(runs: Sequence[MeasuredNetwork], system_key: str, system_label: str,
                     alpha: float = 1.0, profiled: Sequence[MeasuredNetwork] = (),
                     roofline: RooflineModel | None = None,
                     layer_samples: Sequence[tuple[Layer, float]] = (),
                     ridge_sampled_types: Collection[str] | None = None,
                     predictor_options: Mapping[str, Mapping[str, Any]] | None = None) -> SystemModel:
    """Ridge models per layer type on the isolated layer medians (and the generic layers' memory-bound model on
    all the memory-bound ones, see ``MEMORY_BOUND_OPS``), then every registered network predictor
    (c, the composition, the baselines, ...) that the calibration can fit, on the whole-network medians.

    ``profiled`` are the same networks measured with the framework profiler:
    their node groups give the fusion rules of the composition. ``roofline``
    carries the peaks measured on the system; without it the roofline is not
    fitted (``calibration['not_fitted']`` says so). ``layer_samples`` (sampled layers measured alone, with
    their seconds) feed the kernel-aware predictor; those of ``ridge_sampled_types`` (default
    :data:`RIDGE_SAMPLED_TYPES`, the pools) also join the latency Ridge of their layer type.
    ``predictor_options`` maps a network predictor's name to the keyword arguments it is made with.
    """
    ridge_types = RIDGE_SAMPLED_TYPES if ridge_sampled_types is None else frozenset(ridge_sampled_types)
    rows = _calibration_rows(runs)
    # energy on the calibration layers alone: the samples carry no energy
    energy_models = with_split_models(rows.fit_energy(alpha))
    rows.add_samples(layer_samples, ridge_types)
    latency_models = with_split_models(rows.fit_latency(alpha))
    layer_model = SystemModel(system_key, system_label, latency_models, {}, energy_models)
    layer_predictions = [layer_model.predict_layers(run.network) for run in runs]
    calibration_set = CalibrationSet(
        runs, [{p.layer: p.latency_s for p in layers} for layers in layer_predictions], profiled,
        None if roofline is None else roofline.ops_per_s_, None if roofline is None else roofline.bytes_per_s_,
        {LAYER_SAMPLES: tuple(layer_samples)})
    skipped: dict[str, str] = {}
    predictors = fit_network_predictors(calibration_set, on_skip=skipped.__setitem__, options=predictor_options)
    calibration = {
        "networks": [run.network.name for run in runs],
        "layers": sum(len(run.layers) for run in runs),
        "runs": [run.run.id for run in runs],
        "profiler_runs": [m.run.id for m in profiled],
        "alpha": alpha,
        "layer_samples": len(layer_samples),
        "not_fitted": skipped,
    }
    return SystemModel(system_key, system_label, latency_models, predictors, energy_models,
                       _energy_coefficient(runs, layer_predictions, energy_models), calibration)


@dataclass(frozen=True)
class _LayerRows:
    """The samples of every layer-type model: feature rows, latencies (seconds) and energies (joules, None where
    not measured), by model key."""

    rows: dict[str, list[np.ndarray]] = field(default_factory=dict)
    latency_s: dict[str, list[float]] = field(default_factory=dict)
    energy_j: dict[str, list[float | None]] = field(default_factory=dict)

    def add(self, key: str, row: np.ndarray, latency_s: float, energy_j: float | None = None,
            with_energy: bool = True) -> None:
        self.rows.setdefault(key, []).append(row)
        self.latency_s.setdefault(key, []).append(latency_s)
        if with_energy:
            self.energy_j.setdefault(key, []).append(energy_j)

    def add_samples(self, layer_samples: Sequence[tuple[Layer, float]], ridge_types: Collection[str]) -> None:
        """The sampled layers (with their seconds) of ``ridge_types``, as latency samples of their type."""
        for layer, seconds in layer_samples:
            key = model_key(layer)
            if key in ridge_types:
                self.add(key, features(layer), seconds, with_energy=False)

    def fit_latency(self, alpha: float) -> dict[str, RidgeModel]:
        return {k: fit_ridge(k, "latency_s", np.array(self.rows[k]), self.latency_s[k], alpha) for k in self.rows}

    def fit_energy(self, alpha: float) -> dict[str, RidgeModel]:
        """The energy Ridge of every type whose samples all have an energy."""
        models: dict[str, RidgeModel] = {}
        for k, values in self.energy_j.items():
            if values and all(v is not None for v in values):
                models[k] = fit_ridge(k, "energy_j", np.array(self.rows[k]), [float(v or 0.0) for v in values], alpha)
        return models


def _calibration_rows(runs: Sequence[MeasuredNetwork]) -> _LayerRows:
    """Every calibration layer's isolated median as a sample of each model it helps fit (``model_keys``)."""
    rows = _LayerRows()
    for run in runs:
        measured = {r.layer: r for r in run.layers}
        for layer in run.network.layers:
            record = measured.get(layer.name)
            if record is None:
                raise NnperfError(f"calibration run {run.run.id} of {run.network.name} lacks layer {layer.name!r}")
            row = features(layer)
            for key in model_keys(layer):
                rows.add(key, row, record.median_s, record.energy_j)
    return rows


def _energy_coefficient(runs: Sequence[MeasuredNetwork], layer_predictions: Sequence[Sequence[LayerPrediction]],
                        energy_models: Mapping[str, RidgeModel]) -> float | None:
    """c of the energy (Eq. 6 on joules), when every layer type has an energy model and every run an energy."""
    if not energy_models or not all(run.whole.energy_j is not None for run in runs):
        return None
    sums = [float(sum(lp.energy_j or 0.0 for lp in p)) for p in layer_predictions]
    return fit_coefficient(sums, [float(run.whole.energy_j or 0.0) for run in runs])


def load_system_model(store: Store, system: SystemSpec | str, label: str, backend: str = "torch") -> SystemModel:
    """The latest stored model of a system (its spec, or its key); a missing one says how to calibrate."""
    record = store.find_system(system)
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
