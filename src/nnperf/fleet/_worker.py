"""What runs on a node: an item measured on the node's own backend, after checking the node is of its system.

Nothing here imports Ray: the Ray tasks (``_ray.py``) wrap these functions, and a worker keeps one backend per
settings for the items it runs.
"""

from __future__ import annotations

import functools
from typing import Any

from nnperf.campaign import Item
from nnperf.fleet._cores import pinned_to_a_free_core_set
from nnperf.fleet._errors import SystemMismatchError
from nnperf.fleet._settings import SystemSettings, measuring_environment
from nnperf.measure import SystemSpec
from nnperf.measure.backends import Backend


@functools.lru_cache(maxsize=4)
def _backend(settings: SystemSettings) -> Backend | None:
    """One backend per settings in a worker process, built on its first item (framework imports, thread pools);
    None for the primitive-profiling system, whose items call the libraries themselves."""
    return None if settings.measures_primitives else settings.create()


def _system(settings: SystemSettings) -> SystemSpec:
    backend = _backend(settings)
    return settings.system() if backend is None else backend.system()


def node_system(settings: SystemSettings) -> SystemSpec:
    """The system ``settings`` make on this node, in the environment its items are measured in."""
    with measuring_environment():
        return _system(settings)


def measure_on_node(settings: SystemSettings, system_key: str, item: Item, node: str) -> Any:
    """Measures ``item`` on this node, pinned to a free core set of it when it has several slots; refuses
    (:class:`SystemMismatchError`) when the node's system for ``settings`` is not ``system_key``, the system the
    item belongs to."""
    with measuring_environment(), pinned_to_a_free_core_set():
        backend = _backend(settings)
        actual = _system(settings)
        if actual.key != system_key:
            raise SystemMismatchError(
                f"node {node} measures {actual.label} on {actual.device_name} as system {actual.key}, not the "
                f"item's system {system_key}: it refuses the item {item.label!r} (start the node with "
                "`nnperf fleet up` and the same backend settings and software as the system's other nodes)")
        return item.measure(backend)  # type: ignore[arg-type]  # None only for a PrimitiveItem
