"""``nnperf compare A B``: two runs, systems or predictions layer by layer, by op type and whole."""

from __future__ import annotations

import argparse
import json
import sys

from nnperf.cli._shapes import parse_input_shape
from nnperf.cli._store_arg import add_db_argument

EXIT_SLOWER = 4
"""The exit code when B is slower than --fail-if-slower allows (1 is an error, 2 a usage error, 3 an internal one)."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "compare", help="compare two runs, systems or predictions layer by layer and by op type",
        description="Compare side A with side B: per-layer times, time by op type (total and share, as "
                    "torch.profiler's key_averages) and the whole network. Speed-up = A time / B time: above 1 B "
                    "is faster. A side is run:ID (a stored run, as `nnperf profile` prints), system:ID|KEY (that "
                    "system's newest finished run of --model; see `nnperf systems`) or predicted:ID|KEY (that "
                    "system's calibrated prediction for --model). Exit code 4 when --fail-if-slower is exceeded.",
        epilog="examples: nnperf compare run:3 run:7; nnperf compare system:1 system:2 --model resnet18; "
               "nnperf compare predicted:1 system:1 --model resnet18; "
               "nnperf compare run:3 run:7 --fail-if-slower 5")
    p.add_argument("a", metavar="A", help="run:ID, system:ID|KEY or predicted:ID|KEY")
    p.add_argument("b", metavar="B", help="the same forms as A")
    p.add_argument("--model", metavar="MODEL",
                   help="the network for system: and predicted: sides (zoo name, .onnx, .tflite or IR .json file, as "
                        "given to `nnperf profile`)")
    p.add_argument("--strict", action="store_true",
                   help="refuse an ONNX file with operators nnperf has no dedicated layer type for, instead of "
                        "importing them as generic layers")
    p.add_argument("--input-shape", action="append", type=parse_input_shape, default=[], metavar="[NAME=]SHAPE",
                   help="fix an ONNX input's shape for a predicted: side (repeatable)")
    p.add_argument("--top", type=int, default=5, help="how many of the largest slowdowns to name (default 5)")
    p.add_argument("--json", action="store_true", help="print one JSON document (format nnperf-compare)")
    p.add_argument("--csv", metavar="FILE.csv", help="also write the per-layer table as CSV (seconds)")
    p.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help=f"exit with code {EXIT_SLOWER} when B's whole network is more than PCT percent slower "
                        "than A's (a CI regression check)")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import compare
    from nnperf.errors import NnperfError
    from nnperf.report.compare import write_csv

    if args.fail_if_slower is not None and not args.fail_if_slower >= 0:
        raise NnperfError(f"--fail-if-slower takes a percentage >= 0, got {args.fail_if_slower}")
    if args.top < 0:
        raise NnperfError(f"--top takes a count >= 0, got {args.top}")
    comparison = compare(args.a, args.b, args.db, model=args.model, input_shape=dict(args.input_shape) or None,
                         strict=args.strict)
    a, b = comparison.a, comparison.b
    if args.csv:
        rows = write_csv(comparison, args.csv)
        print(f"wrote {rows} layer row(s) to {args.csv}", file=sys.stderr)
    if args.json:
        print(json.dumps(comparison.to_dict(args.top), indent=1))
    else:
        from nnperf.report import console
        from nnperf.report.compare import comparison_summary, layer_table, op_table

        out = console()
        out.print(layer_table(comparison))
        out.print(op_table(comparison))
        for line in comparison_summary(comparison, args.top):
            out.print(line)
    slower = comparison.slower_pct
    if args.fail_if_slower is not None and slower is not None and slower > args.fail_if_slower:
        print(f"nnperf: B is {slower:.1f}% slower than A (whole network {a.network_s * 1e3:.4g} ms -> "
              f"{b.network_s * 1e3:.4g} ms), more than --fail-if-slower {args.fail_if_slower:g}%", file=sys.stderr)
        return EXIT_SLOWER
    return 0
