"""``nnperf backends``: which backends and power meters can run here, and why not."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("backends", help="list measurement backends and power meters and whether they can run here",
                       description="List every registered backend (for cpu and cuda) and power meter, with the "
                                   "reason when one cannot run on this machine.")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.measure.backends import backend_report
    from nnperf.measure.power import meter_report
    from nnperf.report import console

    table = Table(title="backends and power meters", title_justify="left")
    for column in ("kind", "name", "device", "available", "why not"):
        table.add_column(column)
    for device in ("cpu", "cuda"):
        for name, available in backend_report(device):
            note = " (harness tests only)" if name == "fake" else ""
            table.add_row("backend", name + note, device, "yes" if available.ok else "no", available.reason)
    for name, available in meter_report():
        table.add_row("power meter", name, "", "yes" if available.ok else "no", available.reason)
    console().print(table)
    return 0
