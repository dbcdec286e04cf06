"""Where to cut a network between a client and the cloud (NeuPart Sec. VII, Eq. 1 and 26, Algorithm 2).

A network is reduced to its split points: point 0 ("input") sends the input and computes nothing on the
client (FCC, fully cloud); the last point computes everything on the client (FISC, fully in situ). At each
point the client has spent the cumulative compute energy of the layers before it and sends that point's
(RLC-coded) tensor. Where the per-layer numbers come from (CNNergy, a measurement, a predictor) is the
caller's business.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from nnperf.optimize.partition._transmit import Channel, PartitionInputError, _non_negative

__all__ = ["PartitionResult", "RuntimePartitioner", "SplitPoint", "pareto_front", "partition"]

PARTITION_FORMAT = ("nnperf-partition", 1)


@dataclass(frozen=True)
class SplitPoint:
    """One place to cut: everything before it runs on the client, everything after it in the cloud.

    ``client_energy_j``: cumulative client compute energy of every layer up to this point (J; 0 at "input").
    ``client_latency_s``: cumulative client compute time (s). ``cloud_latency_s``: compute time of the
    remaining layers in the cloud (s; 0 at the last point). ``sent_bits``: bits transmitted here (the input
    image at "input", the RLC-coded tensor after; 0 at the last point unless the caller sends the result).
    All finite and >= 0 (PartitionInputError otherwise); stored as floats.
    """

    name: str
    client_energy_j: float
    client_latency_s: float = 0.0
    cloud_latency_s: float = 0.0
    sent_bits: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise PartitionInputError(f"name: a split point needs a non-empty name, got {self.name!r}")
        for field, what, unit in (("client_energy_j", "client energy", "J"), ("client_latency_s", "client time", "s"),
                                  ("cloud_latency_s", "cloud time", "s"), ("sent_bits", "sent data", "bits")):
            value = _non_negative(f"{field} of split point {self.name!r}", what, unit, getattr(self, field))
            object.__setattr__(self, field, value)


def _check_points(points: Sequence[SplitPoint]) -> tuple[SplitPoint, ...]:
    """The points as a tuple, after the rules that involve more than one point."""
    points = tuple(points)
    if len(points) < 2:
        raise PartitionInputError(f"points: need at least 2 split points (input and fully in situ), got {len(points)}")
    seen: set[str] = set()
    for i, point in enumerate(points):
        if not isinstance(point, SplitPoint):
            raise PartitionInputError(f"points: item {i} is not a SplitPoint, got {type(point).__name__}")
        if point.name in seen:
            raise PartitionInputError(f"points: split point name {point.name!r} appears twice")
        seen.add(point.name)
    for before, after in pairwise(points):
        if after.client_energy_j < before.client_energy_j:
            raise PartitionInputError(
                f"client_energy_j of split point {after.name!r} ({after.client_energy_j!r} J) is below that of "
                f"{before.name!r} ({before.client_energy_j!r} J): cumulative client energy must not decrease")
    return points


def _savings(best_j: float, reference_j: float) -> float:
    """``1 - best/reference``; 0 when the reference costs nothing (then the optimum costs nothing too)."""
    return 0.0 if reference_j == 0 else 1.0 - best_j / reference_j


@dataclass(frozen=True)
class PartitionResult:
    """The energy cost and delay of every split point on one channel, and the energy-optimal point.

    Per point (tuples in point order): ``transmit_energy_j`` (Eq. 24), ``energy_cost_j`` = cumulative client
    energy + transmit energy (J, NeuPart Eq. 1), ``delay_s`` = client time + transmit time + cloud time
    (s, Eq. 26). ``best`` is the index of the least energy cost, the earliest on a tie.
    """

    points: tuple[SplitPoint, ...]
    channel: Channel
    transmit_energy_j: tuple[float, ...]
    energy_cost_j: tuple[float, ...]
    delay_s: tuple[float, ...]
    best: int

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.points)

    @property
    def best_point(self) -> SplitPoint:
        return self.points[self.best]

    @property
    def savings_vs_fcc(self) -> float:
        """Fraction of client energy the optimum saves against sending the input (point 0)."""
        return _savings(self.energy_cost_j[self.best], self.energy_cost_j[0])

    @property
    def savings_vs_fisc(self) -> float:
        """Fraction of client energy the optimum saves against computing everything in situ (last point)."""
        return _savings(self.energy_cost_j[self.best], self.energy_cost_j[-1])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document, versioned, units in the keys."""
        return {
            "format": PARTITION_FORMAT[0], "version": PARTITION_FORMAT[1],
            "channel": {"bitrate_bps": self.channel.bitrate_bps, "tx_power_w": self.channel.tx_power_w},
            "best": self.best_point.name, "best_index": self.best,
            "savings_vs_fcc": self.savings_vs_fcc, "savings_vs_fisc": self.savings_vs_fisc,
            "points": [
                {"name": p.name, "client_energy_j": p.client_energy_j, "client_latency_s": p.client_latency_s,
                 "cloud_latency_s": p.cloud_latency_s, "sent_bits": p.sent_bits,
                 "transmit_energy_j": self.transmit_energy_j[i], "transmit_time_s": self.channel.transmit_time_s(
                     p.sent_bits), "energy_cost_j": self.energy_cost_j[i], "delay_s": self.delay_s[i]}
                for i, p in enumerate(self.points)],
        }


