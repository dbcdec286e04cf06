"""nnperf's kernel-aware network predictor: a model per kernel kind, in-network layer times, composed.

Three things a PreVIous model per layer type misses on networks it never saw (held out), and what this
predictor does about each:

1. **Kernels.** Layers are split by the kernel that runs them (:func:`kernel_kind`: standard, pointwise,
   depthwise and grouped convolutions, then the layer types) and described by features that tell kernels of
   one kind apart (:func:`kernel_features`). Each kind gets the regressor (power law, boosted trees, random
   forest, small MLP) with the least cross-validated error on its samples (:func:`choose`).
2. **Context.** A layer inside a network does not cost what it costs alone (caches, allocation, the
   framework's dispatch): on torch whole networks ran 10-44% slower than the sum of their isolated layers.
   The models learn the time a layer takes *inside* a network, from the calibration's profiler pass, with a
   fused group's time carried by its first member. Layers measured only alone (sampled configurations) get
   their kind's median in-network minus isolated time on the calibration layers measured both ways. The
   difference is a per-layer offset, not a ratio: on torch it is tens of microseconds whatever the layer's size
   (a 0.1 ms layer takes twice its isolated time in the profiler, a 1 ms one 1.0-1.1 times), so a ratio learnt
   on the calibration's small layers would double a large sampled one. No offset captures what an int8 layer
   timed alone adds: it also quantises its input and dequantises its output, work proportional to its
   activations. On ONNX Runtime int8 the depthwise samples made a 32x32 MobileNet v2 predict 1.6 times its
   measured time. So where the calibration networks include PreVIousNet-06 (``nnperf calibrate --blocks``),
   whose in-network layers span the blocks CNNs are built of, a kind's sampled layers join its regressor only
   where they lower its cross-validated error on the in-network layers (``sampled_layers="judged"``,
   :func:`choose_with_extra`). Without those networks a kind has too few in-network layers to judge by, and
   judging made the glyph networks' predictions worse on ONNX Runtime (bench/kernel_samples.py), so every sampled
   layer joins. On int8 calibrations with those networks the offset is
   not constant either (for depthwise convolutions it grew with the layer), so there a sampled layer is moved
   into the network by a line per kind, in-network = a + b x alone, fitted (Theil-Sen) on the kind's layers
   measured both ways (``sampled_context="line"``, kinds with :data:`MIN_LINE_PAIRS` such layers; the others
   keep the offset). It brought the int8 predictions of glyph networks at widths it was not chosen on from
   11.4% to 8.2% median error (per tensor) and 13.9% to 5.5% (per channel), and made fp32's worse (9.6% to
   13.7%), so fp32 keeps the offset.
3. **Composition.** The per-layer times compose as nnperf's composition does (the backend's fusion rules from
   the profiler, plus a per-call delta fitted on the whole calibration networks).

A layer of a kind the calibration never saw falls back on its PreVIous prediction plus the median context
offset.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import Layer, Network
from nnperf.ir.metrics import layer_metrics, network_metrics
from nnperf.prediction._base import CalibrationSet, FittedOn, NetworkInput, NetworkPredictor, register_predictor
from nnperf.prediction._composition import MIN_COMPOSITION_NETWORKS, Composition, compose_calibration
from nnperf.prediction._features import layer_signature
from nnperf.prediction.kernel._kinds import CONV_KINDS, kernel_features, kernel_kind
from nnperf.prediction.kernel._regressors import REGRESSORS, Chosen, Regressor, Stored, choose, choose_with_extra
from nnperf.registry import Availability

if TYPE_CHECKING:
    from typing import Self

LAYER_SAMPLES = "layer_samples"
"""Key of :attr:`CalibrationSet.extra` holding sampled layers measured alone: a sequence of (layer, seconds)."""

MIN_CONTEXT_PAIRS = 3
"""A kind's own context offset needs this many layers measured both alone and in a network; else the median."""

