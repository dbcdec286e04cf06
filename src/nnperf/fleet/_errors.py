"""What every module of the fleet shares: its errors and the variable that carries a node's core sets."""

from __future__ import annotations

from nnperf.errors import NnperfError

CORES_MARKER = "NNPERF_FLEET_CORE_SETS"
"""Set on a node started with several slots: its core sets, ``;`` between sets and ``,`` between cores."""


class FleetError(NnperfError):
    """The fleet cannot do what was asked (Ray missing, no cluster at the address, a lost node)."""


class NoNodeForSystemError(FleetError):
    """No node of the fleet advertises the system an item must be measured on."""


class SystemMismatchError(FleetError):
    """A node was asked to measure a system other than its own."""


class CoreSetError(FleetError):
    """The cores cannot give every slot a set of its own."""
