"""Where an evaluation's numbers come from: the stored system and host, the runs of the measurements and of
the calibration, the command line and the nnperf that wrote the report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from nnperf.prediction.evaluation import Evaluation
from nnperf.report._format import command_line
from nnperf.store import RunRecord, Store, SystemRecord


@dataclass(frozen=True)
class Provenance:
    """Where an evaluation's numbers come from: the stored system (with its host), the store runs of the
    measurements, and the nnperf that wrote the report. ``generated_at`` is Unix time (seconds)."""

    system: SystemRecord
    runs: tuple[RunRecord, ...]
    nnperf_version: str
    generated_at: float
    store_path: str = ""
    command: str = ""
    """The command line that wrote the report."""
    calibration_runs: tuple[RunRecord, ...] = ()

    @property
    def cpu(self) -> str:
        """The CPU as fully as the host recorded it (vendor, family, model, stepping, vector extensions,
        caches), else its model name."""
        host = self.system.host
        return str(host.get("cpu_details") or host.get("cpu_model") or "not recorded")

    @property
    def calibrated(self) -> str:
        """When the calibration's runs were measured (UTC), or ''."""
        return _span([r.started_at for r in self.calibration_runs],
                     [r.finished_at for r in self.calibration_runs if r.finished_at is not None])

    @property
    def measured(self) -> str:
        """When the evaluation's runs were measured (UTC), or ''."""
        return _span([r.started_at for r in self.runs], [r.finished_at for r in self.runs
                                                         if r.finished_at is not None])

    def fields(self, evaluation: Evaluation) -> list[tuple[str, str]]:
        """(label, value) pairs for display, in reading order; only fields the store holds."""
        host = self.system.host
        versions = host.get("versions") or {}
        allocator = host.get("allocator_env") or {}
        options = self.system.options
        run_of = {r.id: r for r in self.runs}
        calibration_runs = evaluation.calibration.get("runs") or []
        pairs = [
            ("report generated", _date(self.generated_at)),
            ("command", self.command or "not recorded"),
            ("nnperf version", self.nnperf_version),
            ("system", f"{self.system.label} (id {self.system.id}, key {self.system.key[:12]})"),
            ("backend", self.system.backend),
            ("device", f"{self.system.device} ({self.system.device_name})"),
            ("threads", options.get("threads", "not set")),
            ("backend options", ", ".join(f"{k}={v}" for k, v in options.items()) or "none"),
            ("package versions (when measured)", ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
             or "not recorded"),
            ("CPU model", str(host.get("cpu_model") or "not recorded")),
            ("CPU", self.cpu),
            ("logical cores", str(host.get("logical_cores", "not recorded"))),
            ("CPU frequency governor", str(host.get("governor") or "not recorded")),
            ("host name", str(host.get("hostname") or "not recorded")),
            ("operating system", str(host.get("os") or "not recorded")),
            ("Python", str(host.get("python") or "not recorded")),
            ("allocator environment", ", ".join(f"{k}={v}" for k, v in sorted(allocator.items())) or "none set"),
            ("measured", self.measured or "unknown"),
            ("calibrated", self.calibrated or "not recorded"),
            ("evaluation runs (store run ids)", ", ".join(
                f"{n.network}: run {n.run_id}" + (f" ({run_of[n.run_id].status})" if n.run_id in run_of else "")
                for n in evaluation.networks)),
            ("calibration runs (store run ids)", ", ".join(str(r) for r in calibration_runs) or "not recorded"),
        ]
        if self.store_path:
            pairs.append(("store", self.store_path))
        return pairs


def _date(unix_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(unix_s))


def _span(started: Sequence[float], finished: Sequence[float]) -> str:
    return f"{_date(min(started))} to {_date(max(finished))}" if started and finished else ""


def provenance(store: Store, evaluation: Evaluation, nnperf_version: str,
               generated_at: float | None = None) -> Provenance:
    """The provenance of ``evaluation`` read from ``store``: the system of its runs and the runs themselves.

    ``generated_at`` (Unix time, seconds) defaults to now. Raises :class:`StoreError` for a run id the store
    lacks; an evaluation without run ids has no provenance to read (a :class:`ValueError`).
    """
    ids = [n.run_id for n in evaluation.networks if n.run_id is not None]
    if not ids:
        raise ValueError("the evaluation names no store runs")
    runs = tuple(store.run(i) for i in dict.fromkeys(ids))
    calibration = tuple(store.run(int(i)) for i in evaluation.calibration.get("runs") or ())
    return Provenance(store.system(runs[0].system_id), runs, nnperf_version,
                      time.time() if generated_at is None else generated_at, str(store.path),
                      command=command_line(), calibration_runs=calibration)
