"""``nnperf zoo``: the built-in networks with their input sizes, MACs and parameters.

Reference networks, the default calibration networks (PreVIousNet-01 to -05) and those ``calibrate --blocks``
adds (PreVIousNet-06) are listed in three tables (three lists in the JSON: ``networks``, ``calibration_networks``
and ``block_calibration_networks``).
"""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("zoo", help="list the built-in networks", description="List the zoo's reference "
                       "networks, then its calibration networks (PreVIousNet) and those `nnperf calibrate --blocks` adds, with their canonical input size, "
                       "MACs and parameters.")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.api import zoo
    from nnperf.report import console, shape_text, si

    found = zoo()
    reference = [network.to_dict() for network in found.networks]
    calibration = [network.to_dict() for network in found.calibration_networks]
    blocks = [network.to_dict() for network in found.block_calibration_networks]
    if args.json:
        print(json.dumps({"format": "nnperf-zoo", "version": 1, "networks": reference,
                          "calibration_networks": calibration, "block_calibration_networks": blocks}, indent=1))
        return 0
    for title, rows in (("nnperf zoo", reference), ("calibration networks (PreVIousNet)", calibration),
                        ("calibration networks `nnperf calibrate --blocks` adds", blocks)):
        table = Table(title=title, title_justify="left")
        for column, justify in (("name", "left"), ("input", "left"), ("layers", "right"), ("MACs", "right"),
                                ("params", "right"), ("description", "left")):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for row in rows:
            table.add_row(row["name"], shape_text(tuple(row["input_shape"])), str(row["layers"]), si(row["macs"]),
                          si(row["params"]), row["description"])
        console().print(table)
    return 0

