"""Parsing of arguments with units: number lists such as ``--sweep-bitrates 5:200:5`` (Mbit/s), durations
such as ``--budget 10m``."""

from __future__ import annotations

import math

from nnperf.errors import NnperfError

MAX_SWEEP_POINTS = 10_000
"""More bit rates than a figure can show; a range this long is a typo (e.g. a step of 1e-6)."""


def parse_bitrate_sweep(text: str, option: str = "--sweep-bitrates") -> list[float]:
    """'START:STOP:STEP' in Mbit/s -> the bit rates in bit/s, STOP included when the steps land on it.

    Raises NnperfError for anything but three finite numbers with 0 < START <= STOP and STEP > 0, and for
    more than ``MAX_SWEEP_POINTS`` points.
    """
    try:
        start, stop, step = (float(x) for x in text.split(":"))
    except ValueError:
        raise NnperfError(f"{option}: {text!r} is not START:STOP:STEP in Mbit/s") from None
    if not all(math.isfinite(v) for v in (start, stop, step)) or not (0 < start <= stop and step > 0):
        raise NnperfError(f"{option}: need finite numbers with 0 < START <= STOP and STEP > 0, got {text!r}")
    steps = (stop - start) / step + 1e-9  # a float: 1:1e300:1e-300 overflows to inf
    if steps + 1 > MAX_SWEEP_POINTS:
        raise NnperfError(f"{option}: {text!r} gives {steps + 1:.3g} bit rates, more than {MAX_SWEEP_POINTS}; "
                          "use a larger STEP")
    count = int(steps) + 1
    return [(start + i * step) * 1e6 for i in range(count)]


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(text: str, option: str = "--budget") -> float:
    """'90', '90s', '10m' or '1.5h' -> seconds; anything else, or a duration that is not positive, is an
    NnperfError naming ``option``."""
    raw = text.strip().lower()
    number, unit = raw, "s"
    for suffix in sorted(_DURATION_UNITS, key=len, reverse=True):
        if raw.endswith(suffix):
            number, unit = raw[: -len(suffix)], suffix
            break
    try:
        seconds = float(number) * _DURATION_UNITS[unit]
    except ValueError:
        raise NnperfError(f"{option}: {text!r} is not a duration (e.g. 90s, 10m, 1.5h)") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise NnperfError(f"{option}: the duration must be positive, got {text!r}")
    return seconds


def parse_budget(text: str | None, option: str) -> float | None:
    """A time budget that may be switched off: None (not given) -> None, '0' (with or without a unit) -> 0, else
    :func:`parse_duration`."""
    if text is None:
        return None
    try:
        if float(text.strip().lower().rstrip("minhs") or "nan") == 0:
            return 0.0
    except ValueError:
        pass
    return parse_duration(text, option)


def parse_sample_budget(text: str | None) -> float:
    """``--sample-budget`` in seconds (:func:`parse_budget`), the API's default
    (:data:`nnperf.api.DEFAULT_SAMPLE_BUDGET_S`) when it is not given."""
    from nnperf.api import DEFAULT_SAMPLE_BUDGET_S

    budget_s = parse_budget(text, "--sample-budget")
    return DEFAULT_SAMPLE_BUDGET_S if budget_s is None else budget_s
