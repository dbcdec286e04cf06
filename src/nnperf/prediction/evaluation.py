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

import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnperf.ir.metrics import network_metrics
from nnperf.prediction._base import network_predictor_names, predictor_class
from nnperf.prediction._model import SystemModel
from nnperf.prediction._roles import primary_name
from nnperf.prediction._runs import MeasuredNetwork
from nnperf.prediction.kernel import kernel_kind

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

    ``op`` is the layer's operator type ('conv'), ``key`` the per-layer model that predicted it, ``kind`` the
    kernel that runs it (``conv:depthwise``, ``conv:pointwise``, ... or the layer type, see
    :func:`nnperf.prediction.kernel.kernel_kind`), ``macs`` its multiply-accumulates, ``output_shape`` its output
    and ``measured_spread`` the interquartile range of its isolated runs over their median (0 when unknown).
    """

    layer: str
    op: str
    key: str
    measured_s: float
    predicted_s: float
    kind: str = ""
    macs: int = 0
    output_shape: tuple[int, ...] = ()
    measured_spread: float = 0.0

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
    def speed_drift(self) -> float | None:
        """How much slower (> 0) or faster (< 0) the machine ran this network than it would have at calibration:
        the measured time over the speed-adjusted one, less 1 (None when not timed beside the reference)."""
        return None if not self.adjusted_s else self.measured_s / self.adjusted_s - 1

    @property
    def noise_floor(self) -> float:
        """The error this network's measurement cannot resolve: the larger of the spread of its rounds and the
        machine's speed drift since calibration (both fractions)."""
        return max(self.measured_spread, abs(self.speed_drift or 0.0))

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
        return mape([n.error(method) for n in self.networks])

    def adjusted_mape(self, method: str) -> float | None:
        """The MAPE of ``method`` against the speed-adjusted measurements, when every network has one."""
        errors = self._adjusted_errors(method)
        return None if errors is None else mape(errors)

    def within(self, method: str, tolerance: float = 0.10) -> float:
        """Share of networks whose ``method`` prediction is within +/- ``tolerance`` (see :func:`share_within`)."""
        return share_within([n.error(method) for n in self.networks], tolerance)

    def adjusted_within(self, method: str, tolerance: float = 0.10) -> float | None:
        """The share of networks ``method`` predicts within +/- ``tolerance`` of their speed-adjusted
        measurements, when every network has one."""
        errors = self._adjusted_errors(method)
        return None if errors is None else share_within(errors, tolerance)

    def _adjusted_errors(self, method: str) -> list[float] | None:
        errors = [n.adjusted_error(method) for n in self.networks]
        return None if not errors or any(e is None for e in errors) else [e for e in errors if e is not None]

    @property
    def speed_drifts(self) -> list[float]:
        """The :attr:`NetworkComparison.speed_drift` of every network timed beside the reference."""
        return [n.speed_drift for n in self.networks if n.speed_drift is not None]

    @property
    def error_to_read(self) -> str | None:
        """'raw' or 'speed-adjusted': which of the two errors a user should read (see :func:`error_to_read`);
        None when no network was timed beside the reference."""
        return error_to_read(self.speed_drifts)

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

    @property
    def noise_floor(self) -> float:
        """The median over the networks of their :attr:`NetworkComparison.noise_floor`."""
        return float(np.median([n.noise_floor for n in self.networks]))

    @property
    def primary_method(self) -> str:
        """The method a prediction's ``latency_s`` comes from (nnperf's composition where fitted)."""
        return primary_name(self.methods) or self.methods[0]

    def traced_errors(self, method: str | None = None, tolerance: float = 0.10
                      ) -> list[tuple[NetworkComparison, tuple[ErrorPart, ...]]]:
        """Every network ``method`` (default: the first method, the primary one) predicts beyond +/-
        ``tolerance``, with :func:`trace_error`'s parts."""
        chosen = method or self.primary_method
        return [(n, trace_error(n, chosen)) for n in self.networks if not abs(n.error(chosen)) <= tolerance]

    def noise(self) -> NoiseAssessment:
        """Whether this run's measurements were too noisy to trust its verdicts, and which (see
        :class:`NoiseAssessment`)."""
        return assess_noise(self)

    def to_dict(self) -> dict[str, Any]:
        layer_errors = self.layer_errors
        return {
            "format": EVALUATION_FORMAT[0], "version": EVALUATION_FORMAT[1], "system": self.system,
            "methods": {m: method_description(m) for m in self.methods},
            "summary": {
                "networks": len(self.networks),
                "mape": {m: self.mape(m) for m in self.methods},
                "adjusted_mape": {m: self.adjusted_mape(m) for m in self.methods},
                **{share_key(t): {m: self.within(m, t) for m in self.methods} for t in SHARE_TOLERANCES},
                **{share_key(t, adjusted=True): {m: self.adjusted_within(m, t) for m in self.methods}
                   for t in SHARE_TOLERANCES},
                "error_to_read": self.error_to_read,
                "error_to_read_reason": reading_advice(self.speed_drifts),
                "table2_layer_sum_error": self.table2_error,
                "layer_error_mean": float(layer_errors.mean()),
                "layer_error_median": float(np.median(layer_errors)),
                "measurement_spread_median": self.measurement_spread,
                "noise_floor_median": self.noise_floor,
                "noise_warnings": list(self.noise().warnings),
            },
            "calibration": dict(self.calibration),
            "networks": [{
                "network": n.network, "macs": n.macs, "measured_s": n.measured_s,
                "measured_spread": n.measured_spread, "measured_layer_sum_s": n.measured_layer_sum_s,
                "predicted_layer_sum_s": n.predicted_layer_sum_s, "layer_sum_error": n.layer_sum_error,
                "predicted_s": dict(n.predicted_s), "error": {m: n.error(m) for m in self.methods},
                "prediction_time_s": n.prediction_time_s, "run_id": n.run_id, "adjusted_s": n.adjusted_s,
                "adjusted_error": {m: n.adjusted_error(m) for m in self.methods},
                "speed_drift": n.speed_drift, "noise_floor": n.noise_floor,
                "error_parts": [{"part": e.part, "error_s": e.error_s, "share": e.share, "layers": e.layers}
                                for e in trace_error(n, self.primary_method)],
                "layers": [{"layer": c.layer, "op": c.op, "key": c.key, "kind": c.kind, "macs": c.macs,
                            "output_shape": list(c.output_shape), "measured_s": c.measured_s,
                            "measured_spread": c.measured_spread, "predicted_s": c.predicted_s} for c in n.layers],
            } for n in self.networks],
        }


