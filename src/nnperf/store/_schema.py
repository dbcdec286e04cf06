"""The store's SQLite schema, its version and the connection it is read through.

The schema version lives in ``PRAGMA user_version`` (STYLE.md habit 7): a new
file gets the tables and ``SCHEMA_VERSION`` in one transaction, a file written
by a newer nnperf is refused, and anything else that is not an nnperf store is
refused rather than written into.

All times are seconds (REAL), all energies joules (REAL), instants Unix time
(REAL seconds); small nested values are JSON text.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import TypeVar, get_type_hints

from nnperf.errors import MissingStoreError, StoreError
from nnperf.measure import Timing, TimingStats

SCHEMA_VERSION = 1
"""The store schema this nnperf writes and the newest one it reads."""

BUSY_TIMEOUT_S = 30.0
"""How long SQLite itself waits for another writer's lock (seconds)."""

RETRIES = 6
"""Attempts at one statement or transaction that keeps finding the file locked."""

RETRY_BACKOFF_S = 0.05
"""The first pause between such attempts (seconds); it doubles after each one."""

_SQL_TYPES: dict[type, str] = {int: "INTEGER NOT NULL", float: "REAL", str: "TEXT NOT NULL"}
"""The column type of a timing field by its Python type.

Statistics are nullable on purpose: SQLite stores a NaN as NULL, and a NaN
statistic (e.g. the std of one sample) must not make a measurement unstorable.
"""


def _timing_fields() -> tuple[tuple[str, type], ...]:
    """(name, type) of every scalar field of a :class:`Timing`: its :class:`TimingStats` first, then its own.

    The dataclasses are the one list of the fields; the raw times are stored
    apart, as JSON (``times_json``).
    """
    stats, own = get_type_hints(TimingStats), get_type_hints(Timing)
    return (*((f.name, stats[f.name]) for f in fields(TimingStats)),
            *((f.name, own[f.name]) for f in fields(Timing) if f.name not in ("stats", "times_s")))


TIMING_FIELDS: tuple[tuple[str, type], ...] = _timing_fields()
"""(name, Python type) of the scalar timing columns, in table order."""

TIMING_COLUMNS: tuple[str, ...] = (*(name for name, _ in TIMING_FIELDS), "times_json")
"""The columns that hold one :class:`~nnperf.measure.Timing`, in table order."""

_TIMING_DDL = "".join(f"\n    {name} {_SQL_TYPES[kind]}," for name, kind in TIMING_FIELDS) + \
    "\n    times_json TEXT NOT NULL,"

_DDL: tuple[str, ...] = (
    """CREATE TABLE systems (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    backend TEXT NOT NULL,
    device TEXT NOT NULL,
    device_name TEXT NOT NULL,
    options_json TEXT NOT NULL,
    host_json TEXT NOT NULL,
    created_at REAL NOT NULL
)""",
    """CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    system_id INTEGER NOT NULL REFERENCES systems(id),
    campaign TEXT NOT NULL,
    model TEXT NOT NULL,
    network_hash TEXT NOT NULL,
    method TEXT NOT NULL,
    config_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    started_at REAL NOT NULL,
    finished_at REAL,
    pid INTEGER NOT NULL
)""",
    "CREATE INDEX runs_by_campaign ON runs (system_id, campaign)",
    f"""CREATE TABLE layer_measurements (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    layer TEXT NOT NULL,
    op TEXT NOT NULL,
    method TEXT NOT NULL,
    grp TEXT NOT NULL,
    group_size INTEGER NOT NULL,{_TIMING_DDL}
    energy_j REAL,
    power_meter TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (run_id, layer, method)
)""",
    f"""CREATE TABLE network_measurements (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),{_TIMING_DDL}
    energy_j REAL,
    power_meter TEXT NOT NULL,
    extra_json TEXT NOT NULL,
    created_at REAL NOT NULL
)""",
    "CREATE INDEX network_measurements_by_run ON network_measurements (run_id)",
    """CREATE TABLE models (
    id INTEGER PRIMARY KEY,
    system_id INTEGER NOT NULL REFERENCES systems(id),
    kind TEXT NOT NULL,
    document_json TEXT NOT NULL,
    created_at REAL NOT NULL
)""",
)

TABLES: frozenset[str] = frozenset({"systems", "runs", "layer_measurements", "network_measurements", "models"})

T = TypeVar("T")


