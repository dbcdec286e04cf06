"""The network predictor of a calibration adapted to a search space: nnperf's composition, its layer predictions
corrected per kernel kind where the space's sampled layers show them wrong.

The composition (``composed``) sums PreVIous' per-layer-type predictions of a network's unfused layers, plus a
per-call delta. One Ridge per layer type cannot take sampled convolutions in (see
``nnperf.prediction.RIDGE_SAMPLED_TYPES``), and it errs by kind: a 5x5 depthwise convolution costs what its
counts say on one machine and twice that on another. An adaptation (``nnperf calibrate --adapt``) measures
layers alone near a user's example networks (:class:`~nnperf.prediction.kernel.AdaptedPrior`); this predictor
learns, per kernel kind, the ratio of their measured time to the Ridge's prediction:

- the ratio is fitted on the kind's kernel features (:func:`~nnperf.prediction.kernel.kernel_features`) by the
  regressor (power law, random forest, boosted trees) of least cross-validated error (:func:`choose`), and kept
  only where that error is below the Ridge's own median error on the samples by more than
  one percentage point (``TIE``); a kind with fewer than
  :data:`~nnperf.prediction.kernel.MIN_SAMPLES_TO_CHOOSE` samples is left as the Ridge has it;
- a layer is corrected only inside the box its kind's samples span: each of its shape features (channels,
  groups, window, stride, dilation, map sizes, padding; a layer that is no convolution, its input and output
  sizes) within the samples' least over :data:`BOX_MARGIN` and largest times it, whatever the products of
  those (weights, operations) come to: outside the user's space the predictor is the composition;
- the corrected times are composed as the composition composes (the same fusion rules and delta, fitted on the
  calibration networks' measured layer times).

Being the calibration's own prediction once an adaptation made it, it is the primary one (``primary_rank``
below the composition's). A calibration without adapted samples does not fit it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import Layer, Network
from nnperf.ir.metrics import layer_metrics, network_metrics
from nnperf.prediction._base import CalibrationSet, FittedOn, NetworkInput, NetworkPredictor, register_predictor
from nnperf.prediction._composition import MIN_COMPOSITION_NETWORKS, Composition, compose_calibration
from nnperf.prediction._features import features, layer_signature, model_key
from nnperf.prediction._ridge import RidgeModel
from nnperf.prediction.kernel._kinds import kernel_features, kernel_kind
from nnperf.prediction.kernel._regressors import MIN_SAMPLES_TO_CHOOSE, TIE, Stored, choose
from nnperf.registry import Availability

if TYPE_CHECKING:
    from typing import Self

    from nnperf.prediction._model import SystemModel
    from nnperf.prediction._runs import MeasuredNetwork

ADAPTED_SAMPLES = "adapted_samples"
"""Key of :attr:`CalibrationSet.extra` holding an adaptation's sampled layers: a sequence of (layer, seconds
measured alone, seconds the per-layer-type Ridge predicts), as :func:`adapted_triples` makes them."""

BOX_MARGIN = 1.25
"""A layer is inside its kind's box when each of its shape features lies within the samples' least / this and
largest x this."""

BOX_FROM = 3
"""The first shape feature of a feature row: the ones before are n(W), #OPs and #memOPs, products of the shape."""

CANDIDATES = ("ridge", "forest", "boosting")
"""The regressors a kind's correction chooses from."""


