"""The store's tables as written on disk: the timing columns generated from the dataclasses keep schema 1's layout."""

from __future__ import annotations

import sqlite3
from dataclasses import fields
from pathlib import Path

from nnperf.measure import Timing, TimingStats
from nnperf.store import SCHEMA_VERSION, Store
from nnperf.store._schema import TIMING_COLUMNS

# (name, declared type, NOT NULL) of every column of schema 1, read off its hand-written CREATE TABLE text
# (commit 2d9d792) with PRAGMA table_info: an existing store must keep opening, resuming and being written.
_TIMING_V1 = [
    ("n", "INTEGER", 1), ("median_s", "REAL", 0), ("q1_s", "REAL", 0), ("q3_s", "REAL", 0), ("mean_s", "REAL", 0),
    ("std_s", "REAL", 0), ("min_s", "REAL", 0), ("max_s", "REAL", 0), ("ci_low_s", "REAL", 0),
    ("ci_high_s", "REAL", 0), ("confidence", "REAL", 0), ("n_outliers", "INTEGER", 1), ("block_size", "INTEGER", 1),
    ("stop_reason", "TEXT", 1), ("wall_s", "REAL", 0), ("started_at", "REAL", 0), ("ended_at", "REAL", 0),
    ("times_json", "TEXT", 1),
]
SCHEMA_V1 = {
    "systems": [
        ("id", "INTEGER", 0), ("key", "TEXT", 1), ("backend", "TEXT", 1), ("device", "TEXT", 1),
        ("device_name", "TEXT", 1), ("options_json", "TEXT", 1), ("host_json", "TEXT", 1), ("created_at", "REAL", 1),
    ],
    "runs": [
        ("id", "INTEGER", 0), ("system_id", "INTEGER", 1), ("campaign", "TEXT", 1), ("model", "TEXT", 1),
        ("network_hash", "TEXT", 1), ("method", "TEXT", 1), ("config_json", "TEXT", 1), ("status", "TEXT", 1),
        ("started_at", "REAL", 1), ("finished_at", "REAL", 0), ("pid", "INTEGER", 1),
    ],
    "layer_measurements": [
        ("id", "INTEGER", 0), ("run_id", "INTEGER", 1), ("layer", "TEXT", 1), ("op", "TEXT", 1),
        ("method", "TEXT", 1), ("grp", "TEXT", 1), ("group_size", "INTEGER", 1), *_TIMING_V1,
        ("energy_j", "REAL", 0), ("power_meter", "TEXT", 1), ("created_at", "REAL", 1),
    ],
    "network_measurements": [
        ("id", "INTEGER", 0), ("run_id", "INTEGER", 1), *_TIMING_V1, ("energy_j", "REAL", 0),
        ("power_meter", "TEXT", 1), ("extra_json", "TEXT", 1), ("created_at", "REAL", 1),
    ],
    "models": [
        ("id", "INTEGER", 0), ("system_id", "INTEGER", 1), ("kind", "TEXT", 1), ("document_json", "TEXT", 1),
        ("created_at", "REAL", 1),
    ],
}


def _columns(path: Path) -> dict[str, list[tuple[str, str, int]]]:
    conn = sqlite3.connect(path)
    try:
        return {table: [(r[1], r[2], r[3]) for r in conn.execute(f"PRAGMA table_info({table})")]
                for table in SCHEMA_V1}
    finally:
        conn.close()


def test_a_new_store_has_the_columns_of_schema_1(tmp_path: Path) -> None:
    Store(tmp_path / "new.db").close()
    assert SCHEMA_VERSION == 1
    assert _columns(tmp_path / "new.db") == SCHEMA_V1


def test_the_timing_columns_are_the_dataclass_fields() -> None:
    stats = [f.name for f in fields(TimingStats)]
    own = [f.name for f in fields(Timing) if f.name not in ("stats", "times_s")]
    assert list(TIMING_COLUMNS) == [*stats, *own, "times_json"]
    assert list(TIMING_COLUMNS) == [name for name, _, _ in _TIMING_V1]
