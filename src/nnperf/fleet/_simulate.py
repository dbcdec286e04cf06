"""A simulated measuring item, for the fleet's scaling benchmark: it sleeps a given time and returns that time as
a fixed timing. Its "measurement" is a number chosen in advance, never a reported figure of a device.

A simulated node's cost model is its speed: a node whose processes have :data:`SPEED_VARIABLE` set to ``s``
sleeps ``duration_s / s`` per item (1 when unset), so a simulated fleet can mix fast and slow devices.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from nnperf.measure import LayerMeasurement, Method, fixed_timing
from nnperf.measure.backends import Backend

SPEED_VARIABLE = "NNPERF_SIMULATED_SPEED"
"""The environment variable holding a simulated node's speed (items take their duration over it)."""


@dataclass(frozen=True)
class SimulatedItem:
    """An item that takes ``duration_s`` seconds of wall time on its node over the node's speed (asleep: it uses
    no core); its timing is that wall time."""

    name: str
    duration_s: float

    @property
    def label(self) -> str:
        return self.name

    def measure(self, backend: Backend, meter: object = None) -> LayerMeasurement:
        seconds = self.duration_s / float(os.environ.get(SPEED_VARIABLE, "1"))
        if seconds > 0:
            time.sleep(seconds)
        return LayerMeasurement(self.name, "simulated", Method.ISOLATED, fixed_timing([seconds or 1e-9]))
