"""``nnperf sweep KIND --param P --range R``: one layer parameter swept inside the profiling network."""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack

from nnperf.cli._backend_args import Progress, add_backend_arguments, system_from_args
from nnperf.cli._store_arg import add_db_argument, open_store
from nnperf.cli.fleet_cmd import add_fleet_argument, measuring_backend


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("sweep", help="sweep one layer parameter inside a three-layer profiling network",
                       description="Measure a layer (conv2d, depthwise or fc) in the middle of a three-layer "
                                   "profiling network while one parameter runs over a range and the others stay "
                                   "fixed (Osterwind et al., 3.3.1). Each point is timed in place until the "
                                   "median's 95% confidence interval is within --target-ci, and stored as it is "
                                   "taken; an interrupted sweep resumes, a finished one is reused. The surrounding "
                                   "layers are chosen once per system and layer kind by a surround sweep (recorded "
                                   "in the store). Fit the result with `nnperf steps fit RUN`.")
    p.add_argument("kind", metavar="KIND", help="conv2d, depthwise or fc")
    p.add_argument("--param", required=True,
                   help="the parameter to sweep: channels, filters, size, kernel or stride (fc: channels, filters)")
    p.add_argument("--range", required=True, dest="values", metavar="START:STOP[:STEP]",
                   help="values, both ends included (10:530:1), or a comma list (1,3,5,7)")
    p.add_argument("--fixed", default="", metavar="NAME=VALUE,...",
                   help="the other parameters, e.g. filters=128,size=56,kernel=3 (defaults: conv2d 128 channels, "
                        "128 filters, size 56, kernel 3, stride 1; fc 1024 in and out)")
    add_backend_arguments(p)
    p.add_argument("--surround", default="auto", metavar="auto|WIDTH",
                   help="width of the surrounding layers: auto (the recorded choice for this system and kind, "
                        "found by a surround sweep the first time) or a number")
    p.add_argument("--target-ci", type=float, default=None,
                   help="stop a point when the median's CI half-width is within this fraction (default 0.01, "
                        "tighter than profile's 0.02: a step of a few percent must stand out of the noise)")
    p.add_argument("--budget-s", type=float, default=None, help="time budget per point in seconds (default 1: a sweep "
                                                                  "has tens of points, a profile a few layers)")
    p.add_argument("--rounds", type=int, default=1,
                   help="passes over the range, one after the other; a point's latency is the median of its "
                        "rounds, which votes out bursts of contention on a shared machine (default 1)")
    p.add_argument("--fresh", action="store_true", help="measure again even when this sweep is stored")
    p.add_argument("--plot", metavar="FILE.png", help="plot the measured sweep")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_fleet_argument(p)
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import sweep
    from nnperf.report import console
    from nnperf.report.steps import sweep_summary

    with ExitStack() as stack:
        store, system = args.db, system_from_args(args)
        if args.fleet:  # the fleet's runner records where it measured in the store
            store = stack.enter_context(open_store(args))
            system = stack.enter_context(measuring_backend(args, store))
        progress = stack.enter_context(Progress(not args.json, f"sweeping {args.param}"))
        measured = sweep(args.kind, args.param, args.values, system, store, fixed=args.fixed, surround=args.surround,
                         target_ci=args.target_ci, budget_s=args.budget_s, rounds=args.rounds, fresh=args.fresh,
                         plot=args.plot, progress=progress)
    if args.json:
        print(json.dumps(measured.to_dict(), indent=1))
        return 0
    out = console()
    choice = measured.surround
    if choice is not None:
        out.print(f"surround: width {choice.chosen} chosen from "
                  + ", ".join(f"{w}: {t * 1e3:.4g} ms" for w, t in zip(choice.widths, choice.latency_s))
                  + ("" if choice.converged else f" (not converged within {choice.margin:.0%}: the widest is used)"))
    for line in sweep_summary(measured.sweep, measured.store_path):
        out.print(line)
    if args.plot:
        out.print(f"plot: {args.plot}")
    return 0
