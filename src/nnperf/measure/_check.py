"""Is this machine ready for trustworthy timings? A check before measuring, in the spirit of pyperf's
``system show``: what runs beside the measurement, how the CPU is clocked, and how much a small workload's time
moves, each graded ``ok``, ``warn`` or ``bad`` with one sentence of advice.

:func:`check_machine` reads Linux ``/proc`` and ``/sys`` under a root folder (``/`` by default; tests pass a
folder of hand-written files), samples CPU time over ``sample_s`` seconds, and times the caller's workload for
``noise_s`` seconds. Every file it reads may be absent (another OS, a container, a VM without cpufreq): that
finding is then ``unknown``, which the verdict counts as ``ok``. The parsers take the files' text, so each is
testable on a hand-written line.
"""

from __future__ import annotations

import enum
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nnperf.measure._harness import HarnessConfig, MeasurementError, Timer, calibrate_block_size
from nnperf.measure._host import ALLOCATOR_VARIABLES

CHECK_FORMAT = "nnperf-check"
CHECK_VERSION = 1
"""The ``format`` and ``version`` of :meth:`MachineCheck.to_dict`'s document."""

Progress = Callable[[str, int, int], None]
"""``(what, done, total)``: what is being done and how far (the noise measurement counts whole seconds)."""

# --------------------------------------------------------------------------------------------------- thresholds

STEAL_WARN = 0.02
"""Steal above 2% of CPU time: the hypervisor gives the VM's CPU to another guest often enough that a timed
block now and then loses a slice it never sees."""
STEAL_BAD = 0.10
"""Steal above 10%: one timed block in ten, roughly, has been stretched by another guest."""
LOAD_WARN = 0.5
"""A 1-minute load above half a runnable task per logical CPU: the odds that a core the measurement wants is
taken are no longer small."""
LOAD_BAD = 1.0
"""A load of one runnable task per logical CPU or more: on average no core is free for the measurement."""
BUSY_WARN = 0.10
"""Another process using more than 10% of one core competes for caches, memory bandwidth and (with SMT) the
core itself; it is named."""
BUSY_BAD = 0.50
"""More than half a core: on a 2-core VM a process like that takes the measurement's core a large part of the
time."""
MEM_AVAILABLE_WARN = 0.20
"""Less than 20% of memory available (MemAvailable): large networks start to push the page cache out."""
MEM_AVAILABLE_BAD = 0.10
"""Less than 10% available: a measurement may reclaim pages or swap while it is timed."""
MEMORY_PRESSURE_WARN = 0.01
"""Some task stalled on memory more than 1% of the last 10 s (PSI "some avg10"): reclaim is happening."""
MEMORY_PRESSURE_BAD = 0.10
"""... more than 10% of the time: timings include reclaim and swap-in."""
CPU_PRESSURE_WARN = 0.05
"""Some runnable task waited for a CPU more than 5% of the last 10 s (PSI): there are more tasks than cores."""
CPU_PRESSURE_BAD = 0.25
"""... a quarter of the time: a measurement will wait in the run queue too."""
NOISE_SPREAD_WARN = 0.05
"""The medians of the ~1 s windows differ by more than 5% of their median: the machine's speed moves within
seconds, more than most differences worth measuring."""
NOISE_SPREAD_BAD = 0.20
"""... by more than 20%: two measurements taken a few seconds apart cannot be compared."""
NOISE_IQR_WARN = 0.10
"""The interquartile range of all blocks above 10% of the median. At one thread a quiet host keeps it lower
(bench/measure_backends.py: whole-network IQR 1-6% at 1 thread)."""
NOISE_IQR_BAD = 0.30
"""... above 30%, about what two torch threads gave whole networks on a 2-vCPU shared VM
(bench/measure_backends.py: 20.7% and 30.2%): block to block, a third of the time is noise."""

NOISE_WINDOW_S = 1.0
"""Seconds of timed blocks per window whose median the spread compares."""
MIN_NOISE_WINDOWS = 2
"""A noise measurement shorter than two windows is split into two halves, so it still compares two medians."""
NOISE_CONFIG = HarnessConfig(min_block_s=0.01)
"""Warm-up and block size of the noise measurement: blocks of 10 ms, so 10 s give about 1000 samples."""