def _is_locked(err: sqlite3.Error) -> bool:
    text = str(err).lower()
    return isinstance(err, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def retry(conn: sqlite3.Connection, path: Path, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
    """Run ``fn(conn)``, in a ``BEGIN IMMEDIATE`` transaction committed before returning when ``write``.

    SQLite's busy timeout (``BUSY_TIMEOUT_S``) covers most contention; a
    'database is locked' that still gets through is retried ``RETRIES`` times
    with a doubling pause from ``RETRY_BACKOFF_S``. Every other SQLite error,
    and one that stays locked, becomes a :class:`StoreError` naming ``path``.
    """
    pause_s = RETRY_BACKOFF_S
    for attempt in range(RETRIES):
        try:
            if not write:
                return fn(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result
        except sqlite3.Error as err:
            if _is_locked(err) and attempt + 1 < RETRIES:
                time.sleep(pause_s)
                pause_s *= 2
                continue
            if _is_locked(err):
                raise StoreError(f"{path} stayed locked by another process; try again later ({err})") from err
            raise StoreError(f"{path}: {err}") from err
    raise AssertionError("unreachable")  # pragma: no cover


def _check_folder(path: Path) -> None:
    folder = path.parent
    if not folder.exists():
        raise StoreError(f"cannot open the store {path}: the folder {folder} does not exist (create it first)")
    if not folder.is_dir():
        raise StoreError(f"cannot open the store {path}: {folder} is not a folder")
    if path.is_dir():
        raise StoreError(f"cannot open the store {path}: it is a folder, not a file")


def _check(conn: sqlite3.Connection, path: Path, create: bool) -> bool:
    """Refuse a file that is not an nnperf store (or a store from a newer nnperf); True when it is new (no schema
    yet, no tables), which only a command that may create a store accepts. Reads only: nothing is written to a
    file that is refused."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables = {t for t in tables if not t.startswith("sqlite_")}
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer nnperf (store schema {version}, this nnperf reads up to "
            f"{SCHEMA_VERSION}); upgrade nnperf or use another --db"
        )
    if version == 0:
        if tables:
            raise StoreError(
                f"{path} is not an nnperf store (no schema version, but it holds tables: {', '.join(sorted(tables))})"
            )
        if not create:
            raise StoreError(f"{path} is an empty database, not an nnperf store")
        return True
    if version < SCHEMA_VERSION:  # pragma: no cover - no older schema exists yet
        raise StoreError(f"{path} has store schema {version}, which this nnperf cannot migrate")
    missing = TABLES - tables
    if missing:
        raise StoreError(
            f"{path} is not an nnperf store (schema {version} but no table(s) {', '.join(sorted(missing))})"
        )
    return False


def _prepare(conn: sqlite3.Connection, path: Path) -> None:
    """Create the schema in a new file (checked again under the write lock: another process may have made it)."""
    if _check(conn, path, create=True):
        for statement in _DDL:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _probe(conn: sqlite3.Connection, path: Path) -> None:
    """Read the header, which tells an SQLite database from any other file."""
    try:
        conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.DatabaseError as err:
        if _is_locked(err):
            raise
        raise StoreError(f"{path} is not an nnperf store (not an SQLite database: {err})") from err


def connect(path: Path, create: bool = True) -> sqlite3.Connection:
    """Open the store file ``path`` (creating it when ``create``) and make sure it holds our schema.

    Does not create folders. Sets WAL journaling, a ``BUSY_TIMEOUT_S`` busy
    timeout and foreign keys, but only once the file is known to be an nnperf
    store (or a new one): a refused file is left byte for byte as it was.
    Raises :class:`StoreError` for a missing folder, a file that is not an
    SQLite database or not an nnperf store, a store written by a newer schema,
    and, without ``create``, a missing or empty file.
    """
    _check_folder(path)
    if not create and not path.exists():
        raise MissingStoreError(f"no store at {path}: nothing was measured into it yet (check --db or $NNPERF_DB, or "
                         "measure first: `nnperf calibrate` or `nnperf profile MODEL`)")
    if not create and path.stat().st_size == 0:
        raise StoreError(f"{path} is an empty file, not an nnperf store")
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as err:
        raise StoreError(f"cannot open the store {path}: {err}") from err
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        retry(conn, path, lambda c: _probe(c, path), write=False)
        retry(conn, path, lambda c: _check(c, path, create), write=False)
        retry(conn, path, lambda c: c.execute("PRAGMA journal_mode = WAL").fetchone(), write=False)
        conn.execute("PRAGMA foreign_keys = ON")
        retry(conn, path, lambda c: _prepare(c, path), write=True)
    except BaseException:
        conn.close()
        raise
    return conn
