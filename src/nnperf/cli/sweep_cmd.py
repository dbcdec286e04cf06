"""``nnperf sweep KIND --param P --range R``: one layer parameter swept inside the profiling network."""

from __future__ import annotations

import argparse
import json

from nnperf.cli._backend_args import Progress, add_backend_arguments
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
    from dataclasses import replace

    from nnperf.campaign import find_surround, recorded_surround, run_sweep
    from nnperf.measure.sweep import (
        SWEEP_HARNESS,
        LayerConfig,
        SweepInputError,
        SweepSpec,
        check_parameter,
        parse_fixed,
        parse_range,
    )
    from nnperf.report import console
    from nnperf.report.steps import plot_sweep, sweep_document, sweep_summary

    check_parameter(args.kind, args.param)
    values = parse_range(args.values)
    fixed = parse_fixed(args.fixed)
    if args.param in fixed:
        raise SweepInputError(f"--fixed gives {args.param}, the parameter being swept")
    base = LayerConfig.of(args.kind, {**fixed, args.param: values[0]})
    if args.rounds < 1:
        raise SweepInputError(f"--rounds must be at least 1, got {args.rounds}")
    harness = SWEEP_HARNESS
    if args.target_ci is not None:
        harness = replace(harness, target_ci=args.target_ci)
    if args.budget_s is not None:
        harness = replace(harness, budget_s=args.budget_s)
    out = console()
    with open_store(args) as store, measuring_backend(args, store) as backend:
        if args.surround == "auto":
            system = store.add_system(backend.system())
            choice = recorded_surround(store, system.id, args.kind)
            if choice is None and args.fleet:
                raise SweepInputError(f"no surround is recorded for {args.kind} on system {system.key}: give "
                                      "--surround WIDTH, or run the sweep once without --fleet to choose it")
            if choice is None:
                with Progress(not args.json, "choosing the surround") as progress:
                    choice = find_surround(backend, store, LayerConfig.of(args.kind, fixed), harness=harness,
                                           progress=progress)
                if not args.json:
                    out.print(f"surround: width {choice.chosen} chosen from "
                              + ", ".join(f"{w}: {t * 1e3:.4g} ms" for w, t in zip(choice.widths, choice.latency_s))
                              + ("" if choice.converged else " (not converged within "
                                 f"{choice.margin:.0%}: the widest is used)"))
            surround = choice.chosen
        else:
            try:
                surround = int(args.surround)
            except ValueError:
                raise SweepInputError(f"--surround must be auto or a positive integer, got {args.surround!r}") from None
            if surround < 1:
                raise SweepInputError(f"--surround must be auto or a positive integer, got {surround}")
        spec = SweepSpec(base, args.param, values, surround, harness, args.rounds)
        with Progress(not args.json, f"sweeping {args.param}") as progress:
            sweep = run_sweep(backend, store, spec, progress=progress, fresh=args.fresh)
    if args.plot:
        plot_sweep(sweep, None, args.plot)
    if args.json:
        print(json.dumps(sweep_document(sweep), indent=1))
        return 0
    for line in sweep_summary(sweep, store.path):
        out.print(line)
    if args.plot:
        out.print(f"plot: {args.plot}")
    return 0
