"""Duet timing: two workloads run at the same time on two pinned cores and are judged pair by pair.

Duet benchmarking (Bulej et al., ICPE 2020) runs the two things being compared at the same moment on the same
machine, so whatever slows the machine down (a neighbour VM, the memory bus, the clock) slows both, and their
per-pair ratio stays put: in public clouds it made comparisons 2.3-12.5x more accurate for DaCapo/ScalaBench and
24-82x for SPEC CPU 2017. Here each side runs in a process of its own pinned to one logical CPU; for every
pair the parent tells both sides to go, one message after the other, and each times one block, sized so the two
blocks last about as long.

What duet cannot cancel is a disturbance of one core alone (a busy process sharing one side's core slows that
side only): the interleaved protocol, which times both sides on the same core, is the one for that.

A workload crosses into its process as a :data:`TimerFactory`: a picklable callable (a module-level function or a
``functools.partial`` of one, such as :func:`backend_timer`) that builds the timer there.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, BinaryIO

from nnperf.measure._harness import MeasurementError, Timer
from nnperf.measure._interleave import (
    DEFAULT_ROUNDS,
    ComparisonProtocol,
    RoundProgress,
    Rounds,
    RoundsConfig,
    _enough,
    _warm,
)

TimerFactory = Callable[[], Timer]
"""Builds a timer in the process that runs it; must be picklable."""

PAIR_WAIT_S = 3600.0
"""How long a side waits for its next pair before it gives up (seconds): a parent gone quiet ends it."""

START_TIMEOUT_S = 120.0
"""How long a side's process may take to import its framework, build its workload and warm up (seconds)."""


def backend_timer(backend: str, options: Any, target: Any, seed: int = 0) -> Timer:
    """A timer of ``target`` (an IR Network, or a Layer timed alone) on a new ``backend`` with ``options``.

    Module level, so ``partial(backend_timer, ...)`` is a picklable :data:`TimerFactory`.
    """
    from nnperf.ir import Network
    from nnperf.measure.backends import create_backend

    created = create_backend(backend, options, seed)
    return created.network_timer(target) if isinstance(target, Network) else created.layer_timer(target)


def backend_timer_factory(backend: str, options: Any, target: Any, seed: int = 0) -> TimerFactory:
    """:func:`backend_timer` with its arguments bound: a workload for :func:`measure_duet`."""
    return partial(backend_timer, backend, options, target, seed)


@dataclass(frozen=True)
class DuetPlacement:
    """The two logical CPUs the sides are pinned to."""

    cpus: tuple[int, int]


def duet_placement(cpus: Sequence[int] | None = None) -> DuetPlacement:
    """Two distinct CPUs for the sides: ``cpus`` when given (any of the machine's), else the first two this
    process may run on; a :class:`MeasurementError` saying why not on a one-core machine or without CPU
    affinity."""
    if not hasattr(os, "sched_getaffinity"):
        raise MeasurementError("the duet protocol pins each side to a core, which this platform does not allow; "
                               "use --protocol interleaved")
    allowed = sorted(os.sched_getaffinity(0))
    chosen = tuple(cpus) if cpus is not None else tuple(allowed[:2])
    if len(chosen) != 2 or chosen[0] == chosen[1]:
        raise MeasurementError(f"the duet protocol needs two distinct CPUs; this process may use {allowed}, "
                               "so use --protocol interleaved")
    machine = range(os.cpu_count() or 1)
    missing = [c for c in chosen if c not in machine]
    if missing:
        raise MeasurementError(f"this machine has no CPU {missing[0]} (it has {len(machine)})")
    return DuetPlacement((int(chosen[0]), int(chosen[1])))


