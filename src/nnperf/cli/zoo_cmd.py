"""``nnperf zoo``: the built-in networks with their input sizes, MACs and parameters."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("zoo", help="list the built-in networks", description="List the zoo's networks with "
                       "their canonical input size, MACs and parameters.")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf import zoo
    from nnperf._load import zoo_network
    from nnperf.ir.metrics import network_metrics
    from nnperf.report._format import console, shape_text, si

    rows = []
    for entry in zoo.entries():
        metrics = network_metrics(zoo_network(entry.name))
        rows.append({"name": entry.name, "input_shape": list(entry.input_shape), "macs": metrics.macs,
                     "params": metrics.params, "layers": len(metrics.layers), "description": entry.description,
                     "variant": entry.variant})
    if args.json:
        print(json.dumps({"format": "nnperf-zoo", "version": 1, "networks": rows}, indent=1))
        return 0
    table = Table(title="nnperf zoo", title_justify="left")
    for column, justify in (("name", "left"), ("input", "left"), ("layers", "right"), ("MACs", "right"),
                            ("params", "right"), ("description", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(row["name"], shape_text(tuple(row["input_shape"])), str(row["layers"]), si(row["macs"]),
                      si(row["params"]), row["description"])
    console().print(table)
    return 0