def partition(points: Sequence[SplitPoint], channel: Channel) -> PartitionResult:
    """Energy cost (Eq. 1) and delay (Eq. 26) of every split point on ``channel``, and the cheapest one.

    ``points``: at least 2, point 0 the input (FCC), the last fully in situ (FISC), names unique, cumulative
    client energy non-decreasing. Ties go to the earliest point (less work on the client).
    """
    points = _check_points(points)
    if not isinstance(channel, Channel):
        raise PartitionInputError(f"channel: expected a Channel, got {type(channel).__name__}")
    transmit = tuple(channel.transmit_energy_j(p.sent_bits) for p in points)
    cost = tuple(p.client_energy_j + t for p, t in zip(points, transmit, strict=True))
    delay = tuple(p.client_latency_s + channel.transmit_time_s(p.sent_bits) + p.cloud_latency_s for p in points)
    best = min(range(len(cost)), key=cost.__getitem__)  # min() keeps the first of equal keys
    return PartitionResult(points, channel, transmit, cost, delay, best)


class RuntimePartitioner:
    """NeuPart's Algorithm 2: the split decision per image, from vectors precomputed offline.

    Cumulative client energy (J) and the bits sent at every point are fixed for a network (intermediate
    sparsity barely depends on the image, NeuPart Sec. VII); only the input's bits (its JPEG/RLC size) and
    the channel change per call, so :meth:`decide` is one O(points) vector operation and an argmin.
    Attributes ``names``, ``client_energy_j`` and ``sent_bits`` (read-only float64 arrays).
    """

    def __init__(self, names: Sequence[str], client_energy_j: Sequence[float], sent_bits: Sequence[float]) -> None:
        if not len(names) == len(client_energy_j) == len(sent_bits):
            raise PartitionInputError(f"names, client_energy_j and sent_bits must have one entry per split point, "
                                      f"got {len(names)}, {len(client_energy_j)} and {len(sent_bits)}")
        points = _check_points([SplitPoint(n, e, sent_bits=b) for n, e, b in zip(names, client_energy_j, sent_bits, strict=True)])
        self.names: tuple[str, ...] = tuple(p.name for p in points)
        self.client_energy_j: npt.NDArray[np.float64] = np.array([p.client_energy_j for p in points])
        self.sent_bits: npt.NDArray[np.float64] = np.array([p.sent_bits for p in points])
        self.client_energy_j.setflags(write=False)
        self.sent_bits.setflags(write=False)

    @classmethod
    def from_points(cls, points: Sequence[SplitPoint]) -> RuntimePartitioner:
        """Precompute from split points (only their energies and bits are kept)."""
        points = _check_points(points)
        return cls([p.name for p in points], [p.client_energy_j for p in points], [p.sent_bits for p in points])

    def energy_cost_j(self, channel: Channel, input_bits: float | None = None) -> npt.NDArray[np.float64]:
        """Energy cost of every point (J, Eq. 1); ``input_bits`` replaces the bits sent at point 0 if given."""
        # the same operations in the same order as partition(), so both pick the same point on near-ties
        cost = self.client_energy_j + channel.tx_power_w * self.sent_bits / channel.bitrate_bps
        if input_bits is not None:
            bits = _non_negative("input_bits", "input data", "bits", input_bits)
            cost[0] = self.client_energy_j[0] + channel.tx_power_w * bits / channel.bitrate_bps
        return cost

    def decide(self, channel: Channel, input_bits: float | None = None) -> int:
        """Index of the energy-optimal split point on ``channel`` (earliest on a tie); see :meth:`energy_cost_j`."""
        return int(np.argmin(self.energy_cost_j(channel, input_bits)))

    def __repr__(self) -> str:
        return f"RuntimePartitioner({len(self.names)} points: {', '.join(self.names)})"


def pareto_front(result: PartitionResult) -> list[int]:
    """Indices of the split points no other point beats in both energy cost and delay, sorted by energy cost.

    A point is dominated when another costs no more energy (``energy_cost_j``) and takes no longer
    (``delay_s``), and is strictly better in one; points with equal pairs all stay. Ties in energy are
    ordered by delay, then index.
    """
    pairs = list(zip(result.energy_cost_j, result.delay_s, strict=True))
    front = [i for i, (e, d) in enumerate(pairs)
             if not any(e2 <= e and d2 <= d and (e2 < e or d2 < d) for e2, d2 in pairs)]
    return sorted(front, key=lambda i: (pairs[i][0], pairs[i][1], i))

