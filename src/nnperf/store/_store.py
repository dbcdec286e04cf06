"""The measurement store: systems, runs and their layer and network measurements in one SQLite file.

Every public write commits before it returns, so a campaign killed half-way
keeps everything it measured and resumes where it stopped (``start_run``).
Times are seconds, energies joules, instants Unix time (seconds).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnperf.errors import StoreError
from nnperf.measure import LayerMeasurement, Method, NetworkMeasurement, SystemSpec, cpu_generation
from nnperf.store._records import (
    LayerRecord,
    NetworkRecord,
    RunRecord,
    SystemRecord,
    dumps,
    layer_record,
    method_of,
    network_record,
    run_record,
    system_record,
    timing_values,
    where,
)
from nnperf.store._schema import TIMING_COLUMNS, connect, retry

if TYPE_CHECKING:
    from typing import Self  # Python 3.11+, needed only by type checkers


def default_store_path() -> Path:
    """The store used when none is named: ``$NNPERF_DB`` when set, else ``nnperf.db`` in the current folder."""
    env = os.environ.get("NNPERF_DB", "")
    return Path(env).expanduser() if env else Path.cwd() / "nnperf.db"


_LAYER_COLUMNS = (
    "run_id",
    "layer",
    "op",
    "method",
    "grp",
    "group_size",
    *TIMING_COLUMNS,
    "energy_j",
    "power_meter",
    "created_at",
)
_NETWORK_COLUMNS = ("run_id", *TIMING_COLUMNS, "energy_j", "power_meter", "extra_json", "created_at")


def _owner_alive(pid: int) -> bool:
    """Whether the process ``pid``, which owns a 'running' run, still runs it (on this host).

    This process's own pid counts as gone (see :meth:`Store.start_run`), and
    so does a zombie: a killed child its parent has not waited for yet.
    """
    if pid <= 0 or pid == os.getpid():  # os.kill(0, ...) would signal our own process group
        return False
    if os.name == "nt":  # os.kill would terminate the process there: never take over another pid's run
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (macOS), or it exited just now: trust the signal test
        return True
    return stat[stat.rfind(")") + 2:][:1] != "Z"


def _insert_sql(verb: str, table: str, columns: tuple[str, ...]) -> str:
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


class Store:
    """An nnperf measurement store: one SQLite file, opened at ``path`` (created there when ``create``).

    Raises :class:`StoreError` when the folder of ``path`` is missing (it is
    never created), when the file is not an nnperf store, when a newer nnperf
    wrote it, or, without ``create`` (commands that only read), when there is
    no store at ``path``. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        self._conn = connect(self.path, create)
        self._conn.row_factory = sqlite3.Row

    # -- plumbing -----------------------------------------------------------
    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        return retry(self._conn, self.path, lambda c: c.execute(sql, params).fetchall(), write=False)

    def _require_run(self, conn: sqlite3.Connection, run_id: int) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise StoreError(f"{self.path}: no run with id {run_id}")

    def close(self) -> None:
        """Close the file; later calls raise :class:`StoreError`. Closing twice is harmless."""
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- systems ------------------------------------------------------------
    def add_system(self, spec: SystemSpec) -> SystemRecord:
        """Store ``spec`` unless a system with its ``key`` is already stored (or one this store kept under its
        ``legacy_key`` with the same CPU recorded, which is adopted); return the stored record."""
        self._adopt_legacy(spec)
        h = spec.host
        host = {**asdict(h), "versions": dict(h.versions), "allocator_env": dict(h.allocator_env)}
        options_json = dumps(dict(spec.options), "system options")
        values = (spec.key, spec.backend, spec.device, spec.device_name, options_json, json.dumps(host), time.time())

        def write(c: sqlite3.Connection) -> sqlite3.Row:
            c.execute(
                "INSERT OR IGNORE INTO systems (key, backend, device, device_name, options_json, host_json, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            return c.execute("SELECT * FROM systems WHERE key = ?", (spec.key,)).fetchone()

        return system_record(retry(self._conn, self.path, write, write=True))

    def systems(self) -> list[SystemRecord]:
        """Every stored system, oldest first."""
        return [system_record(r) for r in self._read("SELECT * FROM systems ORDER BY id")]

    def find_system(self, key: str | SystemSpec) -> SystemRecord | None:
        """The system with exactly this key (or ``spec``'s, adopting one kept under its ``legacy_key`` with the
        same CPU recorded), or None when it was never stored."""
        if isinstance(key, SystemSpec):
            self._adopt_legacy(key)
            key = key.key
        rows = self._read("SELECT * FROM systems WHERE key = ?", (key,))
        return system_record(rows[0]) if rows else None

    def _adopt_legacy(self, spec: SystemSpec) -> None:
        """Gives ``spec``'s key to the system stored under its ``legacy_key`` (the key before the CPU's
        generation was part of it) when the CPU that system recorded is of ``spec``'s generation and no system
        has the key yet. A system of another generation, or of none recorded, stays as it is: its measurements
        are of another CPU, or of one nobody can tell."""
        if spec.legacy_key == spec.key or not self._read("SELECT 1 FROM systems WHERE key = ?", (spec.legacy_key,)):
            return
        wanted = cpu_generation(spec.host.cpu_details)

        def write(c: sqlite3.Connection) -> None:
            row = c.execute("SELECT host_json FROM systems WHERE key = ?", (spec.legacy_key,)).fetchone()
            taken = c.execute("SELECT 1 FROM systems WHERE key = ?", (spec.key,)).fetchone()
            if row is None or taken is not None:
                return
            if cpu_generation(str(json.loads(row["host_json"]).get("cpu_details") or "")) == wanted:
                c.execute("UPDATE systems SET key = ? WHERE key = ?", (spec.key, spec.legacy_key))

        retry(self._conn, self.path, write, write=True)

    def system(self, id_or_key_prefix: int | str) -> SystemRecord:
        """The system with this id (int) or whose key starts with this text (str).

        A text of digits that starts no key is tried as an id. Raises
        :class:`StoreError` when no system or more than one matches.
        """
        if isinstance(id_or_key_prefix, int):
            rows = self._read("SELECT * FROM systems WHERE id = ?", (id_or_key_prefix,))
            if not rows:
                raise StoreError(f"{self.path}: no system with id {id_or_key_prefix}")
            return system_record(rows[0])
        prefix = id_or_key_prefix.strip().lower()
        if not prefix:
            raise StoreError("name a system by its id or the start of its key")
        rows = self._read("SELECT * FROM systems WHERE substr(key, 1, ?) = ? ORDER BY id", (len(prefix), prefix))
        if len(rows) > 1:
            keys = ", ".join(r["key"] for r in rows)
            raise StoreError(f"{self.path}: system key prefix {prefix!r} is ambiguous ({keys}); give more characters")
        if rows:
            return system_record(rows[0])
        if prefix.isdigit():
            return self.system(int(prefix))
        raise StoreError(f"{self.path}: no system whose key starts with {prefix!r}")

    # -- runs ---------------------------------------------------------------
    def start_run(
        self, system_id: int, campaign: str, model: str, network_hash: str, method: str, config: Mapping[str, Any]
    ) -> RunRecord:
        """Open a run of ``campaign`` on system ``system_id``, resuming an interrupted one.

        A run of the same system, campaign and network hash is resumed when it
        'failed', or when it is still marked 'running' but its owner (the
        ``pid`` stored with it) is gone: no process with that id is alive on
        this host, or the id is this process's own (a process runs a campaign
        once at a time, and in a container a restarted command often gets the
        pid its killed predecessor had). The newest such run is set back to
        'running', owned by this process, and returned with ``resumed=True``
        (its measurements are kept: see :meth:`done_layers`); otherwise, e.g.
        while another live process runs the same campaign, a new run starts
        (``resumed=False``). The owner check and the claim happen in one
        ``BEGIN IMMEDIATE`` transaction, so of two processes racing for a dead
        owner's run one resumes it and the other starts a new run.

        Ownership is a pid on this host: a store shared between hosts (a
        network filesystem) may see another host's live campaign as gone and
        resume it, so let one host at a time measure into a shared store.
        """
        config_json = dumps(dict(config), "run config")
        own_pid = os.getpid()

        def write(c: sqlite3.Connection) -> tuple[int, bool]:
            if c.execute("SELECT 1 FROM systems WHERE id = ?", (system_id,)).fetchone() is None:
                raise StoreError(f"{self.path}: no system with id {system_id}")
            candidates = c.execute(
                "SELECT id, status, pid FROM runs WHERE system_id = ? AND campaign = ? AND network_hash = ? "
                "AND status IN ('running', 'failed') ORDER BY id DESC",
                (system_id, campaign, network_hash),
            ).fetchall()
            for row in candidates:
                if row["status"] == "running" and _owner_alive(int(row["pid"])):
                    continue
                c.execute(
                    "UPDATE runs SET status = 'running', finished_at = NULL, pid = ? WHERE id = ?",
                    (own_pid, row["id"]),
                )
                return int(row["id"]), True
            cur = c.execute(
                "INSERT INTO runs (system_id, campaign, model, network_hash, method, config_json, status, "
                "started_at, pid) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?)",
                (system_id, campaign, model, network_hash, method, config_json, time.time(), own_pid),
            )
            return int(cur.lastrowid or 0), False

        run_id, resumed = retry(self._conn, self.path, write, write=True)
        return run_record(self._read("SELECT * FROM runs WHERE id = ?", (run_id,))[0], resumed)

    def finish_run(self, run_id: int, status: str = "done") -> None:
        """Mark run ``run_id`` 'done' or 'failed' and record when it finished.

        Raises :class:`StoreError` when another process that is still alive
        owns the run (see :meth:`start_run`): only a run's owner, or anyone
        once the owner is gone, sets how it ended.
        """
        if status not in ("done", "failed"):
            raise StoreError(f"a run finishes as 'done' or 'failed', not {status!r}")

        def write(c: sqlite3.Connection) -> None:
            self._require_run(c, run_id)
            row = c.execute("SELECT status, pid FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row["status"] == "running" and _owner_alive(int(row["pid"])):
                raise StoreError(f"{self.path}: run {run_id} belongs to process {row['pid']}, which is still "
                                 "running it; only that process finishes it")
            c.execute("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?", (status, time.time(), run_id))

        retry(self._conn, self.path, write, write=True)

    def runs(self, system_id: int | None = None, model: str | None = None) -> list[RunRecord]:
        """Stored runs, oldest first, optionally only those of one system and/or model."""
        clause, params = where({"system_id": system_id, "model": model})
        return [run_record(r) for r in self._read(f"SELECT * FROM runs{clause} ORDER BY id", params)]

    def run(self, run_id: int) -> RunRecord:
        """The run with this id; a :class:`StoreError` when there is none."""
        rows = self._read("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise StoreError(f"{self.path}: no run with id {run_id}")
        return run_record(rows[0])

    def finished_run(self, system_id: int, campaign: str) -> RunRecord | None:
        """The newest run of ``campaign`` on a system that finished ('done'), or None."""
        rows = self._read("SELECT * FROM runs WHERE system_id = ? AND campaign = ? AND status = 'done' "
                          "ORDER BY id DESC LIMIT 1", (system_id, campaign))
        return run_record(rows[0]) if rows else None

    # -- measurements -------------------------------------------------------
    def add_layer_measurement(self, run_id: int, m: LayerMeasurement) -> None:
        """Store ``m`` in run ``run_id``, replacing an earlier one of the same layer and method."""
        self.add_layer_measurements(run_id, [m])

    def add_layer_measurements(self, run_id: int, measurements: Sequence[LayerMeasurement]) -> None:
        """Store several layer measurements in run ``run_id`` at once: all of them or, after a crash, none.

        Each replaces an earlier one of the same layer and method.
        """
        now = time.time()
        rows = [(run_id, m.layer, m.op, method_of(m.method).value, m.group, m.group_size, *timing_values(m.timing),
                 m.energy_j, m.power_meter, now) for m in measurements]

        def write(c: sqlite3.Connection) -> None:
            self._require_run(c, run_id)
            c.executemany(_insert_sql("INSERT OR REPLACE", "layer_measurements", _LAYER_COLUMNS), rows)

        retry(self._conn, self.path, write, write=True)

    def add_network_measurement(self, run_id: int, m: NetworkMeasurement) -> None:
        """Store the whole-network measurement ``m`` in run ``run_id``."""
        values = (
            run_id,
            *timing_values(m.timing),
            m.energy_j,
            m.power_meter,
            dumps({k: float(v) for k, v in m.extra.items()}, "network measurement extras"),
            time.time(),
        )

        def write(c: sqlite3.Connection) -> None:
            self._require_run(c, run_id)
            c.execute(_insert_sql("INSERT", "network_measurements", _NETWORK_COLUMNS), values)

        retry(self._conn, self.path, write, write=True)

    def done_layers(self, run_id: int) -> set[tuple[str, str]]:
        """The (layer, method value) pairs already measured in run ``run_id``."""
        rows = self._read("SELECT layer, method FROM layer_measurements WHERE run_id = ?", (run_id,))
        return {(r["layer"], r["method"]) for r in rows}

    def has_network_measurement(self, run_id: int) -> bool:
        """Whether run ``run_id`` holds a whole-network measurement."""
        return bool(self._read("SELECT 1 FROM network_measurements WHERE run_id = ? LIMIT 1", (run_id,)))

    def layer_measurements(
        self, run_id: int | None = None, system_id: int | None = None, method: str | Method | None = None
    ) -> list[LayerRecord]:
        """Stored layer measurements in the order stored, optionally of one run, system and/or method."""
        conditions = {
            "m.run_id": run_id,
            "r.system_id": system_id,
            "m.method": None if method is None else method_of(method).value,
        }
        clause, params = where(conditions)
        sql = f"SELECT m.* FROM layer_measurements m JOIN runs r ON r.id = m.run_id{clause} ORDER BY m.run_id, m.id"
        return [layer_record(r) for r in self._read(sql, params)]

    def network_measurements(self, run_id: int | None = None, system_id: int | None = None) -> list[NetworkRecord]:
        """Stored whole-network measurements in the order stored, optionally of one run and/or system."""
        clause, params = where({"m.run_id": run_id, "r.system_id": system_id})
        sql = f"SELECT m.* FROM network_measurements m JOIN runs r ON r.id = m.run_id{clause} ORDER BY m.run_id, m.id"
        return [network_record(r) for r in self._read(sql, params)]

    def measurement_counts(self) -> dict[int, tuple[int, int, int]]:
        """For every system id: (runs, layer measurements, network measurements)."""
        rows = self._read(
            "SELECT s.id, "
            "(SELECT COUNT(*) FROM runs r WHERE r.system_id = s.id), "
            "(SELECT COUNT(*) FROM layer_measurements m JOIN runs r ON r.id = m.run_id WHERE r.system_id = s.id), "
            "(SELECT COUNT(*) FROM network_measurements m JOIN runs r ON r.id = m.run_id WHERE r.system_id = s.id) "
            "FROM systems s ORDER BY s.id"
        )
        return {int(r[0]): (int(r[1]), int(r[2]), int(r[3])) for r in rows}

    # -- fitted models -------------------------------------------------------
    def save_model(self, system_id: int, kind: str, document: Mapping[str, Any]) -> int:
        """Store a fitted model (a versioned JSON document, never a pickle) for a system; returns its id."""
        text = dumps(dict(document), f"{kind} model")

        def write(c: sqlite3.Connection) -> int:
            if c.execute("SELECT 1 FROM systems WHERE id = ?", (system_id,)).fetchone() is None:
                raise StoreError(f"{self.path}: no system with id {system_id}")
            cur = c.execute("INSERT INTO models (system_id, kind, document_json, created_at) VALUES (?, ?, ?, ?)",
                            (system_id, kind, text, time.time()))
            return int(cur.lastrowid or 0)

        return retry(self._conn, self.path, write, write=True)

    def latest_model(self, system_id: int, kind: str) -> dict[str, Any] | None:
        """The most recently stored model of ``kind`` for a system, or None."""
        rows = self._read("SELECT document_json FROM models WHERE system_id = ? AND kind = ? ORDER BY id DESC LIMIT 1",
                          (system_id, kind))
        return json.loads(rows[0][0]) if rows else None

    def models(self, system_id: int, kind: str) -> list[dict[str, Any]]:
        """Every stored model of ``kind`` for a system, newest first."""
        rows = self._read("SELECT document_json FROM models WHERE system_id = ? AND kind = ? ORDER BY id DESC",
                          (system_id, kind))
        return [json.loads(r[0]) for r in rows]

    def modelled_systems(self, kind: str) -> list[int]:
        """Ids of the systems that have a model of ``kind``."""
        return [int(r[0]) for r in self._read("SELECT DISTINCT system_id FROM models WHERE kind = ? ORDER BY system_id",
                                              (kind,))]
