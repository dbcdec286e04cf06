"""Networks measured against a system's predictions (PreVIous VI), with the baselines, from Python."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nnperf.api._load import ModelLike, load_model
from nnperf.api._session import DEFAULT_SYSTEM, StoreLike, opened_store
from nnperf.api._sweep import MeasuringSystem, Progress, measuring_on
from nnperf.campaign import Measurer
from nnperf.errors import ParameterError
from nnperf.ir import Network
from nnperf.measure import ComparisonProtocol, RoundsConfig, resolve_protocol
from nnperf.measure.backends import Backend
from nnperf.prediction import SystemModel, load_system_model
from nnperf.prediction.evaluation import Evaluation
from nnperf.report.provenance import Provenance
from nnperf.store import Store

EVALUATE_ROUNDS = RoundsConfig(min_rounds=10, max_rounds=30, target_ci=0.01, budget_s=10.0)
"""Each network beside the reference: 10 to 30 rounds, at most 10 s."""


@dataclass(frozen=True)
class EvaluationReport:
    """The evaluation (Table I and II, Fig. 5 and 7 of PreVIous, every method's errors), where its numbers come
    from, and the files written."""

    evaluation: Evaluation
    provenance: Provenance
    files: tuple[Path, ...] = ()
    """The figures and report.html (``out``), then the layer CSV (``csv``)."""

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf evaluate --json`` document."""
        document = self.evaluation.to_dict()
        document["files"] = [str(p) for p in self.files]
        return document


def evaluate(models: Sequence[ModelLike] | None = None, system: MeasuringSystem = DEFAULT_SYSTEM,
             store: StoreLike = None, *,
             budget_s: float | None = None, protocol: str | ComparisonProtocol = "auto",
             rounds: RoundsConfig = EVALUATE_ROUNDS, out: str | os.PathLike[str] | None = None,
             csv: str | os.PathLike[str] | None = None, progress: Progress | None = None) -> EvaluationReport:
    """Measures networks layer by layer and whole, and compares them with the system's calibrated predictions.

    Earlier measurements of the same settings are reused. PreVIous' coefficient, nnperf's composition and
    kernel-aware models and the MACs and roofline baselines are compared side by side. Every network is refused
    before anything is measured when the calibration does not cover it.

    Parameters
    ----------
    models : sequence of models, optional
        Anything :func:`load_model` takes (default: every reference zoo network).
    system : System, backend name, backend or runner, optional
        Where to measure (see :data:`MeasuringSystem`); its calibration is read from ``store``.
    store : Store, path or None, default None
        The measurement store (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    budget_s : float, optional
        Time budget per layer measurement in seconds (default: the calibration's, 0.5).
    protocol : str or ComparisonProtocol, default 'auto'
        Also time each network whole beside the machine-speed reference ('interleaved', 'duet', 'sequential';
        'auto': what a quick machine check recommends) for every method's error against the measurement scaled to
        the calibration's speed; 'none' skips it, and so does a runner of a fleet.
    rounds : RoundsConfig
        The rounds of that timing.
    out : path, optional
        Write fig5_layers.png, fig7_networks.png and a self-contained report.html into this folder.
    csv : path, optional
        Write every layer's measured (isolated) and predicted time as CSV here (seconds).
    progress : callable, optional
        Called with (what, done, total) as the measurements go.

    Returns
    -------
    EvaluationReport
        ``evaluation`` (per network and layer; MAPE and shares within +/-5%, +/-10%), ``provenance``, files written.
    """
    from nnperf import __version__, zoo
    from nnperf.campaign import CALIBRATION_HARNESS, ProfileConfig, measure_networks
    from nnperf.prediction.evaluation import evaluate as compare_with
    from nnperf.report.provenance import provenance

    if budget_s is not None and not budget_s > 0:
        raise ParameterError(f"{{budget_s}} must be > 0, got {budget_s}", "budget_s")
    networks = [load_model(model) for model in (models or zoo.names())]
    harness = CALIBRATION_HARNESS if budget_s is None else replace(CALIBRATION_HARNESS, budget_s=budget_s)
    with opened_store(store) as opened, measuring_on(system) as measurer:
        spec = measurer.system()
        model = load_system_model(opened, spec, spec.label, spec.backend)
        for network in networks:  # refuse an uncovered network before measuring anything
            model.predict(network)
        measured = measure_networks(measurer, opened, networks, ProfileConfig(per_layer="isolated", harness=harness),
                                    progress=progress)
        adjusted = _speed_adjusted(measurer, opened, model, networks, protocol, rounds, progress)
        evaluation = compare_with(model, measured, adjusted)
        source = provenance(opened, evaluation, __version__)
    return EvaluationReport(evaluation, source, _written(evaluation, source, out, csv))


def _speed_adjusted(measurer: Measurer, store: Store, model: SystemModel, networks: Sequence[Network],
                    protocol: str | ComparisonProtocol, rounds: RoundsConfig,
                    progress: Progress | None) -> dict[str, float]:
    """Every network's whole time at the calibration's speed (seconds), timed beside the reference; none when
    ``protocol`` is 'none', the calibration read no reference, or ``measurer`` is not a backend of this process."""
    from nnperf.campaign import store_referenced, time_with_reference

    calibrated = model.reference_s
    if protocol == "none" or calibrated is None or not isinstance(measurer, Backend):
        return {}
    chosen = resolve_protocol(protocol, threads=measurer.options.threads).protocol
    adjusted = {}
    for i, network in enumerate(networks):
        if progress is not None:
            progress(f"{network.name} beside the reference ({chosen.value})", i, len(networks))
        timing = store_referenced(store, measurer, network, network.name,
                                  time_with_reference(network, measurer, chosen, rounds, calibrated[0]))
        adjusted[network.name] = timing.at_reference_speed_s(calibrated[1])
    return adjusted


def _written(evaluation: Evaluation, source: Provenance, out: str | os.PathLike[str] | None,
             csv: str | os.PathLike[str] | None) -> tuple[Path, ...]:
    """Writes the report into ``out`` and the layer CSV to ``csv``, where given; their paths."""
    from nnperf.report.evaluation import write_layer_csv, write_report

    paths = list(write_report(evaluation, Path(out), source)) if out is not None else []
    if csv is not None:
        write_layer_csv(evaluation, csv, source.system.key)
        paths.append(Path(csv))
    return tuple(paths)
