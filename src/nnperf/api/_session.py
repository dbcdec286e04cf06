"""Opening what the public functions are given: a store (object, path or the default) and a backend."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

from nnperf.measure.backends import Backend, BackendOptions, create_backend
from nnperf.store import Store, default_store_path

StoreLike = Store | str | os.PathLike[str] | None
"""A :class:`~nnperf.store.Store`, the path of one, or None for ``$NNPERF_DB`` else ``./nnperf.db``."""


@contextlib.contextmanager
def opened_store(store: StoreLike, create: bool = True) -> Iterator[Store]:
    """The store named by ``store``; one opened here is closed on exit, one given is left open. Without
    ``create`` (only reading) a missing store is an error, not a new empty file."""
    if isinstance(store, Store):
        yield store
        return
    with Store(default_store_path() if store is None else store, create=create) as opened:
        yield opened


def open_backend(backend: str, device: str = "cpu", threads: int = 1,
                 options: Mapping[str, str] | None = None) -> Backend:
    """A backend by name (see ``nnperf backends``) with its device, thread count and backend options."""
    return create_backend(backend, BackendOptions(device=device, threads=threads, extra=dict(options or {})))
