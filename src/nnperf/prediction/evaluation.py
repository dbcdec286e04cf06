"""Predicted against measured over a set of networks: PreVIous' Tables I and II, Figs. 5 and 7, and baselines.

The comparison is pure: it takes a fitted system model and networks already
measured (layer by layer in isolation and whole, see ``measure_networks``)
and computes, per network,

- Table I: the sum of measured layer times t against the sum of predicted
  layer times t-hat (Eq. 5), and their error;
- Fig. 7: the measured whole-network time against each method's network
  prediction: every network-level predictor the system model holds
  (registered in :data:`~nnperf.prediction.PREDICTORS`: PreVIous' c x the sum,
  Eq. 6, nnperf's composition, the MACs-proportional and roofline
  baselines, and any other registered one);
- Fig. 5: every layer's prediction against its measurement.

Table II is the mean absolute Table I error over the networks.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnperf.ir.metrics import network_metrics
from nnperf.prediction._base import network_predictor_names, predictor_class
from nnperf.prediction._model import SystemModel
from nnperf.prediction._runs import MeasuredNetwork

EVALUATION_FORMAT = ("nnperf-evaluation", 1)


def method_description(name: str) -> str:
    """The one-line description of the registered network predictor ``name``."""
    return predictor_class(name).description


def method_label(name: str) -> str:
    """The short table and legend label of the registered network predictor ``name``."""
    return predictor_class(name).label or name


@dataclass(frozen=True)
class LayerComparison:
    """One layer: measured (isolated median) and predicted latency, in seconds.

    ``op`` is the layer's operator type ('conv'), ``key`` the per-layer model that predicted it.
    """

    layer: str
    op: str
    key: str
    measured_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        return relative_error(self.predicted_s, self.measured_s)


@dataclass(frozen=True)
class NetworkComparison:
    """One network: Table I's sums, the whole-network measurement and every method's prediction."""

    network: str
    macs: int
    measured_s: float
    """Median of the whole-network runs."""
    measured_spread: float
    """Interquartile range of the whole-network runs over their median."""
    measured_layer_sum_s: float
    predicted_layer_sum_s: float
    predicted_s: Mapping[str, float]
    """Network latency predicted by each network predictor of the system model, by registry name."""
    layers: tuple[LayerComparison, ...]
    prediction_time_s: float
    """Wall time of the prediction of this network: per-layer models and every network predictor."""
    run_id: int | None = None
    """The store run the measurements come from (None for measurements from elsewhere)."""
    adjusted_s: float | None = None
    """The whole network's time at the calibration's machine speed: its median per-round ratio to the reference
    workload, timed beside it now, times the reference's time at calibration (None when not measured so)."""

    def adjusted_error(self, method: str) -> float | None:
        """The network-level error of ``method`` against the speed-adjusted measurement."""
        return None if self.adjusted_s is None else relative_error(self.predicted_s[method], self.adjusted_s)

    @property
    def layer_sum_error(self) -> float:
        """Table I's error: summed predictions against summed measurements."""
        return relative_error(self.predicted_layer_sum_s, self.measured_layer_sum_s)

    def error(self, method: str) -> float:
        """The network-level error of ``method`` against the whole-network measurement."""
        return relative_error(self.predicted_s[method], self.measured_s)


