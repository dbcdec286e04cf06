"""``nnperf runtimes MODEL``: which runtime to ship, the model's predicted latency on every calibrated system,
ranked; ``--verify`` measures them, interleaved across the runtimes in one run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nnperf.cli._backend_args import Progress
from nnperf.cli._shapes import parse_input_shape
from nnperf.cli._store_arg import add_db_argument


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "runtimes", help="rank a model's predicted latency on every calibrated runtime: which one to ship",
        description="Predict MODEL on every calibrated system of the store (each runtime, thread count and option "
                    "set you calibrated: `nnperf calibrate --backend litert`, `--backend openvino`, ...) and rank "
                    "them, fastest first. --verify measures the whole network on each system this host can run, "
                    "every runtime once per round in a new random order, so that the measured order is not the "
                    "machine's drift; the measured times are raw medians with their interquartile range.",
        epilog="examples: nnperf runtimes mobilenet_v2; nnperf runtimes model.tflite --verify --plot rank.png; "
               "nnperf runtimes resnet18 --system 1 --system 3 --json")
    p.add_argument("model", metavar="MODEL", help="zoo name (see `nnperf zoo`), .onnx, .tflite or IR .json file")
    p.add_argument("--system", action="append", default=[], metavar="ID|KEY",
                   help="rank only this stored system (id or key prefix, see `nnperf systems`; repeatable); "
                        "default every calibrated one")
    p.add_argument("--verify", action="store_true",
                   help="also measure the network on each runtime, interleaved in one run")
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="also draw the ranking as a bar chart")
    p.add_argument("--json", action="store_true", help='print one JSON document (format "nnperf-runtimes")')
    p.add_argument("--input-shape", action="append", type=parse_input_shape, default=[], metavar="[NAME=]SHAPE",
                   help="fix an ONNX input's shape (repeatable)")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import rank_runtimes
    from nnperf.report import console
    from nnperf.report.runtimes import plot_ranking, ranking_summary, ranking_table

    with Progress(not args.json and args.verify, "measuring") as progress:
        ranking = rank_runtimes(args.model, args.db, systems=args.system or None, verify=args.verify,
                                input_shape=dict(args.input_shape) or None, progress=progress)
    if args.plot:
        print(f"wrote {plot_ranking(ranking, args.plot)}", file=sys.stderr)
    if args.json:
        print(json.dumps(ranking.to_dict(), indent=1))
        return 0
    out = console()
    out.print(ranking_table(ranking))
    for line in ranking_summary(ranking):
        out.print(line)
    return 0
