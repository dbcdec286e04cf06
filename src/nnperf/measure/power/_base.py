"""The power-meter interface: a cumulative energy counter read around a block of runs.

A meter only has to expose a monotonically increasing energy counter (joules)
and how often that counter updates. The energy of one execution is the counter
difference around ``executions`` back-to-back runs, divided by ``executions``;
the block must last many counter updates (``min_duration_s``) for the
difference to mean anything, as PreVIous (Velasco-Montero et al., IV-C3) loops
each layer 50 times under a power analyser.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass

from nnperf.registry import Availability


class PowerMeter(abc.ABC):
    """A cumulative energy counter.

    Subclasses set ``name`` (the registry name) and ``sample_period_s`` (how
    often, in seconds, the counter updates; callers loop a block long enough to
    span many updates). ``read_energy_j`` raises ``UnavailableError`` when
    ``availability()`` is not ok.
    """

    name: str
    sample_period_s: float

    @abc.abstractmethod
    def availability(self) -> Availability:
        """Whether the counter can be read here, and if not, why."""

    @abc.abstractmethod
    def read_energy_j(self) -> float:
        """The counter's current value in joules (arbitrary origin, never decreasing)."""


@dataclass(frozen=True)
class EnergyReading:
    """The energy of ``executions`` back-to-back runs measured by ``meter`` (a meter name)."""

    energy_per_execution_j: float
    executions: int
    duration_s: float
    meter: str

    @property
    def energy_j(self) -> float:
        """Energy of the whole block (joules)."""
        return self.energy_per_execution_j * self.executions

    @property
    def mean_power_w(self) -> float:
        """Mean power over the block (watts); 0 for a zero-length block."""
        return self.energy_j / self.duration_s if self.duration_s > 0 else 0.0


def min_duration_s(meter: PowerMeter, samples: int = 50) -> float:
    """How long (seconds) a measured block should last to span ``samples`` counter updates (default 50)."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    return samples * meter.sample_period_s


def measure_energy(meter: PowerMeter, run_block: Callable[[int], float], executions: int) -> EnergyReading:
    """Read the counter, call ``run_block(executions)``, read it again.

    ``run_block(n)`` runs the measured code ``n`` times back to back and returns
    the block's wall time in seconds (its own clock, e.g. ``time.perf_counter``).
    The caller chooses ``executions`` so the block lasts at least
    ``min_duration_s(meter)``; shorter blocks are measured but mostly quantisation.
    """
    if executions < 1:
        raise ValueError(f"executions must be >= 1, got {executions}")
    before_j = meter.read_energy_j()
    duration_s = float(run_block(executions))
    after_j = meter.read_energy_j()
    return EnergyReading(
        energy_per_execution_j=(after_j - before_j) / executions,
        executions=executions,
        duration_s=duration_s,
        meter=meter.name,
    )
