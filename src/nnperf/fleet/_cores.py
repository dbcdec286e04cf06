"""Measuring slots on disjoint core sets: a node with ``--slots N`` measures N items at once, each on cores of its own.

A node's slots (the amount of its system resource, see ``_settings.py``) let Ray start that many items at once on
the node. With one slot nothing else measures on the node while an item runs. With more, ``nnperf fleet up`` cuts
the node's cores into one set per slot (``threads`` cores each) and records them in :data:`CORES_MARKER`; an item
then takes the first free set (a lock file per set on this machine, released by the kernel if its worker dies)
and pins every thread of its worker process to it while it measures, so two items never share a core.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from nnperf.fleet._errors import CORES_MARKER, CoreSetError


def core_sets(slots: int, threads: int, cores: Sequence[int] | None = None) -> tuple[tuple[int, ...], ...]:
    """``slots`` disjoint sets of ``threads`` cores each, taken in order from ``cores`` (default: the cores this
    process may run on)."""
    available = sorted(os.sched_getaffinity(0) if cores is None else cores)
    if slots < 1 or threads < 1:
        raise CoreSetError(f"slots and threads must be at least 1, got {slots} and {threads}")
    if slots * threads > len(available):
        raise CoreSetError(f"{slots} slots of {threads} thread(s) need {slots * threads} cores, and this machine "
                           f"gives {len(available)} ({_listed(available)}): use fewer --slots or --threads")
    return tuple(tuple(available[i * threads:(i + 1) * threads]) for i in range(slots))


def encode_core_sets(sets: Sequence[Sequence[int]]) -> str:
    """The :data:`CORES_MARKER` value of ``sets``."""
    return ";".join(",".join(str(c) for c in cores) for cores in sets)


def decode_core_sets(text: str) -> tuple[tuple[int, ...], ...]:
    """The core sets a :data:`CORES_MARKER` value names."""
    try:
        return tuple(tuple(int(c) for c in part.split(",")) for part in text.split(";") if part)
    except ValueError:
        raise CoreSetError(f"{CORES_MARKER}={text!r} is not core sets like '0,1;2,3'") from None


@contextmanager
def pinned_to_a_free_core_set(env: Mapping[str, str] | None = None) -> Iterator[tuple[int, ...] | None]:
    """Inside a node's worker, every thread of this process pinned to a free core set of the node while the block
    runs (and put back after); yields the set, or None on a node without core sets."""
    env = os.environ if env is None else env
    sets = decode_core_sets(env.get(CORES_MARKER, ""))
    if not sets:
        yield None
        return
    with ExitStack() as stack:
        cores = _take_free_set(sets, stack)
        before = _pin(set(cores))
        try:
            yield cores
        finally:
            _pin(before)


def _take_free_set(sets: Sequence[tuple[int, ...]], stack: ExitStack) -> tuple[int, ...]:
    """The first of ``sets`` no other process of this machine holds, locked until ``stack`` closes (waiting for
    the first set when every one is held, which Ray's slot count should never let happen)."""
    for cores in sets:
        handle = _lock_file(cores).open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        stack.enter_context(handle)
        return cores
    handle = stack.enter_context(_lock_file(sets[0]).open("a"))
    fcntl.flock(handle, fcntl.LOCK_EX)
    return sets[0]


def _lock_file(cores: Sequence[int]) -> Path:
    return Path(tempfile.gettempdir()) / f"nnperf-fleet-cores-{'-'.join(str(c) for c in cores)}.lock"


def _pin(cores: set[int]) -> set[int]:
    """Pins every thread of this process (those already started too: a framework's thread pool) to ``cores``;
    returns the cores the calling thread had."""
    before = os.sched_getaffinity(0)
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():  # no per-thread view: the calling thread, and the threads it starts later
        os.sched_setaffinity(0, cores)
        return before
    for task in tasks.iterdir():
        try:
            os.sched_setaffinity(int(task.name), cores)
        except (ProcessLookupError, PermissionError):  # a thread that ended meanwhile
            continue
    return before


def _listed(cores: Sequence[int]) -> str:
    return ",".join(str(c) for c in cores)
