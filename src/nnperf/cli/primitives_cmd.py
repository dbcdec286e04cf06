"""``nnperf primitives``: the convolution primitive library (Mulder et al.)."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("primitives", help="the convolution primitives (algorithms, vendor kernels) and their layouts",
                       description="The library of convolution primitives of Mulder et al.: vendor kernels reachable "
                                   "from Python and the algorithm families written on torch ops, each with its input "
                                   "and output data layout and the configurations it applies to.")
    commands = p.add_subparsers(dest="primitives_command", metavar="COMMAND", required=True)
    listing = commands.add_parser("list", help="every primitive: family, layouts, where it applies, availability",
                                  description="Every registered primitive with its family, library, input and output "
                                              "layouts, applicability rule, and whether it can run here (and if not, "
                                              "why).")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(run=run_list)


def run_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.primitives import all_transforms, primitive_report
    from nnperf.report import console

    rows = [{"name": p.name, "family": p.family.value, "library": p.library, "input_layout": p.input_layout.name,
             "output_layout": p.output_layout.name, "applies": p.rule, "error_bound": p.error_bound,
             "available": available.ok, "reason": available.reason}
            for p, available in primitive_report()]
    transforms = [t.name for t in all_transforms()]
    if args.json:
        print(json.dumps({"format": "nnperf-primitives", "version": 1, "primitives": rows,
                          "layout_transforms": transforms}, indent=1))
        return 0
    table = Table(title="convolution primitives", title_justify="left")
    for column in ("name", "family", "library", "in", "out", "applies to", "available", "why not"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["name"], r["family"], r["library"], r["input_layout"], r["output_layout"], r["applies"],
                      "yes" if r["available"] else "no", r["reason"])
    out = console()
    out.print(table)
    out.print(f"layout transformations: {', '.join(t for t in transforms if t.split('->')[0] != t.split('->')[1])}")
    return 0
