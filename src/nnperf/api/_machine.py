"""Whether this machine is quiet enough for trustworthy timings, from Python (``nnperf check``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nnperf.api._predict import Progress

if TYPE_CHECKING:
    from nnperf.measure import MachineCheck, Timer


@dataclass(frozen=True)
class CheckResult:
    """The machine check, and why its noise measurement was skipped when the torch backend cannot run here (None
    when it ran or was not asked for)."""

    check: MachineCheck
    noise_skipped: str | None = None
    threads: tuple[ThreadSettings, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf check --json`` document: the findings, the verdict, the comparison protocol to take and
        why, and each backend's thread settings."""
        from nnperf.measure import check_document

        document = check_document(self.check)
        document["threads"] = [{"backend": t.backend, "threads": t.threads, "settings": dict(t.settings),
                                "unavailable": t.unavailable} for t in self.threads]
        return document


@dataclass(frozen=True)
class ThreadSettings:
    """One backend's own thread settings as nnperf applies them at ``threads`` (read back from the framework where
    it tells), or why the backend cannot run here (``settings`` then empty)."""

    backend: str
    threads: int
    settings: tuple[tuple[str, str], ...]
    unavailable: str = ""


def thread_settings(threads: int = 1) -> tuple[ThreadSettings, ...]:
    """Every measuring backend's thread settings on the CPU at ``threads`` threads (``nnperf check``)."""
    from nnperf.measure.backends import BACKENDS, REAL_BACKENDS, BackendOptions
    from nnperf.registry import UnavailableError

    found = []
    for name in REAL_BACKENDS:
        try:
            with BACKENDS.create(name)(BackendOptions(threads=threads)) as backend:
                found.append(ThreadSettings(name, threads, backend.thread_settings()))
        except UnavailableError as exc:
            found.append(ThreadSettings(name, threads, (), str(exc)))
    return tuple(found)


def noise_timer() -> Timer:
    """The default noise workload: the machine-speed reference (:data:`nnperf.measure.REFERENCE`) on the torch
    backend at 1 thread, the workload :func:`calibrate`'s check times too."""
    from nnperf.measure import reference_timer
    from nnperf.measure.backends import BackendOptions

    return reference_timer("torch", BackendOptions(threads=1))


def check(*, noise_s: float = 10.0, sample_s: float = 1.0, noise: bool = True, threads: bool = True,
          progress: Progress | None = None) -> CheckResult:
    """Inspects this machine before measuring (``nnperf check``): other busy processes, load, steal time, CPU and
    memory pressure, free memory, the cpufreq governor and turbo, SMT siblings and allocator variables; then (with
    ``noise``) times the machine-speed reference back to back for ``noise_s`` seconds and reports how much it
    moves. Other processes' CPU use is sampled over ``sample_s`` seconds. Each finding is ok, warn or bad with one
    sentence of advice; the verdict is the worst. With ``threads``, every backend's own thread settings at one
    thread are read back too (:func:`thread_settings`; this imports each installed framework).

    Raises
    ------
    MeasurementError
        ``noise_s`` or ``sample_s`` is not a positive number of seconds.
    """
    import math

    from nnperf.measure import MeasurementError, check_machine
    from nnperf.registry import UnavailableError

    for name, value in (("noise_s", noise_s), ("sample_s", sample_s)):
        if not (math.isfinite(value) and value > 0):
            raise MeasurementError(f"{name} takes a positive number of seconds, got {value:g}")
    timer, skipped = None, None
    if noise:
        try:
            timer = noise_timer()
        except UnavailableError as exc:  # the other findings need no backend: report them anyway
            skipped = str(exc)
    machine = check_machine(timer, noise_s=noise_s, sample_s=sample_s, progress=progress)
    return CheckResult(machine, skipped, thread_settings() if threads else ())
