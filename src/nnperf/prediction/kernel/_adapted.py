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
  calibration networks' measured layer times);
- what the samples cannot show, the space's whole networks can: the layer types no kind samples (a
  MobileNetV3's hard-swish and squeeze-excitation gates), and what running in a network does to its layers. The
  adaptation times some of its example networks whole beside the machine-speed reference; one scale, fitted on
  their speed-adjusted times by least squares on the relative error (as the composition's delta), multiplies the
  composed prediction, in proportion to the share of a network's predicted time that its layers inside the
  boxes carry (all of it for a network of the space, none for one outside every box).

Being the calibration's own prediction once an adaptation made it, it is the primary one (``primary_rank``
below the composition's). A calibration without adapted samples does not fit it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

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

    from nnperf.prediction._runs import MeasuredNetwork

ADAPTED_SAMPLES = "adapted_samples"
"""Key of :attr:`CalibrationSet.extra` holding an adaptation's sampled layers: a sequence of (layer, seconds
measured alone, seconds the per-layer-type Ridge predicts), as :func:`adapted_triples` makes them."""

ADAPTED_NETWORKS = "adapted_networks"
"""Key of :attr:`CalibrationSet.extra` holding the example networks timed whole: a sequence of (network, its
layers' per-layer-type predictions in seconds by name, its speed-adjusted time in seconds)."""

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
    least and largest of each shape feature over its samples, for every kind with enough), ``errors_`` (kind ->
    the Ridge's median error on the samples and the correction's cross-validated one), ``samples_`` (kind ->
    samples), ``left_`` (kind -> why it is not corrected), ``scale_`` (the whole networks' scale, 1 without
    any) and ``scale_errors_`` (the examples' median error before and after the scale, and their count).
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
            if len(r) < MIN_SAMPLES_TO_CHOOSE:
                self.left_[kind] = f"{len(r)} samples, fewer than {MIN_SAMPLES_TO_CHOOSE}"
                continue
            self.boxes_[kind] = (x[:, BOX_FROM:].min(axis=0).tolist(), x[:, BOX_FROM:].max(axis=0).tolist())
            regressor, scores = choose(x, r, self.candidates, self.folds, self.seed)
            self.errors_[kind] = {"ridge": float(np.median(np.abs(1.0 / r - 1.0))), "corrected": min(scores.values())}
            if self.errors_[kind]["corrected"] > self.errors_[kind]["ridge"] - TIE:
                self.left_[kind] = "the correction errs no less than the calibration's model"
            else:
                self.corrections_[kind] = regressor
        self.scale_, self.scale_errors_ = 1.0, {}
        self._fit_scale(calibration.extra.get(ADAPTED_NETWORKS, ()))
        return self

    def _fit_scale(self, networks: Sequence[tuple[Network, Mapping[str, float], float]]) -> None:
        """The whole networks' scale (see the module docstring) from the examples timed whole, and their median
        error before and after it."""
        timed = [(self._composed_s(network, base), share, seconds) for network, base, seconds in networks
                 if seconds > 0 and (share := self.share(network, base)) > 0]
        if not timed:
            return
        composed, share, measured = (np.array(v, dtype=float) for v in zip(*timed, strict=True))
        ratio = composed * share / measured  # the scale multiplies the shared part: (1 + (k - 1) share) p
        rest = composed * (1 - share) / measured
        self.scale_ = float(np.sum(ratio * (1 - rest)) / np.sum(ratio ** 2))
        scaled = composed * (1 + (self.scale_ - 1) * share)
        self.scale_errors_ = {"networks": float(len(timed)),
                              "composed": float(np.median(np.abs(composed / measured - 1))),
                              "scaled": float(np.median(np.abs(scaled / measured - 1)))}

    def _composed_s(self, network: Network, base_s: Mapping[str, float]) -> float:
        """``network``'s composed time from its corrected layer predictions, before the scale (seconds)."""
        return self.composition_.latency_s(network, self.layer_latency_s(network, base_s))

    def share(self, network: Network, base_s: Mapping[str, float]) -> float:
        """The share of ``network``'s summed layer predictions (``base_s``) that its layers inside a kind's box
        carry: how much of it the space's scale speaks for."""
        total = sum(base_s.values())
        inside = sum(float(base_s.get(layer.name, 0.0)) for layer, m in zip(network.layers,
                                                                           network_metrics(network).layers)
                     if self._inside(layer, kernel_features(layer, m)))
        return inside / total if total > 0 else 0.0

    def _inside(self, layer: Layer, features: np.ndarray) -> bool:
        """Whether ``layer`` (with its kernel ``features``) lies inside its kind's box."""
        box = self.boxes_.get(kernel_kind(layer))
        if box is None:
            return False
        shape = features[BOX_FROM:]
        return not (np.any(shape < np.asarray(box[0]) / BOX_MARGIN) or np.any(shape > np.asarray(box[1]) * BOX_MARGIN))

    def ratio(self, layer: Layer, features: np.ndarray) -> float:
        """What ``layer`` (with its kernel ``features``) takes over its per-layer-type prediction: its kind's
        correction inside the kind's box, else 1."""
        kind = kernel_kind(layer)
        if kind not in self.corrections_ or not self._inside(layer, features):
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
        composed = self._composed_s(x.network, x.layer_latency_s)
        return composed * (1 + (self.scale_ - 1) * self.share(x.network, x.layer_latency_s))

    def predict_many(self, inputs: Sequence[NetworkInput]) -> list[float]:
        """:meth:`predict` of every input, each distinct layer's correction and place in the boxes found once (its
        :func:`~nnperf.prediction.layer_signature`)."""
        self.check_fitted()
        found: dict[Any, tuple[float, bool]] = {}
        totals = []
        for x in inputs:
            latency, inside_s = {}, 0.0
            for layer in x.network.layers:
                signature = layer_signature(layer)
                if signature not in found:
                    row = kernel_features(layer, layer_metrics(layer))
                    found[signature] = (self.ratio(layer, row), self._inside(layer, row))
                ratio, inside = found[signature]
                base = float(x.layer_latency_s.get(layer.name, 0.0))
                latency[layer.name] = base * ratio
                inside_s += base if inside else 0.0
            total = sum(x.layer_latency_s.values())
            share = inside_s / total if total > 0 else 0.0
            totals.append(self.composition_.latency_s(x.network, latency) * (1 + (self.scale_ - 1) * share))
        return totals

    def summary(self) -> str:
        """Each corrected kind with its regressor and the Ridge's and the correction's errors on its samples."""
        self.check_fitted()
        parts = [f"{kind} {self.corrections_[kind].kind} ({self.errors_[kind]['ridge']:.0%} -> "
                 f"{self.errors_[kind]['corrected']:.0%}, {self.samples_[kind]} samples)"
                 for kind in sorted(self.corrections_)]
        left = f"; left as calibrated: {', '.join(sorted(self.left_))}" if self.left_ else ""
        errors = self.scale_errors_
        scale = (f"; whole networks x {self.scale_:.3f} ({int(errors['networks'])} examples timed whole, median "
                 f"error {errors['composed']:.0%} -> {errors['scaled']:.0%})" if errors else "")
        return f"corrected: {', '.join(parts) or 'none'}{left}{scale}"

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
                "errors": self.errors_, "samples": self.samples_, "left": self.left_, "scale": self.scale_,
                "scale_errors": self.scale_errors_}

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
        self.scale_ = float(state.get("scale", 1.0))  # absent: stored before whole networks were timed
        self.scale_errors_ = {k: float(v) for k, v in state.get("scale_errors", {}).items()}


