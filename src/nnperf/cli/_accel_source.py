"""The options shared by ``nnperf accel`` and ``nnperf partition`` that name what the accelerator model runs on:
a layer table or an IR network, an accelerator spec."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_source_arguments(parser: argparse.ArgumentParser, default_bits: int, bits_reason: str,
                         with_system: bool = False) -> None:
    """MODEL, --network, --table, --bits, --spec, ... ; ``with_system`` when the command also takes --system
    (which, like --sparsity and --images, sends a reference network's name through the IR path)."""
    ir_options = "--sparsity, --images or --system" if with_system else "--sparsity or --images"
    parser.add_argument("model", nargs="?", metavar="MODEL",
                        help="a zoo name, .onnx, .tflite or IR .json file (its conv and FC layers become rows); the "
                             "names of the four reference networks (alexnet, vgg16, squeezenet_v11 = squeezenet1_1, "
                             f"googlenet_v1 = googlenet) take their shipped table unless {ir_options} is given")
    parser.add_argument("--network", metavar="NAME",
                        help="one of the public CNNergy model's networks: alexnet, vgg16, squeezenet_v11, "
                             "googlenet_v1 (shipped layer tables with their sparsities and batches)")
    parser.add_argument("--table", type=Path, metavar="FILE.csv",
                        help="a layer table: name,R,M,H,C,U,E,s_if,s_of,n (optional groups,out,block)")
    parser.add_argument("--bits", type=int, choices=(16, 8), default=None,
                        help=f"data width; the reference's scaling rules apply to 8 bits (default {default_bits}: "
                             f"{bits_reason}; or the spec file's)")
    parser.add_argument("--spec", type=Path, metavar="SPEC.yaml",
                        help="accelerator spec (YAML, 'version: 1'; default the Eyeriss-like accelerator; "
                             "'nnperf accel spec' prints a complete one)")
    parser.add_argument("--no-control", action="store_true",
                        help="leave out clock and other control energy (the reference's 'without control' variant)")
    parser.add_argument("--sparsity", default=None, metavar="SOURCE",
                        help="for MODEL: 'measure' (run it on --images; default), 'table' (borrow the shipped table "
                             "of the same zoo network), 'table:NAME', or a CSV file 'tensor,sparsity'")
    parser.add_argument("--images", nargs="+", metavar="PATH",
                        help="images or folders for --sparsity measure (default: matplotlib's sample photograph)")


def source_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`nnperf.api.accel_energy` (and ``accel_sweep``, ``partition``) that
    name what the accelerator model runs on."""
    return {"network": args.network, "table": args.table, "bits": args.bits, "control": not args.no_control,
            "sparsity": args.sparsity, "images": args.images}
