"""``nnperf inspect MODEL``: the per-layer metrics table of a network."""

from __future__ import annotations

import argparse
import json

from nnperf.cli._shapes import parse_input_shape


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("inspect", help="per-layer MACs, parameters and memory operations of a network",
                       description="Print the per-layer table (name, type, shapes, MACs, ops, params, memOPs) "
                                   "and totals of a zoo network, an ONNX or .tflite file or an nnperf IR JSON file.")
    p.add_argument("model", metavar="MODEL", help="zoo name (see `nnperf zoo`), .onnx, .tflite or IR .json file")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of the table")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16", "int8"],
                   help="element type for the byte counts (default: float32)")
    p.add_argument("--strict", action="store_true",
                   help="refuse an ONNX or .tflite file with operators nnperf has no dedicated layer type for, instead of "
                        "importing them as generic layers")
    p.add_argument("--input-shape", action="append", type=parse_input_shape, default=[], metavar="[NAME=]SHAPE",
                   help="fix an ONNX input's shape, e.g. 1x3x224x224 or input=1x3x224x224 (repeatable)")
    p.add_argument("--save-ir", metavar="FILE.json", help="also write the network's IR as versioned JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import inspect
    from nnperf.report import console
    from nnperf.report.predictions import generic_summary, int8_summary
    from nnperf.report.tables import metrics_table

    found = inspect(args.model, input_shape=dict(args.input_shape) or None, strict=args.strict,
                    save_ir=args.save_ir or None, dtype=args.dtype)
    network = found.network
    if args.json:
        print(json.dumps(found.to_dict(), indent=1))
    else:
        out = console()
        out.print(metrics_table(network, found.metrics, found.dtype))
        for line in (generic_summary(network), int8_summary(network)):
            if line is not None:
                out.print(line, markup=False)
    return 0
