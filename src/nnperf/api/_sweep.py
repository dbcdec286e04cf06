"""One layer parameter swept inside the three-layer profiling network (Osterwind et al., 3.3.1), from Python."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nnperf.api._session import (
    DEFAULT_SYSTEM,
    MeasuringSystem,
    StoreLike,
    measuring_on,
    one_machine,
    opened_store,
)
from nnperf.campaign import Measurer
from nnperf.errors import ParameterError
from nnperf.measure.sweep import (
    SWEEP_HARNESS,
    LayerConfig,
    SurroundChoice,
    Sweep,
    SweepInputError,
    SweepSpec,
    check_parameter,
    parse_fixed,
    parse_range,
)
from nnperf.store import Store

Progress = Callable[[str, int, int], None]
"""Called with (what is being measured, done, total)."""


@dataclass(frozen=True)
class LayerSweep:
    """A measured sweep (``sweep``: every point's median latency in seconds, stored as run ``sweep.run_id``)."""

    sweep: Sweep
    store_path: Path
    """The store that holds it."""
    surround: SurroundChoice | None = None
    """The surround sweep run by this call to choose the surrounding layers' width (None: given or recorded)."""
    files: tuple[Path, ...] = ()
    """The plot written, if any."""

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf sweep --json`` document."""
        from nnperf.report.steps import sweep_document

        return sweep_document(self.sweep)


def sweep(kind: str, parameter: str, values: str | Sequence[int], system: MeasuringSystem = DEFAULT_SYSTEM,
          store: StoreLike = None, *, fixed: str | Mapping[str, int] = "", surround: int | str = "auto",
          target_ci: float | None = None, budget_s: float | None = None, rounds: int = 1, fresh: bool = False,
          plot: str | os.PathLike[str] | None = None, progress: Progress | None = None) -> LayerSweep:
    """Measures a layer in the middle of the profiling network while ``parameter`` runs over ``values``.

    Each point is timed in place until its median's confidence interval is within ``target_ci``, and stored as
    it is taken: an interrupted sweep resumes, a finished one with the same settings is reused. Fit it with
    :func:`fit_steps`.

    Parameters
    ----------
    kind : {'conv2d', 'depthwise', 'fc'}
        The layer under test.
    parameter : str
        What is swept: channels, filters, size, kernel or stride (fc: channels, filters).
    values : str or sequence of int
        The values: 'START:STOP[:STEP]' (both ends included), '1,3,5', or the integers.
    system : System, backend name, backend or runner, optional
        Where it is measured (see :data:`MeasuringSystem`; default ``System()``).
    store : Store, path or None, default None
        Where the sweep is stored (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    fixed : str or mapping of str to int, optional
        The other parameters, e.g. ``{"filters": 128, "size": 56}`` or 'filters=128,size=56' (defaults: conv2d
        128 channels, 128 filters, size 56, kernel 3, stride 1; fc 1024 in and out).
    surround : int or 'auto', default 'auto'
        Width of the surrounding layers; 'auto' takes the choice recorded for the system and kind, found by a
        surround sweep (measured here, on one machine only) the first time.
    target_ci, budget_s : float, optional
        A point's CI half-width target as a fraction (default 0.01) and time budget in seconds (default 1).
    rounds : int, default 1
        Passes over the values; a point's latency is the median of its rounds.
    fresh : bool, default False
        Measure again even when this sweep is stored.
    plot : path, optional
        Plot the measured sweep into this file.
    progress : callable, optional
        Called with (what, done, total) as the surround sweep and the sweep go.

    Returns
    -------
    LayerSweep
        The stored sweep, and the surround sweep when this call ran one.
    """
    spec, layer = _sweep_spec(kind, parameter, values, fixed, target_ci, budget_s, rounds)
    width = _surround_width(surround)
    from nnperf.campaign import run_sweep

    with opened_store(store) as opened, measuring_on(system) as measurer:
        found = None
        if width is None:
            width, found = _auto_surround(measurer, opened, layer, spec, progress)
        measured = run_sweep(measurer, opened, replace(spec, surround=width), progress=progress, fresh=fresh)
        path = opened.path
    files = ()
    if plot is not None:
        from nnperf.report.steps import plot_sweep

        files = (Path(plot_sweep(measured, None, plot)),)
    return LayerSweep(measured, path, found, files)


def _sweep_spec(kind: str, parameter: str, values: str | Sequence[int], fixed: str | Mapping[str, int],
                target_ci: float | None, budget_s: float | None, rounds: int) -> tuple[SweepSpec, LayerConfig]:
    """The sweep asked for, every point checked (its surround to be chosen: 1 until then), and the layer given by
    ``fixed`` alone (the one a surround sweep measures)."""
    check_parameter(kind, parameter)
    points = parse_range(values) if isinstance(values, str) else tuple(int(v) for v in values)
    others = parse_fixed(fixed) if isinstance(fixed, str) else dict(fixed)
    if parameter in others:
        raise ParameterError(f"{{fixed}} gives {parameter}, the parameter being swept", "fixed")
    if not points:
        raise SweepInputError("the sweep range is empty")
    base = LayerConfig.of(kind, {**others, parameter: points[0]})
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ParameterError(f"{{rounds}} must be at least 1, got {rounds}", "rounds")
    harness = SWEEP_HARNESS
    if target_ci is not None:
        harness = replace(harness, target_ci=target_ci)
    if budget_s is not None:
        harness = replace(harness, budget_s=budget_s)
    return SweepSpec(base, parameter, points, 1, harness, rounds), LayerConfig.of(kind, others)


def _surround_width(surround: int | str) -> int | None:
    """The surround width given (None for 'auto'), checked."""
    if surround == "auto":
        return None
    try:
        width = int(surround)
    except (TypeError, ValueError):
        raise ParameterError(f"{{surround}} must be auto or a positive integer, got {surround!r}",
                             "surround") from None
    if width < 1:
        raise ParameterError(f"{{surround}} must be auto or a positive integer, got {width}", "surround")
    return width


def _auto_surround(measurer: Measurer, store: Store, layer: LayerConfig, spec: SweepSpec,
                   progress: Progress | None) -> tuple[int, SurroundChoice | None]:
    """The width recorded for this system and kind, or one chosen now by a surround sweep (then also returned)."""
    from nnperf.campaign import find_surround, recorded_surround

    kind = spec.base.kind
    system = store.add_system(measurer.system())
    recorded = recorded_surround(store, system.id, kind)
    if recorded is not None:
        return recorded.chosen, None
    if not one_machine(measurer):
        raise ParameterError(f"no surround is recorded for {kind} on system {system.key}: give a {{surround}} "
                             "width, or run the sweep once on one machine (not on a fleet) to choose it", "surround")
    choice = find_surround(measurer, store, layer, harness=spec.harness, progress=progress)
    return choice.chosen, choice
