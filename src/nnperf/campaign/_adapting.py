"""The measuring of an adaptation to a search space: layers sampled near example networks, anchored to the
calibration's speed.

An adaptation (``nnperf calibrate --adapt``) may run long after the calibration, on a machine whose speed has
moved since. The drift sentinel scales every sample to the sentinel's speed during the calibration networks
(:func:`sample_layers`), but one small workload does not track every kind (on a shared 2-core VM, with other
jobs starting and stopping, the sentinel's readings during one calibration fell into two clusters 2.4 times apart,
and the calibration's layers were measured in both). A correction learnt from samples on another footing than
the calibration's layers would carry that difference into every prediction of the space. So the adaptation also
measures **anchors**: up to :data:`ANCHORS_PER_KIND` configurations per sampled kind of the calibration networks'
own layers, spread over its first round. Each anchor's time now over the time the calibration stored for it is
the machine's speed for its kind against the calibration's; every sample is divided by its kind's median of
those (with at least :data:`MIN_ANCHORS` anchors; else by the median over every anchor; 1 without anchors). The
anchors outside the examples' span are not samples of the space, and are left out of what the adaptation fits.

Up to :data:`TIMED_EXAMPLES` of the example networks (spread over their MACs) are then timed whole beside the
machine-speed reference (:data:`EXAMPLE_ROUNDS`, interleaved rounds), each at the calibration's speed (its median
per-round ratio to the reference times the reference's time at calibration), divided by the anchors' speed of
its kinds weighted by its layers' predicted times (:func:`network_speed`: what the reference, a dense network,
does not see of a kind): what the adapted predictor's scale of the space's whole networks is fitted on. They
are timed anew by every adaptation (a few seconds each), on one machine only (a fleet's nodes have no one
reference time); an adaptation that resumes a finished sampling reuses its anchors' speeds, read then.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nnperf.campaign._campaign import Progress
from nnperf.campaign._items import ItemRunner, Measurer, runner_for
from nnperf.campaign._referenced import ReferencedTiming, time_with_reference
from nnperf.campaign._sampling import sample_layers
from nnperf.ir import Layer, Network
from nnperf.ir.metrics import layer_metrics, network_metrics
from nnperf.measure import ComparisonProtocol, HarnessConfig, RoundsConfig
from nnperf.measure.backends import Backend
from nnperf.measure.power import PowerMeter
from nnperf.prediction import MeasuredNetwork, SystemModel
from nnperf.prediction.kernel import AdaptedPrior, Sample, fit_adaptation, kernel_kind, layer_sample, sample_from_name
from nnperf.store import Store

ANCHORS_PER_KIND = 8
"""Calibration layers measured again per sampled kind: evenly spread over the kind's range of MACs."""

MIN_ANCHORS = 3
"""A kind's own speed needs this many of its anchors measured; else the median over every anchor."""

TIMED_EXAMPLES = 12
"""Example networks timed whole beside the reference, at most."""

EXAMPLE_ROUNDS = RoundsConfig(min_rounds=8, max_rounds=20, target_ci=0.02, budget_s=4.0)
"""An example network's rounds beside the reference: 8 to 20, until its ratio is known within 2%, at most 4 s."""


@dataclass(frozen=True)
class ReferencedItem:
    """A network timed whole beside the machine-speed reference ``reference``, as an item."""

    network: Network
    reference: str
    rounds: RoundsConfig = EXAMPLE_ROUNDS
    label: str = "example network beside the reference"

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> ReferencedTiming:
        return time_with_reference(self.network, backend, ComparisonProtocol.INTERLEAVED, self.rounds, self.reference)


def network_speed(model: SystemModel, network: Network, speed: dict[str, float]) -> float:
    """How much slower ``network`` runs now than at calibration beyond what the reference saw: its kinds' speeds
    (:func:`speed_by_kind`; 1 for a kind no anchor measured) weighted by its layers' predicted times."""
    layers = model.predict_layers(network)
    total = sum(p.latency_s for p in layers)
    weighted = sum(p.latency_s * speed.get(kernel_kind(layer), 1.0) for p, layer in zip(layers, network.layers,
                                                                                        strict=True))
    return weighted / total if total > 0 else 1.0


def timed_examples(runner: ItemRunner, model: SystemModel, examples: Sequence[Network]) -> list[tuple[Network, float]]:
    """Up to :data:`TIMED_EXAMPLES` of ``examples`` (distinct, spread over their MACs), each with its time at the
    calibration's speed (seconds); none on a fleet or for a calibration that read no reference."""
    if model.reference_s is None or not runner.one_machine:
        return []
    reference, calibration_s = model.reference_s
    distinct = sorted({n.name: n for n in examples}.values(), key=lambda n: (network_metrics(n).macs, n.name))
    picks = np.unique(np.linspace(0, len(distinct) - 1, TIMED_EXAMPLES).round().astype(int)) if distinct else []
    return [(distinct[i], runner.run_one(ReferencedItem(distinct[i], reference)).at_reference_speed_s(calibration_s))
            for i in picks]


