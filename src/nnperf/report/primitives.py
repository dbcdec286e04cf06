"""The convolution primitives in words: what ``nnperf primitives`` and ``nnperf select`` print of a profile, a
primitive or a configuration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nnperf.primitives import config_label

if TYPE_CHECKING:
    from nnperf.campaign import PrimitiveProfileReport

__all__ = ["config_label", "family", "primitive_columns", "profile_document", "speed_lines"]


def family(name: str) -> str:
    """The family of the primitive ``name``, or "layout" for a layout transformation (``chw->hwc``)."""
    from nnperf.primitives import get_primitive

    return "layout" if "->" in name else get_primitive(name).family.value


def primitive_columns(name: str) -> tuple[str, str, str, str]:
    """(name, family, input layout, output layout) of the primitive ``name``."""
    from nnperf.primitives import get_primitive

    p = get_primitive(name)
    return p.name, p.family.value, p.input_layout.name, p.output_layout.name


def profile_document(report: PrimitiveProfileReport) -> dict[str, Any]:
    """The ``nnperf primitives profile --json`` document of one system's profile."""
    return {"format": "nnperf-primitive-profile", "version": 1, "system_id": report.system_id,
            "measured": report.measured, "reused": report.reused, "remaining": report.remaining,
            "samples": report.samples, "elapsed_s": report.elapsed_s,
            "failures": [list(f) for f in report.failures],
            "speed_readings_s": [list(r) for r in report.speed_readings_s], "retimed": list(report.retimed)}


def speed_lines(readings_s: Sequence[tuple[str, float]], retimed: int = 0) -> list[tuple[str, str]]:
    """(text, rich style) of the lines on the machine-speed reference's median over a profile's configurations
    (their latest readings: ``retimed`` of them were timed again for a slow one), and those timed while the machine
    ran over ``SLOW_FACTOR`` times slower than that; none when no configuration timed the reference."""
    from nnperf.campaign import SLOW_FACTOR, SPEED_REFERENCE, ProfileSpeed

    speed = ProfileSpeed(tuple(readings_s))
    if speed.standard_s is None:
        return []
    slow = speed.slow()
    again = f", {retimed} of them after timing them again for a slow reading" if retimed else ""
    median = (f"{SPEED_REFERENCE}: {speed.standard_s * 1e3:.3g} ms, the median over {len(readings_s)} "
              f"configurations{again}; {len(slow)} timed while it took over {SLOW_FACTOR:g}x that (each "
              "configuration is levelled by its own reading when the dataset is read)")
    lines = [(median, "")]
    lines += [(f"  {label}: {factor:.2f}x", "yellow") for label, factor in slow[:10]]
    if len(slow) > 10:
        lines.append((f"  and {len(slow) - 10} more", "yellow"))
    return lines
