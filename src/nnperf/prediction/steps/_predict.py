"""Predicting a layer configuration from a system's stored step models (the work behind ``nnperf steps predict``).

``nnperf.campaign.predict_steps`` composes the system's fitted step models
of the configuration's kind (:func:`composed_model`) and predicts the
configuration, or every value of one parameter over a range. Along a range it
can also characterise the configuration from four measured points with the
stored d and r (Osterwind 3.3.3) and verify both predictions against the whole
range measured as a sweep (:func:`steps_verification`, here). The result is a
:class:`StepsPrediction`, stored as the versioned JSON document
"nnperf-steps-prediction" v1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnperf.measure.sweep import LayerConfig, Sweep
from nnperf.prediction.steps._characterise import Characterisation
from nnperf.prediction.steps._compose import ComposedModel
from nnperf.prediction.steps._model import mape

PREDICTION_FORMAT = ("nnperf-steps-prediction", 1)


@dataclass(frozen=True)
class StepsVerification:
    """The predicted range measured as a sweep, and the predictions' errors against it.

    ``mape`` holds fractions (0.016 = 1.6%): 'composed', and with a
    characterisation 'characterised' (every value) and
    'characterised_held_out' (the values that were not characterisation
    points).
    """

    sweep: Sweep
    mape: Mapping[str, float]

    @property
    def measured_s(self) -> np.ndarray:
        """The median latency of every value of the range (seconds)."""
        return self.sweep.latency_s


@dataclass(frozen=True)
class StepsPrediction:
    """What the composed step models predict for a configuration, or along one of its parameters.

    ``config`` is the configuration asked for; with ``parameter`` the
    prediction runs over ``values`` of it (the other parameters as in
    ``config``) and ``latency_s`` is None; without, ``latency_s`` is the
    configuration's predicted latency (seconds) and ``values`` and
    ``composed_s`` are empty. ``extrapolated`` lists what lies outside the
    data the composition was fitted on (see :meth:`ComposedModel.extrapolated`).
    """

    config: LayerConfig
    system: str
    composed: ComposedModel
    parameter: str | None = None
    values: tuple[int, ...] = ()
    latency_s: float | None = None
    composed_s: tuple[float, ...] = ()
    extrapolated: tuple[str, ...] = ()
    characterisation: Characterisation | None = None
    verification: StepsVerification | None = None

    @property
    def kind(self) -> str:
        return self.config.kind

    @property
    def characterised_s(self) -> tuple[float, ...] | None:
        """The characterised model's latency at every value (seconds); None without a characterisation."""
        if self.characterisation is None:
            return None
        return tuple(float(t) for t in self.characterisation.model.predict(np.array(self.values)))

    def to_dict(self) -> dict[str, Any]:
        """The "nnperf-steps-prediction" v1 JSON document."""
        composed = self.composed
        doc: dict[str, Any] = {
            "format": PREDICTION_FORMAT[0], "version": PREDICTION_FORMAT[1], "kind": self.kind,
            "config": dict(self.config.params), "system": self.system,
            "composition": {"scale_s": composed.scale_s_, "offset_s": composed.offset_s_,
                            "modelled": composed.modelled, "points": composed.fitted_points_}}
        if self.parameter is None:
            return {**doc, "latency_s": self.latency_s, "extrapolated": list(self.extrapolated)}
        doc.update(values=list(self.values), composed_s=list(self.composed_s), extrapolated=list(self.extrapolated))
        if self.characterisation is not None:
            doc.update(characterisation=_characterisation_dict(self.characterisation),
                       characterised_s=list(self.characterised_s or ()))
        if self.verification is not None:
            doc.update(measured_s=self.verification.measured_s.tolist(),
                       verify_run_id=self.verification.sweep.run_id, mape=dict(self.verification.mape))
        return doc


def _characterisation_dict(found: Characterisation) -> dict[str, Any]:
    return {"shape": found.shape.describe(), "points": list(found.points), "rounds": found.sweep.spec.rounds,
            "run_id": found.sweep.run_id, "measured_s": found.sweep.latency_s.tolist(),
            "lines": [[line.slope_s, line.intercept_s] for line in found.model.lines_]}


def steps_verification(prediction: StepsPrediction, sweep: Sweep) -> StepsVerification:
    """The MAPE of the composed and (with one) the characterised prediction against the measured range."""
    truth = sweep.latency_s
    errors = {"composed": mape(np.array(prediction.composed_s), truth)}
    found = prediction.characterisation
    if found is not None:
        local = found.model.predict(np.array(prediction.values))
        held = np.array([v not in found.points for v in prediction.values])
        errors["characterised"] = mape(local, truth)
        errors["characterised_held_out"] = mape(local[held], truth[held])
    return StepsVerification(sweep, errors)