class Level(str, enum.Enum):
    """How a finding grades the machine; the value is what the JSON document says."""

    UNKNOWN = "unknown"
    """The file or setting could not be read here; counted as ``ok`` in the verdict."""
    OK = "ok"
    WARN = "warn"
    """Timings are usable with care; the advice says what to change."""
    BAD = "bad"
    """Timings taken now are not to be trusted; the advice says what to change."""

    @property
    def rank(self) -> int:
        """0 for ok and unknown, 1 for warn, 2 for bad."""
        return {"unknown": 0, "ok": 0, "warn": 1, "bad": 2}[self.value]


def worst(levels: Iterable[Level]) -> Level:
    """The worst of ``levels`` (``ok`` when there are none, or all are ``ok`` or ``unknown``)."""
    found = Level.OK
    for level in levels:
        if level.rank > found.rank:
            found = level
    return found


def graded(value: float, warn: float, bad: float) -> Level:
    """``bad`` above ``bad``, ``warn`` above ``warn``, else ``ok`` (for a value where more is worse)."""
    return Level.BAD if value > bad else Level.WARN if value > warn else Level.OK


@dataclass(frozen=True)
class Finding:
    """One thing checked.

    ``value`` is the graded figure: a fraction (0.05 is 5%), a per-CPU load, a count or a text, as
    docs/measurement.md lists for each finding; None when unknown. ``detail`` says it for a person. ``advice``
    is one sentence of what to change, None when the level is ``ok`` or ``unknown``.
    """

    name: str
    level: Level
    value: float | str | None
    detail: str
    advice: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "level": self.level.value, "value": self.value, "detail": self.detail,
                "advice": self.advice}


@dataclass(frozen=True)
class BusyProcess:
    """Another process that used the CPU during the sampling window."""

    pid: int
    name: str
    """Its ``comm`` (the executable's name, at most 15 characters)."""
    cpu_share: float
    """CPU time over wall time: 1.0 is one core busy the whole window."""

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "name": self.name, "cpu_share": self.cpu_share}


@dataclass(frozen=True)
class NoiseStats:
    """A workload timed back to back: per-execution times (seconds) and how much they move.

    ``iqr_rel`` is the interquartile range of all samples over their median; ``window_spread`` is
    (max - min) / median of the windows' medians, None with fewer than two non-empty windows.
    """

    block_size: int
    """Executions per timed block."""
    times_s: tuple[float, ...]
    """Seconds per execution of each block, in order."""
    window_medians_s: tuple[float, ...]
    duration_s: float
    """Seconds of timed blocks (calibration and warm-up excluded)."""
    median_s: float
    iqr_rel: float
    window_spread: float | None

    def to_dict(self) -> dict[str, Any]:
        """The statistics, without the raw samples."""
        return {"block_size": self.block_size, "samples": len(self.times_s), "duration_s": self.duration_s,
                "median_s": self.median_s, "iqr_rel": self.iqr_rel, "window_medians_s": list(self.window_medians_s),
                "window_spread": self.window_spread}


@dataclass(frozen=True)
class MachineCheck:
    """What :func:`check_machine` found: the findings in a fixed order, the busy processes and the noise."""

    findings: tuple[Finding, ...]
    busy: tuple[BusyProcess, ...]
    """Processes other than this one above :data:`BUSY_WARN` of a core, busiest first."""
    noise: NoiseStats | None
    """None when no workload was timed."""
    cpus: int
    """Logical CPUs (``os.cpu_count()``)."""
    sample_s: float
    """Seconds over which steal and per-process CPU time were sampled."""

    @property
    def verdict(self) -> Level:
        """The worst finding's level (``ok``, ``warn`` or ``bad``; never ``unknown``)."""
        return worst(f.level for f in self.findings)

    def finding(self, name: str) -> Finding:
        """The finding called ``name``; KeyError when there is none."""
        for f in self.findings:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """The versioned document ``nnperf check --json`` prints."""
        return {"format": CHECK_FORMAT, "version": CHECK_VERSION, "verdict": self.verdict.value, "cpus": self.cpus,
                "sample_s": self.sample_s, "findings": [f.to_dict() for f in self.findings],
                "busy_processes": [b.to_dict() for b in self.busy],
                "noise": None if self.noise is None else self.noise.to_dict()}


