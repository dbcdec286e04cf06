"""Per-layer energy from an imported power trace, as PreVIous did with a DC power analyser.

PreVIous (Velasco-Montero et al., IV-C3 and Fig. 3) records the board's power
with a Keysight N6705C while each layer runs 50 times back to back, cuts the
signal at the layer's time window (from its time profiling) and integrates it,
then divides by the executions. ``read_trace_csv`` imports such a trace and
``integrate_windows`` does the cutting and integrating.

A trace and its windows must share one clock: convert the analyser's time axis
(or the windows) before integrating, e.g. to Unix time as in ``Timing.started_at``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nnperf.errors import NnperfError

_TIME_NAMES = ("time_s", "time")
_POWER_NAMES = ("power_w", "power")


class TraceFormatError(NnperfError):
    """A power trace that cannot be read or used (the message names file, line and problem)."""

    def __init__(self, what: str, path: str | Path | None = None, line: int | None = None) -> None:
        self.what = what
        self.path = None if path is None else str(path)
        self.line = line
        where = "" if path is None else f"{path}" + ("" if line is None else f", line {line}") + ": "
        super().__init__(where + what)


@dataclass(frozen=True, eq=False)
class PowerTrace:
    """Power samples: ``time_s`` strictly increasing (seconds), ``power_w`` >= 0 (watts).

    Both become read-only float arrays of the same length (at least 2).
    """

    time_s: np.ndarray
    power_w: np.ndarray

    def __post_init__(self) -> None:
        time_s = np.array(self.time_s, dtype=float)
        power_w = np.array(self.power_w, dtype=float)
        if time_s.ndim != 1 or power_w.ndim != 1 or len(time_s) != len(power_w):
            raise TraceFormatError(
                f"time_s and power_w must be 1-D of one length, got {time_s.shape} and {power_w.shape}"
            )
        if len(time_s) < 2:
            raise TraceFormatError(f"a trace needs at least 2 samples, got {len(time_s)}")
        if not (np.all(np.isfinite(time_s)) and np.all(np.isfinite(power_w))):
            raise TraceFormatError("time_s and power_w must be finite")
        if np.any(power_w < 0):
            raise TraceFormatError(f"power_w must be >= 0, got {power_w.min()} W")
        if np.any(np.diff(time_s) <= 0):
            raise TraceFormatError("time_s must be strictly increasing")
        time_s.flags.writeable = False
        power_w.flags.writeable = False
        object.__setattr__(self, "time_s", time_s)
        object.__setattr__(self, "power_w", power_w)

    @property
    def duration_s(self) -> float:
        return float(self.time_s[-1] - self.time_s[0])


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    lowered = [cell.strip().lower() for cell in header]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    return None


def _number(cell: str, column: str, path: Path, line: int) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise TraceFormatError(f"{column} value {cell.strip()!r} is not a number", path, line) from None
    if not math.isfinite(value):
        raise TraceFormatError(f"{column} value {cell.strip()!r} is not a finite number", path, line)
    return value


def read_trace_csv(path: str | Path) -> PowerTrace:
    """Read a CSV power trace with a header naming ``time_s,power_w`` (or ``time,power``, any case).

    Blank lines and lines starting with ``#`` are skipped; other columns are
    ignored. Every problem raises ``TraceFormatError`` naming the file and line.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise TraceFormatError("no such power-trace file", path) from None
    except UnicodeDecodeError:
        raise TraceFormatError("not a UTF-8 text file", path) from None
    except OSError as err:
        raise TraceFormatError(f"cannot read: {err.strerror or err}", path) from None

    lines = text.splitlines()
    rows = [
        (n, row)
        for n, row in enumerate(csv.reader(lines), start=1)
        if any(c.strip() for c in row) and not row[0].lstrip().startswith("#")
    ]
    if not rows:
        raise TraceFormatError("empty file (expected a header 'time_s,power_w')", path, max(len(lines), 1))

    header_line, header = rows[0]
    t_col, p_col = _column(header, _TIME_NAMES), _column(header, _POWER_NAMES)
    if t_col is None or p_col is None:
        found = ",".join(cell.strip() for cell in header)
        raise TraceFormatError(
            f"header must name columns 'time_s,power_w' (or 'time,power'); found {found!r}", path, header_line
        )

    times: list[float] = []
    powers: list[float] = []
    width = max(t_col, p_col) + 1
    for n, row in rows[1:]:
        if len(row) < width:
            raise TraceFormatError(f"expected at least {width} columns, found {len(row)}", path, n)
        t = _number(row[t_col], "time", path, n)
        p = _number(row[p_col], "power", path, n)
        if p < 0:
            raise TraceFormatError(f"negative power {p} W", path, n)
        if times and t <= times[-1]:
            raise TraceFormatError(f"time {t} s is not after the previous sample's {times[-1]} s", path, n)
        times.append(t)
        powers.append(p)
    if len(times) < 2:
        last_line = rows[-1][0]
        raise TraceFormatError(f"{len(times)} sample(s); a power trace needs at least 2", path, last_line)
    return PowerTrace(np.array(times), np.array(powers))


