"""Predicting a layer configuration from a system's stored step models (the work behind ``nnperf steps predict``).

:func:`predict_steps` composes the system's fitted step models of the
configuration's kind (:func:`composed_model`) and predicts the configuration,
or every value of one parameter over a range. Along a range it can also
characterise the configuration from four measured points with the stored d
and r (Osterwind 3.3.3, :func:`characterise`) and verify both predictions
against the whole range measured as a sweep. The result is a
:class:`StepsPrediction`, stored as the versioned JSON document
"nnperf-steps-prediction" v1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.campaign import run_sweep, surround_width
from nnperf.errors import NnperfError
from nnperf.measure.sweep import SWEEP_HARNESS, LayerConfig, Sweep, SweepSpec
from nnperf.prediction.steps._characterise import Characterisation, characterise
from nnperf.prediction.steps._compose import ComposedModel
from nnperf.prediction.steps._fits import composed_model
from nnperf.prediction.steps._model import mape

if TYPE_CHECKING:
    from nnperf.campaign import Progress
    from nnperf.measure.backends import Backend
    from nnperf.store import Store

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


def predict_steps(store: Store, system_id: int, config: LayerConfig, parameter: str | None = None,
                  values: tuple[int, ...] = (), characterise_with: Backend | None = None,
                  verify_with: Backend | None = None, progress: Progress | None = None) -> StepsPrediction:
    """Predicts ``config`` (or ``config`` along ``parameter`` over ``values``) from a system's step models.

    Parameters
    ----------
    store : Store
        Holds the system's sweeps and fitted step models (``nnperf steps fit``).
    system_id : int
        The system whose models predict.
    config : LayerConfig
        The layer configuration; its kind picks the models.
    parameter : str, optional
        Predict along this parameter of ``config`` ...
    values : tuple of int, default ()
        ... at these values (needed with ``parameter``).
    characterise_with : Backend, optional
        Measure the configuration's four characterisation points on this
        backend (a stored sweep of three rounds) and fit its own lines with the
        stored d and r; needs ``parameter``, one of the stepped parameters.
    verify_with : Backend, optional
        Measure every value of the range on this backend (a stored sweep) and
        report the predictions' MAPE; needs ``parameter``.
    progress : Progress, optional
        Told about each point measured.

    Returns
    -------
    StepsPrediction
        The prediction; raises :class:`MissingStepModelError` when the system
        has no fitted step model of the kind, :class:`NnperfError` for a bad
        request.
    """
    if parameter is None and (characterise_with is not None or verify_with is not None):
        raise NnperfError("characterising and verifying work along a range: give a parameter and its values")
    if (parameter is None) != (not values):
        raise NnperfError("give a parameter and its values together")
    composed = composed_model(store, system_id, config.kind)
    system = store.system(system_id).label
    if parameter is None:
        return StepsPrediction(config, system, composed, latency_s=composed.predict(config),
                               extrapolated=tuple(composed.extrapolated(config)))
    configs = [config.with_value(parameter, v) for v in values]
    found = None
    if characterise_with is not None:
        found = characterise(characterise_with, store, system_id, config, parameter, values, progress=progress)
    prediction = StepsPrediction(config, system, composed, parameter, values,
                                 composed_s=tuple(composed.predict(c) for c in configs),
                                 extrapolated=tuple(sorted({e for c in configs for e in composed.extrapolated(c)})),
                                 characterisation=found)
    if verify_with is None:
        return prediction
    sweep = _measure_range(verify_with, store, system_id, config, parameter, values, progress)
    return replace(prediction, verification=_verification(prediction, sweep))


def _measure_range(backend: Backend, store: Store, system_id: int, config: LayerConfig, parameter: str,
                   values: tuple[int, ...], progress: Progress | None) -> Sweep:
    """Every value of the range measured as a stored sweep (one round), in the system's surround."""
    spec = SweepSpec(config.with_value(parameter, values[0]), parameter, values,
                     surround_width(store, system_id, config.kind), SWEEP_HARNESS)
    return run_sweep(backend, store, spec, progress=progress)


def _verification(prediction: StepsPrediction, sweep: Sweep) -> StepsVerification:
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
