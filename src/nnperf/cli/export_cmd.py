"""``nnperf export NAME OUT.onnx``: write a zoo network as ONNX."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("export", help="write a zoo network to an ONNX file",
                       description="Export a zoo network (random weights, canonical input size) to ONNX. "
                                   "Batch normalisation is kept as its own node.")
    p.add_argument("name", metavar="NAME", help="zoo name (see `nnperf zoo`)")
    p.add_argument("out", metavar="OUT.onnx", help="path of the ONNX file to write")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (default: 0)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import export
    from nnperf.report import shape_text

    written = export(args.name, args.out, seed=args.seed)
    if args.json:
        print(json.dumps(written.to_dict(), indent=1))
    else:
        print(f"wrote {written.path} ({written.network}, input {shape_text(written.input_shape)})")
    return 0
