"""How well the border model predicts mixed int8 programs it was not fitted to (the synthesis's int8 search).

Run: .venv/bin/python bench/synthesize_border_model.py glyphs-mobilenet_v2 [--held-out 14]
     [--seed 1] [--budget-s 60] [--json FILE]

For a glyph network (bench/train_glyphs.py's cache) on ONNX Runtime, one thread, NCHWc: the fp32 program, the
all-int8 program and the synthesis's three random probes (a quarter, a half and three quarters of the layers), then
--held-out more programs: random ones with 10% to 95% of the layers int8, and the smallest and largest layers by
MACs (a quarter and a half of them). All are timed in the same interleaved rounds (up to --budget-s seconds), each
as a ratio to fp32. The border model is fitted as synthesis fits it (``fit_mixed_cost``: gains from the all-int8
program's saving shared by MACs, to the all-int8 program and the three probes) and predicts every held-out
program's ratio. The same timings are fitted a second time without the count of slow 8-bit max-pools (borders
only, the model before that count), so the two are compared on the same measurements. Stdout: both fits and
each held-out program's measured and predicted ratios.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _shared import pct, print_table, write_result
from synthesize_networks import glyph_network

from nnperf.measure import RoundsConfig, host_info
from nnperf.optimize.synthesize import (
    PROBE_SHARES,
    ProgramSpec,
    ValidationSet,
    border_count,
    compare_programs,
    fit_mixed_cost,
    int8_edges,
    load_validation,
    make_sources,
    node_macs,
    program_timer,
    shared_by_macs,
    slow_pool_counter,
)

HELD_OUT_SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def programs(layers: tuple[str, ...], macs: dict[str, float], rng: np.random.Generator, held_out: int
             ) -> tuple[list[tuple[str, ...]], list[tuple[str, str]]]:
    """The programs fitted to (all int8, then the probes) and the held-out ones, each with what it is."""
    fitted = [layers, *(tuple(n for n in layers if rng.random() < s) for s in PROBE_SHARES)]
    by_size = sorted(layers, key=lambda n: macs[n])
    tests = [(f"random, {s:.0%}", tuple(n for n in layers if rng.random() < s)) for s in HELD_OUT_SHARES]
    for k in (len(layers) // 4, len(layers) // 2):
        tests += [(f"smallest {k}", tuple(n for n in layers if n in set(by_size[:k]))),
                  (f"largest {k}", tuple(n for n in layers if n in set(by_size[-k:])))]
    return fitted, [(what, chosen) for what, chosen in tests[:held_out] if chosen]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("network", help="glyphs-FAMILY (resnet18, mobilenet_v2, squeezenet, googlenet)")
    parser.add_argument("--held-out", type=int, default=14)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=60.0)
    parser.add_argument("--glyph-cache", type=Path, default=Path.home() / ".cache" / "nnperf" / "glyphs")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    family = args.network.removeprefix("glyphs-")
    data = load_validation("glyphs", (1, 32, 32))
    calibration = ValidationSet("calibration", data.inputs[:32], data.labels[:32])
    sources = make_sources(glyph_network(family, args.glyph_cache), None, calibration)
    base = ProgramSpec("onnxruntime", 1, layout="nchwc")
    layers = sources.quantizable("onnxruntime")
    sample = data.inputs[:1]
    macs = node_macs(sources.onnx_path, layers)
    fitted, held_out = programs(layers, macs, np.random.default_rng(args.seed), args.held_out)
    every = [*fitted, *(chosen for _, chosen in held_out)]
    timers = {"fp32": program_timer(sources, base, sample)}
    timers.update({f"p{i}": program_timer(sources, base.with_(inexact=chosen), sample) for i, chosen in enumerate(every)})
    rounds = RoundsConfig(min_rounds=30, max_rounds=60, min_block_s=0.01, warmup_s=0.1, target_ci=0.005,
                          budget_s=args.budget_s)
    comparison = compare_programs(timers, "interleaved", rounds=rounds)
    base_s = comparison.median_s("fp32")
    ratios = [comparison.ratio(f"p{i}", "fp32").median for i in range(len(every))]
    edges = int8_edges(sources.onnx_path, layers)
    gains = shared_by_macs(sources, "onnxruntime", layers, sample, base_s * (1.0 - ratios[0]))
    probes = list(zip(fitted, ratios[:len(fitted)], strict=True))
    slow_pools = slow_pool_counter(sources, base)
    cost = fit_mixed_cost(base_s, gains, edges, probes, slow_pools)
    borders = fit_mixed_cost(base_s, gains, edges, probes)
    host = host_info()
    print(f"{args.network}: {host.cpu_model}, {len(layers)} layers, {len(edges)} edges; fp32 {base_s * 1e3:.3f} ms; "
          f"{comparison.rounds.rounds} rounds in {comparison.rounds.wall_s:.0f} s\n\nborder model: {cost.describe()}"
          f"\nborders only: {borders.describe()}\n")
    rows = []
    for (what, chosen), ratio in zip(held_out, ratios[len(fitted):], strict=True):
        predicted, flat = cost.ratio(chosen), borders.ratio(chosen)
        rows.append({"program": what, "layers": len(chosen), "borders": border_count(edges, chosen),
                     "slow_pools": slow_pools(frozenset(chosen)), "measured": ratio, "predicted": predicted,
                     "error": predicted / ratio - 1, "predicted_borders_only": flat,
                     "error_borders_only": flat / ratio - 1})
    print_table(["program", "int8 layers", "borders", "slow 8-bit max-pools", "measured ratio to fp32", "predicted",
                 "error", "borders only", "error"],
                [[r["program"], r["layers"], r["borders"], r["slow_pools"], f"{r['measured']:.3f}",
                  f"{r['predicted']:.3f}", pct(r["error"], signed=True), f"{r['predicted_borders_only']:.3f}",
                  pct(r["error_borders_only"], signed=True)] for r in rows])
    print(f"\nfitted to: all int8 {ratios[0]:.3f}, probes " + ", ".join(f"{r:.3f}" for r in ratios[1:len(fitted)]))
    for name, key in (("border model", "error"), ("borders only", "error_borders_only")):
        errors = np.abs([row[key] for row in rows])
        print(f"{name}, held out: median |error| {np.median(errors):.1%}, max {errors.max():.1%}, within 15%: "
              f"{np.sum(errors <= 0.15)} of {len(rows)}")
    if args.json:
        write_result(args.json, method="synthesis", concern="the border model of mixed int8 programs", values={
            "network": args.network, "fp32_s": base_s, "gain_scale": cost.gain_scale, "border_s": cost.border_s,
            "slow_pool_s": cost.slow_pool_s, "borders_only": {"gain_scale": borders.gain_scale,
                                                              "border_s": borders.border_s},
            "fitted_ratios": ratios[:len(fitted)], "held_out": rows})


if __name__ == "__main__":
    main()
