"""CSV export of stored measurements, one row per measurement with its system and run.

Times are seconds, energies joules (an empty cell when unmeasured), instants
Unix time (seconds); ``times_s`` holds the raw per-execution times separated
by spaces. Text cells beginning with ``=``, ``+``, ``-`` or ``@`` that are not
numbers start with a ``'`` so that spreadsheets do not run them as formulas.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TextIO

from nnperf.errors import StoreError
from nnperf.store._records import LayerRecord, NetworkRecord, RunRecord, SystemRecord, timing_fields
from nnperf.store._schema import TIMING_COLUMNS
from nnperf.store._store import Store

_SYSTEM_COLUMNS = ("system_id", "system_key", "backend", "device", "device_name", "options")
_RUN_COLUMNS = ("run_id", "campaign", "model", "network_hash", "run_method")
_STAT_COLUMNS = (*(c for c in TIMING_COLUMNS if c != "times_json"), "energy_j", "power_meter")
"""The stored timing columns (raw times come last, as ``times_s``) and the energy."""

LAYER_COLUMNS: tuple[str, ...] = (
    *_SYSTEM_COLUMNS,
    *_RUN_COLUMNS,
    "layer",
    "op",
    "method",
    "group",
    "group_size",
    *_STAT_COLUMNS,
    "times_s",
)
"""The header of ``export_csv(..., 'layers')``."""

NETWORK_COLUMNS: tuple[str, ...] = (*_SYSTEM_COLUMNS, *_RUN_COLUMNS, *_STAT_COLUMNS, "extra", "times_s")
"""The header of ``export_csv(..., 'networks')``; ``extra`` is a JSON object."""


_FORMULA_STARTS = ("=", "+", "-", "@")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """An empty cell for None; text a spreadsheet would run as a formula gets a leading ``'`` (OWASP's
    advice against CSV injection), except text that is a plain number such as ``-0.5``."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def _row(
    system: SystemRecord, run: RunRecord, record: LayerRecord | NetworkRecord, columns: Sequence[str]
) -> list[Any]:
    known: dict[str, Any] = {
        "system_id": system.id,
        "system_key": system.key,
        "backend": system.backend,
        "device": system.device,
        "device_name": system.device_name,
        "options": ";".join(f"{k}={v}" for k, v in system.options.items()),
        "run_id": run.id,
        "campaign": run.campaign,
        "model": run.model,
        "network_hash": run.network_hash,
        "run_method": run.method,
        "times_s": " ".join(repr(t) for t in record.times_s),
        **timing_fields(record.timing),
    }
    if isinstance(record, LayerRecord):
        known["method"] = record.method.value
    else:
        known["extra"] = json.dumps(record.extra, sort_keys=True)
    return [csv_cell(known[c] if c in known else getattr(record, c)) for c in columns]


def export_csv(
    store: Store,
    out: TextIO | str | Path,
    table: Literal["layers", "networks"],
    system_id: int | None = None,
) -> int:
    """Write the layer or network measurements of ``store`` (of one system when ``system_id``) as CSV.

    ``out`` is an open text file or a path (overwritten). The header is
    ``LAYER_COLUMNS`` or ``NETWORK_COLUMNS``. Returns the number of rows
    written, header excluded. Raises :class:`StoreError` for an unknown table
    or system, or a path that cannot be written.
    """
    if table not in ("layers", "networks"):
        raise StoreError(f"unknown table {table!r}: export 'layers' or 'networks'")
    if system_id is not None:
        store.system(system_id)  # a clear error for an unknown system instead of an empty file
    systems = {s.id: s for s in store.systems()}
    runs = {r.id: r for r in store.runs(system_id=system_id)}
    records: Sequence[LayerRecord | NetworkRecord]
    if table == "layers":
        columns, records = LAYER_COLUMNS, store.layer_measurements(system_id=system_id)
    else:
        columns, records = NETWORK_COLUMNS, store.network_measurements(system_id=system_id)
    rows = [_row(systems[runs[r.run_id].system_id], runs[r.run_id], r, columns) for r in records]
    if isinstance(out, (str, Path)):
        try:
            with open(out, "w", newline="", encoding="utf-8") as f:
                _write(f, columns, rows)
        except OSError as err:
            raise StoreError(f"cannot write {out}: {err.strerror or err}") from err
    else:
        _write(out, columns, rows)
    return len(rows)


def _write(f: TextIO, columns: Sequence[str], rows: list[list[Any]]) -> None:
    writer = csv.writer(f, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
