"""Which node measured what: one placement document per fleet session and system, kept in the store.

A document (kind ``fleet-placement`` in the store's models table, versioned JSON as every stored document) holds
the number of items each node measured and how many items were submitted again after their worker died.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from nnperf.measure import SystemSpec
from nnperf.store import Store

PLACEMENT_KIND = "fleet-placement"
"""The kind of the store documents that record where a fleet measured."""

PLACEMENT_FORMAT, PLACEMENT_VERSION = "nnperf-fleet-placement", 1


def save_placement(store: Store, system: SystemSpec, placements: Mapping[str, int], requeued: int) -> None:
    """Records that each node in ``placements`` measured that many items of ``system``."""
    record = store.add_system(system)
    store.save_model(record.id, PLACEMENT_KIND, {"format": PLACEMENT_FORMAT, "version": PLACEMENT_VERSION,
                                                 "nodes": dict(placements), "requeued": requeued,
                                                 "at": time.time()})


def node_placements(store: Store) -> dict[int, dict[str, int]]:
    """For every stored system measured on a fleet: its nodes and how many items each measured (all sessions)."""
    found: dict[int, dict[str, int]] = {}
    for system in store.systems():
        for document in store.models(system.id, PLACEMENT_KIND):
            if document.get("format") != PLACEMENT_FORMAT or document.get("version") != PLACEMENT_VERSION:
                continue
            nodes = found.setdefault(system.id, {})
            for node, items in document["nodes"].items():
                nodes[node] = nodes.get(node, 0) + int(items)
    return found
