"""A fleet of measuring machines (Ray), from Python: start or join one, see its nodes, leave it (``nnperf fleet
up|status|down``). Campaigns run on it through :mod:`nnperf.fleet`'s runners."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnperf.measure import System

if TYPE_CHECKING:
    from nnperf.fleet import FleetNode


def fleet_up(systems: Sequence[System], address: str | None = None, *, slots: int = 1, num_cpus: int | None = None,
             port: int = 6379) -> str:
    """Starts a Ray node on this machine that measures ``systems`` (``slots`` items at once per system, each on a
    core set of its own when there are several): the head of a new fleet, or a node joining the fleet at
    ``address``. ``nnperf.System("primitives", threads=N)`` makes a node that profiles the primitive dataset.
    Returns the fleet's address."""
    from nnperf.fleet import SystemSettings
    from nnperf.fleet import fleet_up as start

    return start([SystemSettings.of(s) for s in systems], address=address, slots=slots, num_cpus=num_cpus, port=port)


@dataclass(frozen=True)
class FleetStatus:
    """The fleet's nodes (alive or not, with the systems each advertises) and its measuring slots in use now, by
    system key."""

    address: str
    nodes: tuple[FleetNode, ...]
    busy_slots: dict[str, float]


def fleet_status(address: str = "auto") -> FleetStatus:
    """The nodes of the fleet at ``address`` and the systems each measures."""
    from nnperf.fleet import Fleet

    with Fleet(address) as fleet:
        return FleetStatus(address, tuple(fleet.nodes()), fleet.busy_slots())


def fleet_down() -> None:
    """Stops this machine's Ray node (``ray stop``): it leaves the fleet."""
    from nnperf.fleet import fleet_down as stop

    stop()