@dataclass(frozen=True)
class Window:
    """The time window [``start_s``, ``end_s``] (trace clock) in which layer ``label`` ran ``executions`` times."""

    label: str
    start_s: float
    end_s: float
    executions: int

    def __post_init__(self) -> None:
        if not self.end_s > self.start_s:
            raise ValueError(f"window {self.label!r}: end_s {self.end_s} must be after start_s {self.start_s}")
        if self.executions < 1:
            raise ValueError(f"window {self.label!r}: executions must be >= 1, got {self.executions}")


@dataclass(frozen=True)
class WindowEnergy:
    """Energy of one window: total ``energy_j``, per execution, mean power (net of the baseline)."""

    label: str
    energy_j: float
    energy_per_execution_j: float
    mean_power_w: float
    samples: int  # trace samples inside [start_s, end_s]
    duration_s: float


def _integrate(trace: PowerTrace, start_s: float, end_s: float) -> tuple[float, int]:
    """Trapezoidal integral (joules) over [start_s, end_s], interpolating the edges, and the samples inside."""
    t, p = trace.time_s, trace.power_w
    lo = int(np.searchsorted(t, start_s, side="left"))
    hi = int(np.searchsorted(t, end_s, side="right"))
    inner_t = t[lo:hi]
    inner_p = p[lo:hi]
    xs = np.concatenate(([start_s], inner_t, [end_s]))
    ps = np.concatenate(([np.interp(start_s, t, p)], inner_p, [np.interp(end_s, t, p)]))
    energy_j = float(np.sum((ps[1:] + ps[:-1]) * np.diff(xs)) / 2)
    return energy_j, hi - lo


def integrate_windows(
    trace: PowerTrace, windows: Iterable[Window], *, min_samples: int = 10, baseline_w: float = 0.0
) -> list[WindowEnergy]:
    """Energy of each window by the trapezoidal rule on ``trace``, edges linearly interpolated.

    ``min_samples`` (default 10): a window holding fewer trace samples raises
    ``TraceFormatError`` (loop the layer longer or sample faster).
    ``baseline_w`` (default 0 W): idle power subtracted over the window, so the
    result is the energy the layer added; a baseline above the window's mean
    power gives a negative energy, which is reported, not clipped.
    """
    t0, t1 = float(trace.time_s[0]), float(trace.time_s[-1])
    results = []
    for w in windows:
        if w.start_s < t0 or w.end_s > t1:
            raise TraceFormatError(
                f"window {w.label!r} [{w.start_s}, {w.end_s}] s is outside the trace's time range [{t0}, {t1}] s"
            )
        raw_j, samples = _integrate(trace, w.start_s, w.end_s)
        if samples < min_samples:
            raise TraceFormatError(
                f"window {w.label!r} [{w.start_s}, {w.end_s}] s holds {samples} trace sample(s), fewer than "
                f"min_samples={min_samples}: run the layer more times (longer window) or sample the power faster"
            )
        duration_s = w.end_s - w.start_s
        energy_j = raw_j - baseline_w * duration_s
        results.append(
            WindowEnergy(
                label=w.label,
                energy_j=energy_j,
                energy_per_execution_j=energy_j / w.executions,
                mean_power_w=energy_j / duration_s,
                samples=samples,
                duration_s=duration_s,
            )
        )
    return results
