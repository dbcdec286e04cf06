"""Merge the stores of several profiling processes (``bench/primitive_dataset.py --shard I/N``, one process per
core) into one, so that the dataset loads as a whole.

Run: python bench/merge_stores.py OUT.db SHARD.db [SHARD.db ...]

Systems are matched by key (the same CPU and settings in every shard are one system); every run and its layer
and network measurements are copied with new ids. OUT.db may exist already (a shard merged twice is copied twice:
merge each once). Only the standard library is needed, so it also runs where nnperf's dependencies are not
installed.
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

MEASUREMENT_TABLES = ("layer_measurements", "network_measurements")


def _columns(db: sqlite3.Connection, table: str, schema: str = "main") -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA {schema}.table_info({table})")]


def merge(out: Path, shard: Path) -> int:
    """Copies every system, run and measurement of ``shard`` into ``out``; returns how many runs were copied."""
    db = sqlite3.connect(out)
    try:
        if not _columns(db, "runs"):  # a new file: the shard's schema first
            schema = sqlite3.connect(shard)
            for (sql,) in schema.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE "
                                         "'sqlite_%'"):
                db.execute(sql)
            version = int(schema.execute("PRAGMA user_version").fetchone()[0])  # the store's schema version
            db.execute(f"PRAGMA user_version = {version}")
            schema.close()
        db.execute("ATTACH DATABASE ? AS shard", (str(shard),))
        system_ids: dict[int, int] = {}
        columns = [c for c in _columns(db, "systems") if c != "id"]
        for row in db.execute(f"SELECT id, {', '.join(columns)} FROM shard.systems").fetchall():
            key = row[1 + columns.index("key")]
            db.execute(f"INSERT OR IGNORE INTO systems ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       row[1:])
            system_ids[row[0]] = db.execute("SELECT id FROM systems WHERE key = ?", (key,)).fetchone()[0]
        offset = db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()[0]
        run_columns = [c for c in _columns(db, "runs") if c not in ("id", "system_id")]
        runs = db.execute(f"SELECT id, system_id, {', '.join(run_columns)} FROM shard.runs").fetchall()
        for row in runs:
            db.execute(f"INSERT INTO runs (id, system_id, {', '.join(run_columns)}) "
                       f"VALUES ({', '.join('?' * (len(run_columns) + 2))})",
                       (row[0] + offset, system_ids[row[1]], *row[2:]))
        for table in MEASUREMENT_TABLES:
            if not _columns(db, table, "shard"):
                continue
            cols = [c for c in _columns(db, table) if c not in ("id", "run_id")]
            db.execute(f"INSERT INTO {table} (run_id, {', '.join(cols)}) "
                       f"SELECT run_id + ?, {', '.join(cols)} FROM shard.{table}", (offset,))
        db.commit()
        return len(runs)
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("shards", type=Path, nargs="+")
    args = parser.parse_args()
    for shard in args.shards:
        if not shard.exists():
            raise SystemExit(f"merge_stores: no such store {shard}")
        print(f"{shard}: {merge(args.out, shard)} runs")


if __name__ == "__main__":
    main()
