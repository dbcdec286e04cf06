"""A fleet of measuring machines (Ray), from Python: start or join one, see its nodes, leave it (``nnperf fleet
up|status|down``). Campaigns run on it through :mod:`nnperf.fleet`'s runners."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnperf.api._session import StoreLike, opened_store
from nnperf.measure import System

if TYPE_CHECKING:
    from nnperf.fleet import FleetNode, RayRunner

ResultHook = Callable[[str, str], None]
"""Called with (node, item label) each time a node of the fleet has measured an item."""


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


@contextmanager
def fleet_runners(address: str, system: System, store: StoreLike = None, *,
                  on_result: ResultHook | None = None) -> Iterator[list[RayRunner]]:
    """For the block: one runner per system that ``system``'s settings make on the nodes of the fleet at
    ``address`` (nodes of different CPUs are different systems), to give the functions that measure as their
    system. When the block ends, each runner records in ``store`` on which nodes it measured how many items.

    ``on_result`` is called as each item comes back from a node. Raises ``NoNodeForSystemError`` when no node of
    the fleet measures these settings."""
    from nnperf.fleet import Fleet

    with opened_store(store) as opened, Fleet(address) as fleet:
        runners = fleet.runners(system, store=opened, on_result=on_result)
        try:
            yield runners
        finally:
            for runner in runners:
                runner.close()


@contextmanager
def fleet_runner(address: str, system: System, store: StoreLike = None, *,
                 on_result: ResultHook | None = None) -> Iterator[RayRunner]:
    """The runner of the fleet's nodes of the one system ``system``'s settings make there (:func:`fleet_runners`);
    several systems (nodes of different CPUs) are an error: a function measures one system at a time."""
    from nnperf.fleet import FleetError

    with fleet_runners(address, system, store, on_result=on_result) as runners:
        if len(runners) > 1:
            raise FleetError(f"the fleet has {len(runners)} systems for {system.label}: "
                             + ", ".join(f"{r.system().key} ({r.system().device_name}, {len(r.nodes)} nodes)"
                                         for r in runners) + "; this command measures one system at a time")
        yield runners[0]