SAMPLED_LAYERS = ("judged", "always")
"""How sampled layers join a kind's regressor (:class:`KernelModel`'s ``sampled_layers``)."""

SAMPLED_CONTEXTS = ("offset", "line")
"""How a sampled layer's time alone becomes its time in a network (:class:`KernelModel`'s ``sampled_context``)."""

MIN_LINE_PAIRS = 8
"""A kind's own line from alone to in-network time needs this many layers measured both ways; else its offset."""

OTHER_CANDIDATES: tuple[str, ...] = (Regressor.RIDGE.value, Regressor.FOREST.value)
"""The regressors the layer types other than convolutions choose from by default."""


@register_predictor
class KernelModel(NetworkPredictor):
    """Per-kernel regressors on in-network layer times, composed (see the module docstring).

    Parameters
    ----------
    candidates : sequence of str, default all of ``REGRESSORS``
        The regressors each convolution kind chooses from by cross-validation.
    other_candidates : sequence of str, default ('ridge', 'forest')
        Those the other layer types choose from: a power law or a forest; they are a small share of a network's
        time, and the two cost a fifth of the fit that all four cost.
    folds : int, default 5
        Cross-validation folds.
    seed : int, default 0
    sampled_layers : str, default 'always'
        How the sampled layers (measured alone, plus their kind's context offset) join a kind's regressor:
        ``always``, every one; ``judged``, only where they lower its cross-validated error on the calibration
        networks' in-network layer times (:func:`choose_with_extra`), which a calibration with PreVIousNet-06
        asks for (see the module docstring).
    sampled_context : str, default 'offset'
        How a sampled layer's time alone becomes a time in a network: ``offset``, plus its kind's median
        in-network minus alone time; ``line``, a + b x its time alone, the kind's Theil-Sen line through the
        calibration layers measured both ways (kinds with fewer than :data:`MIN_LINE_PAIRS`, or a line that does
        not rise, keep the offset), which an int8 calibration with PreVIousNet-06 asks for.

    After ``fit``: ``models_`` (kind -> fitted regressor), ``scores_`` (kind -> each candidate's
    cross-validated median relative error), ``samples_`` (kind -> samples fitted), ``context_s_`` (kind ->
    median in-network minus isolated seconds, with ``"*"`` the median over every layer), ``context_line_``
    (kind -> (a in seconds, b), the lines ``line`` fitted), ``sampled_`` (kind -> whether its sampled layers
    joined, for the kinds that had some) and ``composition_``.
    """

    name = "kernel"
    label = "nnperf kernel-aware"
    description = "nnperf: a regressor per kernel kind on in-network layer times, composed"
    display_order = 25

    def __init__(self, candidates: Sequence[str] = REGRESSORS, other_candidates: Sequence[str] = OTHER_CANDIDATES,
                 folds: int = 5, seed: int = 0, sampled_layers: str = "always",
                 sampled_context: str = "offset") -> None:
        if sampled_layers not in SAMPLED_LAYERS:
            raise NnperfError(f"sampled layers join the kernel model {' or '.join(SAMPLED_LAYERS)}, "
                              f"not {sampled_layers!r}")
        if sampled_context not in SAMPLED_CONTEXTS:
            raise NnperfError(f"a sampled layer's context is an {' or a '.join(SAMPLED_CONTEXTS)}, "
                              f"not {sampled_context!r}")
        self.sampled_layers = sampled_layers
        self.sampled_context = sampled_context
        self.candidates = tuple(candidates)
        self.other_candidates = tuple(other_candidates)
        self.folds = folds
        self.seed = seed

    @classmethod
    def availability(cls, calibration: CalibrationSet) -> Availability:
        if len(calibration.runs) < MIN_COMPOSITION_NETWORKS:
            return Availability.no(f"the kernel model composes like the composition, which needs "
                                   f"{MIN_COMPOSITION_NETWORKS} calibration networks, got {len(calibration.runs)}")
        return Availability.yes()

    def fit(self, calibration: CalibrationSet) -> Self:
        rows, targets, pairs = _in_network_rows(calibration)
        offsets = {kind: [inside - alone for alone, inside in values] for kind, values in pairs.items()}
        every = [d for values in offsets.values() for d in values]
        self.context_s_ = {"*": float(np.median(every)) if every else 0.0}
        self.context_s_.update({kind: float(np.median(v)) for kind, v in offsets.items()
                                if len(v) >= MIN_CONTEXT_PAIRS})
        self.context_ratio_: dict[str, float] = {}
        self.context_line_ = _context_lines(pairs) if self.sampled_context == "line" else {}
        sampled_rows: dict[str, list[np.ndarray]] = defaultdict(list)
        sampled_targets: dict[str, list[float]] = defaultdict(list)
        for layer, seconds in calibration.extra.get(LAYER_SAMPLES, ()):
            kind = kernel_kind(layer)
            inside = self.in_network_s(kind, seconds)
            if seconds > 0 and inside > 0:
                sampled_rows[kind].append(kernel_features(layer, layer_metrics(layer)))
                sampled_targets[kind].append(inside)
        self.models_: dict[str, Stored] = {}
        self.scores_: dict[str, dict[str, float]] = {}
        self.samples_: dict[str, int] = {}
        self.sampled_: dict[str, bool] = {}
        for kind in sorted(set(rows) | set(sampled_rows)):
            candidates = self.candidates if kind in CONV_KINDS else self.other_candidates
            own = (np.array(rows[kind]), targets[kind])
            extra = (np.array(sampled_rows[kind]), sampled_targets[kind])
            chosen = (choose_with_extra(*own, *extra, candidates, self.folds, self.seed)
                      if self.sampled_layers == "judged" else _with_every_sample(own, extra, candidates,
                                                                                 self.folds, self.seed))
            self.models_[kind], self.scores_[kind] = chosen.regressor, chosen.scores
            self.samples_[kind] = len(targets[kind]) + (len(sampled_targets[kind]) if chosen.extra else 0)
            if sampled_targets[kind]:
                self.sampled_[kind] = chosen.extra
        self.composition_ = compose_calibration(
            calibration, [self.layer_latency_s(run.network, predicted)
                          for run, predicted in zip(calibration.runs, calibration.predicted_layer_s)])
        return self

    def context_s(self, kind: str) -> float:
        """What a layer of ``kind`` takes inside a network beyond its time alone, in seconds (the median over every
        layer where ``kind`` has too few pairs)."""
        self.check_fitted()
        return self.context_s_.get(kind, self.context_s_["*"])

    def in_network_s(self, kind: str, alone_s: float) -> float:
        """What a layer of ``kind`` that took ``alone_s`` seconds alone is taken to take inside a network: on its
        kind's line where ``sampled_context`` is ``line`` and the kind has one, else plus its offset."""
        if kind in self.context_line_:
            intercept_s, slope = self.context_line_[kind]
            return intercept_s + slope * alone_s
        return alone_s + self.context_s(kind)

    def layer_latency_s(self, network: Network, fallback_s: Mapping[str, float]) -> dict[str, float]:
        """Each layer's predicted time inside ``network`` (seconds); a kind with no model takes ``fallback_s``
        (its isolated prediction) plus the median context offset (times the median ratio, for a model stored
        when context was a ratio)."""
        self.check_fitted()
        layers = list(network.layers)
        metrics = network_metrics(network).layers
        kinds = [kernel_kind(layer) for layer in layers]
        predicted: dict[str, float] = {}
        for kind in set(kinds):
            index = [i for i, k in enumerate(kinds) if k == kind]
            if kind in self.models_:
                rows = np.array([kernel_features(layers[i], metrics[i]) for i in index])
                for i, seconds in zip(index, self.models_[kind].predict_s(rows)):
                    predicted[layers[i].name] = float(seconds)
            else:
                for i in index:
                    alone = float(fallback_s.get(layers[i].name, 0.0))
                    predicted[layers[i].name] = (alone * self.context_ratio_["*"] if self.context_ratio_
                                                 else alone + self.context_s_["*"])
        return {layer.name: predicted[layer.name] for layer in layers}

    def predict(self, x: NetworkInput) -> float:
        self.check_fitted()
        return self.composition_.latency_s(x.network, self.layer_latency_s(x.network, x.layer_latency_s))

    def predict_many(self, inputs: Sequence[NetworkInput]) -> list[float]:
        """:meth:`predict` of every input, each kind's regressor called once for the distinct layers of all of
        them (see :func:`nnperf.prediction.layer_signature`)."""
        self.check_fitted()
        distinct: dict[Any, int] = {}
        examples: list[Layer] = []
        for x in inputs:
            for layer in x.network.layers:
                signature = layer_signature(layer)
                if signature not in distinct:
                    distinct[signature] = len(examples)
                    examples.append(layer)
        kinds = [kernel_kind(layer) for layer in examples]
        in_network = np.full(len(examples), np.nan)
        for kind in set(kinds) & set(self.models_):
            index = [i for i, k in enumerate(kinds) if k == kind]
            rows = np.array([kernel_features(examples[i], layer_metrics(examples[i])) for i in index])
            in_network[index] = self.models_[kind].predict_s(rows)
        fallback = self.context_ratio_.get("*") if self.context_ratio_ else None
        totals = []
        for x in inputs:
            latency = {}
            for layer in x.network.layers:
                seconds = in_network[distinct[layer_signature(layer)]]
                if np.isnan(seconds):  # a kind with no model: its isolated prediction in context
                    alone = float(x.layer_latency_s.get(layer.name, 0.0))
                    seconds = alone * fallback if fallback is not None else alone + self.context_s_["*"]
                latency[layer.name] = float(seconds)
            totals.append(self.composition_.latency_s(x.network, latency))
        return totals

    def summary(self) -> str:
        """Each kind's regressor with its cross-validated median error, and the median context offset."""
        self.check_fitted()
        chosen = ", ".join(f"{kind} {self.models_[kind].kind}" + (f" {min(scores.values()):.0%}" if scores else "")
                           + ("" if self.sampled_.get(kind, True) else " (sampled layers left out)")
                           for kind, scores in sorted(self.scores_.items()))
        lines = (f"; sampled layers moved into the network by a line for {len(self.context_line_)} kinds"
                 if self.context_line_ else "")
        return (f"{chosen}; a layer takes {self.context_s_['*'] * 1e6:+.1f} us in a network against alone "
                f"(median){lines}")

    def fitted_on(self) -> FittedOn:
        self.check_fitted()
        return FittedOn(sum(self.samples_.values()), "layer times")

    def calibration_line(self, calibration: Mapping[str, Any]) -> str:
        samples = calibration.get("layer_samples", 0)
        return (f"kernel-aware models (regressor, cross-validated median error): {self.summary()}"
                + (f"; {samples} sampled layers" if samples else ""))

    def fitted_state(self) -> dict[str, Any]:
        return {"models": {k: m.to_dict() for k, m in self.models_.items()}, "scores": self.scores_,
                "samples": self.samples_, "sampled_layers": self.sampled_layers, "sampled": self.sampled_,
                "sampled_context": self.sampled_context, "context_line": self.context_line_,
                "context_s": self.context_s_,
                "composition": self.composition_.to_dict()}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.models_ = {k: Stored.from_dict(v) for k, v in state["models"].items()}
        self.scores_ = {k: dict(v) for k, v in state.get("scores", {}).items()}
        self.samples_ = {k: int(v) for k, v in state.get("samples", {}).items()}
        self.sampled_layers = str(state.get("sampled_layers", "always"))  # absent: stored before judging
        self.sampled_ = {k: bool(v) for k, v in state.get("sampled", {}).items()}
        self.sampled_context = str(state.get("sampled_context", "offset"))  # absent: stored before lines
        self.context_line_ = {k: (float(a), float(b)) for k, (a, b) in state.get("context_line", {}).items()}
        # a model stored before context became an offset holds ratios ("context"); only its fallback reads them
        self.context_s_ = {k: float(v) for k, v in state.get("context_s", {"*": 0.0}).items()}
        self.context_ratio_ = {} if "context_s" in state else {k: float(v) for k, v in state["context"].items()}
        composition = Composition.from_dict(state["composition"])
        if not isinstance(composition, Composition):
            raise TypeError("the kernel model's composition is not a composition")
        self.composition_ = composition


