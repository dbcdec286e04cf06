"""A plain convolution chain with widths no designer would pick (52, 100, 148, 204), for the width advisor.

Run: .venv/bin/python bench/odd_width_network.py bench/results/steps/odd_widths.json
     .venv/bin/nnperf advise bench/results/steps/odd_widths.json --backend onnxruntime \\
         --db bench/results/steps/steps.db --verify

The zoo's networks use widths that are multiples of 16 or 32, which already sit on the fast paths the step
models find, so the advisor has nothing to suggest there. This network shows what it does with a pruned or
hand-sized model: 3x3 convolutions with ReLU at 28x28, then global pooling and a classifier.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nnperf.ir import AxisAttrs, ConvAttrs, Layer, LinearAttrs, Network, OpType, TensorSpec, save_network

WIDTHS = (52, 100, 148, 204)
SIZE = 28


def odd_width_network() -> Network:
    conv = ConvAttrs((3, 3), padding=(1,) * 4)
    layers, previous, channels = [], "x", 3
    for i, width in enumerate(WIDTHS, start=1):
        shape_in, shape_out = (1, channels, SIZE, SIZE), (1, width, SIZE, SIZE)
        layers.append(Layer(f"conv{i}", OpType.CONV, (previous,), (shape_in,), shape_out, conv))
        layers.append(Layer(f"relu{i}", OpType.RELU, (f"conv{i}",), (shape_out,), shape_out))
        previous, channels = f"relu{i}", width
    pooled = (1, channels, 1, 1)
    layers += [Layer("gap", OpType.GLOBAL_AVG_POOL, (previous,), ((1, channels, SIZE, SIZE),), pooled),
               Layer("flatten", OpType.FLATTEN, ("gap",), (pooled,), (1, channels), AxisAttrs(1)),
               Layer("fc", OpType.LINEAR, ("flatten",), ((1, channels),), (1, 10), LinearAttrs())]
    return Network("odd_widths", (TensorSpec("x", (1, 3, SIZE, SIZE)),), tuple(layers), ("fc",))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?", default=Path("bench/results/steps/odd_widths.json"),
                        help="the IR file to write (default: %(default)s)")
    args = parser.parse_args()
    save_network(odd_width_network(), args.out)
    print(args.out)


if __name__ == "__main__":
    main()
