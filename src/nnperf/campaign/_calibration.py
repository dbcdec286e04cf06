"""The calibration campaign (PreVIous IV-C and IV-D): measure the calibration networks once, the roofline peaks,
the machine-speed reference and the sampled layers, then fit the system's models and store them.

Every measurement goes to the store as it is taken, through one runner (this process or a fleet); networks whose
campaign already finished on this system are reused, and an interrupted campaign resumes, so an interrupted
calibration picks up where it stopped. The fitting is ``nnperf.prediction``'s (:func:`fit_system_model`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nnperf import zoo
from nnperf.campaign._adapting import adapt_model
from nnperf.campaign._items import ItemRunner, Measurer, runner_for
from nnperf.campaign._networks import RunsProgress, measure_networks
from nnperf.campaign._profile import ProfileConfig
from nnperf.campaign._roofline import measure_roofline
from nnperf.campaign._sampling import sample_layers
from nnperf.ir import Network
from nnperf.measure import REFERENCE, HarnessConfig, SystemSpec, read_reference
from nnperf.measure.backends import Backend
from nnperf.measure.power import PowerMeter
from nnperf.prediction import MODEL_KIND, MeasuredNetwork, RooflineModel, SystemModel, fit_system_model
from nnperf.prediction.kernel import AdaptedPrior, LayerPrior, zoo_prior
from nnperf.store import Store

FUSION_PROFILER_RUNS = 10
"""Profiled whole-network runs per calibration network: enough to see which layers the backend fuses."""

CALIBRATION_HARNESS = HarnessConfig(warmup_s=0.02, target_ci=0.02, budget_s=0.5)
"""Per-layer effort during calibration: 2% CI of the median or half a second per layer."""


def calibration_networks() -> list[Network]:
    """The IR of every calibration network in the zoo (PreVIousNet-01 configurations, -02, nnperf's -03 to -05)."""
    return [zoo.zoo_network(name) for name in zoo.calibration_names()]


def block_calibration_networks() -> list[Network]:
    """The IR of the calibration networks ``nnperf calibrate --blocks`` adds (nnperf's PreVIousNet-06
    configurations: CNN blocks chained as deployed networks chain them)."""
    return [zoo.zoo_network(name) for name in zoo.block_calibration_names()]


def networks_to_calibrate(blocks: bool) -> list[Network]:
    """The networks a calibration measures: :func:`calibration_networks` and, with ``blocks``,
    :func:`block_calibration_networks`."""
    return calibration_networks() + (block_calibration_networks() if blocks else [])


def predictor_options(networks: Sequence[Network], precision: str = "fp32") -> dict[str, dict[str, str]]:
    """How :func:`calibrate` makes its network predictors: with PreVIousNet-06 among ``networks``, the kernel-aware
    predictor judges the sampled layers by the in-network ones (:class:`~nnperf.prediction.kernel.KernelModel`'s
    ``sampled_layers``), and for an int8 system (``precision``, the backend's option) moves them into the network
    by a line per kind (``sampled_context``); else the defaults."""
    names = {network.name for network in networks}
    if not set(zoo.block_calibration_names()) <= names:
        return {}
    kernel = {"sampled_layers": "judged", **({"sampled_context": "line"} if precision == "int8" else {})}
    return {"kernel": kernel}


def _precision(system: SystemSpec) -> str:
    """The arithmetic ``system`` runs in: its backend's ``precision`` option (fp32 where it has none)."""
    return dict(system.options).get("precision", "fp32")


@dataclass(frozen=True)
class RooflineItem:
    """The roofline peaks measured on a system, as an item (:class:`nnperf.campaign.Item`) for a fleet."""

    label: str = "roofline peaks"

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> RooflineModel:
        return measure_roofline(backend)


@dataclass(frozen=True)
class ReferenceItem:
    """One reading of the machine-speed reference (:data:`nnperf.measure.REFERENCE`), as an item for a fleet."""

    label: str = "reference workload"

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> float:
        return read_reference(backend)


def calibrate(measurer: Measurer, store: Store, networks: Sequence[Network] | None = None,
              config: ProfileConfig | None = None, meter: PowerMeter | None = None,
              progress: RunsProgress | None = None, sample_budget_s: float = 0.0,
              machine_check: Mapping[str, Any] | None = None, prior: LayerPrior | None = None,
              adapt: AdaptedPrior | None = None, adapt_budget_s: float = 0.0) -> SystemModel:
    """Profiles the calibration networks (resuming), fits the system's model and stores it.

    ``machine_check`` is the document of the machine check taken before (``nnperf check``'s), stored with the
    calibration so that a later doubt about its figures can look at the state of the machine then.

    With ``sample_budget_s``, sampled convolutions and pools are also measured alone for about that long, placed
    where the kernel models err most (:func:`sample_layers`; stored and resumed too), drawn from ``prior`` (default:
    the configurations of nnperf's reference zoo, :func:`~nnperf.prediction.kernel.zoo_prior`).

    With ``adapt`` (``nnperf calibrate --adapt``), the model is then adapted to its search space for about
    ``adapt_budget_s`` (:func:`adapt_model`).

    ``measurer`` is a backend or a runner (a fleet of one system): everything is
    measured as items through one runner, into the same runs either way.
    """
    started = time.perf_counter()
    runner = runner_for(measurer)
    networks = list(networks) if networks is not None else calibration_networks()
    config = config or ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS)
    total = _progress_units(networks)[1]
    # the machine's speed, read five times (before, between and after the phases): a later run scales what it
    # measures to the median by timing the same reference beside it. One reading taken in a passing slowdown
    # must not set it (on a shared VM one of two readings once ran 39% slow while every layer ran at the usual
    # speed, and every speed-adjusted error moved by -16%)
    reference_readings_s: list[float] = []
    runs, profiled, roofline = _measured_phases(runner, store, networks, config, meter, progress,
                                                reference_readings_s)
    prior = (prior if prior is not None else zoo_prior()) if sample_budget_s > 0 else None
    reference_s = sentinel_reference_s(r.whole.extra for r in runs)
    samples = [] if prior is None else sample_layers(
        runner, store, sample_budget_s, config.harness, prior=prior, reference_s=reference_s,
        progress=None if progress is None else lambda what, done, part: progress(f"sampling: {what}", total, total))
    reference_readings_s.append(runner.run_one(ReferenceItem()))
    system = runner.system()
    carried = _readings_of_reused(store, system, runs)
    model = fit_system_model(runs, system.key, system.label, profiled=profiled, roofline=roofline,
                             layer_samples=samples, predictor_options=predictor_options(networks, _precision(system)))
    calibration = dict(model.calibration)
    calibration.update({"wall_s": time.perf_counter() - started, "reused_networks": sum(r.reused for r in runs),
                        "harness": {"target_ci": config.harness.target_ci, "budget_s": config.harness.budget_s},
                        "sample_budget_s": sample_budget_s, **_prior_record(prior),
                        **({"machine_check": dict(machine_check)} if machine_check is not None else {}),
                        "reference": _reference_record(carried or reference_readings_s, carried is not None)})
    model = replace(model, calibration=calibration)
    if adapt is not None:
        model = adapt_model(model, runner, store, runs, profiled, adapt, adapt_budget_s, config.harness, reference_s,
                            progress)
    store.save_model(store.add_system(system).id, MODEL_KIND, model.to_dict())
    return model


