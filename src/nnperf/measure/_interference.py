"""Interference injectors: reproducible disturbance for testing timing protocols.

nnperf measures on shared, noisy machines. To test and benchmark protocols that
should resist that noise (interleaved and paired "duet" timing), these context
managers make the noise on purpose, one kind each:

- :class:`CpuHog`: a busy loop pinned to the measured core, so the measured
  process shares it (a 50/50 share makes a CPU-bound workload about 2x slower);
- :class:`MemoryHog`: copies between two arrays larger than the last-level
  cache, pinned to another core, so the measured process competes for memory
  bandwidth and cache;
- :class:`PeriodicSlowdown`: a hog that spins, then sleeps, in a fixed period:
  a machine whose speed changes in phases, which is what makes a sequential
  A-then-B comparison drift.

Each starts one child process per CPU, pinned there with
``os.sched_setaffinity`` (so Linux only). ``start``/``__enter__`` returns once
every child is running its loop. Children end on ``stop``/``__exit__``, when the
injector is garbage-collected or the interpreter exits (``weakref.finalize``),
and also on their own: at the ``max_s`` deadline, and within 10 ms of their
parent dying, so a crashed measurement never leaves a hog behind.

The children run a small standalone program (``python -I -c``) instead of
importing nnperf: it starts in about 20 ms (numpy, for the memory hog only, adds
about 0.2 s), needs nothing of this package to be importable in the child, and
never imports torch.
"""

from __future__ import annotations

import json
import math
import os
import select
import subprocess
import sys
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from nnperf.errors import InsufficientMemoryError, NnperfError
from nnperf.measure._memory import MEMORY_HEADROOM, available_memory_bytes
from nnperf.registry import Availability, UnavailableError, UnknownPluginError

if TYPE_CHECKING:
    from typing import Self

DEFAULT_MAX_S = 600.0
"""Default hard deadline (seconds) after which a child ends by itself, stopped or not."""

DUTY_SLICE_S = 0.01
"""The slice (seconds) of which :class:`CpuHog` spins ``duty``: 10 ms, about one scheduler time slice, so a
partial duty is a steady share of the core rather than phases the measured process could notice."""

STARTUP_TIMEOUT_S = 30.0
"""How long (seconds) ``start`` waits for every child to report that it runs before giving up."""

# The child program. It is a string, run with ``python -I -c``, so that a child imports nothing of nnperf (see
# the module docstring); tests/measure/test_interference.py runs every branch. Its one argument is a JSON job:
# {"kind": "spin", "cpu", "max_s", "period_s", "busy_s"} or {"kind": "memory", "cpu", "max_s", "array_bytes"}.
# The schedule is anchored at the first period's start (t0 + k * period_s) so that phases do not drift; the
# deadline and the parent are checked at least every 10 ms; SIGINT is ignored so that Ctrl-C leaves the
# stopping to the parent (a child whose parent died stops by itself).
_CHILD_PROGRAM = r"""
import json, os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
job = json.loads(sys.argv[1])
end = time.monotonic() + job["max_s"]
parent = os.getppid()
os.sched_setaffinity(0, {job["cpu"]})

def go_on():
    return time.monotonic() < end and os.getppid() == parent

def phase(until, busy):
    until = min(until, end)
    while True:
        now = time.monotonic()
        if now >= until or os.getppid() != parent:
            return
        step = min(until, now + 0.01)
        if busy:
            while time.monotonic() < step:
                pass
        else:
            time.sleep(step - now)

if job["kind"] == "memory":
    import numpy as np
    a = np.ones(job["array_bytes"], dtype=np.uint8)
    b = np.empty_like(a)
    np.copyto(b, a)
    os.write(1, b"r")
    while go_on():
        np.copyto(b, a)
        np.copyto(a, b)
else:
    os.write(1, b"r")
    t0 = time.monotonic()
    k = 0
    while go_on():
        start = t0 + k * job["period_s"]
        phase(start + job["busy_s"], True)
        if job["busy_s"] < job["period_s"]:
            phase(start + job["period_s"], False)
        k += 1
"""


class InterferenceError(NnperfError):
    """An interference injector with a bad setting, or whose child process could not start."""


def interference_availability() -> Availability:
    """Whether injectors can run here: they need ``os.sched_setaffinity`` (Linux)."""
    if hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity"):
        return Availability.yes()
    return Availability.no(f"interference injectors pin their processes to CPUs with os.sched_setaffinity, "
                           f"which this platform ({sys.platform}) does not have")


