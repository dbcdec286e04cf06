"""Network composition beyond one constant c: what the backend fuses, and what each layer call costs.

PreVIous multiplies the sum of per-layer predictions by one coefficient c
(Eq. 6). Isolated layer times miss two things that differ from network to
network: a backend that fuses an element-wise layer into the convolution
before it (ONNX Runtime: Conv+BN+Add+ReLU) runs that layer almost for free
inside the network while timing it alone costs a whole call; and a layer
call inside the network costs a different fixed amount (dispatch, session
run, allocation) than the isolated call that was timed. So nnperf composes

    T = sum(predictions of unfused layers) + delta * (number of unfused layers)

where "fused" follows the fusion rules the backend showed on the calibration
networks (its profiler's node groups, mapped to IR layers) and delta, the
per-call difference, is fitted on the calibration networks' whole-network
times by least squares on the relative error. Unlike c, the per-layer
predictions are not rescaled: a scale fitted on the small calibration
networks carried their whole/isolated ratio to networks whose ratio differs
(the variants were compared with bench/predict_accuracy.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import Layer, Network, OpType
from nnperf.measure import FUSED_SUCCESSORS
from nnperf.prediction._base import CalibrationSet, NetworkInput, NetworkPredictor, register_predictor
from nnperf.registry import Availability

if TYPE_CHECKING:
    from typing import Self

COMPUTE_HEADS = frozenset({OpType.CONV, OpType.LINEAR})
"""Layers a backend fuses element-wise successors into."""

FUSION_THRESHOLD = 0.5
"""A (head, successor) pair counts as fused when the backend fused it at least this often in calibration."""


def fusion_candidates(network: Network) -> dict[str, tuple[str, str]]:
    """Element-wise layers that could fuse into a compute layer: layer -> (the layer it follows, the head's op).

    A candidate's producer has it as its only consumer, and walking up such
    producers through element-wise layers reaches a convolution or fully
    connected layer (the head).
    """
    layers = {layer.name: layer for layer in network.layers}
    candidates: dict[str, tuple[str, str]] = {}
    for layer in network.layers:
        if layer.op not in FUSED_SUCCESSORS:
            continue
        producer = _sole_producer(layer, layers, network)
        head = producer
        while head is not None and layers[head].op in FUSED_SUCCESSORS:
            head = _sole_producer(layers[head], layers, network)
        if producer is not None and head is not None and layers[head].op in COMPUTE_HEADS:
            candidates[layer.name] = (producer, layers[head].op.value)
    return candidates


def _sole_producer(layer: Layer, layers: Mapping[str, Layer], network: Network) -> str | None:
    """The last input of ``layer`` that is a layer whose only consumer is ``layer``."""
    sole = [p for p in layer.inputs if p in layers and network.consumers(p) == (layer.name,)]
    return sole[-1] if sole else None


@dataclass(frozen=True)
class FusionRules:
    """Which element-wise successors this backend fuses into which compute layers.

    ``observed`` maps 'head>successor' (for example 'conv>relu') to how often
    the calibration profiler showed the pair fused and how often it was seen.
    """

    observed: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def fuses(self, head_op: str, op: str) -> bool:
        fused, seen = self.observed.get(f"{head_op}>{op}", (0, 0))
        return seen > 0 and fused / seen >= FUSION_THRESHOLD

    @property
    def fused_pairs(self) -> list[str]:
        """The 'head>successor' pairs this backend fuses."""
        return [pair for pair in sorted(self.observed) if self.fuses(*pair.split(">"))]

    def fused_layers(self, network: Network) -> set[str]:
        """Layers of ``network`` the backend is expected to run inside the compute layer before them: the
        :func:`fusion_candidates` (in topological order) whose producer is the head or fused itself and whose
        pair this backend fuses. Only layers of an operator this backend fuses at all are walked, which leaves
        a backend that fuses nothing with no graph walk."""
        fusing = {pair.split(">")[1] for pair in self.fused_pairs}
        fused: set[str] = set()
        if not fusing:
            return fused
        by_name = {layer.name: layer for layer in network.layers}
        for layer in network.layers:
            if layer.op.value not in fusing:
                continue
            producer = _sole_producer(layer, by_name, network)
            head = producer
            while head is not None and by_name[head].op in FUSED_SUCCESSORS:
                head = _sole_producer(by_name[head], by_name, network)
            if producer is None or head is None or by_name[head].op not in COMPUTE_HEADS:
                continue
            producer_fused = by_name[producer].op in COMPUTE_HEADS or producer in fused
            if producer_fused and self.fuses(by_name[head].op.value, layer.op.value):
                fused.add(layer.name)
        return fused

    def to_dict(self) -> dict[str, list[int]]:
        return {k: [f, s] for k, (f, s) in sorted(self.observed.items())}

    @classmethod
    def from_dict(cls, d: Mapping[str, Sequence[int]]) -> FusionRules:
        return cls({k: (int(v[0]), int(v[1])) for k, v in d.items()})


def learn_fusion(groups: Sequence[tuple[Network, Mapping[str, str]]]) -> FusionRules:
    """Fusion rules from profiled networks: each network with its layer -> group map."""
    observed: dict[str, list[int]] = {}
    for network, group in groups:
        by_name = {layer.name: layer for layer in network.layers}
        for name, (producer, head_op) in fusion_candidates(network).items():
            if name not in group or producer not in group:
                continue
            counts = observed.setdefault(f"{head_op}>{by_name[name].op.value}", [0, 0])
            counts[0] += group[name] == group[producer]
            counts[1] += 1
    return FusionRules({k: (v[0], v[1]) for k, v in observed.items()})


MIN_COMPOSITION_NETWORKS = 3
"""With fewer calibration networks the composition is not fitted: one network cannot separate delta from noise."""


@register_predictor
class Composition(NetworkPredictor):
    """T = sum of unfused layer predictions + delta_s_ x unfused layer count (see the module docstring).

    After ``fit``: ``fusion_`` (the :class:`FusionRules` the calibration's
    profiler pass showed) and ``delta_s_`` (seconds per unfused layer call).
    """

    name = "composed"
    label = "nnperf composed"
    description = "nnperf: per-layer predictions composed the way this backend runs them"
    display_order = 20
    primary_rank = 0
    provides_fusion = True
    calibration_key = "composition"

    @classmethod
    def availability(cls, calibration: CalibrationSet) -> Availability:
        if len(calibration.runs) < MIN_COMPOSITION_NETWORKS:
            return Availability.no(f"the composition needs {MIN_COMPOSITION_NETWORKS} calibration networks, "
                                   f"got {len(calibration.runs)}")
        return Availability.yes()

    @classmethod
    def of(cls, delta_s: float, fusion: FusionRules | None = None) -> Composition:
        """The composition with these learned values (``fusion`` defaults to no fusion)."""
        model = cls()
        model.delta_s_, model.fusion_ = float(delta_s), fusion or FusionRules()
        return model

    def fit(self, calibration: CalibrationSet) -> Self:
        """Learns the fusion rules from the profiled runs, then delta on the measured (isolated) layer times:
        delta is what isolation misses."""
        fitted = compose_calibration(calibration, [run.layer_median_s() for run in calibration.runs])
        self.delta_s_, self.fusion_ = fitted.delta_s_, fitted.fusion_
        return self

    def predict(self, x: NetworkInput) -> float:
        return self.latency_s(x.network, x.layer_latency_s)

    @property
    def delta_s(self) -> float:
        self.check_fitted()
        return self.delta_s_

    @property
    def fusion(self) -> FusionRules:
        self.check_fitted()
        return self.fusion_

    def terms(self, network: Network, layer_latency_s: Mapping[str, float]) -> tuple[float, int]:
        """(sum of the unfused layers' predictions, unfused layer count)."""
        fused = self.fusion.fused_layers(network)
        unfused = [t for name, t in layer_latency_s.items() if name not in fused]
        return float(sum(unfused)), len(unfused)

    def latency_s(self, network: Network, layer_latency_s: Mapping[str, float]) -> float:
        unfused_s, calls = self.terms(network, layer_latency_s)
        return max(unfused_s + self.delta_s * calls, 0.0)

    def fused_layers(self, network: Network) -> frozenset[str]:
        return frozenset(self.fusion.fused_layers(network))

    def summary(self) -> str:
        return (f"{self.delta_s * 1e6:+.1f} us per unfused layer call; fused by this backend: "
                f"{', '.join(self.fusion.fused_pairs) or 'nothing'}")

    def calibration_entry(self) -> dict[str, Any]:
        return {"delta_s": self.delta_s, "fused_pairs": list(self.fusion.fused_pairs)}

    def calibration_line(self, calibration: Mapping[str, Any]) -> str:
        return f"composition: {self.summary()}"

    def fitted_state(self) -> dict[str, Any]:
        return {"delta_s": self.delta_s_, "fusion": self.fusion_.to_dict()}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.delta_s_ = float(state["delta_s"])
        self.fusion_ = FusionRules.from_dict(state.get("fusion", {}))


def compose_calibration(calibration: CalibrationSet, layer_latency_s: Sequence[Mapping[str, float]]) -> Composition:
    """The composition of the calibration networks from per-layer times (``layer_latency_s[i]`` for
    ``calibration.runs[i]``, seconds): the fusion rules its profiled runs show, and delta fitted so the composed
    totals follow the networks' measured whole times."""
    fusion = learn_fusion([(m.network, {r.layer: r.group for r in m.layers}) for m in calibration.profiled])
    blank = Composition.of(0.0, fusion)
    terms = [blank.terms(run.network, layers) for run, layers in zip(calibration.runs, layer_latency_s)]
    return fit_composition(terms, calibration.measured_s, fusion)


def fit_composition(terms: Sequence[tuple[float, int]], measured_s: Sequence[float],
                    fusion: FusionRules) -> Composition:
    """delta minimising the squared relative error over the calibration networks (closed form).

    With S the unfused sum, N the unfused count and y the measured time of
    each network, delta = sum((N/y)(1 - S/y)) / sum((N/y)^2).
    """
    if len(terms) < 2 or any(y <= 0 for y in measured_s):
        raise NnperfError("the composition needs at least two calibration networks with positive times")
    s = np.array([t[0] for t in terms], dtype=float)
    n = np.array([t[1] for t in terms], dtype=float)
    y = np.asarray(measured_s, dtype=float)
    weight = n / y
    denominator = float(weight @ weight)
    if denominator <= 0:
        raise NnperfError("cannot fit the composition: the calibration networks have no unfused layers")
    return Composition.of(float(weight @ (1 - s / y)) / denominator, fusion)
