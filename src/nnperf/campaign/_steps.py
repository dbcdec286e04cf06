"""The step models' campaigns (Osterwind et al.): a new configuration characterised from about four measured points
(3.3.3), and a prediction from a system's stored step models, optionally characterised and verified against the
whole range measured as a sweep (the work behind ``nnperf steps predict``). The models and their fits are
``nnperf.prediction.steps``'s; the measuring is here.
"""

from __future__ import annotations

from dataclasses import replace

from nnperf.campaign._campaign import Progress
from nnperf.campaign._items import Measurer
from nnperf.campaign._surround import surround_width
from nnperf.campaign._sweep import run_sweep
from nnperf.errors import NnperfError
from nnperf.measure.sweep import SWEEP_HARNESS, LayerConfig, Sweep, SweepSpec
from nnperf.prediction.steps import (
    CHARACTERISE_ROUNDS,
    Characterisation,
    StepsPrediction,
    characterisation_points,
    composed_model,
    fit_lines,
    global_shape,
    steps_verification,
)
from nnperf.store import Store


def characterise(measurer: Measurer, store: Store, system_id: int, config: LayerConfig, parameter: str,
                 values: tuple[int, ...], rounds: int = CHARACTERISE_ROUNDS,
                 progress: Progress | None = None) -> Characterisation:
    """Measures the characterisation points of ``config`` along ``parameter`` over ``values`` and fits the
    local lines of the system's global step shape through them."""
    shape = global_shape(store, system_id, config.kind, parameter)
    step = values[1] - values[0] if len(values) > 1 else 1
    points = characterisation_points(shape, values[0], values[-1], step)
    spec = SweepSpec(config.with_value(parameter, points[0]), parameter, points,
                     surround_width(store, system_id, config.kind), SWEEP_HARNESS, rounds)
    sweep = run_sweep(measurer, store, spec, progress=progress)
    model = fit_lines(shape, sweep.x, sweep.latency_s, parameter)
    return Characterisation(parameter, shape, tuple(int(p) for p in sweep.x), sweep, model)


def predict_steps(store: Store, system_id: int, config: LayerConfig, parameter: str | None = None,
                  values: tuple[int, ...] = (), characterise_with: Measurer | None = None,
                  verify_with: Measurer | None = None, progress: Progress | None = None) -> StepsPrediction:
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
    characterise_with : Backend or ItemRunner, optional
        Measure the configuration's four characterisation points on this
        backend (a stored sweep of three rounds) and fit its own lines with the
        stored d and r; needs ``parameter``, one of the stepped parameters.
    verify_with : Backend or ItemRunner, optional
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
    return replace(prediction, verification=steps_verification(prediction, sweep))


def _measure_range(measurer: Measurer, store: Store, system_id: int, config: LayerConfig, parameter: str,
                   values: tuple[int, ...], progress: Progress | None) -> Sweep:
    """Every value of the range measured as a stored sweep (one round), in the system's surround."""
    spec = SweepSpec(config.with_value(parameter, values[0]), parameter, values,
                     surround_width(store, system_id, config.kind), SWEEP_HARNESS)
    return run_sweep(measurer, store, spec, progress=progress)


