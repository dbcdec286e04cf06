"""Calibration adapted to a user's search space: layers sampled near example networks, and the system's models
refitted with them (``nnperf calibrate --adapt``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from nnperf import zoo
from nnperf.api._load import ModelLike, load_model
from nnperf.api._predict import Progress, calibrate, stored_calibration
from nnperf.api._session import DEFAULT_SYSTEM, StoreLike, opened_store, settings
from nnperf.campaign import CALIBRATION_HARNESS, ProfileConfig, networks_to_calibrate
from nnperf.campaign import calibrate as calibrate_system
from nnperf.errors import FormatVersionError, NnperfError, ParameterError
from nnperf.ir import Network
from nnperf.measure import HarnessConfig, System
from nnperf.prediction import SystemModel
from nnperf.prediction.kernel import adapt_prior, zoo_prior

DEFAULT_ADAPT_BUDGET_S = 300.0
"""Seconds of layers an adaptation measures alone by default (``--adapt-budget``): 5 minutes, half the 10 an
adaptation may take on a 2-core VM."""

SAMPLED_NETWORKS = 20
"""Networks a sampler function draws as the examples of its space."""

Sampler = Callable[[np.random.Generator], ModelLike]
"""A search space's sampler: one network (anything :func:`load_model` takes) drawn with the generator given."""


def adapt(models: Sequence[ModelLike] = (), system: System | str = DEFAULT_SYSTEM, store: StoreLike = None, *,
          sampler: Sampler | None = None, sampled: int = SAMPLED_NETWORKS, budget_s: float = DEFAULT_ADAPT_BUDGET_S,
          held_out: Sequence[ModelLike] = (), blocks: bool = False, seed: int = 0, if_needed: bool = False,
          progress: Progress | None = None, check: bool = True, sample_budget_s: float | None = None
          ) -> SystemModel:
    """Adapts a system's calibration to the search space of example networks: measures layers alone near their
    configurations for about ``budget_s``, then refits the system's models with them and stores the refit as the
    system's model. Its prediction is then the ``adapted`` predictor's (the composition, its layer predictions
    corrected per kernel kind inside the space: :class:`~nnperf.prediction.kernel.AdaptedModel`).

    The system's stored calibration is adapted (holding out ``held_out``; with ``blocks``, made with PreVIousNet-06);
    without one, the system is calibrated first (:func:`calibrate`, with ``sample_budget_s``, ``check``,
    ``progress``). Every measurement is stored as taken: an interrupted adaptation resumes.

    Parameters
    ----------
    models : sequence of models
        Example networks of the space (anything :func:`load_model` takes: zoo names, .onnx, .tflite or .json files,
        IR networks, PyTorch modules).
    system : System or str, default System()
        The system on this host (as for :func:`calibrate`).
    store : Store, path or None, default None
        Where the calibration is stored (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    sampler : callable, optional
        The space's sampler: given a ``numpy.random.Generator``, returns a network; ``sampled`` networks drawn
        from ``seed`` join ``models`` as examples.
    budget_s : float, default :data:`DEFAULT_ADAPT_BUDGET_S`
        Seconds of sampled layers to measure (more than 0).
    held_out : sequence of models, optional
        The judged networks: no configuration equal to one of their layers is ever measured (by the adaptation,
        nor by the calibration's own sampling).
    blocks : bool, default False
        Adapt (or make) a calibration with PreVIousNet-06 (as for :func:`calibrate`).
    if_needed : bool, default False
        Return the stored calibration, without measuring or refitting, when it is already adapted to the same
        examples (the same configurations, held out alike).

    Returns
    -------
    SystemModel
        The refitted models, also stored; ``calibration['adapted']`` records the examples, the samples and the
        adaptation's wall time.

    Raises
    ------
    NnperfError
        No example network, a budget that is not positive, or examples that hold no sampled layer.
    """
    if not math.isfinite(budget_s) or budget_s <= 0:
        raise NnperfError(f"the adaptation budget must be a positive number of seconds, got {budget_s}")
    examples = [load_model(model) for model in models] + _drawn(sampler, sampled, seed)
    judged = [load_model(model) for model in held_out]
    prior = adapt_prior(examples, judged)
    if if_needed and (stored := _adapted_alike(system, store, blocks, prior.fingerprint)) is not None:
        return stored
    base = calibrate(system, store, if_needed=True, held_out=judged, blocks=blocks, progress=progress, check=check,
                     sample_budget_s=sample_budget_s)
    with opened_store(store) as opened, settings(system, "adapt").open() as runner:
        return calibrate_system(runner, opened, networks_to_calibrate(_has_blocks(base)), **_refit(base, judged),
                                progress=progress, adapt=prior, adapt_budget_s=budget_s)


def _adapted_alike(system: System | str, store: StoreLike, blocks: bool, fingerprint: str) -> SystemModel | None:
    """The system's stored calibration (with ``blocks``, made with PreVIousNet-06) when it is adapted by a prior of
    ``fingerprint`` (which holds the judged networks' configurations too); else None, as when an older nnperf
    stored it."""
    try:
        stored = stored_calibration(system, store, blocks=blocks)
    except FormatVersionError:
        return None
    return stored if stored is not None and stored.calibration.get("adapted", {}).get("fingerprint") == fingerprint \
        else None


def _drawn(sampler: Sampler | None, count: int, seed: int) -> list[Network]:
    """``count`` networks drawn by ``sampler`` from ``seed`` (none without a sampler)."""
    if sampler is None:
        return []
    if not callable(sampler):
        raise NnperfError(f"a sampler is a function of a numpy Generator that returns a network, not a "
                          f"{type(sampler).__name__}")
    if count < 1:
        raise NnperfError(f"a sampler must draw at least one network, got {count}")
    rng = np.random.default_rng(seed)
    return [load_model(sampler(rng)) for _ in range(count)]


def _has_blocks(model: SystemModel) -> bool:
    """Whether ``model`` was calibrated on PreVIousNet-06 too."""
    return set(zoo.block_calibration_names()) <= set(model.calibration.get("networks", ()))


def _refit(base: SystemModel, judged: Sequence[Network]) -> dict[str, Any]:
    """The campaign's settings that measure nothing ``base``'s calibration measured: its harness, its sampling's
    budget and prior (held out alike), its machine check."""
    recorded = base.calibration
    sample_budget_s = float(recorded.get("sample_budget_s", 0.0))
    held = recorded.get("prior", {}).get("held_out", []) if isinstance(recorded.get("prior"), dict) else []
    if sample_budget_s > 0 and set(held) != {n.name for n in judged}:
        raise ParameterError(f"the calibration of {base.system_label} held out {', '.join(held) or 'no network'}: "
                             "adapt it with the same {held_out} networks", "held_out")
    harness: HarnessConfig = CALIBRATION_HARNESS
    for name in ("budget_s", "target_ci"):
        if name in recorded.get("harness", {}):
            harness = replace(harness, **{name: float(recorded["harness"][name])})
    return {"config": ProfileConfig(per_layer="isolated", harness=harness), "sample_budget_s": sample_budget_s,
            "prior": zoo_prior(judged) if judged and sample_budget_s > 0 else None,
            "machine_check": recorded.get("machine_check")}