# ------------------------------------------------------------------------------------------------------ parsers

@dataclass(frozen=True)
class CpuTimes:
    """The all-CPU line of ``/proc/stat``, in clock ticks since boot."""

    total_ticks: int
    """user + nice + system + idle + iowait + irq + softirq + steal (guest time is already inside user)."""
    steal_ticks: int


def parse_proc_stat(text: str) -> CpuTimes | None:
    """The ``cpu`` line of ``/proc/stat``; None when there is none (or too few fields for steal)."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            try:
                ticks = [int(v) for v in fields[1:9]]
            except ValueError:
                return None
            return CpuTimes(sum(ticks), ticks[7]) if len(ticks) == 8 else None
    return None


def steal_share(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """Steal ticks over all ticks between two readings; None when either is missing or no tick passed."""
    if before is None or after is None or after.total_ticks <= before.total_ticks:
        return None
    return (after.steal_ticks - before.steal_ticks) / (after.total_ticks - before.total_ticks)


def parse_loadavg(text: str) -> float | None:
    """The 1-minute load average of ``/proc/loadavg``."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True)
class PidStat:
    """What ``/proc/PID/stat`` says about a process's CPU use."""

    pid: int
    name: str
    cpu_ticks: int
    """utime + stime, in clock ticks."""
    start_ticks: int
    """Start time after boot, in clock ticks (tells a reused pid from the process sampled before)."""


def parse_pid_stat(text: str) -> PidStat | None:
    """One ``/proc/PID/stat`` line; None when it is malformed. The name is between the first '(' and the last
    ')', since it may hold spaces and parentheses itself."""
    open_at, close_at = text.find("("), text.rfind(")")
    if open_at < 0 or close_at < open_at:
        return None
    rest = text[close_at + 1:].split()  # rest[0] is field 3 (state); utime, stime, starttime: fields 14, 15, 22
    try:
        return PidStat(int(text[:open_at]), text[open_at + 1:close_at], int(rest[11]) + int(rest[12]), int(rest[19]))
    except (IndexError, ValueError):
        return None


def busy_processes(before: Mapping[int, PidStat], after: Mapping[int, PidStat], elapsed_s: float,
                   ticks_per_s: float, exclude: Iterable[int] = (), threshold: float = BUSY_WARN
                   ) -> tuple[BusyProcess, ...]:
    """Processes present in both samples (same start time) that used more than ``threshold`` of one core over
    ``elapsed_s`` seconds, busiest first; ``exclude`` lists pids left out (this process)."""
    if elapsed_s <= 0:
        return ()
    skip = set(exclude)
    found = []
    for pid, now in after.items():
        then = before.get(pid)
        if pid in skip or then is None or then.start_ticks != now.start_ticks:
            continue
        share = (now.cpu_ticks - then.cpu_ticks) / ticks_per_s / elapsed_s
        if share > threshold:
            found.append(BusyProcess(pid, now.name, share))
    return tuple(sorted(found, key=lambda b: (-b.cpu_share, b.pid)))


def parse_meminfo(text: str) -> dict[str, int]:
    """``/proc/meminfo`` as bytes by field name (``MemTotal``, ``MemAvailable``, ...); fields without a unit
    (page counts) are kept as they are."""
    found = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if not sep or not parts:
            continue
        try:
            value = int(parts[0])
        except ValueError:
            continue
        found[name.strip()] = value * 1024 if parts[1:2] == ["kB"] else value
    return found


