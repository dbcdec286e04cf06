"""``nnperf measurements export``: the store's measurements as CSV."""

from __future__ import annotations

import argparse
import sys

from nnperf.cli._store_arg import add_db_argument


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("measurements", help="export stored measurements",
                       description="Work with the measurements in the store.")
    actions = p.add_subparsers(dest="action", metavar="COMMAND", required=True)
    e = actions.add_parser("export", help="write layer or network measurements as CSV",
                           description="Write one CSV row per measurement: system, run, statistics (seconds, "
                                       "joules) and the raw times.")
    e.add_argument("--table", choices=["layers", "networks"], default="layers",
                   help="layer measurements (default) or whole-network measurements")
    e.add_argument("--system", metavar="ID|KEY", help="only this system (id or key prefix, see `nnperf systems`)")
    e.add_argument("--csv", "-o", "--output", dest="output", metavar="FILE.csv",
                   help="write to FILE.csv instead of stdout (--csv FILE, as in other commands; -o and --output "
                        "also work)")
    add_db_argument(e)
    e.set_defaults(run=run_export)


def run_export(args: argparse.Namespace) -> int:
    from nnperf.api import export_measurements

    rows = export_measurements(args.output or sys.stdout, args.db, table=args.table, system=args.system)
    if args.output:
        print(f"wrote {rows} {args.table} measurement(s) to {args.output}", file=sys.stderr)
    return 0
