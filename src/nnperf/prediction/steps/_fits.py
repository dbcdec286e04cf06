"""Fitting stored sweeps, and the fitted step models kept in the store as versioned JSON ("nnperf-steps" v1).

A sweep is fitted in its parameter's work variable (:func:`work`): channels
and filters as they are, size as output pixels, kernel as k^2. Sweeps with
fewer than 8 points (a kernel sweep of 1, 3, 5, 7) are too short to detect
steps and get a linear model, said so in ``note``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import FormatVersionError, NnperfError
from nnperf.measure.sweep import KINDS, PARAMETERS, LayerConfig, Sweep
from nnperf.prediction.steps._compose import ComposedModel, compose, work
from nnperf.prediction.steps._detect import DetectionConfig, StepDetection, detect_steps
from nnperf.prediction.steps._model import Line, StepModel, StepShape, fit_lines, mape
from nnperf.prediction.steps._sweeps import load_sweep, sweep_runs

if TYPE_CHECKING:
    from nnperf.store import Store

FIT_FORMAT = ("nnperf-steps", 1)
FIT_KIND = "steps"
MIN_DETECTION_POINTS = 8


class MissingStepModelError(NnperfError):
    """No fitted step model for a layer kind on a system."""


@dataclass(frozen=True)
class SweepFit:
    """One sweep's fitted step model with its detection statistics.

    ``detection`` is None for a sweep too short to detect steps; ``mape`` is
    the fitted model's error on the sweep's own points (a fraction).
    """

    sweep: Sweep
    model: StepModel
    detection: StepDetection | None
    mape: float
    note: str = ""

    @property
    def work(self) -> np.ndarray:
        return np.array([work(self.sweep.spec.config_at(int(v)), self.sweep.spec.parameter) for v in self.sweep.x])

    def to_dict(self) -> dict[str, Any]:
        spec, shape, det = self.sweep.spec, self.model.shape, self.detection
        return {
            "format": FIT_FORMAT[0], "version": FIT_FORMAT[1], "run_id": self.sweep.run_id,
            "kind": spec.base.kind, "parameter": spec.parameter, "fixed": dict(spec.fixed),
            "range": [spec.values[0], spec.values[-1]], "points": len(self.sweep.timings),
            "shape": {"kind": shape.kind, "depth": shape.depth, "period": shape.period, "form": shape.form,
                      "selector": shape.selector},
            "lines": [{"slope_s": line.slope_s, "intercept_s": line.intercept_s} for line in self.model.lines_],
            "confidence": None if det is None else det.confidence,
            "evidence": None if det is None else det.evidence,
            "rss_share": None if det is None else det.rss_share,
            "outliers": [] if det is None else list(det.outliers),
            "mape": self.mape, "note": self.note,
        }


def model_from_dict(doc: Mapping[str, Any]) -> StepModel:
    """The :class:`StepModel` of a stored fit document; refuses newer versions."""
    if doc.get("format") != FIT_FORMAT[0]:
        raise FormatVersionError("not an nnperf step-model document")
    if int(doc.get("version", 0)) > FIT_FORMAT[1]:
        raise FormatVersionError(f"step-model document version {doc['version']} is newer than this nnperf reads "
                                 f"({FIT_FORMAT[1]}); upgrade nnperf")
    shape = StepShape(**doc["shape"])
    lines = tuple(Line(float(line["slope_s"]), float(line["intercept_s"])) for line in doc["lines"])
    return StepModel.from_lines(shape, lines, doc["parameter"], tuple((k, int(v)) for k, v in doc["fixed"].items()))


def fit_sweep(sweep: Sweep, config: DetectionConfig | None = None) -> SweepFit:
    """Detects the sweep's step shape (or fits a line to a short sweep) in its work variable."""
    spec = sweep.spec
    if len(sweep.timings) < 2:
        raise NnperfError(f"sweep {sweep.run_id} ({spec.label}) has {len(sweep.timings)} point(s); need at least 2")
    w = np.array([work(spec.config_at(int(v)), spec.parameter) for v in sweep.x])
    y = sweep.latency_s
    if len(np.unique(w)) < len(w):
        raise NnperfError(f"sweep {sweep.run_id} ({spec.label}): several values have the same work; cannot fit")
    order = np.argsort(w)
    w, y = w[order], y[order]
    if len(w) < MIN_DETECTION_POINTS:
        model = fit_lines(StepShape("linear"), w, y, spec.parameter, spec.fixed)
        return SweepFit(sweep, model, None, mape(model.predict(w), y),
                        f"{len(w)} points: too few to detect steps (need {MIN_DETECTION_POINTS}); linear fit")
    detection = detect_steps(w, y, config or DetectionConfig(), spec.parameter, spec.fixed)
    return SweepFit(sweep, detection.model, detection, mape(detection.model.predict(w), y))


def save_fit(store: Store, fit: SweepFit) -> int:
    return store.save_model(fit.sweep.system_id, FIT_KIND, fit.to_dict())


def global_fits(store: Store, system_id: int, kind: str | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    """The global model per (layer kind, parameter) on a system: the stored fit of the sweep with the most
    points (the newest among equals). A held-out or characterisation sweep fitted later does not replace the
    full sweep's d and r."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for doc in store.models(system_id, FIT_KIND):  # newest first
        key = (doc["kind"], doc["parameter"])
        if (kind is None or doc["kind"] == kind) and (key not in out or doc["points"] > out[key]["points"]):
            out[key] = doc
    return out


def sweep_points(store: Store, system_id: int, kind: str) -> list[tuple[LayerConfig, float]]:
    """Every stored sweep point of ``kind`` on a system, as (configuration, median latency in seconds)."""
    points = []
    for run in sweep_runs(store, system_id):
        sweep = load_sweep(store, run.id)
        if sweep.spec.base.kind != kind:
            continue
        points += [(sweep.spec.config_at(int(v)), float(t)) for v, t in zip(sweep.x, sweep.latency_s)]
    return points


def composed_model(store: Store, system_id: int, kind: str) -> ComposedModel:
    """The composition of the system's global step models of ``kind`` (:func:`global_fits`), scaled on all its
    sweep points."""
    fits = global_fits(store, system_id, kind)
    if not fits:
        raise MissingStepModelError(
            f"{store.path}: no fitted {kind} step model on system {system_id}; measure a sweep "
            f"(nnperf sweep {kind} --param channels --range 16:256:1 ...) and fit it (nnperf steps fit)")
    models = {parameter: model_from_dict(doc) for (_, parameter), doc in fits.items()
              if parameter in PARAMETERS[kind]}
    return compose(kind, models, sweep_points(store, system_id, kind))


def composed_models(store: Store, system_id: int, kinds: tuple[str, ...] = KINDS) -> dict[str, ComposedModel]:
    """:func:`composed_model` of every layer kind in ``kinds`` that has a fitted step model on the system; the
    kinds without one are left out (an empty dict when none has)."""
    models = {}
    for kind in kinds:
        try:
            models[kind] = composed_model(store, system_id, kind)
        except MissingStepModelError:
            continue
    return models
