"""Energy meters: cumulative counters (NVML, RAPL) and imported power traces.

Meters are plug-ins in ``METERS`` (third parties add theirs through the
``nnperf.power_meters`` entry-point group); ``get_meter`` returns one that can
run here or raises ``UnavailableError`` saying why not.
"""

from __future__ import annotations

from nnperf.measure.power._base import EnergyReading, PowerMeter, measure_energy, min_duration_s
from nnperf.measure.power._nvml import NvmlMeter
from nnperf.measure.power._rapl import RaplMeter
from nnperf.measure.power._trace import (
    PowerTrace,
    TraceFormatError,
    Window,
    WindowEnergy,
    integrate_windows,
    read_trace_csv,
)
from nnperf.registry import Availability, Registry, UnavailableError

METERS = Registry[PowerMeter]("power meter", "nnperf.power_meters")
METERS.register("nvml", NvmlMeter)
METERS.register("rapl", RaplMeter)


def get_meter(name: str) -> PowerMeter:
    """A new meter ``name`` that can run here (``UnknownPluginError`` / ``UnavailableError`` otherwise)."""
    meter = METERS.create(name)
    avail = meter.availability()
    if not avail.ok:
        raise UnavailableError(f"power meter {name!r} cannot run here: {avail.reason}")
    return meter


def meter_report() -> list[tuple[str, Availability]]:
    """Every registered meter with whether it can run here and, if not, why."""
    return [(name, METERS.create(name).availability()) for name in METERS.names()]


def available_meters() -> list[str]:
    """Names of the meters that can run here, sorted."""
    return [name for name, avail in meter_report() if avail.ok]


__all__ = [
    "METERS",
    "EnergyReading",
    "NvmlMeter",
    "PowerMeter",
    "PowerTrace",
    "RaplMeter",
    "TraceFormatError",
    "Window",
    "WindowEnergy",
    "available_meters",
    "get_meter",
    "integrate_windows",
    "measure_energy",
    "meter_report",
    "min_duration_s",
    "read_trace_csv",
]