@dataclass(frozen=True)
class Evaluation:
    """Every network's comparison on one system, with the summary metrics."""

    system: str
    networks: tuple[NetworkComparison, ...]
    methods: tuple[str, ...]
    calibration: Mapping[str, Any]

    def mape(self, method: str) -> float:
        """Mean absolute network-level error of ``method`` (a fraction)."""
        return float(np.mean([abs(n.error(method)) for n in self.networks]))

    def adjusted_mape(self, method: str) -> float | None:
        """The MAPE of ``method`` against the speed-adjusted measurements, when every network has one."""
        errors = [n.adjusted_error(method) for n in self.networks]
        return None if not errors or any(e is None for e in errors) else float(np.mean(np.abs(errors)))

    def within(self, method: str, tolerance: float = 0.10) -> float:
        """Share of networks whose ``method`` prediction is within +/- ``tolerance``."""
        return float(np.mean([abs(n.error(method)) <= tolerance for n in self.networks]))

    @property
    def table2_error(self) -> float:
        """PreVIous' Table II: the mean absolute error of the summed per-layer predictions."""
        return float(np.mean([abs(n.layer_sum_error) for n in self.networks]))

    @property
    def layer_errors(self) -> np.ndarray:
        """Absolute error of every layer of every network."""
        return np.array([abs(layer.error) for n in self.networks for layer in n.layers])

    @property
    def measurement_spread(self) -> float:
        """Median interquartile spread of the whole-network measurements (a floor under any error)."""
        return float(np.median([n.measured_spread for n in self.networks]))

    def to_dict(self) -> dict[str, Any]:
        layer_errors = self.layer_errors
        return {
            "format": EVALUATION_FORMAT[0], "version": EVALUATION_FORMAT[1], "system": self.system,
            "methods": {m: method_description(m) for m in self.methods},
            "summary": {
                "networks": len(self.networks),
                "mape": {m: self.mape(m) for m in self.methods},
                "adjusted_mape": {m: self.adjusted_mape(m) for m in self.methods},
                "within_10pct": {m: self.within(m) for m in self.methods},
                "table2_layer_sum_error": self.table2_error,
                "layer_error_mean": float(layer_errors.mean()),
                "layer_error_median": float(np.median(layer_errors)),
                "measurement_spread_median": self.measurement_spread,
            },
            "calibration": dict(self.calibration),
            "networks": [{
                "network": n.network, "macs": n.macs, "measured_s": n.measured_s,
                "measured_spread": n.measured_spread, "measured_layer_sum_s": n.measured_layer_sum_s,
                "predicted_layer_sum_s": n.predicted_layer_sum_s, "layer_sum_error": n.layer_sum_error,
                "predicted_s": dict(n.predicted_s), "error": {m: n.error(m) for m in self.methods},
                "prediction_time_s": n.prediction_time_s, "run_id": n.run_id, "adjusted_s": n.adjusted_s,
                "adjusted_error": {m: n.adjusted_error(m) for m in self.methods},
                "layers": [{"layer": c.layer, "op": c.op, "key": c.key, "measured_s": c.measured_s,
                            "predicted_s": c.predicted_s} for c in n.layers],
            } for n in self.networks],
        }


def relative_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured; infinite when a zero measurement is predicted non-zero."""
    if measured == 0:
        return 0.0 if predicted == 0 else float("inf")
    return (predicted - measured) / measured


def compare(model: SystemModel, measured: MeasuredNetwork, adjusted_s: float | None = None) -> NetworkComparison:
    """One network's measured values against the model's and the baselines' predictions; ``adjusted_s`` is its
    speed-adjusted whole-network time, when it was timed beside the reference."""
    started = time.perf_counter()
    prediction = model.predict(measured.network)
    elapsed = time.perf_counter() - started
    times = measured.layer_median_s()
    layers = tuple(LayerComparison(p.layer, p.op, p.key, times[p.layer], p.latency_s)
                   for p in prediction.layers if p.layer in times)
    predicted = dict(prediction.network_latency_s)
    stats = measured.whole.stats
    return NetworkComparison(
        network=measured.network.name, macs=network_metrics(measured.network).macs,
        measured_s=stats.median_s, measured_spread=(stats.q3_s - stats.q1_s) / stats.median_s,
        measured_layer_sum_s=float(sum(c.measured_s for c in layers)),
        predicted_layer_sum_s=float(sum(c.predicted_s for c in layers)),
        predicted_s=predicted, layers=layers, prediction_time_s=elapsed, run_id=measured.run.id,
        adjusted_s=adjusted_s,
    )


def evaluate(model: SystemModel, measured: Sequence[MeasuredNetwork],
             adjusted_s: Mapping[str, float] | None = None) -> Evaluation:
    """Compares the model with the measurements of every network; ``adjusted_s`` maps a network's name to its
    speed-adjusted whole-network time (seconds), for the networks timed beside the reference."""
    comparisons = tuple(compare(model, m, (adjusted_s or {}).get(m.network.name)) for m in measured)
    methods = tuple(m for m in network_predictor_names() if all(m in c.predicted_s for c in comparisons))
    return Evaluation(model.system_label, comparisons, methods, dict(model.calibration))