class _Children:
    """The child processes of the latest start, and the finalizer that kills them if their owner is dropped."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.finalizer: weakref.finalize[Any, Any] | None = None


def _kill(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGKILL and reap every child: a hog holds nothing that a gentler signal would let it release."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        try:
            proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            pass  # not reaped yet; the kernel ends it regardless, and this runs in __exit__ or at exit
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


@dataclass(frozen=True)
class Interference(ABC):
    """An interference injector: a context manager that runs disturbing child processes while it is entered.

    Subclasses are frozen dataclasses of their settings (so ``repr`` records what was injected, and equal
    settings compare equal); the processes of a start are kept apart from the settings. ``start`` and
    ``__enter__`` return once every child runs; ``stop`` and ``__exit__`` kill them (stopping twice is fine).
    ``cpus`` are checked when an injector is made, against the CPUs this process may use then: make it before
    pinning the measuring process to other CPUs. Not thread-safe: start and stop it from one thread.
    """

    _children: _Children = field(default_factory=_Children, init=False, repr=False, compare=False)

    @abstractmethod
    def _jobs(self) -> list[dict[str, Any]]:
        """The child jobs (JSON objects for the child program), one per process."""

    def _preflight(self) -> None:
        """Checks made at each start (free memory, ...); none by default."""

    @property
    def running(self) -> bool:
        """Whether any child still runs (False before a start, after a stop, and once ``max_s`` has passed)."""
        return any(proc.poll() is None for proc in self._children.procs)

    @property
    def pids(self) -> tuple[int, ...]:
        """Process ids of the children of the latest start (empty before the first)."""
        return tuple(proc.pid for proc in self._children.procs)

    def start(self) -> Self:
        """Start the children and return once every one of them runs its loop; raises
        :class:`InterferenceError` when already running or when a child fails to start."""
        if self.running:
            raise InterferenceError(f"{self!r} is already running; stop it before starting it again")
        self.stop()
        self._preflight()
        procs: list[subprocess.Popen[bytes]] = []
        children = self._children
        children.procs = procs
        # Registered before the first child exists, so that an error part-way still kills those started.
        children.finalizer = weakref.finalize(self, _kill, procs)
        try:
            for job in self._jobs():
                try:
                    procs.append(subprocess.Popen(
                        [sys.executable, "-I", "-c", _CHILD_PROGRAM, json.dumps(job)],
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
                except OSError as exc:
                    raise InterferenceError(f"{self!r}: cannot start a child with {sys.executable}: {exc}") from exc
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            for proc in procs:  # all were started first: they start in parallel
                _await_ready(proc, deadline, self)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Kill and reap the children; nothing happens when none runs."""
        finalizer = self._children.finalizer
        if finalizer is not None:
            finalizer()  # runs _kill once, and no more at exit

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _await_ready(proc: subprocess.Popen[bytes], deadline: float, owner: Interference) -> None:
    """Wait for the child's readiness byte; a child that exits first or stays silent past ``deadline`` is an
    :class:`InterferenceError` carrying what it wrote to stderr."""
    assert proc.stdout is not None and proc.stderr is not None
    ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
    if ready and os.read(proc.stdout.fileno(), 1) == b"r":
        return
    if not ready:
        raise InterferenceError(f"{owner!r}: child {proc.pid} did not start within {STARTUP_TIMEOUT_S:g} s")
    proc.wait()
    why = proc.stderr.read().decode(errors="replace").strip().splitlines()
    raise InterferenceError(f"{owner!r}: child {proc.pid} exited with status {proc.returncode} before it ran"
                            + (f": {why[-1]}" if why else ""))


def _checked_cpus(cpus: Iterable[int]) -> tuple[int, ...]:
    """``cpus`` as a tuple, after checking that the platform can pin and that each CPU is one this process may
    use (its affinity when checked: construct an injector before pinning the measuring process elsewhere)."""
    avail = interference_availability()
    if not avail.ok:
        raise UnavailableError(avail.reason)
    if isinstance(cpus, (str, bytes)) or not isinstance(cpus, Iterable):
        raise InterferenceError(f"cpus must be a sequence of logical CPU numbers, got {cpus!r}")
    checked = tuple(cpus)
    if not checked:
        raise InterferenceError("cpus must name at least one logical CPU, got none")
    allowed = os.sched_getaffinity(0)
    for cpu in checked:
        if isinstance(cpu, bool) or not isinstance(cpu, int):
            raise InterferenceError(f"cpus must hold integers (logical CPU numbers), got {cpu!r}")
        if cpu not in allowed:
            raise InterferenceError(f"cpus: CPU {cpu} is not one this process may run on "
                                    f"({', '.join(map(str, sorted(allowed)))})")
    if len(set(checked)) != len(checked):
        raise InterferenceError(f"cpus must not repeat a CPU, got {checked}")
    return checked


