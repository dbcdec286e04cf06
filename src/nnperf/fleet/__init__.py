"""Measurement campaigns fanned out over a fleet of machines with Ray, nothing lost when a node dies.

A campaign's work is cut into items (``nnperf.campaign``: a layer, the whole network, profiler passes, a sweep
point, the roofline peaks), each a pure function of (system, item). In one process they run on a backend as
always, and Ray is never imported. On a fleet, a :class:`RayRunner` runs them as Ray tasks on the nodes that
advertise their system, one measuring item per node at a time, and hands each result back to the driver, the
one writer of the store; an item whose worker died is measured again elsewhere and stored once.

- :class:`SystemSettings`: the :class:`~nnperf.measure.System` an item is measured with, :func:`system_resource`,
  :func:`node_resources` (``_settings.py``);
- :class:`FleetError` and its kinds, :data:`CORES_MARKER` (``_errors.py``, shared by the modules below);
- :class:`Fleet` (a connection: nodes, runners per system), :class:`RayRunner`, :func:`fleet_up`,
  :func:`fleet_down` (``_ray.py``, the only module that imports Ray);
- :func:`measure_on_node`: what a node runs, refusing an item of another system (``_worker.py``);
- :func:`core_sets`, :func:`pinned_to_a_free_core_set`: a node's slots on disjoint cores (``_cores.py``);
- :func:`node_placements`: which node measured how many items, from the store (``_ledger.py``);
- :class:`SimulatedItem`: an item that only sleeps, for the scaling benchmark, :data:`SPEED_VARIABLE` a simulated
  node's speed (``_simulate.py``).
"""

from nnperf.fleet._cores import core_sets, pinned_to_a_free_core_set
from nnperf.fleet._errors import CORES_MARKER, CoreSetError, FleetError, NoNodeForSystemError, SystemMismatchError
from nnperf.fleet._ledger import PLACEMENT_KIND, node_placements, save_placement
from nnperf.fleet._ray import Fleet, FleetNode, RayRunner, fleet_down, fleet_up
from nnperf.fleet._settings import (
    RESOURCE_PREFIX,
    SleepingClock,
    SystemSettings,
    node_environment,
    node_resources,
    system_resource,
)
from nnperf.fleet._simulate import SPEED_VARIABLE, SimulatedItem
from nnperf.fleet._worker import measure_on_node, node_system

__all__ = [
    "CORES_MARKER",
    "PLACEMENT_KIND",
    "RESOURCE_PREFIX",
    "SPEED_VARIABLE",
    "CoreSetError",
    "Fleet",
    "FleetError",
    "FleetNode",
    "NoNodeForSystemError",
    "RayRunner",
    "SimulatedItem",
    "SleepingClock",
    "SystemMismatchError",
    "SystemSettings",
    "core_sets",
    "fleet_down",
    "fleet_up",
    "measure_on_node",
    "node_environment",
    "node_placements",
    "node_resources",
    "node_system",
    "pinned_to_a_free_core_set",
    "save_placement",
    "system_resource",
]
