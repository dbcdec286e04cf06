"""The records the store returns: frozen views of stored rows, and the conversions to and from rows.

Times are seconds, energies joules, instants Unix time (seconds).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from nnperf.errors import StoreError
from nnperf.measure import HostInfo, LayerMeasurement, Method, NetworkMeasurement, SystemSpec, Timing, TimingStats
from nnperf.store._schema import TIMING_FIELDS


@dataclass(frozen=True)
class SystemRecord:
    """A stored system (:class:`SystemSpec`); ``host`` holds every :class:`HostInfo` field.

    ``host['versions']`` and ``host['allocator_env']`` are ``{name: value}``
    mappings; ``created_at`` is Unix time (seconds).
    """

    id: int
    key: str
    backend: str
    device: str
    device_name: str
    options: dict[str, str]
    host: dict[str, Any]
    created_at: float

    @property
    def label(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.backend}/{self.device}" + (f"[{opts}]" if opts else "")

    def spec(self) -> SystemSpec:
        """The :class:`SystemSpec` this record was stored from (same ``key``)."""
        pairs = {name: tuple(self.host[name].items()) for name in ("versions", "allocator_env")}
        host = HostInfo(**{**self.host, **pairs})
        return SystemSpec(self.backend, self.device, self.device_name, tuple(self.options.items()), host)


@dataclass(frozen=True)
class RunRecord:
    """One measuring run of a campaign on a system.

    ``status`` is 'running', 'done' or 'failed'; ``finished_at`` is None while
    running; ``resumed`` is True only when ``start_run`` reopened an
    interrupted run instead of starting a new one.
    """

    id: int
    system_id: int
    campaign: str
    model: str
    network_hash: str
    method: str
    config: dict[str, Any]
    status: str
    started_at: float
    finished_at: float | None
    pid: int
    resumed: bool = False


@dataclass(frozen=True, kw_only=True)
class _Timed:
    """A stored measurement's :class:`Timing` (seconds), with the statistics that callers read most at hand."""

    timing: Timing

    @property
    def stats(self) -> TimingStats:
        return self.timing.stats

    @property
    def median_s(self) -> float:
        """The median per-execution time (seconds)."""
        return self.timing.stats.median_s

    @property
    def n(self) -> int:
        """How many timed blocks the statistics summarise."""
        return self.timing.stats.n

    @property
    def block_size(self) -> int:
        """Executions per timed block."""
        return self.timing.block_size

    @property
    def times_s(self) -> tuple[float, ...]:
        """The raw per-execution times (seconds)."""
        return self.timing.times_s

    @property
    def started_at(self) -> float:
        """Unix time of the first timed block (seconds)."""
        return self.timing.started_at

    @property
    def ended_at(self) -> float:
        """Unix time after the last timed block (seconds)."""
        return self.timing.ended_at


@dataclass(frozen=True, kw_only=True)
class LayerRecord(_Timed):
    """One stored layer measurement; times in seconds, ``energy_j`` in joules (None when unmeasured)."""

    id: int
    run_id: int
    layer: str
    op: str
    method: Method
    group: str
    group_size: int
    energy_j: float | None
    power_meter: str
    created_at: float

    def measurement(self) -> LayerMeasurement:
        """The :class:`LayerMeasurement` this record was stored from."""
        return LayerMeasurement(
            self.layer, self.op, self.method, self.timing, self.group, self.group_size, self.energy_j, self.power_meter
        )


@dataclass(frozen=True, kw_only=True)
class NetworkRecord(_Timed):
    """One stored whole-network measurement; times in seconds, ``energy_j`` in joules (None when unmeasured)."""

    id: int
    run_id: int
    energy_j: float | None
    power_meter: str
    extra: dict[str, float]
    created_at: float

    def measurement(self) -> NetworkMeasurement:
        """The :class:`NetworkMeasurement` this record was stored from."""
        return NetworkMeasurement(self.timing, self.energy_j, self.power_meter, dict(self.extra))


def dumps(value: Any, what: str) -> str:
    """``value`` as JSON text; a :class:`StoreError` naming ``what`` when it has no JSON form."""
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as err:
        raise StoreError(f"cannot store {what}: {err}") from err


def timing_fields(t: Timing) -> dict[str, Any]:
    """The scalar fields of ``t`` (its statistics' and its own) by column name, in column order."""
    stats = {f.name: getattr(t.stats, f.name) for f in fields(TimingStats)}
    return {name: stats[name] if name in stats else getattr(t, name) for name, _ in TIMING_FIELDS}


def timing_values(t: Timing) -> tuple[Any, ...]:
    """The values of ``TIMING_COLUMNS`` for ``t``, in column order."""
    return (*timing_fields(t).values(), json.dumps([float(x) for x in t.times_s]))


def _timing(row: sqlite3.Row) -> Timing:
    """The :class:`Timing` stored in ``row``; SQLite stores a NaN as NULL, read back as NaN."""
    values = {name: (math.nan if row[name] is None else float(row[name])) if kind is float else row[name]
              for name, kind in TIMING_FIELDS}
    stats = TimingStats(**{f.name: values.pop(f.name) for f in fields(TimingStats)})
    return Timing(times_s=tuple(float(x) for x in json.loads(row["times_json"])), stats=stats, **values)


def _pick(row: sqlite3.Row, *names: str) -> dict[str, Any]:
    return {name: row[name] for name in names}


def system_record(row: sqlite3.Row) -> SystemRecord:
    return SystemRecord(
        **_pick(row, "id", "key", "backend", "device", "device_name", "created_at"),
        options=json.loads(row["options_json"]),
        host=json.loads(row["host_json"]),
    )


def run_record(row: sqlite3.Row, resumed: bool = False) -> RunRecord:
    names = ("id", "system_id", "campaign", "model", "network_hash", "method", "status", "started_at", "finished_at")
    return RunRecord(**_pick(row, *names, "pid"), config=json.loads(row["config_json"]), resumed=resumed)


def layer_record(row: sqlite3.Row) -> LayerRecord:
    return LayerRecord(
        **_pick(row, "id", "run_id", "layer", "op", "group_size", "energy_j", "power_meter", "created_at"),
        timing=_timing(row),
        method=method_of(row["method"]),
        group=row["grp"],
    )


def network_record(row: sqlite3.Row) -> NetworkRecord:
    return NetworkRecord(
        **_pick(row, "id", "run_id", "energy_j", "power_meter", "created_at"),
        timing=_timing(row),
        extra=json.loads(row["extra_json"]),
    )


def method_of(value: str | Method) -> Method:
    """``value`` as a :class:`Method`; a :class:`StoreError` listing the known ones when it is none."""
    try:
        return Method(value)
    except ValueError:
        raise StoreError(f"unknown measuring method {value!r} (known: {', '.join(m.value for m in Method)})") from None


def where(conditions: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
    """A WHERE clause ANDing ``column = ?`` for every condition whose value is not None, and its parameters."""
    used = {column: value for column, value in conditions.items() if value is not None}
    clause = " WHERE " + " AND ".join(f"{column} = ?" for column in used) if used else ""
    return clause, tuple(used.values())
