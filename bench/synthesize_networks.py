"""Cappuccino's Table I on this machine: the digits CNN and zoo networks synthesised within an accuracy budget.

Run: .venv/bin/python bench/synthesize_networks.py [--networks digits resnet18 mobilenet_v2
     squeezenet1_1] [--budget 0.01] [--samples 200] [--photos 232] [--threads 2] [--calibrate]
     [--db bench/results/synthesis/synthesize.db] [--protocol interleaved] [--glyph-width 16]
     [--json bench/results/synthesis/synthesize_networks.json]

- ``digits``: a CNN on scikit-learn's bundled handwritten digits resized to 64x64 (width 32, 10 epochs), trained
  once by this script and cached in bench/results/digits-cnn-64.pt; accuracy is top-1 on the held-out digits
  (never trained on).
- zoo names: random weights (nnperf's seeded ones); accuracy is the agreement of top-1 with the fp32 reference on
  crops of the photographs bundled with scikit-learn and matplotlib (a proxy, see the README).
- ``glyphs-FAMILY`` (resnet18, mobilenet_v2, squeezenet, googlenet): the glyph classifiers bench/train_glyphs.py
  trained and cached (``--glyph-cache``); accuracy is top-1 on the built-in ``glyphs`` set (2,400 characters of
  fonts never trained on: 32 calibrate int8, the rest judge, so give ``--samples 2400``), at the base width
  ``--glyph-width`` (default 16: half MobileNet v2's channels and a quarter of SqueezeNet's; 32 gives MobileNet
  v2 its own, 64 SqueezeNet its own).

For each network, `nnperf.api.synthesize` measures Table I's stages (baseline single-thread fp32 torch eager,
parallel, layout, inexact, final artifact), the greedy and ILP searches, and writes the program to
--programs/NAME/ (default bench/results/synth/NAME/, git-ignored). The fp32 candidates are predicted from the
calibrations in --db (with --calibrate, the systems it lacks are calibrated first, once, with the CNN blocks) and
measured in that order. Stdout gets Markdown tables: Table I per network, the speed-up of the
final program over single-thread fp32 torch eager (goal >= 8x within a 1% drop) and over ONNX Runtime's best fp32
program (goal >= 1.5x), and greedy against ILP. The speed-ups come from the comparison synthesis ends with
(``--protocol``): interleaved (default), the baseline and the stages' programs timed in the same rounds, each
speed-up the median per-round ratio with its 95% bootstrap interval; sequential, the ratio of the search's medians.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from _shared import markdown_table, pct, print_table, write_result

from nnperf.api import synthesize
from nnperf.measure import host_info
from nnperf.optimize.synthesize import SynthesisResult, cached_digits, load_validation, photo_set

DIGITS_CACHE = Path("bench/results/digits-cnn-64.pt")
NETWORKS = ("digits", "resnet18", "mobilenet_v2", "squeezenet1_1")


def glyph_network(family: str, cache: Path, width: int) -> Any:
    """The trained glyph classifier of ``family`` at base width ``width`` from bench/train_glyphs.py's cache, in
    eval mode."""
    import torch

    from nnperf.optimize.synthesize import glyph_network as build

    path = cache / f"{family}-w{width}.pt"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run bench/train_glyphs.py --width {width} --families {family} first")
    saved = torch.load(path, weights_only=True)
    module = build(family, saved["width"])
    module.load_state_dict(saved["state"])
    return module.eval()


def run_network(name: str, args: argparse.Namespace) -> SynthesisResult:
    out = args.programs / name
    if name.startswith("glyphs-"):
        module = glyph_network(name.removeprefix("glyphs-"), args.glyph_cache, args.glyph_width)
        data = load_validation("glyphs", (1, 32, 32))
        result = synthesize(module, data=data, budget=args.budget, out=out, max_threads=args.threads,
                            samples=args.samples, input_shape=(1, 1, 32, 32), store=args.db,
                            calibrate_missing=args.calibrate, protocol=args.protocol, measure_best=args.measure_best)
        return dataclasses.replace(result, network=name)  # a module is named by its class (Sequential)
    if name == "digits":
        trained = cached_digits(DIGITS_CACHE, size=64, width=32, epochs=10)
        print(f"digits CNN: 64x64, width 32, 10 epochs; held-out top-1 {trained.validation_accuracy:.2%} on "
              f"{len(trained.validation)} digits\n")
        return synthesize(trained.module, data=trained.validation, budget=args.budget, out=out,
                          max_threads=args.threads, samples=args.samples, input_shape=(1, 1, 64, 64),
                          store=args.db, calibrate_missing=args.calibrate, protocol=args.protocol,
                          measure_best=args.measure_best)
    from nnperf.api import load_model

    shape = load_model(name).inputs[0].shape
    data = photo_set(tuple(shape[1:]), count=args.photos, seed=0)
    return synthesize(name, data=data, budget=args.budget, out=out, max_threads=args.threads, samples=args.samples,
                      store=args.db, calibrate_missing=args.calibrate, protocol=args.protocol,
                      measure_best=args.measure_best)


def accuracy(m: Any) -> str:
    a = m.accuracy
    return f"{a.top1:.2%}" if a.top1 is not None else f"{a.agreement:.1%} agree"


def speedup(ratio: Any) -> str:
    if ratio is None:
        return "-"
    if ratio.ci_low == ratio.ci_high:
        return f"{ratio.median:.2f}x"
    return f"{ratio.median:.2f}x [{ratio.ci_low:.2f}, {ratio.ci_high:.2f}]"


def print_table1(result: SynthesisResult) -> None:
    comparison = result.comparison
    assert comparison is not None
    print(f"### {result.network}\n")
    print(f"Speed-ups: {comparison.protocol.value}, {comparison.rounds.rounds} rounds "
          f"({comparison.rounds.wall_s:.1f} s); ms compared = median in those rounds.\n")
    rows = []
    for stage in result.stages:
        m = stage.program
        s = m.timing.stats
        predicted = "-" if m.predicted_s is None else f"{m.predicted_s * 1e3:.2f}"
        compared = "-" if stage.compared_s is None else f"{stage.compared_s * 1e3:.2f}"
        rows.append([stage.name, m.spec.label(), f"{s.median_s * 1e3:.2f} [{s.q1_s * 1e3:.2f}, {s.q3_s * 1e3:.2f}]",
                     compared, predicted, speedup(stage.speedup), accuracy(m), pct(m.accuracy.drop, 2), stage.note])
    print(markdown_table(["stage", "program", "search ms, median [q1, q3]", "ms compared", "predicted ms",
                          "speed-up [95% CI]", "accuracy", "drop", "note"], rows))
    fp32 = [m for m in result.candidates if m.predicted_s is not None]
    if fp32:
        print("\nfp32 candidates, in the order measured (ranked by prediction): " + "; ".join(
            f"{m.spec.label()}: predicted {m.predicted_s * 1e3:.2f} ms, measured {m.latency_s * 1e3:.2f} ms"
            for m in fp32))
    if result.skipped:
        print(f"\nSkipped (ranked slower by the predictions): {len(result.skipped)} of "
              f"{len(result.skipped) + len(fp32)} ranked, about {result.skipping_saved_s:.0f} s saved: " + "; ".join(
                  f"{k.spec.label()} predicted {k.predicted_s * 1e3:.2f} ms" for k in result.skipped))
    for search in result.searches:
        print(f"\n{search.runtime} {search.mode}: {len(search.effects)} layers; all {search.mode} "
              f"{search.all_inexact.latency_s * 1e3:.2f} ms at a drop of {search.all_inexact.accuracy.drop:.2%}"
              + (f"; border model: {search.cost.describe()}" if search.cost is not None else "") + "\n")
        print("| search | inexact layers | verified drop | accuracy evaluations | search s | ms | predicted ms "
              "| status |")
        print("|---|---|---|---|---|---|---|---|")
        for found, program in ((search.greedy, search.greedy_program), (search.ilp, search.ilp_program)):
            ms = f"{program.latency_s * 1e3:.2f}" if program is not None else "-"
            predicted = f"{found.predicted_s * 1e3:.2f}" if found.predicted_s is not None else "-"
            print(f"| {found.method} | {len(found.inexact)} | {found.drop:.2%} | {found.evaluations} "
                  f"| {found.search_s:.1f} | {ms} | {predicted} | {found.status} |")
        if search.checked:
            print("\nTimed with fp32 in paired rounds after the search, against the border model: "
                  + "; ".join(check.describe() for check in search.checked)
                  + f"; kept from these rounds: {search.kept}")
        if search.granularity is not None:
            print(f"\nThe kept program with its {search.granularity.describe()}.")
    print()


def summary_row(result: SynthesisResult, wall_s: float) -> dict[str, Any]:
    final = result.stage("final")
    baseline = result.stages[0]
    ort = result.ort_best_fp32
    assert final.speedup is not None and baseline.compared_s is not None and final.compared_s is not None
    return {"network": result.network, "protocol": "interleaved" if final.speedup.paired else "sequential",
            "baseline_ms": baseline.compared_s * 1e3, "final_ms": final.compared_s * 1e3,
            "final": final.program.spec.label(), "artifact": result.artifact,
            "speedup_over_baseline": final.speedup.to_dict(),
            "ort_best_fp32": ort.spec.label() if ort else None,
            "speedup_over_ort_fp32": result.over_ort_fp32.to_dict() if result.over_ort_fp32 else None,
            "stages_ms": {s.name: s.compared_s * 1e3 if s.compared_s else None for s in result.stages},
            "stages_search_ms": {s.name: s.program.latency_s * 1e3 for s in result.stages},
            "drop": final.program.accuracy.drop, "reference_top1": result.reference_top1, "wall_s": wall_s,
            "final_top1": final.program.accuracy.top1, "evaluation_samples": result.evaluation_samples,
            "measured": len(result.candidates), "skipped": len(result.skipped),
            "searches": [search_row(search) for search in result.searches],
            "table1": result.manifest["table1"]}


def search_row(search: Any) -> dict[str, Any]:
    """One runtime's inexact search for the JSON: each search's set, its measured and predicted ms."""
    def found(result: Any, program: Any) -> dict[str, Any]:
        return {"inexact": len(result.inexact), "drop": result.drop,
                "ms": program.latency_s * 1e3 if program is not None else None,
                "predicted_ms": result.predicted_s * 1e3 if result.predicted_s is not None else None}

    cost = search.cost
    return {"runtime": search.runtime, "layers": len(search.effects), "all_inexact_ms": search.all_inexact.latency_s
            * 1e3, "all_inexact_drop": search.all_inexact.accuracy.drop,
            "border_model": None if cost is None else {"gain_scale": cost.gain_scale, "border_us": cost.border_s * 1e6,
                                                       "slow_pool_us": cost.slow_pool_s * 1e6,
                                                       "edges": len(cost.edges), "probes": cost.probes},
            "greedy": found(search.greedy, search.greedy_program), "ilp": found(search.ilp, search.ilp_program),
            "checked": [{"programs": c.programs, "layers": c.layers, "predicted_ratio": c.predicted_ratio,
                         "measured_ratio": c.measured.to_dict(), "error": c.error, "fitted": c.fitted, "drop": c.drop}
                        for c in search.checked],
            "kept_by_paired_check": search.kept, "per_tensor": granularity_row(search.granularity)}


def granularity_row(check: Any) -> dict[str, Any] | None:
    """The kept int8 program tried with its weights per tensor, for the JSON."""
    if check is None:
        return None
    return {"drop": check.drop, "ratio_to_per_channel": check.measured.to_dict() if check.measured else None,
            "kept": check.kept}


def ratio_text(ratio: dict[str, Any] | None) -> str:
    if ratio is None:
        return "-"
    return f"{ratio['median']:.2f}x [{ratio['ci_low']:.2f}, {ratio['ci_high']:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS))
    parser.add_argument("--budget", type=float, default=0.01)
    parser.add_argument("--samples", type=int, default=200, help="validation samples judging accuracy")
    parser.add_argument("--photos", type=int, default=232, help="photo crops for zoo networks (32 calibrate)")
    parser.add_argument("--threads", type=int, default=None, help="most threads tried (default: all cores)")
    parser.add_argument("--db", type=Path, default=Path("bench/results/synthesis/synthesize.db"),
                        help="the store whose calibrations predict the fp32 candidates")
    parser.add_argument("--calibrate", action="store_true", help="calibrate the candidates' systems it lacks")
    parser.add_argument("--protocol", default="interleaved", choices=("sequential", "interleaved"),
                        help="where the speed-ups come from (default interleaved)")
    parser.add_argument("--measure-best", type=int, default=None, metavar="N",
                        help="measure only each runtime's N predicted fastest candidates per stage")
    parser.add_argument("--glyph-cache", type=Path, default=Path.home() / ".cache" / "nnperf" / "glyphs")
    parser.add_argument("--glyph-width", type=int, default=16,
                        help="the glyph classifiers' base width, as bench/train_glyphs.py --width trained them")
    parser.add_argument("--programs", type=Path, default=Path("bench/results/synth"),
                        help="where each network's program folder is written (two runs at once need two)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    host = host_info()
    print(f"{host.cpu_model}, {host.logical_cores} logical cores; budget {args.budget:.2%}; {args.samples} "
          f"judging samples; speed-ups {args.protocol}\n")
    rows = []
    for name in args.networks:
        start = time.perf_counter()
        result = run_network(name, args)
        print_table1(result)
        rows.append(summary_row(result, time.perf_counter() - start))
    print_table(["network", "baseline ms", "final ms", "final program", "over baseline [95% CI] (goal 8x)",
                 "ONNX Runtime best fp32", "over it [95% CI] (goal 1.5x)", "top-1 fp32", "top-1 program (samples)",
                 "drop", "measured / skipped", "wall s"],
                [[r["network"], f"{r['baseline_ms']:.2f}", f"{r['final_ms']:.2f}", r["final"],
                  ratio_text(r["speedup_over_baseline"]), r["ort_best_fp32"], ratio_text(r["speedup_over_ort_fp32"]),
                  pct(r["reference_top1"], 2),
                  "-" if r["final_top1"] is None else f"{pct(r['final_top1'], 2)} ({r['evaluation_samples']})",
                  pct(r["drop"], 2), f"{r['measured']} / {r['skipped']}", f"{r['wall_s']:.0f}"] for r in rows])
    if args.json:
        write_result(args.json, method="synthesis", concern="synthesis within an accuracy budget", values={
            "budget": args.budget, "protocol": args.protocol, "glyph_width": args.glyph_width, "networks": rows})


if __name__ == "__main__":
    main()
