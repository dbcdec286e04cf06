"""A simulated measuring item, for the fleet's scaling benchmark: it sleeps a given time and returns that time as
a fixed timing. Its "measurement" is a number chosen in advance, never a reported figure of a device."""

from __future__ import annotations

import time
from dataclasses import dataclass

from nnperf.measure import LayerMeasurement, Method, fixed_timing
from nnperf.measure.backends import Backend


@dataclass(frozen=True)
class SimulatedItem:
    """An item that takes ``duration_s`` seconds of wall time on its node (asleep: it uses no core)."""

    name: str
    duration_s: float

    @property
    def label(self) -> str:
        return self.name

    def measure(self, backend: Backend) -> LayerMeasurement:
        if self.duration_s > 0:
            time.sleep(self.duration_s)
        return LayerMeasurement(self.name, "simulated", Method.ISOLATED, fixed_timing([self.duration_s or 1e-9]))
