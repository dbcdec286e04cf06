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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnperf.campaign._campaign import Progress
from nnperf.campaign._items import Measurer
from nnperf.campaign._sampling import sample_layers
from nnperf.ir import Layer
from nnperf.ir.metrics import layer_metrics
from nnperf.measure import HarnessConfig
from nnperf.prediction import MeasuredNetwork
from nnperf.prediction.kernel import AdaptedPrior, Sample, layer_sample, sample_from_name
from nnperf.store import Store

ANCHORS_PER_KIND = 8
"""Calibration layers measured again per sampled kind: evenly spread over the kind's range of MACs."""

MIN_ANCHORS = 3
"""A kind's own speed needs this many of its anchors measured; else the median over every anchor."""


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
