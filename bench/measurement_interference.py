"""Measurement under interference: how far a comparison moves between sets of rounds under the sequential,
interleaved, duet and speed-adjusted protocols, with and without each interference injector, all in one run.

Run: .venv/bin/python bench/measurement_interference.py [--minutes 30] [--sets 10]
         [--db bench/results/interference/interference.db] [--json bench/results/interference/interference.json]
         [--quick]

The process pins itself to CPU 0 and measures with the torch backend at 1 thread. It first calibrates that system
into --db (resumed and reused when done; the calibration reads the reference workload before and after), predicts
every network, and then repeats sets until it has --sets of them and --minutes have passed. In each set every
condition (no injector; a CPU hog sharing CPU 0; a memory-bandwidth hog on CPU 1; a periodic slowdown on CPU 0,
busy half of every 4 s) runs once, in random order, and under each condition, in random order:

- sequential: each network, then each reference candidate, measured to the harness's stopping rule (1 s budget)
  one after the other, as nnperf measured before;
- interleaved: every network and every reference candidate once per round, in random order, 12 rounds;
- duet: a few networks each against ResNet-18, the two on CPUs 0 and 1 at the same time, 8 pairs.

Tables (Markdown on stdout; every raw time in --json):

1. comparisons: each network over ResNet-18, its spread over the sets ((max - min) / median of the per-set
   ratios) per protocol and condition, beside the spread of the network's own sequential time;
2. machine-speed reference: each candidate's speed-adjusted network times (median per-round ratio to the
   candidate x the candidate's time in the first quiet set) and their spread over all sets and conditions, by
   network; the candidate with the least median spread is the one to track the machine with;
3. held-out prediction: the calibrated model's error against the raw interleaved medians and against the
   speed-adjusted ones (nnperf's reference, at its calibration reading), per condition: the slow phases against
   the steady one. None of the networks was used to choose or fit anything in the calibration.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _shared import log, markdown_table, pct, read_result, result_path, spread, write_result
from architectures import exported

from nnperf import api
from nnperf.ir import Network
from nnperf.measure import (
    REFERENCE_CANDIDATES,
    CpuHog,
    HarnessConfig,
    MemoryHog,
    PeriodicSlowdown,
    RoundsConfig,
    backend_timer_factory,
    measure_duet,
    measure_interleaved,
    measure_sequential,
)
from nnperf.measure.backends import BackendOptions, create_backend
from nnperf.zoo import zoo_network

BASELINE = "resnet18"
ZOO = ("resnet18", "mobilenet_v2", "squeezenet1_1", "googlenet", "shufflenet_v2_x1_0", "mobilenet_v3_large")
EXPORTED = ("mnasnet1_0",)
DUET_NETWORKS = ("mobilenet_v2", "googlenet")
CONDITIONS = ("none", "cpu", "memory", "periodic")
SEQUENTIAL_HARNESS = HarnessConfig(budget_s=1.0)
INTERLEAVED = RoundsConfig(min_rounds=12, max_rounds=12)
DUET = RoundsConfig(min_rounds=8, max_rounds=8)


def injectors(max_s: float) -> dict[str, Any]:
    """The injector of each condition (None for the quiet one), made before this process pins itself to CPU 0
    (an injector checks its CPUs against the ones its maker may use)."""
    return {"none": None, "cpu": CpuHog(cpus=(0,), max_s=max_s), "memory": MemoryHog(cpus=(1,), max_s=max_s),
            "periodic": PeriodicSlowdown(cpus=(0,), period_s=4.0, busy_fraction=0.5, max_s=max_s)}


def networks() -> dict[str, Network]:
    found = {name: zoo_network(name) for name in ZOO}
    found.update({name: api.load_model(exported(name)) for name in EXPORTED})
    return found


def one_condition(condition: str, nets: Mapping[str, Network], backend: Any, rng: random.Random,
                  seed: int) -> dict[str, Any]:
    """Every protocol once under ``condition``; per-execution seconds."""
    timers = {name: backend.network_timer(net) for name, net in nets.items()}
    references = {f"ref:{name}": w.timer(backend) for name, w in REFERENCE_CANDIDATES.items()}
    result: dict[str, Any] = {}
    protocols = ["sequential", "interleaved", "duet"]
    rng.shuffle(protocols)
    for protocol in protocols:
        if protocol == "sequential":
            rounds = measure_sequential({**timers, **references}, SEQUENTIAL_HARNESS)
            result["sequential"] = {n: rounds.median_s(n) for n in rounds.names}
        elif protocol == "interleaved":
            config = RoundsConfig(min_rounds=INTERLEAVED.min_rounds, max_rounds=INTERLEAVED.max_rounds, seed=seed)
            rounds = measure_interleaved({**timers, **references}, config)
            result["interleaved"] = {n: list(rounds.times(n)) for n in rounds.names}
        else:
            result["duet"] = {}
            for name in DUET_NETWORKS:
                pair = measure_duet([(BASELINE, backend_timer_factory("torch", BackendOptions(), nets[BASELINE])),
                                     (name, backend_timer_factory("torch", BackendOptions(), nets[name]))], DUET,
                                    cpus=(0, 1))
                result["duet"][name] = pair.ratio(name, BASELINE).median
    return result


def median_ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def tables(data: dict[str, Any]) -> str:
    sets = data["sets"]
    names = [n for n in data["networks"] if n != BASELINE]
    out = []
    conditions = [*CONDITIONS, "all"]

    def per_set(condition: str, value: Any) -> list[float]:
        chosen = CONDITIONS if condition == "all" else (condition,)
        return [v for s in sets for c in chosen if c in s for v in [value(s[c])] if v is not None]

    out.append(f"### Comparisons: each network over {BASELINE}, spread over {len(sets)} sets\n")
    out.append("Spread = (max - min) / median of the per-set values; 'own time' is the network's sequential "
               "median (no comparison), the drift a back-to-back measurement sees.\n")
    rows = []
    for name in names:
        for condition in conditions:
            own = per_set(condition, lambda r, n=name: r["sequential"][n])
            seq = per_set(condition, lambda r, n=name: r["sequential"][n] / r["sequential"][BASELINE])
            inter = per_set(condition, lambda r, n=name: median_ratio(r["interleaved"][n],
                                                                       r["interleaved"][BASELINE]))
            duet = per_set(condition, lambda r, n=name: r["duet"].get(n))
            rows.append([name, condition, pct(spread(own)), pct(spread(seq)), pct(spread(inter)),
                         pct(spread(duet)) if duet else "-"])
    out.append(markdown_table(["network", "condition", "own time (sequential)", "sequential ratio",
                               "interleaved ratio", "duet ratio"], rows))
    out.append("")
    first_quiet = next(s["none"] for s in sets if "none" in s)
    out.append("### Machine-speed reference: spread of speed-adjusted network times over all sets and conditions\n")
    out.append("Each network's time as median(network / reference per round) x the reference's median in the "
               "first quiet set; 'raw' is the network's interleaved median.\n")
    candidates = list(REFERENCE_CANDIDATES)
    rows = []
    scores: dict[str, list[float]] = {c: [] for c in candidates}
    raw_spreads = []
    for name in data["networks"]:
        raw = spread(per_set("all", lambda r, n=name: statistics.median(r["interleaved"][n])))
        raw_spreads.append(raw)
        cells = []
        for c in candidates:
            ref = f"ref:{c}"
            cal = statistics.median(first_quiet["interleaved"][ref])
            value = spread(per_set("all", lambda r, n=name, ref=ref, cal=cal: median_ratio(
                r["interleaved"][n], r["interleaved"][ref]) * cal))
            scores[c].append(value)
            cells.append(pct(value))
        rows.append([name, pct(raw), *cells])
    rows.append(["**median**", pct(statistics.median(raw_spreads)),
                 *(pct(statistics.median(scores[c])) for c in candidates)])
    out.append(markdown_table(["network", "raw", *candidates], rows))
    out.append("")
    predictions = data.get("predictions")
    reference = data.get("calibration_reference")
    if predictions and reference:
        workload, cal_s = reference
        out.append(f"### Held-out prediction: MAPE per condition, raw and speed-adjusted ({workload} at its "
                   f"calibration reading, {cal_s * 1e3:.2f} ms)\n")
        rows = []
        for condition in conditions:
            raw_err, adj_err, factors = [], [], []
            for s in sets:
                for c in (CONDITIONS if condition == "all" else (condition,)):
                    if c not in s:
                        continue
                    r = s[c]["interleaved"]
                    factors.append(statistics.median(r[f"ref:{workload}"]) / cal_s)
                    for name, predicted in predictions.items():
                        raw_err.append(abs(predicted / statistics.median(r[name]) - 1))
                        adjusted = median_ratio(r[name], r[f"ref:{workload}"]) * cal_s
                        adj_err.append(abs(predicted / adjusted - 1))
            if raw_err:
                rows.append([condition, len(factors), pct(statistics.mean(raw_err)), pct(statistics.mean(adj_err)),
                             f"{statistics.median(factors):.2f}"])
        out.append(markdown_table(["condition", "sets", "raw MAPE", "speed-adjusted MAPE",
                                   "machine speed factor (median)"], rows))
    return "\n".join(out)


def save(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    return write_result(path, method="interference", concern="six networks over ResNet-18 under injected interference",
                        values=data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--sets", type=int, default=10)
    parser.add_argument("--db", type=Path, default=Path("bench/results/interference/interference.db"))
    parser.add_argument("--json", type=Path, default=result_path("interference", "interference"))
    parser.add_argument("--quick", action="store_true", help="2 sets, no time floor, no calibration")
    parser.add_argument("--tables", action="store_true", help="print the tables of --json and stop")
    args = parser.parse_args()
    if args.tables:
        print(tables(read_result(args.json)["values"]))
        return
    hogs = injectors(max_s=300)
    os.sched_setaffinity(0, {0})
    nets = networks()
    data: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "networks": list(nets),
                            "sets": []}
    if not args.quick:
        log("calibrating torch, 1 thread (reused when done)")
        model = api.calibrate(api.System("torch", "cpu", 1), args.db, if_needed=True)
        data["calibration_reference"] = model.reference_s
        data["predictions"] = {name: api.predict(net, api.System("torch", "cpu", 1), args.db).latency_s for name, net in nets.items()}
    backend = create_backend("torch", BackendOptions())
    rng = random.Random(0)
    began = time.monotonic()
    wanted_sets, wanted_s = (2, 0.0) if args.quick else (args.sets, args.minutes * 60)
    while len(data["sets"]) < wanted_sets or time.monotonic() - began < wanted_s:
        conditions = list(CONDITIONS)
        rng.shuffle(conditions)
        one_set: dict[str, Any] = {"started_s": time.monotonic() - began}
        for condition in conditions:
            log(f"set {len(data['sets']) + 1}: {condition}")
            with hogs[condition] or contextlib.nullcontext():  # an injector starts and stops as a context
                one_set[condition] = one_condition(condition, nets, backend, rng, seed=len(data["sets"]))
        data["sets"].append(one_set)
        save(args.json, data)  # every finished set is kept
    data["wall_s"] = time.monotonic() - began
    document = save(args.json, data)
    print(f"CPU: {document['machine']['cpu']}; commit {document['commit']['sha']}; {len(data['sets'])} sets over "
          f"{data['wall_s'] / 60:.1f} min\n")
    print(tables(data))


if __name__ == "__main__":
    main()