def measure_duet(factories: Sequence[tuple[str, TimerFactory]], config: RoundsConfig = DEFAULT_ROUNDS,
                 cpus: Sequence[int] | None = None, progress: RoundProgress | None = None) -> Rounds:
    """Times two workloads at the same time, one per pinned CPU, pair by pair.

    ``factories`` names the two workloads and how to build each; the first is the one the stopping rule judges
    the second against (as in :func:`~nnperf.measure.measure_interleaved`). The workload with the longer
    execution sets the pair's length: the other's block is sized to last as long (at least ``min_block_s``).
    Each side is a fresh interpreter running :func:`_side_main`, so a caller's script is never
    imported again in it, and a pair starts when the parent tells both sides, one message after the other.
    """
    if len(factories) != 2:
        raise MeasurementError(f"a duet compares exactly two workloads, got {len(factories)}")
    names = tuple(name for name, _ in factories)
    placement = duet_placement(cpus)
    sides: list[_Side] = []
    try:
        for (name, factory), cpu in zip(factories, placement.cpus, strict=True):
            sides.append(_Side.start(name, factory, cpu, config))
        estimates = [side.receive(START_TIMEOUT_S) for side in sides]
        pair_s = max(config.min_block_s, *estimates)
        blocks = [max(1, round(pair_s / e)) for e in estimates]
        times: dict[str, list[float]] = {name: [] for name in names}
        began = time.perf_counter()
        for done in range(1, config.max_rounds + 1):
            for side, block in zip(sides, blocks, strict=True):
                side.send(block)
            for side, block in zip(sides, blocks, strict=True):
                times[side.name].append(side.receive(60 + 10 * pair_s) / block)
            if progress is not None:
                progress(done, config.max_rounds)
            if _enough(times, names, config, time.perf_counter() - began):
                break
        wall_s = time.perf_counter() - began
    finally:
        for side in sides:
            side.stop()
    return Rounds(ComparisonProtocol.DUET, names, tuple(tuple(times[n]) for n in names), tuple(blocks), wall_s)


_LENGTH = struct.Struct("<I")


def _write(stream: BinaryIO, value: Any) -> None:
    data = pickle.dumps(value)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _read_exactly(fd: int, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _read(fd: int, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    (size,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size, deadline))
    return pickle.loads(_read_exactly(fd, size, deadline))


@dataclass
class _Side:
    """One side's process, seen from the parent."""

    name: str
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, name: str, factory: TimerFactory, cpu: int, config: RoundsConfig) -> _Side:
        process = subprocess.Popen([sys.executable, "-c", _SIDE_COMMAND], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
        side = cls(name, process)
        assert process.stdin is not None
        _write(process.stdin, (factory, cpu, config))
        return side

    def send(self, block: int) -> None:
        assert self.process.stdin is not None
        try:
            _write(self.process.stdin, block)
        except OSError:
            raise MeasurementError(f"the duet side {self.name!r} exited with code {self.process.poll()}") from None

    def receive(self, timeout_s: float) -> float:
        """The next number the side sends; a :class:`MeasurementError` when it died, failed or took too long."""
        assert self.process.stdout is not None
        try:
            message = _read(self.process.stdout.fileno(), timeout_s)
        except TimeoutError:
            raise MeasurementError(f"the duet side {self.name!r} gave no answer in {timeout_s:.0f} s") from None
        except EOFError:
            raise MeasurementError(f"the duet side {self.name!r} exited with code {self.process.wait(5)}") from None
        if isinstance(message, str):
            raise MeasurementError(f"the duet side {self.name!r} failed: {message}")
        return float(message)

    def stop(self) -> None:
        try:
            self.send(0)
            self.process.wait(5)
        except (MeasurementError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(5)


def _side_main() -> None:
    """One side of a duet, in its own process: pin, build, warm up, send an estimate of one execution (seconds),
    then for every block size received time one block and send its time; stop on 0.

    The protocol travels on the original stdout; anything the framework prints goes to stderr."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    stdin = sys.stdin.fileno()
    try:
        factory, cpu, config = _read(stdin, START_TIMEOUT_S)
        os.sched_setaffinity(0, {cpu})
        timer = factory()
        block = _warm(timer, config.harness(), time.perf_counter)
        _write(out, timer.time_block(block) / block)
        while block := _read(stdin, PAIR_WAIT_S):
            _write(out, timer.time_block(block))
    except Exception as exc:  # noqa: BLE001 - the parent turns it into a MeasurementError naming this side
        _write(out, f"{type(exc).__name__}: {exc}")


_SIDE_COMMAND = "from nnperf.measure._duet import _side_main; _side_main()"
