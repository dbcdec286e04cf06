"""``nnperf predict MODEL``: per-layer and network latency from this system's calibration, optionally verified."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nnperf.cli._backend_args import Progress, add_backend_arguments, system_from_args
from nnperf.cli._choices import protocol_choices
from nnperf.cli._shapes import parse_input_shape
from nnperf.cli._store_arg import add_db_argument


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("predict", help="predict a network's per-layer and total latency from a calibration",
                       description="Predict each layer's latency (and energy, where calibrated) with the system's "
                                   "PreVIous models, the network total (composed with the backend's fusions, and "
                                   "PreVIous' c x the sum beside it) and the hotspots, without running the network. "
                                   "--verify also measures it and compares.")
    p.add_argument("model", metavar="MODEL", help="zoo name (see `nnperf zoo`), .onnx, .tflite or IR .json file")
    add_backend_arguments(p)
    p.add_argument("--system", metavar="ID|KEY",
                   help="predict with this stored system's calibration (id or key prefix, see `nnperf systems`); "
                        "no backend is needed unless --verify")
    p.add_argument("--verify", action="store_true",
                   help="also measure the network on the same system (layers in isolation and whole) and compare")
    p.add_argument("--protocol", choices=protocol_choices(), metavar="PROTOCOL",
                   default="auto",
                   help="with --verify, how the whole network is timed beside the machine-speed reference: "
                        "interleaved (both in every round, in random order, on one core), duet (both at once on "
                        "two cores) or sequential (one after the other, as before); auto (default) takes what a "
                        "quick machine check recommends (docs/measurement.md); the speed-adjusted "
                        "error scales the measurement to the calibration's speed by the network's per-round ratio "
                        "to the reference")
    p.add_argument("--trace", metavar="FILE.json", type=Path,
                   help="also write the predicted inference as a Chrome trace-event file (ui.perfetto.dev, "
                        "chrome://tracing): the network-level prediction on one track, each layer's prediction "
                        "end to end on another, layers the backend fuses at zero length; with --verify the "
                        "measured inference beside it; laid out as `nnperf profile --trace` lays out a profile")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--csv", type=Path, metavar="FILE.csv",
                   help="also write the per-layer predictions (and, with --verify, measurements) as CSV")
    p.add_argument("--top", type=int, default=5, help="how many hotspots to name (default 5)")
    p.add_argument("--strict", action="store_true",
                   help="refuse an ONNX file with operators nnperf has no dedicated layer type for, instead of "
                        "importing them as generic layers")
    p.add_argument("--input-shape", action="append", type=parse_input_shape, default=[], metavar="[NAME=]SHAPE",
                   help="fix an ONNX input's shape (repeatable)")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import load_model, predict, verify
    from nnperf.report import console
    from nnperf.report.predictions import (
        generic_summary,
        int8_summary,
        prediction_summary,
        prediction_table,
        verification_summary,
    )

    network = load_model(args.model, dict(args.input_shape) or None, strict=args.strict)
    system = system_from_args(args)
    if args.verify:
        with Progress(not args.json, "verifying") as progress:
            check = verify(network, system, args.db, calibration=args.system, progress=progress,
                           model_name=args.model, protocol=args.protocol)
        prediction, measured = check.prediction, dict(check.layer_measured_s)
    else:
        check, measured = None, None
        prediction = predict(network, system if args.system is None else args.system, args.db)
    if args.trace is not None:
        from nnperf.report.trace import predicted_trace, write_trace

        write_trace(predicted_trace(network, prediction, check), args.trace)
    if args.csv is not None:
        from nnperf.report import write_csv
        from nnperf.report.predictions import PREDICTION_CSV_COLUMNS, prediction_rows

        write_csv(args.csv, PREDICTION_CSV_COLUMNS, prediction_rows(prediction, check))
    if args.json:
        print(json.dumps(check.to_dict() if check is not None else prediction.to_dict(), indent=1))
        return 0
    out = console()
    out.print(prediction_table(network, prediction, measured))
    for line in prediction_summary(prediction, args.top):
        out.print(line)
    for line in (generic_summary(network, prediction), int8_summary(network)):
        if line is not None:
            out.print(line, markup=False)
    if check is not None:
        for line in verification_summary(check):
            out.print(line)
    if args.trace is not None:
        out.print(f"trace written to {args.trace}: open it in ui.perfetto.dev or chrome://tracing")
    if args.csv is not None:
        out.print(f"per-layer predictions written to {args.csv}")
    return 0
