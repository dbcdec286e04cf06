"""``nnperf synthesize``: the fastest deployable program for a network on this device within an accuracy budget
(Cappuccino)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from nnperf.cli._store_arg import add_db_argument


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "synthesize", help="synthesise the fastest program within an accuracy budget (Cappuccino)",
        description="Measure the network's programs on this device stage by stage (Cappuccino's Table I): "
                    "single-thread fp32, the best thread count and executor, a layout kept end to end, then "
                    "layers made inexact (ONNX Runtime int8, torch bf16 where native) in order of least harm "
                    "while the accuracy drop on the validation data stays within the budget (and the exact ILP "
                    "for comparison). The fastest program is written to --out with a standalone runner script "
                    "and a manifest.")
    p.add_argument("model", metavar="MODEL",
                   help="digits-cnn (trained here on scikit-learn's digits), a zoo name (random weights), or an "
                        ".onnx file (run with its own weights, in ONNX Runtime)")
    p.add_argument("--data", default=None, metavar="DIR|FILE.npz|digits|photos|glyphs",
                   help="validation data: a folder with inputs.npy (and labels.npy), a folder of one folder of "
                        "images per class, an .npz with 'inputs' (and 'labels'), 'digits', 'glyphs' (characters "
                        "rendered from held-out system fonts) or 'photos' (real photographs; for random weights, "
                        "accuracy is agreement with fp32, a proxy). Default: digits for digits-cnn, photos "
                        "otherwise")
    p.add_argument("--budget", default="1%", help="the accuracy drop allowed: 1%% or 0.01 (default 1%%)")
    p.add_argument("--out", type=Path, default=Path("nnperf-program"), help="output folder (default nnperf-program)")
    p.add_argument("--threads", type=int, default=None, help="most threads to try (default: this machine's cores)")
    p.add_argument("--samples", type=int, default=200, help="validation samples that judge accuracy (default 200)")
    p.add_argument("--calibration", type=int, default=32, help="samples that calibrate int8 (default 32)")
    p.add_argument("--no-aot", dest="aot", action="store_false",
                   help="do not package torch's best program with AOTInductor to time it against the ONNX one "
                        "(then only ONNX Runtime programs deploy)")
    p.add_argument("--no-inexact", dest="inexact", action="store_false", help="fp32 programs only")
    p.add_argument("--input-shape", default=None, metavar="1x3x224x224", help="an ONNX file's input shape")
    p.add_argument("--calibrate", action="store_true",
                   help="calibrate (once, about 5 min each on a 2-core VM) the systems of the fp32 candidates the store has no "
                        "calibration for, so every candidate is predicted before it is measured")
    p.add_argument("--no-predict", dest="predict", action="store_false",
                   help="do not rank the candidates by predicted latency")
    p.add_argument("--measure-best", type=int, default=None, metavar="N",
                   help="measure only each runtime's N predicted fastest candidates of a stage whose candidates are "
                        "all predicted, and list the others as skipped (default: measure every candidate)")
    p.add_argument("--verify", action="store_true",
                   help="run the generated runner in a fresh process and check it reproduces the stored outputs")
    p.add_argument("--protocol", default="auto", choices=("auto", "sequential", "interleaved"),
                   help="where the reported speed-ups come from (auto, the default, takes what a quick machine check "
                        "recommends: interleaved, as synthesis times in-process programs): interleaved times the "
                        "baseline and each "
                        "stage's program again in the same rounds, in random order, and reports the median "
                        "per-round ratio with its 95%% interval; sequential reports the ratio of the search's own "
                        "medians, taken minutes apart (drifts with the machine's speed)")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import synthesize, verify_program
    from nnperf.cli._backend_args import Progress
    from nnperf.cli._shapes import parse_shape
    from nnperf.errors import NnperfError

    shape = parse_shape(args.input_shape) if args.input_shape else None
    with Progress(not args.json, "synthesising") as progress:
        result = synthesize(args.model, data=args.data, budget=args.budget, out=args.out, max_threads=args.threads,
                            samples=args.samples, calibration=args.calibration, aot=args.aot, inexact=args.inexact,
                            input_shape=shape, store=args.db, predict=args.predict,
                            calibrate_missing=args.calibrate, progress=progress, protocol=args.protocol,
                            measure_best=args.measure_best)
    document: dict[str, Any] = dict(result.manifest)
    verified = verify_program(args.out) if args.verify else None
    if verified is not None:
        document["verified"] = {"returncode": verified.returncode, "output": verified.output}
    if args.json:
        print(json.dumps(document, indent=1))
    else:
        _print_report(result, verified)
    if verified is not None and verified.returncode != 0:
        raise NnperfError(f"the generated runner did not reproduce its outputs: {verified.output}")
    return 0


def _accuracy(accuracy: Any) -> str:
    if accuracy.top1 is not None:
        return f"{accuracy.top1:.2%}"
    return f"{accuracy.agreement:.2%} agree"


def _speedup(ratio: Any) -> str:
    """``median [low, high]x``; the baseline's own row (an empty interval) as ``1.00x``."""
    if ratio.ci_low == ratio.ci_high:
        return f"{ratio.median:.2f}x"
    return f"{ratio.median:.2f}x [{ratio.ci_low:.2f}, {ratio.ci_high:.2f}]"