@register_predictor
class AdaptedModel(NetworkPredictor):
    """The composition with per-kind corrections learnt from an adaptation's samples (see the module docstring).

    After ``fit``: ``composition_``, ``corrections_`` (kind -> fitted ratio regressor), ``boxes_`` (kind -> the
    least and largest of each shape feature over its samples), ``errors_`` (kind -> the Ridge's median error on the
    samples and the correction's cross-validated one), ``samples_`` (kind -> samples) and ``left_`` (kind ->
    why it is not corrected).
    """

    name = "adapted"
    label = "nnperf adapted"
    description = "nnperf composed, its layers corrected per kernel kind by samples of the user's search space"
    display_order = 50
    primary_rank = -1

    def __init__(self, candidates: Sequence[str] = CANDIDATES, folds: int = 5, seed: int = 0) -> None:
        self.candidates = tuple(candidates)
        self.folds = folds
        self.seed = seed

    @classmethod
    def availability(cls, calibration: CalibrationSet) -> Availability:
        if not calibration.extra.get(ADAPTED_SAMPLES):
            return Availability.no("fitted only by an adaptation to a search space (nnperf calibrate --adapt)")
        if len(calibration.runs) < MIN_COMPOSITION_NETWORKS:
            return Availability.no(f"the adapted model composes like the composition, which needs "
                                   f"{MIN_COMPOSITION_NETWORKS} calibration networks, got {len(calibration.runs)}")
        return Availability.yes()

    def fit(self, calibration: CalibrationSet) -> Self:
        self.composition_ = compose_calibration(calibration, [run.layer_median_s() for run in calibration.runs])
        rows: dict[str, list[np.ndarray]] = defaultdict(list)
        ratios: dict[str, list[float]] = defaultdict(list)
        for layer, seconds, base_s in calibration.extra.get(ADAPTED_SAMPLES, ()):
            if seconds > 0 and base_s > 0:
                kind = kernel_kind(layer)
                rows[kind].append(kernel_features(layer, layer_metrics(layer)))
                ratios[kind].append(seconds / base_s)
        self.corrections_: dict[str, Stored] = {}
        self.boxes_: dict[str, tuple[list[float], list[float]]] = {}
        self.errors_: dict[str, dict[str, float]] = {}
        self.samples_ = {kind: len(values) for kind, values in sorted(ratios.items())}
        self.left_: dict[str, str] = {}
        for kind in self.samples_:
            x, r = np.array(rows[kind]), np.array(ratios[kind])
            base_error = float(np.median(np.abs(1.0 / r - 1.0)))
            if len(r) < MIN_SAMPLES_TO_CHOOSE:
                self.left_[kind] = f"{len(r)} samples, fewer than {MIN_SAMPLES_TO_CHOOSE}"
                continue
            regressor, scores = choose(x, r, self.candidates, self.folds, self.seed)
            corrected_error = min(scores.values())
            self.errors_[kind] = {"ridge": base_error, "corrected": corrected_error}
            if corrected_error > base_error - TIE:
                self.left_[kind] = "the correction errs no less than the calibration's model"
                continue
            self.corrections_[kind] = regressor
            self.boxes_[kind] = (x[:, BOX_FROM:].min(axis=0).tolist(), x[:, BOX_FROM:].max(axis=0).tolist())
        return self

    def ratio(self, layer: Layer, features: np.ndarray) -> float:
        """What ``layer`` (with its kernel ``features``) takes over its per-layer-type prediction: its kind's
        correction inside the kind's box, else 1."""
        kind = kernel_kind(layer)
        if kind not in self.corrections_:
            return 1.0
        low, high = (np.asarray(v) for v in self.boxes_[kind])
        shape = features[BOX_FROM:]
        if np.any(shape < low / BOX_MARGIN) or np.any(shape > high * BOX_MARGIN):
            return 1.0
        return float(self.corrections_[kind].predict_s(features[None, :])[0])

    def layer_latency_s(self, network: Network, base_s: Mapping[str, float]) -> dict[str, float]:
        """Each layer's corrected prediction (seconds) from its per-layer-type one, ``base_s``."""
        self.check_fitted()
        metrics = network_metrics(network).layers
        return {layer.name: float(base_s.get(layer.name, 0.0)) * self.ratio(layer, kernel_features(layer, m))
                for layer, m in zip(network.layers, metrics)}

    def predict(self, x: NetworkInput) -> float:
        self.check_fitted()
        return self.composition_.latency_s(x.network, self.layer_latency_s(x.network, x.layer_latency_s))

    def predict_many(self, inputs: Sequence[NetworkInput]) -> list[float]:
        """:meth:`predict` of every input, each distinct layer's correction found once (its
        :func:`~nnperf.prediction.layer_signature`)."""
        self.check_fitted()
        ratios: dict[Any, float] = {}
        totals = []
        for x in inputs:
            latency = {}
            for layer in x.network.layers:
                signature = layer_signature(layer)
                if signature not in ratios:
                    ratios[signature] = (self.ratio(layer, kernel_features(layer, layer_metrics(layer)))
                                         if kernel_kind(layer) in self.corrections_ else 1.0)
                latency[layer.name] = float(x.layer_latency_s.get(layer.name, 0.0)) * ratios[signature]
            totals.append(self.composition_.latency_s(x.network, latency))
        return totals

    def summary(self) -> str:
        """Each corrected kind with its regressor and the Ridge's and the correction's errors on its samples."""
        self.check_fitted()
        parts = [f"{kind} {self.corrections_[kind].kind} ({self.errors_[kind]['ridge']:.0%} -> "
                 f"{self.errors_[kind]['corrected']:.0%}, {self.samples_[kind]} samples)"
                 for kind in sorted(self.corrections_)]
        left = f"; left as calibrated: {', '.join(sorted(self.left_))}" if self.left_ else ""
        return f"corrected: {', '.join(parts) or 'none'}{left}"

    def fitted_on(self) -> FittedOn:
        self.check_fitted()
        return FittedOn(sum(self.samples_.values()), "adapted layer samples")

    def calibration_line(self, calibration: Mapping[str, Any]) -> str:
        record = calibration.get("adapted", {})
        measured = (f"{record['samples']} layers sampled near {len(record['sources'])} example network(s) in "
                    f"{record['wall_s']:.0f} s; " if {"samples", "sources", "wall_s"} <= set(record) else "")
        return (f"adapted to a search space ({measured}median layer error on its samples, as calibrated -> "
                f"corrected): {self.summary()}")

    def fitted_state(self) -> dict[str, Any]:
        return {"composition": self.composition_.to_dict(),
                "corrections": {k: m.to_dict() for k, m in self.corrections_.items()},
                "boxes": {k: [list(low), list(high)] for k, (low, high) in self.boxes_.items()},
                "errors": self.errors_, "samples": self.samples_, "left": self.left_}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        composition = Composition.from_dict(state["composition"])
        if not isinstance(composition, Composition):
            raise TypeError("the adapted model's composition is not a composition")
        self.composition_ = composition
        self.corrections_ = {k: Stored.from_dict(v) for k, v in state["corrections"].items()}
        self.boxes_ = {k: ([float(v) for v in low], [float(v) for v in high])
                       for k, (low, high) in state["boxes"].items()}
        self.errors_ = {k: {n: float(e) for n, e in v.items()} for k, v in state["errors"].items()}
        self.samples_ = {k: int(v) for k, v in state["samples"].items()}
        self.left_ = {k: str(v) for k, v in state["left"].items()}


