"""Issue 22: what limits a fleet, measured on this machine.

1. The driver's write rate: layer measurements committed one by one to a SQLite store (the driver is the one
   writer; each result is committed as it arrives).
2. A simulated fleet on a local Ray: one node advertising N measuring slots of the fake system, so N workers
   measure at once. Items are :class:`nnperf.fleet.SimulatedItem` (they sleep, using no core). The per-item
   overhead is the wall time per item of zero-length items through one slot (Ray task, result back, store write);
   the throughput is items per second for items of ``--item-s`` seconds from 1 to N workers.
3. ``--calibrate``: the wall time of a real calibration (torch, 1 thread) in one process against a local fleet of
   two nodes (Ray's ``Cluster``, one CPU each) on this machine.

    nice -n 19 .venv/bin/python bench/fleet_scale.py [--calibrate] [--repeats 3]

Writes bench/results/fleet_scale.json and prints a markdown summary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nnperf.campaign import open_campaign
from nnperf.fleet import Fleet, SimulatedItem, SystemSettings, node_environment, node_resources
from nnperf.measure import LayerMeasurement, Method, fixed_timing
from nnperf.measure.backends import create_backend
from nnperf.store import Store

RESULTS = Path(__file__).resolve().parent / "results"
OBJECT_STORE = 100 * 2**20


def write_rate(n: int, tmp: Path) -> float:
    """Layer measurements per second committed one by one into a fresh store."""
    system = create_backend("fake").system()
    with Store(tmp / "rate.db") as store, open_campaign(store, system, "bench", "bench", "h", "isolated", {}) as c:
        start = time.perf_counter()
        for i in range(n):
            c.add_layer(LayerMeasurement(f"l{i}", "conv", Method.ISOLATED, fixed_timing([1e-3] * 20)))
        return n / (time.perf_counter() - start)


def simulated(workers: int, items: int, item_s: float, tmp: Path, repeats: int) -> dict[str, object]:
    """Wall time of ``items`` simulated items of ``item_s`` seconds on ``workers`` slots, each result stored."""
    import ray

    settings = SystemSettings("fake")
    resources = {k: float(workers) for k in node_resources([settings])}
    os.environ.update(node_environment())
    ray.init(num_cpus=2, resources=resources, object_store_memory=OBJECT_STORE, include_dashboard=False,
             log_to_driver=False, logging_level="ERROR")
    try:
        with Fleet() as fleet:
            runner = fleet.runners(settings)[0]
            system = runner.system()
            # warm-up: start every worker (a Ray worker imports nnperf once) before timing
            list(runner.run([SimulatedItem(f"w{i}", 0.5) for i in range(workers)]))
            walls = []
            for r in range(repeats):
                with Store(tmp / f"sim-{workers}-{item_s}-{r}.db") as store, \
                        open_campaign(store, system, "sim", "sim", "h", "isolated", {}) as campaign:
                    batch = [SimulatedItem(f"i{i}", item_s) for i in range(items)]
                    start = time.perf_counter()
                    for _, result in runner.run(batch):
                        campaign.add_layer(result)
                    walls.append(time.perf_counter() - start)
                    assert len(store.layer_measurements(run_id=campaign.run.id)) == items
    finally:
        ray.shutdown()
    median = statistics.median(walls)
    return {"workers": workers, "items": items, "item_s": item_s, "wall_s": walls, "median_wall_s": median,
            "items_per_s": items / median, "ideal_items_per_s": (workers / item_s) if item_s else None,
            "overhead_per_item_s": median / items - item_s / workers}


def calibrate_walls(tmp: Path) -> dict[str, float]:
    """Wall time of `nnperf calibrate --backend torch` in one process and on a local two-node fleet."""
    nnperf = [sys.executable, "-m", "nnperf"]
    start = time.perf_counter()
    subprocess.run([*nnperf, "calibrate", "--backend", "torch", "--db", str(tmp / "one.db"), "--json"],
                   check=True, capture_output=True)
    one_s = time.perf_counter() - start
    import ray
    from ray.cluster_utils import Cluster

    os.environ.update(node_environment())
    resources = node_resources([SystemSettings("torch")])
    node = {"num_cpus": 1, "object_store_memory": OBJECT_STORE, "resources": resources}
    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        up_s = time.perf_counter() - started
        start = time.perf_counter()
        subprocess.run([*nnperf, "calibrate", "--backend", "torch", "--db", str(tmp / "fleet.db"), "--json",
                        "--fleet", cluster.address], check=True, capture_output=True)
        fleet_s = time.perf_counter() - start
    finally:
        ray.shutdown()
        cluster.shutdown()
    return {"in_process_s": one_s, "two_nodes_s": fleet_s, "cluster_start_s": up_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4,8,16,32")
    parser.add_argument("--item-s", type=float, default=0.2)
    parser.add_argument("--items-per-worker", type=int, default=4)
    parser.add_argument("--overhead-items", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calibrate", action="store_true")
    args = parser.parse_args()
    out: dict[str, object] = {"machine": "Intel Xeon VM, 2 vCPUs, noisy shared host", "command": " ".join(sys.argv)}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        rates = []
        for i in range(args.repeats):
            (tmp / f"r{i}").mkdir()
            rates.append(write_rate(500, tmp / f"r{i}"))
        out["store_writes_per_s"] = rates
        out["overhead"] = simulated(1, args.overhead_items, 0.0, tmp, args.repeats)
        out["scaling"] = [simulated(w, w * args.items_per_worker, args.item_s, tmp, args.repeats)
                          for w in map(int, args.workers.split(","))]
        if args.calibrate:
            out["calibration"] = calibrate_walls(tmp)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fleet_scale.json").write_text(json.dumps(out, indent=1))
    rates = sorted(out["store_writes_per_s"])  # type: ignore[arg-type]
    print(f"store writes: median {statistics.median(rates):.0f}/s (range {rates[0]:.0f}-{rates[-1]:.0f})")
    o = out["overhead"]
    print(f"per-item overhead (zero-length items, 1 slot): {o['median_wall_s'] / o['items'] * 1e3:.2f} ms "  # type: ignore[index]
          f"(walls {', '.join(f'{w:.2f}' for w in o['wall_s'])} s for {o['items']} items)")  # type: ignore[index]
    print("| workers | items | item s | median wall s | walls s | items/s | ideal items/s | efficiency |")
    print("|---|---|---|---|---|---|---|---|")
    for s in out["scaling"]:  # type: ignore[attr-defined]
        print(f"| {s['workers']} | {s['items']} | {s['item_s']} | {s['median_wall_s']:.2f} | "
              f"{'/'.join(f'{w:.2f}' for w in s['wall_s'])} | {s['items_per_s']:.1f} | {s['ideal_items_per_s']:.1f} | "
              f"{s['items_per_s'] / s['ideal_items_per_s']:.0%} |")
    if "calibration" in out:
        print(f"calibration: {out['calibration']}")


if __name__ == "__main__":
    main()
