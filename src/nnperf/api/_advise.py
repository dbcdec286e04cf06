"""Layers whose width, changed a little, runs faster on a system (from its composed step models), from Python."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from nnperf.api._load import ModelLike, load_model
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
from nnperf.errors import NnperfError
from nnperf.measure.backends import Backend
from nnperf.measure.sweep import LayerConfig
from nnperf.optimize.advise import Advice, Suggestion
from nnperf.store import Store, SystemRecord


@dataclass(frozen=True)
class NetworkAdvice:
    """The suggestions for a network (``advice``: best bonus first, with the layers skipped and why)."""

    advice: Advice

    @property
    def suggestions(self) -> tuple[Suggestion, ...]:
        return self.advice.suggestions

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf advise --json`` document."""
        from nnperf.report.advice import advice_document

        return advice_document(self.advice)


def advise(model: ModelLike, system: MeasuringSystem = DEFAULT_SYSTEM, store: StoreLike = None, *,
           tolerance: float = 0.10, min_bonus: float = 0.01, verify: bool = False, models_of: StoredId | None = None,
           progress: Progress | None = None) -> NetworkAdvice:
    """For each conv and fc layer, every filter count within ``tolerance`` predicted with the system's composed
    step models (:func:`sweep` and :func:`fit_steps` make them), the layer and the layers that read its output.

    A change is suggested when it saves more than the width change alone would (a step edge or an aligned fast
    path).

    Parameters
    ----------
    model : str, path-like, Network or torch.nn.Module
        Anything :func:`load_model` takes.
    system : System, backend name or backend, optional
        The system whose step models predict (default ``System()``), and where ``verify`` measures.
    store : Store, path or None, default None
        Where the fitted step models are stored (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    tolerance : float, default 0.10
        How far a width may move, as a fraction in (0, 1).
    min_bonus : float, default 0.01
        The least saving beyond the trend's over the tolerance window, as a share of the affected layers' time.
    verify : bool, default False
        Measure each suggestion (both widths) inside the system's profiling network.
    models_of : int or str, optional
        Predict with this stored system's step models instead (its id or key prefix); ``system`` is then opened
        only to ``verify``.
    progress : callable, optional
        Called with (layer, done, total) as the layers are considered.

    Returns
    -------
    NetworkAdvice
        The suggestions (``saving``, ``bonus_s``, and the measured times with ``verify``).
    """
    from nnperf.optimize.advise import advise as suggest
    from nnperf.prediction.steps import composed_models

    for name, value in (("tolerance", tolerance), ("min_bonus", min_bonus)):
        if not 0 < value < 1:
            raise NnperfError(f"{name} must be a fraction between 0 and 1, got {value!r}")
    stored_id(models_of, "advise: models_of")
    network = load_model(model)
    with opened_store(store) as opened, ExitStack() as stack:
        backend = stack.enter_context(measuring_on(system)) if verify or models_of is None else None
        record = _step_system(opened, backend) if models_of is None else _stored(opened, models_of, backend)
        models = composed_models(opened, record.id)
        if not models:
            raise NnperfError(f"{opened.path} has no fitted step model on {record.label}; run `nnperf sweep` and "
                              "`nnperf steps fit` first")
        measure = _measurer(backend, opened, record) if verify else None
        return NetworkAdvice(suggest(network, models, record.label, tolerance, min_bonus, measure, progress))


def _step_system(store: Store, measurer: Measurer | None) -> SystemRecord:
    """The stored record of the system ``measurer`` measures, which must have step models."""
    assert measurer is not None
    spec = measurer.system()
    found = store.find_system(spec)
    if found is None:
        raise NnperfError(f"{store.path} has no step models of {spec.label}; measure sweeps with `nnperf sweep "
                          "conv2d --param channels ...` (and filters) on these backend options, then `nnperf "
                          "steps fit`")
    return found


def _stored(store: Store, models_of: StoredId, backend: Measurer | None) -> SystemRecord:
    """The stored system ``models_of``, which must be the one ``backend`` measures when it measures."""
    record = store.system(models_of)
    if backend is not None and backend.system().key != record.key:
        raise NnperfError(f"verify measures on {backend.system().label}, but stored system {models_of} is "
                          f"{record.label}: give that system's settings to measure its suggestions")
    return record


def _measurer(backend: Measurer | None, store: Store, system: SystemRecord) -> Callable[[LayerConfig], float]:
    """A configuration's median latency (seconds) inside the system's profiling network, on ``backend``."""
    from nnperf.campaign import surround_width
    from nnperf.measure.sweep import SWEEP_HARNESS, profiling_network, time_in_context

    if not isinstance(backend, Backend):
        raise NnperfError("verify times each suggestion in this process: give a System or a backend, not a runner")

    def measure(config: LayerConfig) -> float:
        profiling = profiling_network(config, surround_width(store, system.id, config.kind))
        return time_in_context(backend, profiling, SWEEP_HARNESS).stats.median_s

    return measure
