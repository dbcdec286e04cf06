"""Partitioning across channels and input images: the grids behind NeuPart Fig. 12/13(a) and Table IV."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnperf.optimize.partition._split import PartitionResult, SplitPoint, _check_points, partition
from nnperf.optimize.partition._transmit import Channel, PartitionInputError, check_sparsity

__all__ = ["NEUPART_INPUT_SPARSITIES", "ChannelSweep", "QuartileRow", "quartile_table", "sweep_channels"]

NEUPART_INPUT_SPARSITIES = (0.5199, 0.6080, 0.6909)
"""Quartile delimiters of the JPEG input sparsity over 5500 ImageNet images (NeuPart Fig. 11, Table IV)."""

Grid = tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class ChannelSweep:
    """The energy-optimal split point for every (transmit power, bit rate) pair.

    Grids are indexed ``[power_index][bitrate_index]``: ``best`` (point index), ``best_name``, ``energy_cost_j``
    (J, Eq. 1, at the optimum), ``savings_vs_fcc`` and ``savings_vs_fisc`` (fractions), ``delay_s``
    (s, Eq. 26, at the optimum). ``fcc_delay_s`` and ``fisc_delay_s`` are per bit rate (the delay does
    not depend on the transmit power).
    """

    names: tuple[str, ...]
    bitrates_bps: tuple[float, ...]
    powers_w: tuple[float, ...]
    best: tuple[tuple[int, ...], ...]
    energy_cost_j: Grid
    savings_vs_fcc: Grid
    savings_vs_fisc: Grid
    delay_s: Grid
    fcc_delay_s: tuple[float, ...]
    fisc_delay_s: tuple[float, ...]

    @property
    def best_name(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(self.names[i] for i in row) for row in self.best)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document with units in the keys; grids are lists of rows, one row per power."""
        return {"format": "nnperf-partition-sweep", "version": 1, "names": list(self.names),
                "bitrates_bps": list(self.bitrates_bps), "powers_w": list(self.powers_w),
                "best": [list(r) for r in self.best_name], "energy_cost_j": [list(r) for r in self.energy_cost_j],
                "savings_vs_fcc": [list(r) for r in self.savings_vs_fcc],
                "savings_vs_fisc": [list(r) for r in self.savings_vs_fisc],
                "delay_s": [list(r) for r in self.delay_s],
                "fcc_delay_s": list(self.fcc_delay_s), "fisc_delay_s": list(self.fisc_delay_s)}


def _grid(array: np.ndarray) -> Grid:
    return tuple(tuple(float(v) for v in row) for row in array)


def _savings(best: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``1 - best/reference`` elementwise, 0 where the reference costs nothing (see _split._savings)."""
    safe = np.where(reference == 0, 1.0, reference)
    return np.where(reference == 0, 0.0, 1.0 - best / safe)


def sweep_channels(points: Sequence[SplitPoint], bitrates_bps: Sequence[float],
                   powers_w: Sequence[float]) -> ChannelSweep:
    """Partition ``points`` on every channel of the grid ``powers_w`` (W) x ``bitrates_bps`` (bit/s).

    Vectorised over the grid; each cell equals ``partition(points, Channel(bitrate, power))``.
    """
    points = _check_points(points)
    if len(bitrates_bps) == 0 or len(powers_w) == 0:
        raise PartitionInputError(f"bitrates_bps and powers_w: need at least one of each, got "
                                  f"{len(bitrates_bps)} bit rates and {len(powers_w)} powers")
    rates = tuple(Channel(b, 1.0).bitrate_bps for b in bitrates_bps)
    powers = tuple(Channel(1.0, p).tx_power_w for p in powers_w)
    energy = np.array([p.client_energy_j for p in points])
    bits = np.array([p.sent_bits for p in points])
    rate = np.array(rates)[None, :, None]
    # axes (power, bitrate, point); the operation order matches Channel.transmit_energy_j and partition()
    cost = energy + np.array(powers)[:, None, None] * bits / rate
    delay = np.array([p.client_latency_s for p in points]) + bits / rate + np.array([p.cloud_latency_s for p in points])
    best = np.argmin(cost, axis=-1)
    best_cost = np.take_along_axis(cost, best[..., None], axis=-1)[..., 0]
    best_delay = np.take_along_axis(np.broadcast_to(delay, cost.shape), best[..., None], axis=-1)[..., 0]
    return ChannelSweep(
        names=tuple(p.name for p in points), bitrates_bps=rates, powers_w=powers,
        best=tuple(tuple(int(i) for i in row) for row in best), energy_cost_j=_grid(best_cost),
        savings_vs_fcc=_grid(_savings(best_cost, cost[..., 0])), savings_vs_fisc=_grid(_savings(best_cost, cost[..., -1])),
        delay_s=_grid(best_delay), fcc_delay_s=tuple(float(v) for v in delay[0, :, 0]),
        fisc_delay_s=tuple(float(v) for v in delay[0, :, -1]))


@dataclass(frozen=True)
class QuartileRow:
    """One row of NeuPart's Table IV: the optimum for an input image of sparsity ``input_sparsity``.

    ``energy_cost_j`` (J) and ``delay_s`` (s) are at the optimum; ``fcc_energy_j`` and ``fisc_energy_j``
    are the costs of sending the input and of computing everything in situ.
    """

    input_sparsity: float
    best_index: int
    best_name: str
    energy_cost_j: float
    fcc_energy_j: float
    fisc_energy_j: float
    savings_vs_fcc: float
    savings_vs_fisc: float
    delay_s: float

    @classmethod
    def from_result(cls, input_sparsity: float, result: PartitionResult) -> QuartileRow:
        return cls(input_sparsity, result.best, result.best_point.name, result.energy_cost_j[result.best],
                   result.energy_cost_j[0], result.energy_cost_j[-1], result.savings_vs_fcc,
                   result.savings_vs_fisc, result.delay_s[result.best])


def quartile_table(points_for_sparsity: Callable[[float], Sequence[SplitPoint]], input_sparsities: Sequence[float],
                   channel: Channel) -> list[QuartileRow]:
    """Table IV of NeuPart: the optimum and its savings for images of each input sparsity (a zero fraction).

    ``points_for_sparsity(s)`` builds the split points for an input of sparsity ``s`` (usually only the
    bits sent at "input" change); pass :data:`NEUPART_INPUT_SPARSITIES` for the paper's quartile delimiters
    (the paper averages over the images of each quartile; this evaluates at the delimiters).
    """
    sparsities = [check_sparsity(s, "input_sparsities") for s in input_sparsities]
    if not sparsities:
        raise PartitionInputError("input_sparsities: need at least one input sparsity, got none")
    return [QuartileRow.from_result(s, partition(points_for_sparsity(s), channel)) for s in sparsities]