def _in_network_rows(calibration: CalibrationSet) -> tuple[dict[str, list[np.ndarray]], dict[str, list[float]],
                                                            dict[str, list[tuple[float, float]]]]:
    """Per kernel kind, the calibration networks' layers' feature rows and in-network seconds (isolated ones for
    a network with no profiler pass), and the (isolated, in-network) seconds of the layers that ran alone."""
    rows: dict[str, list[np.ndarray]] = defaultdict(list)
    targets: dict[str, list[float]] = defaultdict(list)
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    profiled = {m.network.name: m for m in calibration.profiled}
    for run in calibration.runs:
        isolated = run.layer_median_s()
        in_network = _in_network_s(profiled[run.network.name]) if run.network.name in profiled else {}
        for layer, metrics in zip(run.network.layers, network_metrics(run.network).layers):
            kind = kernel_kind(layer)
            if layer.name in in_network:
                seconds, alone = in_network[layer.name]
                if alone and isolated.get(layer.name, 0.0) > 0 and seconds > 0:
                    pairs[kind].append((isolated[layer.name], seconds))
            elif not in_network and isolated.get(layer.name, 0.0) > 0:
                seconds = isolated[layer.name]  # no profiler pass: isolated times, no context
            else:
                continue  # inside a fused group another member carries
            if seconds > 0:
                rows[kind].append(kernel_features(layer, metrics))
                targets[kind].append(seconds)
    return rows, targets, pairs


