"""Opening what the public functions are given: a store (object, path or the default) and a system (the settings
of one on this host, or a stored one).

Two kinds of value name a system in :mod:`nnperf.api`:

- a :class:`~nnperf.measure.System`, the settings that make one on this host (backend, device, threads, options);
  a function that measures takes one, or a backend name (``"onnxruntime"``: that backend with the defaults);
- a :data:`StoredSystem`, a calibrated system read from the store: its id or key prefix (``nnperf systems``) or
  a fitted :class:`~nnperf.prediction.SystemModel`; a function that only predicts takes one as well.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from nnperf.campaign import Measurer
from nnperf.errors import NnperfError
from nnperf.measure import System
from nnperf.measure.backends import Backend
from nnperf.prediction import SystemModel
from nnperf.store import Store, default_store_path

StoreLike = Store | str | os.PathLike[str] | None
"""A :class:`~nnperf.store.Store`, the path of one, or None for ``$NNPERF_DB`` else ``./nnperf.db``."""

StoredSystem = int | str | SystemModel
"""A stored calibrated system: its id or key prefix (``nnperf systems``), or a fitted
:class:`~nnperf.prediction.SystemModel`."""

DEFAULT_SYSTEM = System()
"""The system a function takes by default: torch on the CPU with one thread (the quietest on a shared machine)."""

StoredId = int | str
"""A stored system's id or key prefix (``nnperf systems``)."""


@contextlib.contextmanager
def opened_store(store: StoreLike, create: bool = True) -> Iterator[Store]:
    """The store named by ``store``; one opened here is closed on exit, one given is left open. Without
    ``create`` (only reading) a missing store is an error, not a new empty file."""
    if isinstance(store, Store):
        yield store
        return
    with Store(default_store_path() if store is None else store, create=create) as opened:
        yield opened


def settings(system: System | str | None, what: str) -> System:
    """The settings ``system`` names for the function ``what`` that measures on this host: a
    :class:`~nnperf.measure.System` as it is, a backend name with the default settings, None the default system."""
    if system is None:
        return DEFAULT_SYSTEM
    if isinstance(system, System):
        return system
    if isinstance(system, str):
        return System(backend=system)
    raise NnperfError(f"{what} measures on this host: give its system as nnperf.System(backend, device, threads, "
                      f"options) or a backend name, not a {type(system).__name__} ({system!r})")


def stored_id(system: object, what: str) -> StoredId | None:
    """``system`` when it names a stored system by id or key prefix (None passes); anything else is an error
    naming what ``what`` takes."""
    if system is None or (isinstance(system, (int, str)) and not isinstance(system, bool)):
        return system  # type: ignore[return-value]
    raise NnperfError(f"{what}: a stored system is named by its id or key prefix (see `nnperf systems`), not a "
                      f"{type(system).__name__} ({system!r})")



MeasuringSystem = System | str | Backend | Measurer | None
"""Where a function measures: a :class:`~nnperf.measure.System` or a backend name (``"onnxruntime"``: that backend
with the default settings; None: ``System()``, torch on one CPU thread), opened for the call and closed after it;
or a backend or runner already open (e.g. the runner of a fleet's nodes of one system, :func:`fleet_runner`), used
as it is and left open."""


@contextlib.contextmanager
def measuring_on(system: MeasuringSystem, what: str = "measuring") -> Iterator[Measurer]:
    """The backend or runner of ``system`` (see :data:`MeasuringSystem`) for the block; ``what`` names the function
    in the error for anything else."""
    if system is None or isinstance(system, (System, str)):
        with settings(system, what).open() as backend:
            yield backend
        return
    if not callable(getattr(system, "system", None)):
        raise NnperfError(f"{what} measures on a system: give nnperf.System settings, a backend name, or an open "
                          f"backend or runner, not a {type(system).__name__} ({system!r})")
    yield system


def opened_here(system: MeasuringSystem) -> bool:
    """Whether ``system`` names settings that a function opens on this host itself (not a backend or runner)."""
    return system is None or isinstance(system, (System, str))


def one_machine(measurer: Measurer) -> bool:
    """Whether ``measurer`` measures on this machine (a backend, or a runner of one machine), not on a fleet."""
    return isinstance(measurer, Backend) or bool(getattr(measurer, "one_machine", False))
