"""``nnperf backends``: which backends and power meters can run here, and why not."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("backends", help="list measurement backends and power meters and whether they can run here",
                       description="List every registered backend (for cpu and cuda) with its framework's version, "
                                   "and every power meter, with the reason when one cannot run on this machine "
                                   "(for a deployment runtime that is not installed: the extra to install, "
                                   "e.g. pip install 'nnperf[runtimes]').")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.api import backends as available_backends
    from nnperf.report import console

    found = available_backends()
    backends = [{"name": b.name, "device": b.device, "available": b.available, "reason": b.reason,
                 "measures": b.measures, "version": b.version, "extra": b.extra} for b in found.backends]
    meters = [{"name": m.name, "available": m.available, "reason": m.reason} for m in found.power_meters]
    if args.json:
        print(json.dumps({"format": "nnperf-backends", "version": 1, "backends": backends, "power_meters": meters},
                         indent=1))
        return 0
    table = Table(title="backends and power meters", title_justify="left")
    for column in ("kind", "name", "version", "device", "available", "why not"):
        table.add_column(column)
    for b in backends:
        note = "" if b["measures"] else " (harness tests only)"
        table.add_row("backend", b["name"] + note, b["version"], b["device"], "yes" if b["available"] else "no",
                      b["reason"])
    for m in meters:
        table.add_row("power meter", m["name"], "", "", "yes" if m["available"] else "no", m["reason"])
    console().print(table)
    return 0