def _progress_units(networks: Sequence[Network]) -> tuple[int, int]:
    """(the isolated phase's units, the calibration's): each layer and whole network alone, then one unit per
    network's profiler pass and one for the roofline peaks."""
    isolated = sum(len(n.layers) + 1 for n in networks)
    return isolated, isolated + len(networks) + 1


def _measured_phases(runner: ItemRunner, store: Store, networks: Sequence[Network], config: ProfileConfig,
                     meter: PowerMeter | None, progress: RunsProgress | None, reference_readings_s: list[float]
                     ) -> tuple[list[MeasuredNetwork], list[MeasuredNetwork], RooflineModel]:
    """The calibration networks measured layer by layer and with the profiler, and the roofline peaks, the
    machine-speed reference read into ``reference_readings_s`` before each phase and after the last.

    One progress scale (:func:`_progress_units`) covers the phases, so a bar's ETA covers the whole calibration."""
    isolated_units, total = _progress_units(networks)
    reference_readings_s.append(runner.run_one(ReferenceItem()))
    runs = measure_networks(runner, store, networks, config, meter, _phase(progress, "isolated: ", 0, 1.0, total))
    reference_readings_s.append(runner.run_one(ReferenceItem()))
    profiled = measure_networks(runner, store, networks, replace(config, per_layer="profiler",
                                                                  profiler_runs=FUSION_PROFILER_RUNS),
                                progress=_phase(progress, "profiler: ", isolated_units,
                                                len(networks) / isolated_units, total))
    reference_readings_s.append(runner.run_one(ReferenceItem()))
    if progress is not None:
        progress("roofline peaks", total - 1, total)
    roofline = runner.run_one(RooflineItem())
    reference_readings_s.append(runner.run_one(ReferenceItem()))
    if progress is not None:
        progress("roofline peaks", total, total)
    return runs, profiled, roofline


