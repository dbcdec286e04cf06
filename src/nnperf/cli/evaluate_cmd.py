"""``nnperf evaluate``: the zoo networks measured against this system's predictions (PreVIous VI), with baselines."""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from pathlib import Path

from nnperf.cli._backend_args import Progress, add_backend_arguments, system_from_args
from nnperf.cli._choices import protocol_choices
from nnperf.cli._store_arg import add_db_argument, open_store
from nnperf.cli.fleet_cmd import add_fleet_argument, measuring


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("evaluate", help="measure zoo networks and compare them with this system's predictions",
                       description="Measure networks (the reference zoo by default) layer by layer and whole on "
                                   "one backend, reusing earlier measurements of the same settings, and compare "
                                   "them with the predictions of this system's calibration: Table I and II, "
                                   "Fig. 5 and Fig. 7 of PreVIous, nnperf's composition and the MACs and roofline "
                                   "baselines side by side. Writes the figures and one self-contained HTML report.")
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help="zoo names, .onnx, .tflite or IR .json files (default: every reference zoo network)")
    add_backend_arguments(p)
    p.add_argument("--out", type=Path, default=Path("nnperf-evaluation"),
                   help="folder for fig5_layers.png, fig7_networks.png and report.html "
                        "(default ./nnperf-evaluation)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="time budget per layer measurement in seconds (default: the calibration's, 0.5)")
    p.add_argument("--csv", metavar="FILE.csv", type=Path,
                   help="also write every layer's measured (isolated) and predicted time as CSV: one row per "
                        "layer with its network, run id and system, in seconds")
    p.add_argument("--protocol", choices=protocol_choices("none"), metavar="PROTOCOL",
                   default="auto",
                   help="also time each network whole beside the machine-speed reference (interleaved, duet, "
                        "sequential; auto, the default, takes what a quick machine check recommends) and report every method's error against the measurement scaled to the "
                        "calibration's speed; none skips it (and a fleet always does)")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON instead of tables")
    add_fleet_argument(p)
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import evaluate
    from nnperf.report import console
    from nnperf.report.evaluation import network_table, summary_lines, table1, table2

    with ExitStack() as stack:
        store, system = args.db, system_from_args(args)
        if args.fleet:  # the fleet's nodes of this system, with a progress line per node
            store = stack.enter_context(open_store(args))
            system, progress = stack.enter_context(measuring(args, store, "evaluating"))
        else:
            progress = stack.enter_context(Progress(not args.json, "evaluating"))
        report = evaluate(args.models, system, store, budget_s=args.budget_s, protocol=args.protocol,
                          out=args.out, csv=args.csv, progress=progress)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
        return 0
    out = console()
    for table in (table1(report.evaluation), table2(report.evaluation), network_table(report.evaluation)):
        out.print(table)
    for line in summary_lines(report.evaluation):
        out.print(line)
    out.print(f"wrote {', '.join(str(p) for p in report.files)}")
    return 0
