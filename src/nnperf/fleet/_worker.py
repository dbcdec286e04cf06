"""What runs on a node: an item measured on the node's own backend, after checking the node is of its system.

Nothing here imports Ray: the Ray tasks (``_ray.py``) wrap these functions, and a worker keeps one backend per
settings for the items it runs.
"""

from __future__ import annotations

import functools
from typing import Any

from nnperf.campaign import Item
from nnperf.fleet._settings import SystemMismatchError, SystemSettings, measuring_environment
from nnperf.measure import SystemSpec
from nnperf.measure.backends import Backend


@functools.lru_cache(maxsize=4)
def _backend(settings: SystemSettings) -> Backend:
    """One backend per settings in a worker process, built on its first item (framework imports, thread pools)."""
    return settings.create()


def node_system(settings: SystemSettings) -> SystemSpec:
    """The system ``settings`` make on this node, in the environment its items are measured in."""
    with measuring_environment():
        return _backend(settings).system()


def measure_on_node(settings: SystemSettings, system_key: str, item: Item, node: str) -> Any:
    """Measures ``item`` on this node; refuses (:class:`SystemMismatchError`) when the node's system for
    ``settings`` is not ``system_key``, the system the item belongs to."""
    with measuring_environment():
        backend = _backend(settings)
        actual = backend.system()
        if actual.key != system_key:
            raise SystemMismatchError(
                f"node {node} measures {actual.label} on {actual.device_name} as system {actual.key}, not the "
                f"item's system {system_key}: it refuses the item {item.label!r} (start the node with "
                "`nnperf fleet up` and the same backend settings and software as the system's other nodes)")
        return item.measure(backend)