COMPOSITION_PART = "composition"
"""The part of a network's error that is not in its layers' isolated predictions: what composing them adds
(in-network context, fusion, per-call costs, the method's own scaling)."""


@dataclass(frozen=True)
class ErrorPart:
    """One part of a network's prediction error: a kernel kind (the summed error of its layers' isolated
    predictions) or :data:`COMPOSITION_PART`; ``error_s`` = predicted - measured (seconds), ``share`` of the
    network's whole error (signed; the parts sum to 1), ``layers`` how many layers it covers."""

    part: str
    error_s: float
    share: float
    layers: int


def trace_error(network: NetworkComparison, method: str) -> tuple[ErrorPart, ...]:
    """Where ``method``'s error on ``network`` comes from, largest first: each kernel kind's summed layer error
    (isolated predictions against isolated measurements, the same run's), and the rest, which composing the
    layers into the network adds. The parts sum to the network's error, predicted - measured whole."""
    total = network.predicted_s[method] - network.measured_s
    by_kind: dict[str, list[float]] = {}
    for layer in network.layers:
        by_kind.setdefault(layer.kind or layer.key, []).append(layer.predicted_s - layer.measured_s)
    parts = [(kind, float(sum(errors)), len(errors)) for kind, errors in by_kind.items()]
    parts.append((COMPOSITION_PART, total - sum(e for _, e, _ in parts), 0))
    return tuple(ErrorPart(part, error, error / total if total else 0.0, count)
                 for part, error, count in sorted(parts, key=lambda item: -abs(item[1])))


NOISY_SPREAD = 0.05
"""A whole network's rounds spread (IQR over median) beyond which its measurement is called noisy: on a quiet
machine nnperf's whole-network rounds spread 1-3%."""