def parse_pressure(text: str) -> dict[str, dict[str, float]]:
    """A ``/proc/pressure/*`` file: ``{"some": {"avg10": 1.83, "avg60": ..., "total": ...}, "full": {...}}``
    (averages in percent of the time, totals in microseconds, as the kernel writes them)."""
    found: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        kind, *pairs = line.split() or [""]
        if kind not in ("some", "full"):
            continue
        values = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            try:
                values[key] = float(value)
            except ValueError:
                continue
        found[kind] = values
    return found


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """A kernel CPU list (``"0-3,8-11"``, ``"0,2"``, ``"5"``) as sorted CPU numbers; ValueError when malformed."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, sep, high = part.partition("-")
        cpus.update(range(int(low), int(high) + 1) if sep else (int(low),))
    return tuple(sorted(cpus))


def parse_siblings(lists: Iterable[str]) -> tuple[tuple[int, ...], ...]:
    """The cores, each as the logical CPUs on it, from every CPU's ``thread_siblings_list``; sorted, no
    repeats (both siblings of a core list the same CPUs). Lists that do not parse are left out."""
    cores = set()
    for text in lists:
        try:
            cores.add(parse_cpu_list(text))
        except ValueError:
            continue
    return tuple(sorted(c for c in cores if c))


# ----------------------------------------------------------------------------------------------------- readers

def _read(root: Path, relative: str) -> str | None:
    try:
        return (root / relative).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _cpu_dirs(root: Path) -> list[Path]:
    base = root / "sys/devices/system/cpu"
    try:
        dirs = [p for p in base.iterdir() if p.name[3:].isdigit() and p.name.startswith("cpu")]
    except OSError:
        return []
    return sorted(dirs, key=lambda p: int(p.name[3:]))


def read_pid_stats(root: Path) -> dict[int, PidStat]:
    """Every process's ``/proc/PID/stat`` under ``root`` that could be read (processes end while we read)."""
    found = {}
    try:
        entries = [p for p in (root / "proc").iterdir() if p.name.isdigit()]
    except OSError:
        return {}
    for entry in entries:
        text = _read(entry, "stat")
        stat = parse_pid_stat(text) if text is not None else None
        if stat is not None:
            found[stat.pid] = stat
    return found


@dataclass(frozen=True)
class CpuFreq:
    """The cpufreq settings of every CPU that has them (``scaling_*``), frequencies in hertz."""

    governors: tuple[str, ...]
    current_hz: tuple[float, ...]
    max_hz: tuple[float, ...]


def read_cpufreq(root: Path) -> CpuFreq | None:
    """The governors and frequencies under ``root``/sys; None when no CPU has cpufreq (VMs, containers)."""
    governors: list[str] = []
    current: list[float] = []
    maximum: list[float] = []
    for cpu in _cpu_dirs(root):
        governor = _read(cpu, "cpufreq/scaling_governor")
        if governor is not None:
            governors.append(governor.strip())
        for name, into in (("scaling_cur_freq", current), ("scaling_max_freq", maximum)):
            text = _read(cpu, f"cpufreq/{name}")
            if text is not None and text.strip().isdigit():
                into.append(int(text) * 1e3)  # the kernel writes kHz
    if not governors:
        return None
    return CpuFreq(tuple(governors), tuple(current), tuple(maximum))


@dataclass(frozen=True)
class Turbo:
    """Whether the CPU may clock above its base frequency, and the file that says so."""

    enabled: bool
    knob: str
    """``intel_pstate/no_turbo`` or ``cpufreq/boost`` (under /sys/devices/system/cpu)."""


