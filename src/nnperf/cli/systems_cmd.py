"""``nnperf systems``: the systems (device + backend + options) measured in the store."""

from __future__ import annotations

import argparse
import json

from nnperf.cli._store_arg import add_db_argument


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("systems", help="list the systems in the measurement store",
                       description="List every system (device, backend, options, software versions) that has "
                                   "measurements in the store, with how many runs and measurements each has, and "
                                   "for those measured on a fleet, how many items each node measured.")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import systems as stored_systems
    from nnperf.report import console
    from nnperf.report.measurements import systems_table

    found = stored_systems(args.db)
    systems, counts, nodes = list(found.systems), found.counts, found.nodes
    if args.json:
        rows = [{"id": s.id, "key": s.key, "backend": s.backend, "device": s.device, "device_name": s.device_name,
                 "options": s.options, "host": s.host, "runs": found.count(s.id)[0],
                 "layer_measurements": found.count(s.id)[1],
                 "network_measurements": found.count(s.id)[2], "fleet_nodes": nodes.get(s.id, {})}
                for s in systems]
        print(json.dumps({"format": "nnperf-systems", "version": 1, "store": str(found.path), "systems": rows},
                         indent=1))
    elif not systems:
        console().print(f"no systems in {found.path} yet: measure one with `nnperf profile MODEL --backend torch`")
    else:
        console().print(systems_table(systems, counts))
        for system_id, placed in sorted(nodes.items()):
            console().print(f"system {system_id} measured on the fleet: "
                            + ", ".join(f"{node} {items} items" for node, items in sorted(placed.items())))
    return 0