def _print_report(result: Any, verified: Any) -> None:
    from rich.table import Table

    from nnperf.report import console

    out = console()
    proxy = result.manifest["validation"]["proxy"]
    comparison = result.comparison
    how = (f"speed-ups: median per-round ratio [95% interval] over {comparison.rounds.rounds} interleaved rounds"
           if comparison.rounds.paired else "speed-ups: ratio of the search's medians [95% interval], sequential")
    table = Table(title=f"{result.network}: Table I (budget {result.budget:.2%}, {result.evaluation_samples} "
                        f"samples{', accuracy = top-1 agreement with fp32, a proxy' if proxy else ''}; {how})",
                  title_justify="left")
    for column in ("stage", "program", "search ms (median [q1, q3])", "predicted ms", "speed-up", "accuracy",
                   "drop", "note"):
        table.add_column(column, justify="right" if column in ("speed-up", "drop", "predicted ms") else "left")
    for stage in result.stages:
        m = stage.program
        s = m.timing.stats
        predicted = "-" if m.predicted_s is None else f"{m.predicted_s * 1e3:.2f}"
        table.add_row(stage.name, m.spec.label(), f"{s.median_s * 1e3:.2f} [{s.q1_s * 1e3:.2f}, {s.q3_s * 1e3:.2f}]",
                      predicted, _speedup(stage.speedup), _accuracy(m.accuracy), f"{m.accuracy.drop:.2%}",
                      stage.note)
    out.print(table)
    for search in result.searches:
        rows = Table(title=f"{search.runtime}: layers made {search.mode} ({len(search.effects)} candidates; all "
                           f"{search.mode}: {search.all_inexact.latency_s * 1e3:.2f} ms, drop "
                           f"{search.all_inexact.accuracy.drop:.2%}; time saved per layer: {search.gains_from}"
                           + (f"; border model: {search.cost.describe()}" if search.cost is not None else "") + ")",
                     title_justify="left")
        for column in ("search", "inexact layers", "verified drop", "evaluations", "ms", "predicted ms", "status"):
            rows.add_column(column)
        for found, program in ((search.greedy, search.greedy_program), (search.ilp, search.ilp_program)):
            rows.add_row(found.method, str(len(found.inexact)), f"{found.drop:.2%}", str(found.evaluations),
                         f"{program.latency_s * 1e3:.2f}" if program is not None else "-",
                         f"{found.predicted_s * 1e3:.2f}" if found.predicted_s is not None else "-", found.status)
        out.print(rows)
        if search.checked:
            out.print("timed with fp32 in paired rounds after the search, against the border model: "
                      + "; ".join(check.describe() for check in search.checked)
                      + f"; kept from these rounds: {search.kept}")
        if search.granularity is not None:
            out.print(search.granularity.describe())
    if result.ort_best_fp32 is not None and result.over_ort_fp32 is not None:
        out.print(f"ONNX Runtime's best fp32 program: {result.ort_best_fp32.spec.label()}, "
                  f"{comparison.median_s(result.ort_best_fp32.spec.label()) * 1e3:.2f} ms in the comparison; the "
                  f"final program's speed-up over it: {_speedup(result.over_ort_fp32)}")
    if result.skipped:
        out.print(f"measured {len(result.candidates)} candidates; skipped {len(result.skipped)} the predictions "
                  f"ranked slower (about {result.skipping_saved_s:.0f} s saved): "
                  + ", ".join(f"{k.spec.label()} ({k.predicted_s * 1e3:.2f} ms predicted)" for k in result.skipped))
    if result.energy_note:
        out.print(f"Table II (energy) is not measured: {result.energy_note}")
    out.print(f"wrote {result.out}/ ({result.artifact}, run.py, manifest.json) in {result.elapsed_s:.0f} s")
    if verified is not None:
        out.print(f"run.py --check in a fresh process: {'ok' if verified.returncode == 0 else 'FAILED'} "
                  f"{verified.output}")
