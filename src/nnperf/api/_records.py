"""What the store holds, from Python: its systems and their measurement counts (``nnperf systems``), and its
measurements as CSV (``nnperf measurements export``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from nnperf.api._session import StoredId, StoreLike, opened_store, stored_id

if TYPE_CHECKING:
    from pathlib import Path

    from nnperf.store import SystemRecord


@dataclass(frozen=True)
class StoredSystems:
    """The systems of a store (oldest first); ``counts`` maps a system id to its (runs, layer measurements, network
    measurements) and ``nodes`` a system measured on a fleet to its nodes and how many items each measured."""

    path: Path
    systems: tuple[SystemRecord, ...]
    counts: dict[int, tuple[int, int, int]]
    nodes: dict[int, dict[str, int]]

    def count(self, system_id: int) -> tuple[int, int, int]:
        """(runs, layer measurements, network measurements) of a system (zeros when it has none)."""
        return self.counts.get(system_id, (0, 0, 0))


def systems(store: StoreLike = None) -> StoredSystems:
    """Every system (device, backend, options, software versions) measured in ``store``, with how many runs and
    measurements each has and, for those measured on a fleet, how many items each node measured (``nnperf
    systems``). A missing store is an error (``MissingStoreError``), not a new empty one."""
    from nnperf.fleet import node_placements

    with opened_store(store, create=False) as opened:
        return StoredSystems(opened.path, tuple(opened.systems()), dict(opened.measurement_counts()),
                             node_placements(opened))


def export_measurements(out: str | os.PathLike[str] | TextIO, store: StoreLike = None, *, table: str = "layers",
                        system: StoredId | None = None) -> int:
    """Writes one CSV row per stored measurement of ``table`` ('layers' or 'networks'): system, run, statistics
    (seconds, joules) and the raw times, to the file or stream ``out``; only those of ``system`` (a stored
    system's id or key prefix) when given. Returns the number of rows (``nnperf measurements export``)."""
    from nnperf.store import export_csv

    chosen = stored_id(system, "export_measurements")
    with opened_store(store, create=False) as opened:
        system_id = opened.system(chosen).id if chosen is not None else None
        return export_csv(opened, out, table, system_id=system_id)