SPEED_DRIFT_LIMIT = 0.10
"""A machine-speed drift since calibration beyond which a run is called noisy: a 10% drift moves every error
by 10 points, the width of the +/-10% band."""


@dataclass(frozen=True)
class NoiseAssessment:
    """Whether a run's measurements can carry its verdicts.

    ``noisy_networks`` holds (network, spread) where a network's rounds spread more than :data:`NOISY_SPREAD`;
    ``drifted_networks`` (network, drift) where the machine ran more than :data:`SPEED_DRIFT_LIMIT` slower or
    faster than at calibration; ``close_methods`` (better, worse, MAPE difference) for every pair of methods
    next to each other in the MAPE ranking that lie closer than the run's noise floor (``floor``), whose order
    the noise can overturn. ``warnings`` says all of it in words; empty on a quiet run.
    """

    noisy_networks: tuple[tuple[str, float], ...]
    drifted_networks: tuple[tuple[str, float], ...]
    close_methods: tuple[tuple[str, str, float], ...]
    floor: float
    warnings: tuple[str, ...]

    @property
    def noisy(self) -> bool:
        return bool(self.noisy_networks or self.drifted_networks)


def assess_noise(evaluation: Evaluation) -> NoiseAssessment:
    """The :class:`NoiseAssessment` of ``evaluation``: a verdict is only as good as the measurements under it."""
    noisy = tuple((n.network, n.measured_spread) for n in evaluation.networks if n.measured_spread > NOISY_SPREAD)
    drifted = tuple((n.network, n.speed_drift) for n in evaluation.networks
                    if n.speed_drift is not None and abs(n.speed_drift) > SPEED_DRIFT_LIMIT)
    floor = evaluation.noise_floor if evaluation.networks else 0.0
    ranked = sorted(evaluation.methods, key=evaluation.mape)
    close = tuple((a, b, evaluation.mape(b) - evaluation.mape(a)) for a, b in itertools.pairwise(ranked)
                  if evaluation.mape(b) - evaluation.mape(a) < floor)
    warnings: list[str] = []
    if noisy:
        worst = sorted(noisy, key=lambda item: -item[1])
        warnings.append("Noisy measurements: the whole-network rounds of "
                        + ", ".join(f"{name} spread {spread:.1%}" for name, spread in worst)
                        + f" (interquartile range over median; a quiet machine gives 1-3%, the limit is "
                        f"{NOISY_SPREAD:.0%}). The machine was busy while it measured.")
    if drifted:
        warnings.append("The machine's speed moved since calibration: "
                        + ", ".join(f"{name} took {1 + drift:.2f}x its time at the calibration's speed"
                                    for name, drift in drifted)
                        + " (timed beside the machine-speed reference), which shifts its errors by as much. The "
                        "errors against the speed-adjusted measurements are the ones to read.")
    if warnings:
        verdict = (f"Errors smaller than the noise floor ({floor:.1%}, the median over the networks of the larger "
                   "of spread and drift) cannot be told apart from noise")
        if close:
            verdict += "; the noise can overturn the ranking of " + "; ".join(
                f"{method_label(a)} before {method_label(b)} (MAPE {diff:.1%} apart)" for a, b, diff in close)
        warnings.append(verdict + ". Measure again on a quiet machine before drawing conclusions.")
    return NoiseAssessment(noisy, drifted, close, floor, tuple(warnings))


SHARE_TOLERANCES = (0.05, 0.10)
"""The bands whose share of networks is reported beside every MAPE: +/-5% and +/-10%."""

_PRINTED_BOUND = 1e-9
"""Slack under which an error counts as on a band's bound: 1.05 / 1 - 1 is 0.05000000000000004, printed +5.0%."""


def mape(errors: Iterable[float]) -> float:
    """The mean absolute error of ``errors`` (signed fractions, predicted / measured - 1); NaN for none."""
    values = [abs(e) for e in errors]
    return float(np.mean(values)) if values else float("nan")


def share_within(errors: Iterable[float], tolerance: float) -> float:
    """The share of ``errors`` (signed fractions, predicted / measured - 1) within +/- ``tolerance``, bound
    included; NaN for none. [+3%, -6%, +12%, 0%] has 2 of 4 within +/-5% and 3 of 4 within +/-10%."""
    values = [abs(e) for e in errors]
    return sum(e <= tolerance + _PRINTED_BOUND for e in values) / len(values) if values else float("nan")


