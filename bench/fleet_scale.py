"""What limits a fleet, measured on this machine.

1. The driver's write rate: layer measurements committed one by one to a SQLite store (the driver is the one
   writer; each result is committed as it arrives).
2. A simulated fleet on a local Ray: one node advertising N measuring slots of the fake system, so N workers
   measure at once. Items are :class:`nnperf.fleet.SimulatedItem` (they sleep, using no core). The per-item
   overhead is the wall time per item of zero-length items through one slot (Ray task, result back, store write);
   the throughput is items per second for items of ``--item-s`` seconds from 1 to N workers.
3. ``--speeds 1,1,2,4``: a heterogeneous simulated fleet, one Ray node per speed (Ray's ``Cluster``), each node's
   cost model its speed (:data:`nnperf.fleet.SPEED_VARIABLE`: an item sleeps its duration over it).
   Nodes take items as they free up, so each should measure a share of the items in proportion to its speed;
   the benchmark reports the shares and the throughput against the ideal (the speeds' sum over the item time).
4. ``--calibrate``: the wall time of a real calibration (torch, 1 thread) in one process against a local fleet of
   two nodes (Ray's ``Cluster``, one CPU each) on this machine.

    nice -n 19 .venv/bin/python bench/fleet_scale.py [--calibrate] [--speeds 1,1,2,4] [--repeats 3]

Writes bench/results/fleet/fleet_scale.json (with ``--only-speeds``: fleet_heterogeneous.json) and prints a
Markdown summary.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _shared import pct, print_table, result_path, write_result

from nnperf.campaign import open_campaign
from nnperf.fleet import Fleet, SimulatedItem, SystemSettings, node_environment, node_resources
from nnperf.measure import LayerMeasurement, Method, fixed_timing
from nnperf.measure.backends import create_backend
from nnperf.store import Store

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


def heterogeneous(speeds: list[float], items: int, item_s: float) -> dict[str, object]:
    """``items`` simulated items of ``item_s`` s on one node per speed: wall time, and each node's share."""
    import ray
    from ray.cluster_utils import Cluster

    from nnperf.fleet import SPEED_VARIABLE

    os.environ.update(node_environment())
    resources = node_resources([SystemSettings("fake")])
    cluster = Cluster()
    try:
        node_speed = {}
        for speed in speeds:
            node = cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE, resources=resources,
                                    include_dashboard=False, env_vars={SPEED_VARIABLE: str(speed)})
            node_speed[node.node_id[:8]] = speed
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
        with Fleet(cluster.address) as fleet:
            runner = fleet.runners(SystemSettings("fake"))[0]
            list(runner.run([SimulatedItem(f"w{i}", 0.2) for i in range(2 * len(speeds))]))  # start the workers
            runner.placements.clear()
            start = time.perf_counter()
            list(runner.run([SimulatedItem(f"i{i}", item_s) for i in range(items)]))
            wall = time.perf_counter() - start
            placements = {name: count for name, count in runner.placements.items()}
    finally:
        ray.shutdown()
        cluster.shutdown()
    total_speed = sum(speeds)
    nodes = [{"node": name, "speed": node_speed.get(name.split("/")[-1], float("nan")), "items": count,
              "share": count / items, "ideal_share": node_speed.get(name.split("/")[-1], float("nan")) / total_speed}
             for name, count in sorted(placements.items(), key=lambda kv: -kv[1])]
    return {"speeds": speeds, "items": items, "item_s": item_s, "wall_s": wall, "items_per_s": items / wall,
            "ideal_items_per_s": total_speed / item_s, "nodes": nodes}


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
    parser.add_argument("--speeds", default="", help="a heterogeneous simulated fleet, e.g. 1,1,2,4 (one node each)")
    parser.add_argument("--fleet-items", type=int, default=160, help="items over the heterogeneous fleet")
    parser.add_argument("--only-speeds", action="store_true", help="run only the heterogeneous fleet")
    args = parser.parse_args()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        rates = []
        for i in range(args.repeats):
            (tmp / f"r{i}").mkdir()
            rates.append(write_rate(500, tmp / f"r{i}"))
        if args.speeds:
            out["heterogeneous"] = heterogeneous([float(v) for v in args.speeds.split(",")], args.fleet_items,
                                                 args.item_s)
            print_heterogeneous(out["heterogeneous"])  # type: ignore[arg-type]
        if args.only_speeds:
            write_result(result_path("fleet", "fleet_heterogeneous"), method="fleet",
                         concern="a heterogeneous simulated fleet", values=out)
            return
        out["store_writes_per_s"] = rates
        out["overhead"] = simulated(1, args.overhead_items, 0.0, tmp, args.repeats)
        out["scaling"] = [simulated(w, w * args.items_per_worker, args.item_s, tmp, args.repeats)
                          for w in map(int, args.workers.split(","))]
        if args.calibrate:
            out["calibration"] = calibrate_walls(tmp)
    write_result(result_path("fleet", "fleet_scale"), method="fleet", concern="campaigns over a simulated fleet",
                 values=out)
    rates = sorted(out["store_writes_per_s"])  # type: ignore[arg-type]
    print(f"store writes: median {statistics.median(rates):.0f}/s (range {rates[0]:.0f}-{rates[-1]:.0f})")
    o = out["overhead"]
    print(f"per-item overhead (zero-length items, 1 slot): {o['median_wall_s'] / o['items'] * 1e3:.2f} ms "  # type: ignore[index]
          f"(walls {', '.join(f'{w:.2f}' for w in o['wall_s'])} s for {o['items']} items)")  # type: ignore[index]
    print_table(["workers", "items", "item s", "median wall s", "walls s", "items/s", "ideal items/s", "efficiency"],
                [[s["workers"], s["items"], s["item_s"], f"{s['median_wall_s']:.2f}",
                  "/".join(f"{w:.2f}" for w in s["wall_s"]), f"{s['items_per_s']:.1f}", f"{s['ideal_items_per_s']:.1f}",
                  pct(s["items_per_s"] / s["ideal_items_per_s"], 0)]
                 for s in out["scaling"]])  # type: ignore[attr-defined]
    if "calibration" in out:
        print(f"calibration: {out['calibration']}")


def print_heterogeneous(h: dict[str, object]) -> None:
    print(f"heterogeneous fleet, speeds {h['speeds']}: {h['items']} items of {h['item_s']} s in {h['wall_s']:.2f} s, "
          f"{h['items_per_s']:.1f} items/s against an ideal {h['ideal_items_per_s']:.1f}")
    print_table(["node", "speed", "items", "share", "ideal share"],
                [[n["node"], f"{n['speed']:g}", n["items"], pct(n["share"]), pct(n["ideal_share"])]
                 for n in h["nodes"]])  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