def adapted_triples(latency: Mapping[str, RidgeModel], samples: Sequence[tuple[Layer, float]]
                    ) -> tuple[tuple[Layer, float, float], ...]:
    """Each sampled layer with its measured seconds and the seconds its per-layer-type model in ``latency``
    predicts (:data:`ADAPTED_SAMPLES`); a layer of a type ``latency`` lacks is left out."""
    return tuple((layer, seconds, float(latency[model_key(layer)].predict(features(layer)[None, :])[0]))
                 for layer, seconds in samples if model_key(layer) in latency)


class Calibrated(Protocol):
    """What :func:`fit_adaptation` reads of a system's model (a :class:`~nnperf.prediction.SystemModel`, which this
    module cannot import: that one imports this package)."""

    latency: Mapping[str, RidgeModel]
    predictors: Mapping[str, NetworkPredictor]
    calibration: Mapping[str, Any]

    def predict_layers(self, network: Network) -> tuple[Any, ...]: ...


M = TypeVar("M", bound=Calibrated)


def fit_adaptation(model: M, runs: Sequence[MeasuredNetwork], profiled: Sequence[MeasuredNetwork],
                   adapted: Sequence[tuple[Layer, float]], networks: Sequence[tuple[Network, float]] = ()) -> M:
    """``model`` (a system's model, fitted on the calibration networks ``runs`` and ``profiled``) with an
    :class:`AdaptedModel` fitted on the ``adapted`` samples (layers and their seconds alone) and the example
    ``networks`` timed whole (with their speed-adjusted seconds) added to its predictors."""
    if not adapted:
        raise NnperfError("the adaptation measured no layer within its budget (the first reading of the drift "
                          "sentinel alone takes about half a second): give it a longer budget")
    predicted = [{p.layer: p.latency_s for p in model.predict_layers(run.network)} for run in runs]
    whole = tuple((network, {p.layer: p.latency_s for p in model.predict_layers(network)}, seconds)
                  for network, seconds in networks)
    calibration = CalibrationSet(runs, predicted, profiled, extra={
        ADAPTED_SAMPLES: adapted_triples(model.latency, adapted), ADAPTED_NETWORKS: whole})
    available = AdaptedModel.availability(calibration)
    if not available.ok:
        raise NnperfError(f"the adaptation cannot be fitted: {available.reason}")
    not_fitted = {k: v for k, v in model.calibration.get("not_fitted", {}).items() if k != AdaptedModel.name}
    fitted = {**model.predictors, AdaptedModel.name: AdaptedModel().fit(calibration)}
    record = {**model.calibration, "not_fitted": not_fitted}
    return replace(model, predictors=fitted, calibration=record)  # type: ignore[type-var]