def _context_lines(pairs: Mapping[str, Sequence[tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """Per kind with at least :data:`MIN_LINE_PAIRS` (isolated, in-network) pairs, the Theil-Sen line
    in-network = a + b x isolated (a in seconds), where it rises (b > 0)."""
    from scipy.stats import theilslopes

    lines: dict[str, tuple[float, float]] = {}
    for kind, values in pairs.items():
        if len(values) >= MIN_LINE_PAIRS:
            alone, inside = np.array(values, dtype=float).T
            slope, intercept = theilslopes(inside, alone)[:2]
            if slope > 0:
                lines[kind] = (float(intercept), float(slope))
    return lines


def _with_every_sample(own: tuple[np.ndarray, list[float]], extra: tuple[np.ndarray, list[float]],
                       candidates: Sequence[str], folds: int, seed: int) -> Chosen:
    """:func:`choose` on the calibration's layers and every sampled one together."""
    parts = [(x, y) for x, y in (own, extra) if len(y)]
    regressor, scores = choose(np.vstack([x for x, _ in parts]), [t for _, y in parts for t in y], candidates,
                               folds, seed)
    return Chosen(regressor, scores, len(extra[1]) > 0)


def _in_network_s(profiled: Any) -> dict[str, tuple[float, bool]]:
    """Layer -> (its in-network seconds, whether it ran alone) from a profiled run: a fused group's time goes to
    its first member; the others are left out."""
    seen: set[str] = set()
    times: dict[str, tuple[float, bool]] = {}
    for record in profiled.layers:
        group = record.group or record.layer
        if group in seen:
            continue
        seen.add(group)
        times[record.layer] = (record.median_s, record.group_size <= 1)
    return times