READ_ADJUSTED_DRIFT = 0.05
"""A machine-speed drift since calibration (measured over speed-adjusted time, less 1) beyond which the
speed-adjusted error is the one to read. Within it the machine ran as at calibration as far as a quiet machine's
whole-network rounds (1-3% spread, :data:`NOISY_SPREAD` at most) can tell, and the raw error is the sounder one:
the adjustment would add the reference's own error where the network is of a kind it does not track."""


def error_to_read(drifts: Sequence[float]) -> str | None:
    """'raw' or 'speed-adjusted': which error a user should read, by the median of the networks' speed drifts
    (each measured over speed-adjusted time, less 1; see :data:`READ_ADJUSTED_DRIFT`); None without any."""
    if not drifts:
        return None
    return "speed-adjusted" if abs(float(np.median(drifts))) > READ_ADJUSTED_DRIFT else "raw"


def reading_advice(drifts: Sequence[float]) -> str | None:
    """One line saying which error to read (:func:`error_to_read`) and why; None without any drift."""
    which = error_to_read(drifts)
    if which is None:
        return None
    median = 1 + float(np.median(drifts))
    ran = (f"The networks ran at a median {median:.2f}x their" if len(drifts) > 1
           else f"The network ran at {median:.2f}x its")
    ran += " time at the calibration's speed (timed beside the machine-speed reference)"
    if which == "raw":
        return (f"Which error to read: the raw one. {ran}, within +/-{READ_ADJUSTED_DRIFT:.0%}, so the speed held; "
                "the adjustment would only add the reference's own error (it does not track every kind of network).")
    return (f"Which error to read: the speed-adjusted one. {ran}, beyond +/-{READ_ADJUSTED_DRIFT:.0%}, which moves "
            "every raw error by as much (provided the network slowed as the reference did).")


def share_key(tolerance: float, adjusted: bool = False) -> str:
    """The JSON key of the share within +/- ``tolerance``: 'within_5pct', 'adjusted_within_10pct'."""
    return f"{'adjusted_' if adjusted else ''}within_{round(tolerance * 100)}pct"


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
    records = {r.layer: r for r in measured.layers}
    by_name = {layer.name: layer for layer in measured.network.layers}
    macs = {m.name: m.macs for m in network_metrics(measured.network).layers}
    layers = tuple(LayerComparison(
        p.layer, p.op, p.key, records[p.layer].median_s, p.latency_s, kind=kernel_kind(by_name[p.layer]),
        macs=macs[p.layer], output_shape=tuple(by_name[p.layer].output_shape),
        measured_spread=_spread(records[p.layer].stats)) for p in prediction.layers if p.layer in records)
    predicted = dict(prediction.network_latency_s)
    stats = measured.whole.stats
    return NetworkComparison(
        network=measured.network.name, macs=sum(macs.values()),
        measured_s=stats.median_s, measured_spread=_spread(stats),
        measured_layer_sum_s=float(sum(c.measured_s for c in layers)),
        predicted_layer_sum_s=float(sum(c.predicted_s for c in layers)),
        predicted_s=predicted, layers=layers, prediction_time_s=elapsed, run_id=measured.run.id,
        adjusted_s=adjusted_s,
    )


def _spread(stats: Any) -> float:
    """Interquartile range over median of a measurement's statistics (0 for a zero median)."""
    return (stats.q3_s - stats.q1_s) / stats.median_s if stats.median_s > 0 else 0.0


def evaluate(model: SystemModel, measured: Sequence[MeasuredNetwork],
             adjusted_s: Mapping[str, float] | None = None) -> Evaluation:
    """Compares the model with the measurements of every network; ``adjusted_s`` maps a network's name to its
    speed-adjusted whole-network time (seconds), for the networks timed beside the reference."""
    comparisons = tuple(compare(model, m, (adjusted_s or {}).get(m.network.name)) for m in measured)
    methods = tuple(m for m in network_predictor_names() if all(m in c.predicted_s for c in comparisons))
    return Evaluation(model.system_label, comparisons, methods, dict(model.calibration))
