"""Int8 weights with a scale per output channel (synthesis's choice) against one scale per tensor, on the trained
glyph networks: each all-int8 program's time over fp32's in the same interleaved rounds, and top-1 on the held-out
fonts.

Run: .venv/bin/python bench/int8_granularity.py [--networks glyphs-resnet18 ...]
     [--budget-s 20] [--json FILE]

ONNX Runtime, one thread, NCHWc (ORT_ENABLE_ALL), as synthesis's inexact stage runs it. Both int8 programs use the
same calibration ranges (32 glyphs) and the same layers (every convolution and the classifier); they differ only in
the weights' scales. Top-1 is on the other 2,368 glyphs of bench/train_glyphs.py's held-out fonts. Stdout: a Markdown
table, one row per network.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from _shared import pct, print_table, write_result
from glyph_programs import ALL_INT8_NCHWC, CALIBRATION, arguments, cell, glyph_sources

from nnperf.measure import RoundsConfig, host_info
from nnperf.measure.backends import LoopTimer
from nnperf.optimize.synthesize import OrtSettings, compare_programs, ort_session, run_session


def measure(network: str, cache: Path, budget_s: float) -> dict:
    data, _, sources = glyph_sources(network, cache)
    layers = sources.quantizable("onnxruntime")
    all_int8 = ALL_INT8_NCHWC.with_(inexact=layers)
    per_channel = sources.onnx_model(all_int8)
    per_tensor = sources.onnx_model(all_int8.with_(int8_weights="per_tensor"))  # the same ranges
    settings = OrtSettings(1, "sequential", "nchwc")
    sessions = {"fp32": ort_session(sources.onnx_path, settings), "per-channel": ort_session(per_channel, settings),
                "per-tensor": ort_session(per_tensor, settings)}
    judged, labels = data.inputs[CALIBRATION:], data.labels[CALIBRATION:]
    top1 = {name: float(np.mean(run_session(s, judged).argmax(1) == labels)) for name, s in sessions.items()}
    sample = data.inputs[:1]
    timers = {name: LoopTimer(functools.partial(run_session, s, sample)) for name, s in sessions.items()}
    rounds = RoundsConfig(min_rounds=30, max_rounds=60, min_block_s=0.01, warmup_s=0.1, target_ci=0.005,
                          budget_s=budget_s)
    comparison = compare_programs(timers, "interleaved", rounds=rounds)
    ratios = {f"{a} / {b}": comparison.ratio(a, b).to_dict()
              for a, b in (("per-channel", "fp32"), ("per-tensor", "fp32"), ("per-tensor", "per-channel"))}
    return {"network": network, "layers": len(layers), "samples": len(labels), "top1": top1,
            "fp32_ms": comparison.median_s("fp32") * 1e3, "ratios": ratios, "rounds": comparison.rounds.rounds}


def main() -> None:
    args = arguments(__doc__ or "", budget_s=20.0)
    print(f"{host_info().cpu_model}; ONNX Runtime, 1 thread, NCHWc; all layers int8; time ratios are medians of "
          "interleaved rounds [95% CI]\n")
    rows = [measure(network, args.glyph_cache, args.budget_s) for network in args.networks]
    print_table(["network", "fp32 ms", "per-channel / fp32", "per-tensor / fp32", "per-tensor / per-channel",
                 "top-1 fp32", "top-1 per-channel", "top-1 per-tensor", "samples"],
                [[row["network"], f"{row['fp32_ms']:.3f}", cell(row["ratios"]["per-channel / fp32"]),
                  cell(row["ratios"]["per-tensor / fp32"]), cell(row["ratios"]["per-tensor / per-channel"]),
                  pct(row["top1"]["fp32"], 2), pct(row["top1"]["per-channel"], 2), pct(row["top1"]["per-tensor"], 2),
                  row["samples"]] for row in rows], right=range(1, 9))
    if args.json:
        write_result(args.json, method="synthesis", concern="int8 weights per tensor or per channel",
                     values={"networks": rows})


if __name__ == "__main__":
    main()