def _readings_of_reused(store: Store, system: SystemSpec, runs: Sequence[MeasuredNetwork]) -> list[float] | None:
    """When every calibration network was reused from the store, the reference readings of the first stored
    calibration made of those very runs: the machine's speed when they were measured, which readings taken now
    do not tell (on a shared VM it moves by 10-25% within the hour). None when something was measured now or no
    such calibration is stored."""
    if not runs or not all(r.reused for r in runs):
        return None
    record = store.find_system(system)
    if record is None:
        return None
    ids = [r.run.id for r in runs]
    for document in reversed(store.models(record.id, MODEL_KIND)):  # oldest first
        calibration = document.get("calibration", {})
        readings = calibration.get("reference", {}).get("readings_s")
        if calibration.get("runs") == ids and readings:
            return [float(r) for r in readings]
    return None


def _reference_record(readings_s: Sequence[float], carried: bool) -> dict[str, Any]:
    """The calibration's reference readings (``carried``: those of the calibration that measured its reused
    networks)."""
    return {"workload": REFERENCE, "readings_s": list(readings_s), "median_s": float(np.median(readings_s)),
            "carried": carried}


def _prior_record(prior: LayerPrior | None) -> dict[str, Any]:
    """What the calibration records of the prior its samples were drawn from (nothing when it sampled nothing)."""
    if prior is None:
        return {}
    return {"prior": {"fingerprint": prior.fingerprint, "sources": list(prior.sources),
                      "held_out": list(prior.held_out), "configurations": prior.counts()}}


def sentinel_reference_s(extras: Iterable[Mapping[str, float]]) -> float | None:
    """The drift sentinel's median time over the readings in the extras of the calibration networks' whole
    measurements (None when none holds one): the speed the sampled layers are scaled to."""
    readings = [extra[k] for extra in extras for k in ("sentinel_start_s", "sentinel_end_s") if extra.get(k, 0) > 0]
    return float(np.median(readings)) if readings else None


def _phase(progress: RunsProgress | None, prefix: str, offset: int, scale: float,
           total: int) -> RunsProgress | None:
    """A phase's progress (its own ``done`` of ``measure_networks``' units) on the calibration's scale:
    ``offset + done * scale`` of ``total``, rounded."""
    if progress is None:
        return None
    return lambda what, done, _total: progress(prefix + what, offset + round(done * scale), total)


