"""``nnperf primitives``: the convolution primitive library (Mulder et al.)."""

from __future__ import annotations

import argparse
import json

from nnperf.cli._backend_args import Progress
from nnperf.cli._store_arg import add_db_argument
from nnperf.cli._units import parse_duration
from nnperf.errors import NnperfError


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

    profile = commands.add_parser(
        "profile", help="profile every primitive and layout transformation on layer configurations (the dataset)",
        description="Build the primitive-time dataset of Mulder et al. 3.2 in the store: the distinct convolutions of "
                    "the given networks (every zoo network when none is given) and --random configurations sampled "
                    "around them, each timed under every applicable primitive, with the layout transformations of "
                    "its input. Every time is stored as it is taken; a configuration profiled before on this system "
                    "is skipped, so the same command resumes an interrupted or budget-limited profile.")
    profile.add_argument("models", nargs="*", metavar="MODEL",
                         help="zoo names, .onnx or IR .json files (default: every zoo network)")
    profile.add_argument("--random", type=int, default=200, metavar="N",
                         help="configurations sampled around the networks' ones (default 200)")
    profile.add_argument("--budget", default=None, metavar="DURATION",
                         help="stop starting new configurations after this long (e.g. 90s, 20m, 1h; default: none)")
    profile.add_argument("--only", default="", metavar="NAME[,NAME...]",
                         help="profile only these primitives or families (e.g. vendor,winograd; default: every "
                              "available primitive)")
    profile.add_argument("--threads", type=int, default=1, help="threads per primitive (default 1)")
    profile.add_argument("--seed", type=int, default=0, help="seed of the random configurations (default 0)")
    profile.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(profile)
    profile.set_defaults(run=run_profile)


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


def run_profile(args: argparse.Namespace) -> int:
    from nnperf.api import profile_primitives
    from nnperf.report import console

    if args.random < 0:
        raise NnperfError(f"--random must be 0 or more, got {args.random}")
    if args.threads < 1:
        raise NnperfError(f"--threads must be at least 1, got {args.threads}")
    budget_s = None if args.budget is None else parse_duration(args.budget)
    with Progress(not args.json, "profiling primitives") as progress:
        only = [name.strip() for name in args.only.split(",") if name.strip()]
        report = profile_primitives(args.models, args.random, primitives=only, threads=args.threads, budget_s=budget_s,
                                    store=args.db, seed=args.seed, progress=progress)
    if args.json:
        print(json.dumps({"format": "nnperf-primitive-profile", "version": 1, "system_id": report.system_id,
                          "measured": report.measured, "reused": report.reused, "remaining": report.remaining,
                          "samples": report.samples, "elapsed_s": report.elapsed_s,
                          "failures": [list(f) for f in report.failures]}, indent=1))
        return 0
    out = console()
    out.print(f"system {report.system_id}: {report.measured} configurations profiled now ({report.samples} samples "
              f"in {report.elapsed_s:.0f} s), {report.reused} profiled before")
    if report.remaining:
        out.print(f"the budget was spent with {report.remaining} configurations left: run the same command again "
                  "to go on")
    for name, label, error in report.failures:
        out.print(f"[yellow]{name} failed on {label}: {error}[/yellow]")
    return 0
