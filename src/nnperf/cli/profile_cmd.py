"""``nnperf profile MODEL --backend B``: measure a network whole and layer by layer, into the store."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path

from nnperf.cli._backend_args import add_backend_arguments, positive_int, system_from_args
from nnperf.cli._shapes import parse_input_shape
from nnperf.cli._store_arg import add_db_argument, open_store, store_path
from nnperf.cli.fleet_cmd import add_fleet_argument, measuring


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("profile", help="measure a network's per-layer and whole-network times on a backend",
                       description="Time a network (zoo name, .onnx, .tflite or IR .json) on a real backend: the whole "
                                   "network, and each layer either alone on its real input shapes (isolated, as "
                                   "PreVIous does) or from the framework's profiler. Every measurement is stored "
                                   "as it is taken; an interrupted run resumes.")
    p.add_argument("model", metavar="MODEL", help="zoo name (see `nnperf zoo`), .onnx, .tflite or IR .json file")
    add_backend_arguments(p)
    p.add_argument("--per-layer", choices=["isolated", "profiler", "none"], default="isolated",
                   help="isolated: each layer alone (default); profiler: the framework's per-node times in "
                        "whole-network runs; none: whole network only")
    p.add_argument("--energy", metavar="METER|TRACE.csv",
                   help="a power meter (nvml, rapl) read around each measurement, or a power-analyser trace CSV "
                        "(time_s,power_w) recorded during the last isolated run of MODEL on this system")
    p.add_argument("--trace-offset-s", type=float, default=0.0,
                   help="added to the power trace's times (--energy TRACE.csv) to put them on Unix time (default 0: "
                        "already Unix time)")
    p.add_argument("--gap-s", type=float, default=0.0,
                   help="idle seconds between layers, so a power trace separates them (PreVIous used 0.3)")
    p.add_argument("--target-ci", type=float, default=0.02,
                   help="stop repeating once the median's 95%% CI is within this fraction (default 0.02)")
    p.add_argument("--budget-s", type=float, default=3.0, help="time budget per measurement in seconds (default 3)")
    p.add_argument("--profiler-runs", type=positive_int, default=50,
                   help="whole-network runs under the profiler (default 50, as PreVIous)")
    p.add_argument("--strict", action="store_true",
                   help="refuse an ONNX file with operators nnperf has no dedicated layer type for, instead of "
                        "importing them as generic layers")
    p.add_argument("--input-shape", action="append", type=parse_input_shape, default=[], metavar="[NAME=]SHAPE",
                   help="fix an ONNX input's shape (repeatable)")
    p.add_argument("--trace", metavar="FILE.json", type=Path,
                   help="also write a Chrome trace-event file of the profile (open it in ui.perfetto.dev or "
                        "chrome://tracing); see --trace-source")
    p.add_argument("--trace-source", choices=["auto", "framework", "layers"], default=None,
                   help="what --trace holds. layers: nnperf's spans of the stored medians, one inference laid "
                        "out layer after layer (args: op, shapes, MACs, median, CI) beside the whole network's "
                        "median; framework: the framework's own profiler trace (torch.profiler, ONNX Runtime's "
                        "profiler) of --trace-runs extra whole-network runs after the profile; auto (default): "
                        "framework when the layers were timed in whole-network runs (--per-layer profiler or "
                        "none) and the backend has such a trace, else layers (isolated medians, opencv, fake)")
    p.add_argument("--trace-runs", type=positive_int, default=None, metavar="N",
                   help=f"whole-network runs in a framework trace (default {TRACE_RUNS})")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    add_fleet_argument(p)
    add_db_argument(p)
    p.set_defaults(run=run)


TRACE_RUNS = 5
"""Whole-network runs in a framework trace by default (:data:`nnperf.api`'s, named in the help without importing
it)."""


def trace_source(args: argparse.Namespace) -> str | None:
    """'framework' or 'layers' (what --trace writes, see its help, :func:`nnperf.api.profile_trace_source`), None
    without --trace; refuses trace options without --trace."""
    from nnperf.api import profile_trace_source
    from nnperf.errors import NnperfError

    if args.trace is None:
        given = [name for name, value in (("--trace-source", args.trace_source), ("--trace-runs", args.trace_runs))
                 if value is not None]
        if given:
            raise NnperfError(f"{' and '.join(given)} {'need' if len(given) > 1 else 'needs'} --trace FILE.json")
        return None
    if args.energy and args.energy.lower().endswith(".csv"):
        raise NnperfError("--trace writes a profile's trace, and --energy TRACE.csv profiles nothing: run them "
                          "separately")
    return profile_trace_source(system_from_args(args), args.per_layer, args.trace_source or "auto")


def run(args: argparse.Namespace) -> int:
    from nnperf.api import HarnessConfig, profile
    from nnperf.report import console
    from nnperf.report.measurements import op_type_table, profile_document, profile_summary, profile_table

    if args.backend == "fake":
        print("nnperf: warning: the fake backend's times come from a cost model, not a measurement", file=sys.stderr)
    trace = Path(args.energy) if args.energy and args.energy.lower().endswith(".csv") else None
    source = trace_source(args)
    if args.fleet and (args.energy or source is not None):
        from nnperf.errors import NnperfError

        raise NnperfError("--energy and --trace measure in this process: run them without --fleet")
    if trace is not None:
        return _attach_trace(args, trace)
    network = _network(args)
    harness = HarnessConfig(target_ci=args.target_ci, budget_s=args.budget_s)
    with ExitStack() as stack:  # the store is opened once every setting is valid: a refused command writes nothing
        store = stack.enter_context(open_store(args)) if args.fleet else args.db  # where the fleet's runner records
        system, progress = stack.enter_context(measuring(args, store))
        report = profile(network, system, store, per_layer=args.per_layer, energy=args.energy, harness=harness,
                         profiler_runs=args.profiler_runs, gap_s=args.gap_s, progress=progress, model_name=args.model,
                         trace=args.trace, trace_source=source or "auto", trace_runs=args.trace_runs or TRACE_RUNS)
    if args.json:
        print(json.dumps(profile_document(network, report), indent=1))
    else:
        out = console()
        if report.layers:
            out.print(profile_table(network, report))
            out.print(op_type_table(network, report))
        for line in profile_summary(report):
            out.print(line)
        out.print(f"stored as run {report.run_id} of system {report.system_key[:8]} in {store_path(args)}")
        if source is not None:
            out.print(f"trace ({source}) written to {args.trace}: open it in ui.perfetto.dev or chrome://tracing")
    for warning in report.warnings:
        print(f"nnperf: warning: {warning}", file=sys.stderr)
    return 0


def _network(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """MODEL loaded with ``--input-shape`` and ``--strict``."""
    from nnperf.api import load_model

    return load_model(args.model, dict(args.input_shape) or None, strict=args.strict)


def _attach_trace(args: argparse.Namespace, trace: Path) -> int:
    """``--energy TRACE.csv``: the power analyser's trace of the last isolated run of MODEL, as per-layer energies."""
    from nnperf.api import attach_power_trace
    from nnperf.report import console

    _network(args)  # a MODEL that does not load is refused as for a profile
    energies = attach_power_trace(args.model, trace, system_from_args(args), args.db,
                                  offset_s=args.trace_offset_s)
    out = console()
    for e in energies:
        out.print(f"{e.label}: {e.energy_per_execution_j * 1e3:.4g} mJ per execution, "
                  f"mean {e.mean_power_w:.3g} W over {e.samples} samples")
    return 0
