"""Design-space exploration: a network's energy over GLB sizes, PE arrays and register files (NeuPart VIII-B).

Every point re-schedules every layer with the model's own batch choice (the reference's first
simulation), since a table's hand-picked n is only valid for the spec it was picked for. With the
'constant' GLB law the energy can only fall as the GLB grows (more reuse, no cost); with 'sqrt' the
cost per access grows and an optimum appears, as in NeuPart Fig. 13(c).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nnperf.accel._energy import network_energy
from nnperf.accel._layers import AccelLayer
from nnperf.accel._spec import AcceleratorSpec
from nnperf.errors import NnperfError

NEAR_OPTIMUM = 0.02
"""'Within 2% of the optimum', NeuPart's engineering choice of 32 kB over 88 kB."""


class SweepError(NnperfError):
    """A design-space sweep with no valid point or a bad axis."""


@dataclass(frozen=True)
class DesignPoint:
    """One accelerator configuration and the network's energy per image on it (None: cannot be scheduled)."""

    glb_kb: float
    pe_rows: int
    pe_cols: int
    rf_scale: float
    """register files as a multiple of the spec's"""
    energy_j: float | None
    why_not: str = ""


@dataclass(frozen=True)
class DesignSweep:
    network: str
    spec: AcceleratorSpec
    points: tuple[DesignPoint, ...]

    def valid(self) -> list[DesignPoint]:
        return [p for p in self.points if p.energy_j is not None]

    @property
    def best(self) -> DesignPoint:
        valid = self.valid()
        if not valid:
            raise SweepError(f"{self.network}: no configuration of the sweep can run the network")
        return min(valid, key=lambda p: (p.energy_j, p.glb_kb))

    def smallest_near_best(self, tolerance: float = NEAR_OPTIMUM) -> DesignPoint:
        """The smallest GLB (with the optimum's PE array and register files) within ``tolerance`` of the optimum."""
        best = self.best
        assert best.energy_j is not None
        same = [p for p in self.valid() if (p.pe_rows, p.pe_cols, p.rf_scale) == (best.pe_rows, best.pe_cols,
                                                                                   best.rf_scale)]
        near = [p for p in same if p.energy_j is not None and p.energy_j <= best.energy_j * (1 + tolerance)]
        return min(near, key=lambda p: p.glb_kb)

    def to_dict(self) -> dict[str, Any]:
        best, near = self.best, self.smallest_near_best()
        return {"format": "nnperf-accel-sweep", "version": 1, "network": self.network, "spec": self.spec.to_dict(),
                "points": [vars(p) for p in self.points], "best": vars(best), "within_2_percent": vars(near)}


def sweep_design(layers: Sequence[AccelLayer], spec: AcceleratorSpec, glb_kb: Sequence[float],
                 pe_arrays: Sequence[tuple[int, int]] | None = None, rf_scales: Sequence[float] = (1.0,),
                 name: str = "network", progress: Callable[[int, int], None] | None = None) -> DesignSweep:
    """The network's energy at every combination of GLB size, PE array (rows, cols) and register-file scale."""
    if not glb_kb:
        raise SweepError("the sweep needs at least one GLB size")
    arrays = list(pe_arrays or [(spec.pe_rows, spec.pe_cols)])
    combos = [(g, a, r) for a in arrays for r in rf_scales for g in glb_kb]
    points: list[DesignPoint] = []
    for done, (glb, (rows, cols), scale) in enumerate(combos):
        try:
            point_spec = replace(
                spec, glb_kb=float(glb), pe_rows=rows, pe_cols=cols,
                filter_rf_entries=max(1, round(spec.filter_rf_entries * scale)),
                ifmap_rf_entries=max(1, round(spec.ifmap_rf_entries * scale)),
                psum_rf_entries=max(1, round(spec.psum_rf_entries * scale)))
            energy: float | None = network_energy(layers, point_spec, name, batch="model").total_j
            why = ""
        except NnperfError as exc:  # ScheduleError, or a spec the scaling made impossible
            energy, why = None, str(exc)
        points.append(DesignPoint(float(glb), rows, cols, float(scale), energy, why))
        if progress is not None:
            progress(done + 1, len(combos))
    return DesignSweep(network=name, spec=spec, points=tuple(points))
