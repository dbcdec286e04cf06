"""What a store holds, without the values that differ from one measurement to the next: run and measurement
identities and counts, to compare a campaign on a fleet with the same campaign in one process."""

from __future__ import annotations

from collections import Counter

from nnperf.store import Store


def stored_identities(store: Store) -> dict[str, object]:
    """Systems (keys), runs (campaign, model, network hash, method, status) and per run the (layer, method, op)
    of every layer measurement and the number of whole-network measurements."""
    runs = sorted(store.runs(), key=lambda r: (r.campaign, r.id))
    return {
        "systems": sorted(s.key for s in store.systems()),
        "runs": [(r.campaign, r.model, r.network_hash, r.method, r.status) for r in runs],
        "layers": [sorted((m.layer, m.method.value, m.op) for m in store.layer_measurements(run_id=r.id))
                   for r in runs],
        "layer_rows": Counter(r.campaign for r in runs for _ in store.layer_measurements(run_id=r.id)),
        "networks": [len(store.network_measurements(run_id=r.id)) for r in runs],
    }
