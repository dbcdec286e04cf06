"""Trains the glyph classifiers (nnperf.optimize.synthesize.glyph_network: ResNet-18-, MobileNet v2-, SqueezeNet-
and GoogLeNet-like) on characters rendered from three quarters of the system's fonts, and reports their top-1 on
2,400 glyphs from the held-out quarter (fonts never trained on). The weights are cached outside the repository.

Run: .venv/bin/python bench/train_glyphs.py [--train 12000] [--epochs 5] [--width 16]
     [--families resnet18 mobilenet_v2 squeezenet googlenet] [--cache ~/.cache/nnperf/glyphs] [--seed 0]

One thread. Stdout gets a Markdown table: family, parameters, training samples and epochs, top-1 on the training
glyphs and on the held-out fonts' glyphs, training time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from nnperf.optimize.synthesize import GLYPH_FAMILIES as FAMILIES
from nnperf.optimize.synthesize import font_files, glyph_set, split_fonts, train_glyph_network


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=12000)
    parser.add_argument("--held-out", type=int, default=2400)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "nnperf" / "glyphs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    fonts = font_files()
    train_fonts, held_fonts = split_fonts(fonts, seed=args.seed)
    train = glyph_set(args.train, 32, train_fonts, seed=args.seed + 1, name="glyphs, training fonts")
    held = glyph_set(args.held_out, 32, held_fonts, seed=args.seed + 2, name="glyphs, held-out fonts")
    args.cache.mkdir(parents=True, exist_ok=True)
    print(f"{len(fonts)} fonts: {len(train_fonts)} to train on, {len(held_fonts)} held out "
          f"({', '.join(f.stem for f in held_fonts)})\n")
    print("| family | parameters | training glyphs x epochs | top-1, training | top-1, held-out fonts "
          f"({len(held)}) | train s |")
    print("|---|---|---|---|---|---|")
    for family in args.families:
        trained = train_glyph_network(family, train, held, args.width, args.epochs, args.seed)
        params = sum(p.numel() for p in trained.module.parameters())
        torch.save({"format": "nnperf-glyph-net", "version": 1, "family": family, "width": args.width,
                    "epochs": args.epochs, "seed": args.seed, "train": args.train,
                    "held_out_accuracy": trained.held_out_accuracy, "state": trained.module.state_dict()},
                   args.cache / f"{family}-w{args.width}.pt")
        print(f"| {family} | {params:,} | {args.train:,} x {args.epochs} | {trained.train_accuracy:.1%} | "
              f"{trained.held_out_accuracy:.1%} | {trained.train_s:.0f} |", flush=True)
        (args.cache / f"{family}-w{args.width}.json").write_text(json.dumps({
            "train_accuracy": trained.train_accuracy, "held_out_accuracy": trained.held_out_accuracy,
            "train_s": trained.train_s, "parameters": params}))


if __name__ == "__main__":
    main()