def adapted_triples(latency: Mapping[str, RidgeModel], samples: Sequence[tuple[Layer, float]]
                    ) -> tuple[tuple[Layer, float, float], ...]:
    """Each sampled layer with its measured seconds and the seconds its per-layer-type model in ``latency``
    predicts (:data:`ADAPTED_SAMPLES`); a layer of a type ``latency`` lacks is left out."""
    return tuple((layer, seconds, float(latency[model_key(layer)].predict(features(layer)[None, :])[0]))
                 for layer, seconds in samples if model_key(layer) in latency)


def fit_adaptation(model: SystemModel, runs: Sequence[MeasuredNetwork], profiled: Sequence[MeasuredNetwork],
                   adapted: Sequence[tuple[Layer, float]]) -> SystemModel:
    """``model`` (fitted on the calibration networks ``runs`` and ``profiled``) with an :class:`AdaptedModel`
    fitted on the ``adapted`` samples (layers and their seconds alone) added to its predictors."""
    if not adapted:
        raise NnperfError("the adaptation measured no layer within its budget (the first reading of the drift "
                          "sentinel alone takes about half a second): give it a longer budget")
    predicted = [{p.layer: p.latency_s for p in model.predict_layers(run.network)} for run in runs]
    calibration = CalibrationSet(runs, predicted, profiled,
                                 extra={ADAPTED_SAMPLES: adapted_triples(model.latency, adapted)})
    available = AdaptedModel.availability(calibration)
    if not available.ok:
        raise NnperfError(f"the adaptation cannot be fitted: {available.reason}")
    not_fitted = {k: v for k, v in model.calibration.get("not_fitted", {}).items() if k != AdaptedModel.name}
    return replace(model, predictors={**model.predictors, AdaptedModel.name: AdaptedModel().fit(calibration)},
                   calibration={**model.calibration, "not_fitted": not_fitted})
