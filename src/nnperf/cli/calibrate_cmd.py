"""``nnperf calibrate``: profile the calibration networks once and fit this system's PreVIous models."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from nnperf.cli._backend_args import Progress, add_backend_arguments, system_from_args
from nnperf.cli._store_arg import add_db_argument
from nnperf.cli._units import parse_duration, parse_sample_budget
from nnperf.cli.fleet_cmd import add_fleet_argument, calibrate_on_fleet

if TYPE_CHECKING:
    from nnperf.api import System, SystemModel


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("calibrate", help="profile the calibration networks and fit this system's models",
                       description="Profile PreVIousNet-01 (four input configurations), PreVIousNet-02 and nnperf's "
                                   "PreVIousNet-03 to -05 (and, with --blocks, -06) layer by layer and whole on one "
                                   "backend, store every measurement, fit a standardised Ridge model per layer type "
                                   "and the network coefficient c (PreVIous, Eq. 4 and 6), learn which layers the backend fuses (from a short "
                                   "profiler pass) and the per-call difference of the composition, measure the "
                                   "roofline peaks, and store it all. Resumes if interrupted; networks already "
                                   "calibrated on this system are reused.")
    add_backend_arguments(p)
    p.add_argument("--energy", metavar="METER", help="also fit energy models from a power meter (nvml, rapl)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="time budget per layer measurement in seconds (default 0.5, less than profile's 3: "
                        "calibration measures about 470 layers, and the fit averages their noise)")
    p.add_argument("--target-ci", type=float, default=None, help="stop repeating a layer once the median's 95%% CI is within this fraction "
                                                                  "(default 0.02, as profile)")
    p.add_argument("--sample-budget", metavar="DURATION", default=None,
                   help="measure sampled convolutions and pools alone for this long (e.g. 90s, 2m; 0: none), drawn from "
                        "the layer configurations of nnperf's reference zoo and placed where the kernel-aware models err "
                        "most (nn-Meter's adaptive sampling); default 40s")
    p.add_argument("--held-out", nargs="+", metavar="MODEL", default=(),
                   help="networks (files or zoo names) whose layer configurations sampling must never measure, so that "
                        "an evaluation on them judges layers the calibration never saw")
    p.add_argument("--blocks", action="store_true",
                   help="also calibrate on nnperf's PreVIousNet-06: CNN blocks (residual, bottleneck, inverted residual, "
                        "fire) chained as deployed networks chain them, at four input configurations; better predictions "
                        "on backends that keep tensors in their own format along such chains (ONNX Runtime int8 and "
                        "NCHWc), about 4 more networks of 77 layers to measure")
    p.add_argument("--if-needed", action="store_true",
                   help="do nothing when this system already has a stored calibration (made with --blocks, if given; "
                        "with --adapt, adapted to the same examples)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the machine check before calibrating (busy processes, load, pressure and 5 s of noise "
                        "measurement, as `nnperf check`; stored with the calibration)")
    p.add_argument("--adapt", nargs="+", metavar="MODEL", default=(),
                   help="adapt the calibration to the search space of these example networks (zoo names, .onnx, "
                        ".tflite or .json files): measure layers alone near their configurations for --adapt-budget, "
                        "then refit this system's models with them (the stored calibration is adapted; without one, "
                        "the system is calibrated first). Layers of --held-out networks are never measured")
    p.add_argument("--adapt-budget", metavar="DURATION", default=None,
                   help="how long --adapt measures sampled layers (e.g. 5m, 600s; default 5m)")
    p.add_argument("--json", action="store_true", help="print the calibration's summary as JSON")
    add_fleet_argument(p)
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.errors import NnperfError

    if args.adapt_budget is not None and not args.adapt:
        raise NnperfError("--adapt-budget is the budget of --adapt: give the example networks with --adapt MODEL ...")
    if args.fleet:
        if args.adapt:
            raise NnperfError("--adapt measures in this process: run it without --fleet")
        return calibrate_on_fleet(args)
    from nnperf.api import calibrate, default_store_path, stored_calibration
    from nnperf.errors import FormatVersionError
    from nnperf.report import console
    from nnperf.report.predictions import calibration_document, calibration_header

    sample_budget_s = parse_sample_budget(args.sample_budget)
    out = console()
    store_path = str(args.db or default_store_path())
    system = system_from_args(args)
    if args.adapt:
        return _adapt(args, system, store_path, sample_budget_s)
    if args.if_needed:
        try:
            # what calibrate(if_needed=True) reuses: held-out networks count only where layers are sampled
            existing = stored_calibration(system, args.db, held_out=args.held_out if sample_budget_s > 0 else (),
                                          blocks=args.blocks)
        except FormatVersionError as exc:  # an older nnperf's model: refit (stored measurements are reused)
            out.print(f"refitting: {exc}")
            existing = None
        if existing is not None and args.json:
            print(json.dumps(calibration_document(existing, store_path), indent=1))
            return 0
        if existing is not None:
            out.print(f"{existing.system_label} is already calibrated in {Path(store_path)} (c = "
                      f"{existing.coefficient_c:.3f}, {len(existing.latency)} layer-type models); nothing to do")
            return 0
    if not args.json:
        out.print(calibration_header(args.backend, args.device, args.threads, store_path, sample_budget_s,
                                     args.blocks))
    with Progress(not args.json, "calibrating") as progress:
        model = calibrate(system, args.db, energy=args.energy, budget_s=args.budget_s, target_ci=args.target_ci,
                          sample_budget_s=sample_budget_s, held_out=args.held_out, blocks=args.blocks,
                          progress=progress, check=not args.no_check)
    print_calibration(model, store_path, args.json)
    return 0


def _adapt(args: argparse.Namespace, system: System, store_path: str, sample_budget_s: float) -> int:
    """``nnperf calibrate --adapt``: the stored calibration (or a new one) adapted to the examples' space."""
    from nnperf.api import DEFAULT_ADAPT_BUDGET_S, adapt
    from nnperf.report import console

    budget_s = (DEFAULT_ADAPT_BUDGET_S if args.adapt_budget is None
                else parse_duration(args.adapt_budget, "--adapt-budget"))
    if not args.json:
        console().print(f"adapting the calibration of {args.backend} on {args.device} in {store_path} to the space "
                        f"of {len(args.adapt)} example network(s): {budget_s:g} s of layers sampled near theirs, "
                        "then the models refitted (stored as taken: an interrupted adaptation resumes)")
    with Progress(not args.json, "adapting") as progress:
        model = adapt(args.adapt, system, args.db, budget_s=budget_s, held_out=args.held_out, blocks=args.blocks,
                      if_needed=args.if_needed, progress=progress, check=not args.no_check,
                      sample_budget_s=sample_budget_s)
    print_calibration(model, store_path, args.json)
    return 0


def print_calibration(model: SystemModel, store_path: str, as_json: bool) -> None:
    """A calibration as JSON, or its table and summary."""
    from nnperf.report import console
    from nnperf.report.predictions import calibration_document, calibration_summary, calibration_table

    if as_json:
        print(json.dumps(calibration_document(model, store_path), indent=1))
        return
    out = console()
    out.print(calibration_table(model))
    for line in calibration_summary(model, store_path):
        out.print(line)
