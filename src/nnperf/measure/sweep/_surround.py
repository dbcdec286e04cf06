"""Choosing the profiling network's surrounding layers (Osterwind 3.3.1).

"To decrease overhead of the surrounding layers, we can perform sweeps to
determine how the input and output layers affect the layer under test. If
these sweeps show a convergence, the smallest layer combination, which is
within a margin of the convergence point, can be selected."

nnperf sweeps the surround width w (the channels the profiling network takes
in and gives out) over ``SURROUND_WIDTHS``, times the layer under test at each,
takes the time at the widest surround as the convergence point, and chooses
the smallest w from which every wider surround stays within ``margin`` of it.
The widths are measured in ``SURROUND_ROUNDS`` interleaved passes and each
width's time is the median of its passes: on this shared VM the same layer
drifted by 7% between neighbouring single measurements, more than the margin,
and one such drift alone decided the choice. Every point is stored (campaign
``surround|...``; an interrupted sweep resumes and a finished one is reused
unless ``fresh``), and the choice is recorded per system and layer kind as a
model document of kind ``steps-surround``.

This module holds the choice as data and as a pure function of the times
(:class:`SurroundChoice`, :func:`choose_width`); measuring the widths into the
store and recording the choice is ``nnperf.campaign.find_surround``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nnperf.measure.sweep._config import LayerConfig, SweepInputError

SURROUND_WIDTHS = (1, 2, 4, 8, 16, 32, 64, 128)
SURROUND_MARGIN = 0.03
SURROUND_ROUNDS = 3
SURROUND_KIND = "steps-surround"


@dataclass(frozen=True)
class SurroundChoice:
    """The surround sweep of one layer kind on one system and the width it chose.

    ``latency_s[i]`` is the layer under test's median time with surround
    ``widths[i]``; ``converged`` is False when the two widest surrounds still
    differ by more than ``margin`` (the widest is then chosen).
    """

    kind: str
    config: LayerConfig
    widths: tuple[int, ...]
    latency_s: tuple[float, ...]
    margin: float
    chosen: int
    converged: bool

    @property
    def convergence_s(self) -> float:
        return self.latency_s[-1]

    def to_dict(self) -> dict[str, Any]:
        return {"format": SURROUND_KIND, "version": 1, "kind": self.kind, "config": dict(self.config.params),
                "widths": list(self.widths), "latency_s": list(self.latency_s), "margin": self.margin,
                "chosen": self.chosen, "converged": self.converged}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> SurroundChoice:
        return cls(doc["kind"], LayerConfig.of(doc["kind"], doc["config"]), tuple(doc["widths"]),
                   tuple(doc["latency_s"]), float(doc["margin"]), int(doc["chosen"]), bool(doc["converged"]))


def choose_width(widths: tuple[int, ...], latency_s: tuple[float, ...], margin: float) -> tuple[int, bool]:
    """The smallest width from which every wider surround is within ``margin`` of the widest one's time."""
    if len(widths) != len(latency_s) or len(widths) < 2:
        raise SweepInputError("a surround sweep needs at least two widths, each with a time")
    target = latency_s[-1]
    within = [abs(t - target) <= margin * target for t in latency_s]
    converged = abs(latency_s[-2] - target) <= margin * target
    chosen = len(widths) - 1
    while chosen > 0 and within[chosen - 1]:
        chosen -= 1
    return widths[chosen], converged