def anchors(runs: Sequence[MeasuredNetwork], prior: AdaptedPrior) -> dict[Sample, float]:
    """Up to :data:`ANCHORS_PER_KIND` configurations of each of ``prior``'s kinds among the calibration networks'
    layers (none a held-out network's), spread over their MACs, each with the median of the isolated times the
    calibration stored for its layers (seconds)."""
    stored: dict[Sample, list[float]] = {}
    for run in runs:
        medians = run.layer_median_s()
        for layer in run.network.layers:
            sample = layer_sample(layer)
            if (sample is not None and sample.kind in prior.kinds and sample not in prior.excluded
                    and medians.get(layer.name, 0.0) > 0):
                stored.setdefault(sample, []).append(medians[layer.name])
    chosen: dict[Sample, float] = {}
    for kind in prior.kinds:
        found = sorted((s for s in stored if s.kind == kind), key=lambda s: (layer_metrics(s.layer()).macs, s.name))
        picks = np.unique(np.linspace(0, len(found) - 1, ANCHORS_PER_KIND).round().astype(int)) if found else []
        chosen.update({found[i]: float(np.median(stored[found[i]])) for i in picks})
    return chosen


def sample_adapted(measurer: Measurer, store: Store, runs: Sequence[MeasuredNetwork], prior: AdaptedPrior,
                   budget_s: float, harness: HarnessConfig, reference_s: float | None,
                   progress: Progress | None = None) -> tuple[list[tuple[Layer, float]], dict[str, Any]]:
    """Layers sampled from ``prior`` with the calibration's anchors (see the module docstring) for about
    ``budget_s`` (:func:`sample_layers`, stored and resumed), each divided by its kind's speed against the
    calibration's; and what the calibration records of it (anchors measured, the speed per kind)."""
    stored = anchors(runs, prior)
    measured = sample_layers(measurer, store, budget_s, harness, prior=prior.with_anchors(list(stored)),
                             reference_s=reference_s, progress=progress)
    now = {sample_from_name(layer.name): seconds for layer, seconds in measured}
    speed = speed_by_kind({s: now[s] / stored[s] for s in stored if s in now})
    scaled = [(layer, seconds / speed.get(sample.kind, speed["*"]))
              for (layer, seconds), sample in zip(measured, now, strict=True) if prior.allows(sample)]
    return scaled, {"anchors": sum(s in now for s in stored), "speed": speed}


def speed_by_kind(ratios: dict[Sample, float]) -> dict[str, float]:
    """The median of the anchors' ratios (time now over time at calibration) per kind with :data:`MIN_ANCHORS`
    of them, and over every anchor (``"*"``; 1 without any)."""
    by_kind: dict[str, list[float]] = {}
    for sample, ratio in ratios.items():
        by_kind.setdefault(sample.kind, []).append(ratio)
    speed = {kind: float(np.median(values)) for kind, values in by_kind.items() if len(values) >= MIN_ANCHORS}
    return {**speed, "*": float(np.median(list(ratios.values()))) if ratios else 1.0}


def adapt_model(model: SystemModel, measurer: Measurer, store: Store, runs: Sequence[MeasuredNetwork],
                profiled: Sequence[MeasuredNetwork], prior: AdaptedPrior, budget_s: float, harness: HarnessConfig,
                reference_s: float | None, progress: Progress | None = None) -> SystemModel:
    """``model``, calibrated on ``runs`` and ``profiled``, adapted to the search space of ``prior``: layers sampled
    for about ``budget_s`` (:func:`sample_adapted`) fit :class:`~nnperf.prediction.kernel.AdaptedModel`, its
    prediction (the other predictors are as calibrated), and ``calibration['adapted']`` records the prior, the
    budget, the samples of the space (those of an earlier run of the same adaptation included), the anchors, the
    machine's speed by kind against the calibration's and the wall time of the sampling and the fit.
    ``reference_s`` is the drift sentinel's time during the calibration networks (:func:`sample_layers`)."""
    started = time.perf_counter()
    adapted, anchoring = sample_adapted(measurer, store, runs, prior, budget_s, harness, reference_s,
                                        None if progress is None else
                                        lambda what, done, part: progress(f"adapting: {what}", done, part))
    if progress is not None:
        progress("adapting: example networks timed whole", 0, 1)
    timed = timed_examples(runner_for(measurer), model, [n for n in prior.examples if n.name not in prior.held_out])
    whole = [(network, seconds / network_speed(model, network, anchoring["speed"])) for network, seconds in timed]
    fitted = fit_adaptation(model, runs, profiled, adapted, whole)
    record = {"fingerprint": prior.fingerprint, "sources": list(prior.sources), "held_out": list(prior.held_out),
              "configurations": prior.counts(), "budget_s": budget_s, "samples": len(adapted), **anchoring,
              "timed_examples": len(whole), "wall_s": time.perf_counter() - started}
    return replace(fitted, calibration={**fitted.calibration, "adapted": record})