def _check_positive(name: str, value: object, unit: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InterferenceError(f"{name} must be a positive, finite number of {unit}, got {value!r}")


def _check_fraction(name: str, value: object, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise InterferenceError(f"{name} must be in (0, 1] ({meaning}), got {value!r}")


@dataclass(frozen=True)
class CpuHog(Interference):
    """A busy loop on each of ``cpus`` (one process per CPU): a CPU hog sharing the measured core.

    On a core shared 50/50 with the measured process, a CPU-bound workload runs about 2x slower.
    """

    cpus: tuple[int, ...] = (0,)
    """Logical CPUs to hog, one child each; default CPU 0."""
    duty: float = 1.0
    """Fraction in (0, 1] of each 10 ms slice (``DUTY_SLICE_S``) spent spinning, the rest asleep; default 1.0,
    always busy."""
    max_s: float = DEFAULT_MAX_S
    """Seconds after which each child ends by itself, stopped or not; default 600."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "cpus", _checked_cpus(self.cpus))
        _check_fraction("duty", self.duty, "the fraction of each 10 ms slice spent spinning")
        _check_positive("max_s", self.max_s, "seconds")

    def _jobs(self) -> list[dict[str, Any]]:
        return [{"kind": "spin", "cpu": cpu, "max_s": self.max_s, "period_s": DUTY_SLICE_S,
                 "busy_s": self.duty * DUTY_SLICE_S} for cpu in self.cpus]


@dataclass(frozen=True)
class MemoryHog(Interference):
    """Copies between two arrays (``np.copyto``, back and forth) on each of ``cpus``: a memory-bandwidth and
    last-level-cache hog, meant for a core other than the measured one.

    Each child allocates ``buffer_bytes`` (two arrays of half that) before it reports that it runs.
    """

    cpus: tuple[int, ...] = (1,)
    """Logical CPUs to run on, one child each; default CPU 1 (the measured process usually has CPU 0)."""
    buffer_bytes: int = 256 * 2**20
    """Bytes per child, both arrays together; default 256 MiB, so each 128 MiB array is several times a
    last-level cache (32 MiB on this project's VM), and every copy goes to memory."""
    max_s: float = DEFAULT_MAX_S
    """Seconds after which each child ends by itself, stopped or not; default 600."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "cpus", _checked_cpus(self.cpus))
        if isinstance(self.buffer_bytes, bool) or not isinstance(self.buffer_bytes, int) or self.buffer_bytes < 2:
            raise InterferenceError(f"buffer_bytes must be an integer of at least 2 (two arrays of at least "
                                    f"one byte), got {self.buffer_bytes!r}")
        _check_positive("max_s", self.max_s, "seconds")

    def _preflight(self) -> None:
        needed = self.buffer_bytes * len(self.cpus)
        free = available_memory_bytes()
        if free is not None and needed > free * MEMORY_HEADROOM:
            raise InsufficientMemoryError(
                f"{self!r} needs {needed / 2**30:.2f} GiB ({len(self.cpus)} x buffer_bytes) but this machine has "
                f"{free / 2**30:.2f} GiB free (it may take {MEMORY_HEADROOM:.0%} of it); use a smaller buffer_bytes")

    def _jobs(self) -> list[dict[str, Any]]:
        return [{"kind": "memory", "cpu": cpu, "max_s": self.max_s, "array_bytes": self.buffer_bytes // 2}
                for cpu in self.cpus]


@dataclass(frozen=True)
class PeriodicSlowdown(Interference):
    """A hog that spins for ``busy_fraction * period_s``, then sleeps for the rest of the period, over and over
    (one process per CPU): a machine whose speed changes in phases.

    Periods are anchored at the child's start, so they do not drift; each starts with its busy phase.
    """

    cpus: tuple[int, ...] = (0,)
    """Logical CPUs to slow down, one child each; default CPU 0."""
    period_s: float = 1.0
    """Seconds of one busy-then-idle period; default 1.0."""
    busy_fraction: float = 0.5
    """Fraction in (0, 1] of each period spent spinning; default 0.5 (1.0 is a constant hog)."""
    max_s: float = DEFAULT_MAX_S
    """Seconds after which each child ends by itself, stopped or not; default 600."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "cpus", _checked_cpus(self.cpus))
        _check_positive("period_s", self.period_s, "seconds")
        _check_fraction("busy_fraction", self.busy_fraction, "the fraction of each period spent spinning")
        _check_positive("max_s", self.max_s, "seconds")

    def _jobs(self) -> list[dict[str, Any]]:
        return [{"kind": "spin", "cpu": cpu, "max_s": self.max_s, "period_s": self.period_s,
                 "busy_s": self.busy_fraction * self.period_s} for cpu in self.cpus]


INJECTORS: Mapping[str, type[Interference]] = MappingProxyType({
    "cpu": CpuHog,
    "memory": MemoryHog,
    "periodic": PeriodicSlowdown,
})
"""Injector classes by name, for benches and configuration files."""


def injector(name: str, cpus: Iterable[int] | None = None, **params: Any) -> Interference:
    """A new (not started) injector ``name`` from :data:`INJECTORS`, on ``cpus`` (the class default when None),
    with the other settings in ``params``; an unknown name (``UnknownPluginError``) lists the known ones, an
    unknown setting (:class:`InterferenceError`) the accepted ones."""
    cls = INJECTORS.get(name)
    if cls is None:
        raise UnknownPluginError(f"unknown interference injector {name!r}; known: {', '.join(sorted(INJECTORS))}")
    accepted = [f.name for f in fields(cls) if f.init]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise InterferenceError(f"interference injector {name!r} has no setting {', '.join(unknown)}; "
                                f"it takes {', '.join(accepted)}")
    if cpus is not None:
        params["cpus"] = cpus
    return cls(**params)