def read_turbo(root: Path) -> Turbo | None:
    """intel_pstate's ``no_turbo`` (1: off) or the generic ``cpufreq/boost`` (1: on); None when neither exists."""
    no_turbo = _read(root, "sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None and no_turbo.strip() in ("0", "1"):
        return Turbo(no_turbo.strip() == "0", "intel_pstate/no_turbo")
    boost = _read(root, "sys/devices/system/cpu/cpufreq/boost")
    if boost is not None and boost.strip() in ("0", "1"):
        return Turbo(boost.strip() == "1", "cpufreq/boost")
    return None


def read_siblings(root: Path) -> tuple[tuple[int, ...], ...]:
    """The cores under ``root``/sys as their logical CPUs (empty when topology is not readable)."""
    texts = (_read(cpu, "topology/thread_siblings_list") for cpu in _cpu_dirs(root))
    return parse_siblings(t for t in texts if t is not None)


# ---------------------------------------------------------------------------------------------------- findings

def _pct(fraction: float) -> str:
    return f"{fraction * 100:.1f}%" if abs(fraction) < 0.1 else f"{fraction * 100:.0f}%"


def _unknown(name: str, why: str) -> Finding:
    return Finding(name, Level.UNKNOWN, None, why)


def steal_finding(share: float | None) -> Finding:
    """Steal time's share of all CPU time over the sampling window (value: that fraction)."""
    if share is None:
        return _unknown("steal", "/proc/stat not readable, or no CPU time passed between two reads")
    level = graded(share, STEAL_WARN, STEAL_BAD)
    advice = None if level is Level.OK else (
        f"the hypervisor gave {_pct(share)} of the VM's CPU time to other guests: measure on a dedicated or "
        f"bare-metal machine, or at a quieter hour")
    return Finding("steal", level, share, f"{_pct(share)} of CPU time stolen by the hypervisor", advice)


def load_finding(load_1min: float | None, cpus: int) -> Finding:
    """The 1-minute load average per logical CPU (value: that ratio)."""
    if load_1min is None:
        return _unknown("load", "/proc/loadavg not readable")
    per_cpu = load_1min / max(cpus, 1)
    level = graded(per_cpu, LOAD_WARN, LOAD_BAD)
    advice = None if level is Level.OK else (
        f"a 1-minute load of {load_1min:.2f} on {cpus} CPUs leaves little room for the measurement: stop other "
        f"work (see `top`) or wait until the load drops below {LOAD_WARN * cpus:.1f}")
    return Finding("load", level, per_cpu, f"{load_1min:.2f} over the last minute on {cpus} logical CPUs", advice)


def busy_finding(busy: Sequence[BusyProcess] | None) -> Finding:
    """Other processes' CPU use (value: the busiest one's share of a core, 0.0 when none is busy)."""
    if busy is None:
        return _unknown("busy_processes", "/proc/PID/stat not readable")
    if not busy:
        return Finding("busy_processes", Level.OK, 0.0, f"no other process above {_pct(BUSY_WARN)} of a core")
    top = max(b.cpu_share for b in busy)
    named = [f"PID {b.pid} ({b.name}, {_pct(b.cpu_share)} of a core)" for b in busy[:3]]
    more = f" and {len(busy) - 3} more" if len(busy) > 3 else ""
    detail = ", ".join(named) + more
    stops = [f"PID {b.pid} ({b.name})" for b in busy[:3]] + ([f"{len(busy) - 3} more"] if len(busy) > 3 else [])
    stop = stops[0] if len(stops) == 1 else ", ".join(stops[:-1]) + " and " + stops[-1]
    advice = f"stop {stop} before measuring, or measure once {'it has' if len(busy) == 1 else 'they have'} finished"
    return Finding("busy_processes", graded(top, BUSY_WARN, BUSY_BAD), top, detail, advice)


def _ghz(hz: Sequence[float]) -> str:
    low, high = min(hz) / 1e9, max(hz) / 1e9
    return f"{low:.2f} GHz" if math.isclose(low, high) else f"{low:.2f}-{high:.2f} GHz"


def governor_finding(freq: CpuFreq | None) -> Finding:
    """The cpufreq governors (value: the governors in use, comma-separated); anything but ``performance`` is a
    warning, since the others move the clock with the load, so the first blocks of a measurement run slower."""
    if freq is None:
        return _unknown("governor", "no cpufreq in /sys (common in VMs and containers)")
    names = sorted(set(freq.governors))
    slow = [g for g in freq.governors if g != "performance"]
    clocks = []
    if freq.current_hz:
        clocks.append(f"now {_ghz(freq.current_hz)}")
    if freq.max_hz:
        clocks.append(f"max {_ghz(freq.max_hz)}")
    detail = f"{', '.join(names)} on {len(freq.governors)} CPUs" + (f"; {', '.join(clocks)}" if clocks else "")
    if not slow:
        return Finding("governor", Level.OK, ",".join(names), detail)
    return Finding("governor", Level.WARN, ",".join(names), detail,
                   "set the governor to performance: sudo cpupower frequency-set -g performance")


def turbo_finding(turbo: Turbo | None) -> Finding:
    """Turbo boost (value: "on" or "off"); on is a warning: the clock then follows temperature and how many
    cores are busy, so the same work takes different times minutes apart."""
    if turbo is None:
        return _unknown("turbo", "neither intel_pstate/no_turbo nor cpufreq/boost in /sys")
    path = f"/sys/devices/system/cpu/{turbo.knob}"
    if not turbo.enabled:
        return Finding("turbo", Level.OK, "off", f"off ({path})")
    off = "1" if turbo.knob == "intel_pstate/no_turbo" else "0"
    return Finding("turbo", Level.WARN, "on", f"on ({path})",
                   f"turn turbo off for a steady clock: echo {off} | sudo tee {path}")


def smt_finding(cores: Sequence[Sequence[int]], busy: Sequence[BusyProcess] | None) -> Finding:
    """Whether logical CPUs share a core (value: the most logical CPUs on one core). Sharing is a warning only
    while another process is busy: it may then run on the measured CPU's sibling and halve its core."""
    if not cores:
        return _unknown("smt", "no CPU topology in /sys")
    per_core = max(len(c) for c in cores)
    if per_core == 1:
        return Finding("smt", Level.OK, 1, f"no logical CPUs share a core ({len(cores)} cores)")
    shared = ", ".join(",".join(map(str, c)) for c in cores if len(c) > 1)
    detail = f"{per_core} logical CPUs per core (siblings {shared})"
    if not busy:
        return Finding("smt", Level.OK, per_core, detail)
    return Finding("smt", Level.WARN, per_core, detail + "; other processes are busy",
                   "keep the busy processes off the measured CPU's sibling (taskset -c), or turn SMT off: "
                   "echo off | sudo tee /sys/devices/system/cpu/smt/control")


def memory_finding(meminfo: Mapping[str, int]) -> Finding:
    """MemAvailable over MemTotal (value: that fraction); graded on how little is left."""
    total, available = meminfo.get("MemTotal"), meminfo.get("MemAvailable")
    if not total or available is None:
        return _unknown("memory", "no MemTotal and MemAvailable in /proc/meminfo")
    share = available / total
    level = Level.BAD if share < MEM_AVAILABLE_BAD else Level.WARN if share < MEM_AVAILABLE_WARN else Level.OK
    detail = f"{available / 2**30:.1f} GiB of {total / 2**30:.1f} GiB available ({_pct(share)})"
    advice = None if level is Level.OK else (
        "free memory (close programs or stop other jobs): a measurement that has to reclaim pages or swap is slowed")
    return Finding("memory", level, share, detail, advice)


def pressure_finding(name: str, resource: str, pressure: Mapping[str, Mapping[str, float]] | None,
                     warn: float, bad: float) -> Finding:
    """A PSI file's "some avg10" (value: the fraction of the last 10 s some task stalled on ``resource``)."""
    avg10 = None if pressure is None else pressure.get("some", {}).get("avg10")
    if avg10 is None:
        return _unknown(name, f"no /proc/pressure/{resource} (a kernel without PSI)")
    share = avg10 / 100
    level = graded(share, warn, bad)
    waited = "waited for a CPU" if resource == "cpu" else f"stalled on {resource}"
    detail = f"some task {waited} {_pct(share)} of the last 10 s"
    remedy = "stop other work" if resource == "cpu" else "free memory"
    advice = None if level is Level.OK else f"tasks {waited} {_pct(share)} of the time: {remedy} before measuring"
    return Finding(name, level, share, detail, advice)


def allocator_finding(environ: Mapping[str, str]) -> Finding:
    """The allocator and thread-cap variables set (value: ``NAME=value`` pairs, space-separated); always ``ok``:
    they are not wrong, but they change times, so a measurement is compared only with one taken under the same."""
    found = [f"{name}={environ[name]}" for name in ALLOCATOR_VARIABLES if name in environ]
    detail = " ".join(found) if found else f"none of the {len(ALLOCATOR_VARIABLES)} variables that change times set"
    return Finding("allocator", Level.OK, " ".join(found), detail)


def noise_finding(noise: NoiseStats | None) -> Finding:
    """The noise measurement (value: the window spread, or the relative IQR when there was one window only),
    graded on the worse of the window spread and the relative IQR."""
    if noise is None:
        return _unknown("noise", "not measured")
    levels = [graded(noise.iqr_rel, NOISE_IQR_WARN, NOISE_IQR_BAD)]
    detail = f"median {noise.median_s * 1e6:.0f} us per run, IQR {_pct(noise.iqr_rel)}"
    if noise.window_spread is not None:
        levels.append(graded(noise.window_spread, NOISE_SPREAD_WARN, NOISE_SPREAD_BAD))
        detail += f", window medians spread {_pct(noise.window_spread)} over {len(noise.window_medians_s)} windows"
    level = worst(levels)
    moved = noise.window_spread if noise.window_spread is not None else noise.iqr_rel
    advice = None if level is Level.OK else (
        f"the same work took times {_pct(moved)} apart within {noise.duration_s:.0f} s: quiet the machine (the "
        f"findings above) and repeat measurements before trusting a difference smaller than that")
    return Finding("noise", level, moved, detail, advice)


# ------------------------------------------------------------------------------------------------------- noise

def _positive(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise MeasurementError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def _block_s(elapsed: float, n: int) -> float:
    if not (elapsed > 0 and math.isfinite(elapsed)):
        raise MeasurementError(f"the timer reported {elapsed!r} s for {n} executions")
    return elapsed


def noise_stats(block_times_s: Sequence[float], block_size: int, window_s: float = NOISE_WINDOW_S) -> NoiseStats:
    """The statistics of blocks timed back to back (seconds per block, ``block_size`` executions each).

    Blocks fall into consecutive windows of ``window_s`` seconds by when they started (the last, partial window
    joins the one before); a run shorter than :data:`MIN_NOISE_WINDOWS` windows is split into that many equal
    parts instead.
    """
    if not block_times_s:
        raise MeasurementError("no timed blocks to compute the noise of")
    times = [b / block_size for b in block_times_s]
    total = float(sum(block_times_s))
    count = max(MIN_NOISE_WINDOWS, int(total // window_s))
    length = min(window_s, total / MIN_NOISE_WINDOWS)
    windows: list[list[float]] = [[] for _ in range(count)]
    start = 0.0
    for block, per_run in zip(block_times_s, times):
        windows[min(count - 1, int(start // length))].append(per_run)
        start += block
    medians = tuple(float(np.median(w)) for w in windows if w)
    spread = (max(medians) - min(medians)) / float(np.median(medians)) if len(medians) >= 2 else None
    q1, median, q3 = (float(v) for v in np.percentile(times, [25, 50, 75]))
    return NoiseStats(block_size, tuple(times), medians, total, median, (q3 - q1) / median if median > 0 else math.inf,
                      spread)


def measure_noise(timer: Timer, noise_s: float = 10.0, window_s: float = NOISE_WINDOW_S,
                  config: HarnessConfig = NOISE_CONFIG, progress: Progress | None = None) -> NoiseStats:
    """Times ``timer`` in blocks back to back for ``noise_s`` seconds (default 10) and says how much it moves.

    Warms up and calibrates the block size as the harness does (``config``: blocks of at least 10 ms by
    default), then times blocks until their reported times add up to ``noise_s``; the budget counts the timer's
    own seconds, so a fake timer is measured without waiting. ``progress`` hears whole seconds done.
    """
    noise_s, window_s = _positive("noise_s", noise_s), _positive("window_s", window_s)
    spent, runs = 0.0, 0
    while runs < config.warmup_runs or spent < config.warmup_s:
        spent += _block_s(timer.time_block(1), 1)
        runs += 1
    block = calibrate_block_size(timer, config)
    seconds = math.ceil(noise_s)
    if progress is not None:
        progress("timing a workload for its noise", 0, seconds)
    blocks: list[float] = []
    total, shown = 0.0, 0
    while total < noise_s:
        elapsed = _block_s(timer.time_block(block), block)
        blocks.append(elapsed)
        total += elapsed
        if progress is not None and min(int(total), seconds) > shown:
            shown = min(int(total), seconds)
            progress("timing a workload for its noise", shown, seconds)
    return noise_stats(blocks, block, window_s)


# ------------------------------------------------------------------------------------------------------- check

def _ticks_per_s() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100.0  # USER_HZ on every Linux architecture nnperf runs on


def _sample(root: Path) -> tuple[CpuTimes | None, dict[int, PidStat], float]:
    """/proc/stat and every process's stat, with the monotonic time halfway through reading them."""
    began = time.monotonic()
    cpu = parse_proc_stat(_read(root, "proc/stat") or "")
    pids = read_pid_stats(root)
    return cpu, pids, (began + time.monotonic()) / 2


def _pressure(root: Path, resource: str) -> dict[str, dict[str, float]] | None:
    text = _read(root, f"proc/pressure/{resource}")
    return parse_pressure(text) if text is not None else None


def check_machine(timer: Timer | None = None, *, noise_s: float = 10.0, sample_s: float = 1.0,
                  root: Path | str = "/", environ: Mapping[str, str] | None = None,
                  noise_config: HarnessConfig = NOISE_CONFIG, progress: Progress | None = None) -> MachineCheck:
    """Checks whether this machine is ready for trustworthy timings.

    Reads the load, memory and pressure, cpufreq and SMT topology under ``root`` (default ``/``); samples steal
    time and every other process's CPU use over ``sample_s`` seconds (default 1.0); then, when ``timer`` is
    given, times it for ``noise_s`` seconds (default 10.0, see :func:`measure_noise`). ``environ`` (default
    ``os.environ``) is where the allocator variables are read. Raises :class:`MeasurementError` for a
    non-positive ``noise_s`` or ``sample_s``.
    """
    noise_s, sample_s = _positive("noise_s", noise_s), _positive("sample_s", sample_s)
    root = Path(root)
    cpus = os.cpu_count() or 1
    # read before sampling and timing, so this process's own work is not what they report
    load_1min = parse_loadavg(_read(root, "proc/loadavg") or "")
    meminfo = parse_meminfo(_read(root, "proc/meminfo") or "")
    cpu_pressure, memory_pressure = _pressure(root, "cpu"), _pressure(root, "memory")
    cpu_before, pids_before, began = _sample(root)
    time.sleep(sample_s)
    cpu_after, pids_after, ended = _sample(root)
    busy = (busy_processes(pids_before, pids_after, ended - began, _ticks_per_s(), exclude=(os.getpid(),))
            if pids_after else None)
    noise = None if timer is None else measure_noise(timer, noise_s, config=noise_config, progress=progress)
    findings = (
        busy_finding(busy),
        load_finding(load_1min, cpus),
        steal_finding(steal_share(cpu_before, cpu_after)),
        pressure_finding("cpu_pressure", "cpu", cpu_pressure, CPU_PRESSURE_WARN, CPU_PRESSURE_BAD),
        memory_finding(meminfo),
        pressure_finding("memory_pressure", "memory", memory_pressure, MEMORY_PRESSURE_WARN, MEMORY_PRESSURE_BAD),
        governor_finding(read_cpufreq(root)),
        turbo_finding(read_turbo(root)),
        smt_finding(read_siblings(root), busy),
        allocator_finding(os.environ if environ is None else environ),
        noise_finding(noise),
    )
    return MachineCheck(findings, busy or (), noise, cpus, sample_s)
