"""Step-function latency models (Osterwind et al.) from Python: fitted to stored sweeps, and predicting any layer
configuration by composing them."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnperf.api._session import (
    DEFAULT_SYSTEM,
    MeasuringSystem,
    StoredId,
    StoreLike,
    measuring_on,
    opened_store,
    stored_id,
)
from nnperf.api._sweep import Progress
from nnperf.campaign import Measurer
from nnperf.errors import NnperfError, ParameterError
from nnperf.measure.sweep import LayerConfig, check_parameter, parse_fixed, parse_range
from nnperf.prediction.steps import STEPPED, StepsPrediction, SweepFit
from nnperf.store import Store, SystemRecord

STEP_FITS_FORMAT = ("nnperf-step-fits", 1)

@dataclass(frozen=True)
class StepFits:
    """The fitted step models of stored sweeps (each also stored), and the plots written."""

    fits: tuple[SweepFit, ...]
    files: tuple[Path, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf steps fit --json`` document."""
        return {"format": STEP_FITS_FORMAT[0], "version": STEP_FITS_FORMAT[1],
                "fits": [fit.to_dict() for fit in self.fits]}


@dataclass(frozen=True)
class StepPrediction:
    """What the composed step models predict (``prediction``), and the plot written."""

    prediction: StepsPrediction
    files: tuple[Path, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf steps predict --json`` document."""
        return self.prediction.to_dict()


def fit_steps(runs: Sequence[int] | None = None, system: StoredId | None = None,
              store: StoreLike = None, *, out: str | os.PathLike[str] | None = None,
              progress: Progress | None = None) -> StepFits:
    """Fits the generalised step model (Eq. 3.1-3.3) to stored sweeps and stores each fit.

    Each sweep gets a line, a staircase of depth d, or upper and lower staircases alternating with period r,
    chosen by an information criterion, with a confidence; a sweep too short to detect steps (under 8 points)
    gets a line.

    Parameters
    ----------
    runs : sequence of int, optional
        Sweep run ids (:func:`sweep` returns them); default: every stored sweep of two points or more.
    system : int or str, optional
        Only the sweeps of this stored system (its id or key prefix, see ``nnperf systems``).
    store : Store, path or None, default None
        Where the sweeps are stored (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    out : path, optional
        Write one plot per sweep into this folder, ``sweep-RUN.png`` (like Fig. 3.2).
    progress : callable, optional
        Called with (sweep, done, total) before each sweep is fitted.

    Returns
    -------
    StepFits
        The fits (``model``, ``detection``, ``mape``), in the order of ``runs`` (else of the store).
    """
    from nnperf.prediction.steps import fit_sweep, load_sweep, save_fit, sweep_runs
    from nnperf.report.steps import plot_sweep

    stored_id(system, "fit_steps")
    with opened_store(store) as opened:
        system_id = opened.system(system).id if system is not None else None
        if runs:
            sweeps = [load_sweep(opened, run) for run in runs]
            sweeps = [s for s in sweeps if system_id is None or s.system_id == system_id]
        else:
            sweeps = [s for s in (load_sweep(opened, r.id) for r in sweep_runs(opened, system_id))
                      if len(s.timings) >= 2]
        if not sweeps:
            raise NnperfError(f"{opened.path} holds no sweep to fit; measure one with `nnperf sweep conv2d --param "
                              "channels --range 16:256:1`")
        fits = []
        for i, found in enumerate(sweeps):
            if progress is not None:
                progress(found.spec.label, i, len(sweeps))
            fits.append(fit_sweep(found))
            save_fit(opened, fits[-1])
    plots = tuple(Path(plot_sweep(fit.sweep, fit.model, Path(out) / f"sweep-{fit.sweep.run_id}.png", work=fit.work))
                  for fit in fits) if out is not None else ()
    return StepFits(tuple(fits), plots)


def predict_steps(kind: str, system: MeasuringSystem = DEFAULT_SYSTEM, store: StoreLike = None, *,
                  config: str | Mapping[str, int] = "", parameter: str | None = None,
                  values: str | Sequence[int] | None = None, characterise: bool = False, verify: bool = False,
                  models_of: StoredId | None = None, plot: str | os.PathLike[str] | None = None,
                  progress: Progress | None = None) -> StepPrediction:
    """Predicts a layer configuration's latency by composing the system's fitted step models.

    T = b + a x the product of each parameter's effective size; parameters without a model count proportionally.
    With ``parameter`` and ``values`` the prediction runs along that parameter.

    Parameters
    ----------
    kind : {'conv2d', 'depthwise', 'fc'}
        The layer kind, which picks the models.
    system : System, backend name, backend or runner, optional
        The system whose models predict (see :data:`MeasuringSystem`; default ``System()``), and where
        ``characterise`` and ``verify`` measure.
    store : Store, path or None, default None
        Where the sweeps and fitted models are stored (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    config : str or mapping of str to int, optional
        The layer's parameters (defaults as for :func:`sweep`).
    parameter, values : optional
        Predict along this parameter over these values ('START:STOP[:STEP]', '1,3,5' or the integers).
    characterise : bool, default False
        Measure the four points of section 3.3.3 and fit this configuration's own lines with the stored d and r
        (along channels or filters).
    verify : bool, default False
        Measure the whole range and report the error (MAPE).
    models_of : int or str, optional
        Predict with this stored system's models instead (its id or key prefix); ``system`` is then opened only to
        measure, and must be that system.
    plot : path, optional
        Plot a prediction along ``parameter`` (with the measurements, like Fig. 3.5) into this file.
    progress : callable, optional
        Called with (what, done, total) as points are measured.

    Returns
    -------
    StepPrediction
        ``prediction``: the latency (seconds), or the latencies along ``parameter`` with any measurements.
    """
    from nnperf.campaign import predict_steps as compose
    from nnperf.report.steps import plot_prediction

    layer, points = _request(kind, config, parameter, values, characterise, verify)
    stored_id(models_of, "predict_steps: models_of")
    with opened_store(store) as opened, ExitStack() as stack:
        measurer = None
        if characterise or verify or models_of is None:
            measurer = stack.enter_context(measuring_on(system))
        record = _models_of(opened, models_of, measurer, kind)
        prediction = compose(opened, record.id, layer, parameter, points,
                             characterise_with=measurer if characterise else None,
                             verify_with=measurer if verify else None, progress=progress)
    files = ()
    if plot is not None and prediction.parameter is not None:
        files = (Path(plot_prediction(prediction, plot)),)
    return StepPrediction(prediction, files)


def _request(kind: str, config: str | Mapping[str, int], parameter: str | None, values: str | Sequence[int] | None,
             characterise: bool, verify: bool) -> tuple[LayerConfig, tuple[int, ...]]:
    """The configuration and the values along ``parameter`` asked for, checked."""
    layer = LayerConfig.of(kind, parse_fixed(config) if isinstance(config, str) else dict(config))
    if (parameter is None) != (values is None):
        raise ParameterError("give {parameter} and {values} together", "parameter", "values")
    if (characterise or verify) and parameter is None:
        raise ParameterError("{characterise} and {verify} work along a range: give {parameter} and {values}",
                             "characterise", "verify", "parameter", "values")
    if characterise and parameter not in STEPPED:
        raise ParameterError(f"{{characterise}} works along {' or '.join(STEPPED)} (the stepped parameters), "
                             f"not {parameter}", "characterise")
    if parameter is None:
        return layer, ()
    check_parameter(kind, parameter)
    points = parse_range(values) if isinstance(values, str) else tuple(int(v) for v in values or ())
    if not points:
        raise NnperfError(f"no values to predict {parameter} at")
    for value in points:  # every value makes a valid layer
        layer.with_value(parameter, value)
    return layer, points


def _models_of(store: Store, stored: StoredId | None, measurer: Measurer | None, kind: str) -> SystemRecord:
    """The system whose models predict: ``stored``, which must be the one ``measurer`` measures when it measures,
    or else ``measurer``'s own."""
    if stored is not None:
        record = store.system(stored)
        if measurer is not None and record.key != measurer.system().key:
            raise ParameterError(f"{{models_of}} {stored} is {record.label}, but the system measured is "
                                 f"{measurer.system().label}; measure on the system whose models you use", "models_of")
        return record
    assert measurer is not None
    found = store.find_system(measurer.system())
    if found is None:
        raise NnperfError(f"{store.path} has no sweeps of {measurer.system().label}; measure them with "
                          f"`nnperf sweep {kind} ...` on these backend options")
    return found


