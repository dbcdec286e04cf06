"""``nnperf profile MODEL --backend B``: measure a network whole and layer by layer, into the store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nnperf.cli._backend_args import Progress, add_backend_arguments, backend_from_args, positive_int
from nnperf.cli._shapes import parse_input_shape
from nnperf.cli._store_arg import add_db_argument, open_store
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
"""Whole-network runs in a framework trace by default: enough to see run-to-run variation, small to open."""


def trace_source(args: argparse.Namespace) -> str | None:
    """'framework' or 'layers' (what --trace writes, see its help), None without --trace; refuses a framework
    trace from a backend that has none, and trace options without --trace."""
    from nnperf.errors import NnperfError
    from nnperf.measure.backends import BACKENDS

    if args.trace is None:
        given = [name for name, value in (("--trace-source", args.trace_source), ("--trace-runs", args.trace_runs))
                 if value is not None]
        if given:
            raise NnperfError(f"{' and '.join(given)} {'need' if len(given) > 1 else 'needs'} --trace FILE.json")
        return None
    if args.energy and args.energy.lower().endswith(".csv"):
        raise NnperfError("--trace writes a profile's trace, and --energy TRACE.csv profiles nothing: run them "
                          "separately")
    has_trace = BACKENDS.create(args.backend).has_trace
    source = args.trace_source or "auto"
    if source == "framework" and not has_trace:
        raise NnperfError(f"backend {args.backend!r} writes no trace of its own; use --trace-source layers")
    if source == "auto":
        source = "framework" if has_trace and args.per_layer != "isolated" else "layers"
    return source


def run(args: argparse.Namespace) -> int:
    from nnperf.api import load_model
    from nnperf.campaign import ProfileConfig, profile_network
    from nnperf.measure import HarnessConfig
    from nnperf.measure.power import get_meter
    from nnperf.report import console
    from nnperf.report.measurements import op_type_table, profile_document, profile_summary, profile_table

    if args.backend == "fake":
        print("nnperf: warning: the fake backend's times come from a cost model, not a measurement", file=sys.stderr)
    network = load_model(args.model, dict(args.input_shape) or None, strict=args.strict)
    config = ProfileConfig(per_layer=args.per_layer, profiler_runs=args.profiler_runs, gap_s=args.gap_s,
                           harness=HarnessConfig(target_ci=args.target_ci, budget_s=args.budget_s))
    trace = Path(args.energy) if args.energy and args.energy.lower().endswith(".csv") else None
    source = trace_source(args)
    if args.fleet and (args.energy or source is not None):
        from nnperf.errors import NnperfError

        raise NnperfError("--energy and --trace measure in this process: run them without --fleet")
    store = open_store(args)  # only once every setting is valid: a refused command writes nothing
    if args.fleet:
        with store, measuring(args, store) as (runner, progress):
            report = profile_network(network, runner, store, config, progress=progress, model=args.model)
    else:
        with store, backend_from_args(args) as backend:
            if trace is not None:
                return _attach_trace(args, network, backend, store, trace)
            meter = get_meter(args.energy) if args.energy else None
            with Progress(not args.json) as progress:
                report = profile_network(network, backend, store, config, meter=meter, progress=progress,
                                         model=args.model)
            if source is not None:
                _write_trace(args, source, network, backend, report)

    if args.json:
        print(json.dumps(profile_document(network, report), indent=1))
    else:
        out = console()
        if report.layers:
            out.print(profile_table(network, report))
            out.print(op_type_table(network, report))
        for line in profile_summary(report):
            out.print(line)
        out.print(f"stored as run {report.run_id} of system {report.system_key[:8]} in {store.path}")
        if source is not None:
            out.print(f"trace ({source}) written to {args.trace}: open it in ui.perfetto.dev or chrome://tracing")
    for warning in report.warnings:
        print(f"nnperf: warning: {warning}", file=sys.stderr)
    return 0


def _attach_trace(args: argparse.Namespace, network, backend, store, trace: Path) -> int:  # type: ignore[no-untyped-def]
    from nnperf.campaign import attach_trace
    from nnperf.measure.power import read_trace_csv
    from nnperf.report import console

    energies = attach_trace(store, backend.system(), args.model, read_trace_csv(trace), args.trace_offset_s,
                            source=trace.name)
    out = console()
    for e in energies:
        out.print(f"{e.label}: {e.energy_per_execution_j * 1e3:.4g} mJ per execution, "
                  f"mean {e.mean_power_w:.3g} W over {e.samples} samples")
    return 0


def _write_trace(args: argparse.Namespace, source: str, network, backend, report) -> None:  # type: ignore[no-untyped-def]
    from nnperf.report.trace import framework_trace, measured_trace, write_trace

    if source == "framework":
        document = framework_trace(backend.trace(network, args.trace_runs or TRACE_RUNS), network,
                                   report.system_label, backend.name)
    else:
        document = measured_trace(network, report)
    write_trace(document, args.trace)
