"""The deployment runtimes (OpenVINO, LiteRT, ExecuTorch) beside the workstation ones: calibration wall time,
profile sum over the whole run, and which runtime to ship, predicted against measured.

Run (after bench/heldout_corpus.py has calibrated every system into the same store, holding the corpus out):

    .venv/bin/python bench/deployment_runtimes.py --db bench/results/runtimes/heldout_corpus.db \\
        --corpus /work/tv-corpus [--systems openvino:1 litert:1 executorch:1 onnxruntime:1 torch:1] \\
        [--rank 10 | --networks NAME ...] [--no-profile] [--json bench/results/runtimes/deployment_rankings.json]

1. **Calibration wall time** per system: the one recorded when its model was fitted
   (``SystemModel.calibration['wall_s']``); the goal is at most 5 minutes.
2. **Profile sum / whole run** on ResNet-18 and MobileNet v2 (zoo, 224x224): ``backend.profile(network, 20)`` three
   times; the sum of the per-layer times (fused groups once, unattributed nodes included) over the median run, as
   the median of the three with their min..max. Goal 0.9-1.1. For a runtime whose profile comes from single-layer
   programs (LiteRT, and ExecuTorch where its ETDump has no per-operator events) the ratio is the isolated sum over
   the whole network: what composition has to bridge, not a profiler's coverage.
3. **Which runtime to ship**: for ``--rank`` networks of the corpus (the first in name order, or ``--networks``;
   judged by bench/heldout_corpus.py, so never fitted on), ``nnperf.api.rank_runtimes(..., verify=True)``: every calibrated
   runtime measured whole, interleaved in one run; how often the predicted fastest is the measured fastest, and
   Kendall's tau of each network's two orders.

Progress goes to stderr; stdout gets Markdown tables; --json the result file (bench/_shared.py's schema).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from _shared import log, markdown_table, write_result

import nnperf
from nnperf import api
from nnperf.errors import NnperfError
from nnperf.zoo import zoo_network

PROFILED = ("resnet18", "mobilenet_v2")
PROFILE_RUNS = 20
PROFILE_REPEATS = 3


def system_of(text: str) -> nnperf.System:
    backend, _, threads = text.partition(":")
    return nnperf.System(backend, threads=int(threads or 1))


def calibration_wall_s(db: Path, systems: list[str]) -> dict[str, float | None]:
    found: dict[str, float | None] = {}
    for text in systems:
        try:
            found[text] = float(api.calibrated_model(system_of(text), db).calibration["wall_s"])
        except NnperfError as exc:
            log(f"{text}: no calibration ({exc})")
            found[text] = None
    return found


def profile_ratios(systems: list[str]) -> dict[str, dict[str, list[float]]]:
    ratios: dict[str, dict[str, list[float]]] = {}
    for text in systems:
        ratios[text] = {}
        with system_of(text).open() as backend:
            for name in PROFILED:
                network = zoo_network(name)
                found = []
                for _ in range(PROFILE_REPEATS):
                    result = backend.profile(network, PROFILE_RUNS)
                    found.append(result.profiler_sum_s / result.run_timing.stats.median_s)
                ratios[text][name] = found
                log(f"{text} {name}: profile sum / run {statistics.median(found):.3f}")
    return ratios


def corpus_files(corpora: list[Path], count: int, names: list[str]) -> list[Path]:
    """The torchvision classification exports of the corpora named ``names`` (default: the first ``count`` that are
    not zoo networks, in name order)."""
    zoo_names = set(nnperf.zoo.names())
    files = {}
    for corpus in corpora:
        for record in json.loads((corpus / "manifest.json").read_text()):
            if (record["family"], record["exporter"], record["status"]) != ("torchvision-classification",
                                                                             "torchscript", "exported"):
                continue
            if record["model"] not in zoo_names and Path(record["path"]).is_file():
                files[record["model"]] = Path(record["path"])
    return [files[name] for name in names] if names else [files[name] for name in sorted(files)[:count]]


def rankings(db: Path, files: list[Path], systems: list[str]) -> list[dict[str, Any]]:
    ids = [api.calibrated_model(system_of(text), db).system_key for text in systems]
    found = []
    for path in files:
        log(f"ranking {path.stem}")
        try:
            ranking = api.rank_runtimes(path, db, systems=ids, verify=True)
        except NnperfError as exc:
            log(f"{path.stem}: {exc}")
            continue
        found.append(ranking.to_dict())
    return found


def markdown(walls: dict[str, float | None], ratios: dict[str, dict[str, list[float]]],
             ranked: list[dict[str, Any]]) -> str:
    rows = []
    for text, wall in walls.items():
        cells = [f"{statistics.median(v):.3f} ({min(v):.3f}..{max(v):.3f})"
                 for v in (ratios.get(text, {}).get(n, []) for n in PROFILED) if v]
        rows.append([text, "n/a" if wall is None else f"{wall / 60:.1f}", *cells,
                     *(["-"] * (len(PROFILED) - len(cells)))])
    lines = [markdown_table(["system", "calibration (min)", *(f"{n} sum/run (min..max)" for n in PROFILED)], rows)]
    if ranked:
        agree = sum(r["predicted_fastest"] == r["measured_fastest"] for r in ranked)
        taus = [r["kendall_tau"] for r in ranked if r["kendall_tau"] is not None]
        rows = []
        for r in ranked:
            predicted = [x["system"].split("/")[0] for x in r["runtimes"]]
            measured = [x["system"].split("/")[0] for x in sorted(r["runtimes"], key=lambda x: x["measured_s"] or 1e9)]
            rows.append([r["network"], " < ".join(predicted), " < ".join(measured), f"{r['kendall_tau']:.2f}"])
        lines += ["", markdown_table(["network", "predicted order", "measured order", "tau"], rows)]
        lines.append(f"\npredicted fastest = measured fastest on {agree} of {len(ranked)} networks; median Kendall "
                     f"tau {statistics.median(taus):.2f}" if taus else "")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--corpus", nargs="*", type=Path, default=[])
    parser.add_argument("--systems", nargs="+", default=["openvino:1", "litert:1", "executorch:1", "onnxruntime:1",
                                                          "torch:1"], metavar="BACKEND:THREADS")
    parser.add_argument("--rank", type=int, default=10, help="networks whose runtime ranking is verified")
    parser.add_argument("--networks", nargs="*", default=[], help="rank these corpus networks instead")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    walls = calibration_wall_s(args.db, args.systems)
    ratios = {} if args.no_profile else profile_ratios(args.systems)
    ranked = rankings(args.db, corpus_files(args.corpus, args.rank, args.networks), args.systems) if args.corpus else []
    print(markdown(walls, ratios, ranked))
    if args.json:
        write_result(args.json, method="runtimes", concern="which runtime to ship",
                     values={"calibration_wall_s": walls, "profile_sum_over_run": ratios, "rankings": ranked})


if __name__ == "__main__":
    main()
