"""How well a machine-speed reference tracks each kind of network: quiet and under each interference injector.

Run: .venv/bin/python bench/reference_tracking.py --corpus /work/tv-corpus [--sets 8] [--rounds 12]
         [--json bench/results/prediction/reference_tracking.json]

A speed-adjusted time is a network's median per-round ratio to a reference workload times the reference's time
on a quiet machine: if the reference slows down exactly as the network does, the adjusted time stays put whatever
the machine does. This measures whether it does, per kind of network (depthwise, grouped, large convolutions,
attention, small networks), for each way of adjusting:

- ``raw``: no adjustment (the network's own median);
- each reference candidate of ``nnperf.measure.REFERENCE_CANDIDATES`` (``resnet18@112`` is nnperf's; ``conv`` is
  the drift sentinel);
- ``resembling``: the candidate chosen for the network's kind beforehand (:data:`RESEMBLING`), never from these
  figures;
- ``several``: the geometric mean of the adjustments of ResNet-18, MobileNet v2, the GEMM and the memory-bound add.

The process pins itself to CPU 0 and times with the torch backend at 1 thread. Each set runs every condition
once in random order (no injector; a CPU hog sharing CPU 0; a memory-bandwidth hog on CPU 1; a periodic slowdown
on CPU 0, busy half of every 4 s); under each condition every network and every candidate run once per round in
random order (interleaved), ``--rounds`` rounds. Per network and way of adjusting:

- spread: the IQR over the median of the adjusted times of every (set, condition);
- condition shift: per injector, its median adjusted time over the quiet median, minus one (the bias a slow
  phase of that kind leaves in a verdict); the table shows the largest in magnitude.

The quiet reference time is the median of each candidate's quiet medians. Every finished set is written to --json;
--tables prints the tables of a --json and stops. Networks come from nnperf's zoo and from the torchvision corpus
bench/export_model_families.py writes (--corpus); a network the corpus lacks is skipped and named.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from _shared import log, pct, read_values, result_path, write_result

from nnperf import api, zoo
from nnperf.measure import (
    REFERENCE_CANDIDATES,
    CpuHog,
    MemoryHog,
    PeriodicSlowdown,
    RoundsConfig,
    measure_interleaved,
)
from nnperf.measure.backends import BackendOptions, create_backend

KINDS: Mapping[str, tuple[str, ...]] = {
    "depthwise": ("mobilenet_v2", "efficientnet_b0"),
    "grouped": ("regnet_x_800mf", "resnext50_32x4d"),
    "large convolutions": ("vgg11",),
    "attention": ("vit_b_32", "convnext_tiny"),
    "small": ("shufflenet_v2_x0_5", "mobilenet_v3_small"),
}
"""The networks measured, by kind (zoo names first, then the corpus's torchvision files)."""

RESEMBLING: Mapping[str, str] = {
    "depthwise": "mobilenet_v2@112",
    "grouped": "resnet18@112",
    "large convolutions": "resnet18@112",
    "attention": "gemm",
    "small": "mobilenet_v2@112",
}
"""The candidate a network of each kind resembles most, chosen from what the candidates are, before measuring."""

SEVERAL = ("resnet18@112", "mobilenet_v2@112", "gemm", "memory")
CONDITIONS = ("none", "cpu", "memory", "periodic")


def load_networks(corpus: Path | None) -> dict[str, Any]:
    """Each network by name: the zoo's where it has one, else the corpus's TorchScript export."""
    zoo_names = set(zoo.names())
    found: dict[str, Any] = {}
    for names in KINDS.values():
        for name in names:
            path = None if corpus is None else next(corpus.rglob(f"{name}.torchscript.onnx"), None)
            try:
                found[name] = zoo.zoo_network(name) if name in zoo_names or path is None else api.load_model(path)
            except Exception as exc:  # noqa: BLE001 - a network that does not load is named and skipped
                log(f"skipped {name}: {str(exc).splitlines()[0]}")
    return found


def one_condition(timers: Mapping[str, Any], rounds: int, seed: int) -> dict[str, list[float]]:
    measured = measure_interleaved(timers, RoundsConfig(min_rounds=rounds, max_rounds=rounds, seed=seed))
    return {name: list(measured.times(name)) for name in measured.names}


def run_sets(args: argparse.Namespace, data: dict[str, Any]) -> None:
    hogs = {"none": None, "cpu": CpuHog(cpus=(0,), max_s=600), "memory": MemoryHog(cpus=(1,), max_s=600),
            "periodic": PeriodicSlowdown(cpus=(0,), period_s=4.0, busy_fraction=0.5, max_s=600)}
    os.sched_setaffinity(0, {0})
    nets = load_networks(args.corpus)
    data["networks"] = {kind: [n for n in names if n in nets] for kind, names in KINDS.items()}
    backend = create_backend("torch", BackendOptions())
    timers = {name: backend.network_timer(net) for name, net in nets.items()}
    timers.update({f"ref:{name}": w.timer(backend) for name, w in REFERENCE_CANDIDATES.items()})
    rng = random.Random(0)
    while len(data["sets"]) < args.sets:
        conditions = list(CONDITIONS)
        rng.shuffle(conditions)
        one_set: dict[str, Any] = {}
        for condition in conditions:
            log(f"set {len(data['sets']) + 1} of {args.sets}: {condition}")
            with hogs[condition] or contextlib.nullcontext():  # an injector starts and stops as a context
                one_set[condition] = one_condition(timers, args.rounds, seed=rng.randrange(2**31))
        data["sets"].append(one_set)
        save(args.json, data)


def save(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    return write_result(path, method="prediction", concern="how well each machine-speed reference tracks each kind "
                        "of network", values=data, headline=headline(data) if len(data["sets"]) > 1 else None)


HEADLINE_WAYS = ("raw", "resnet18@112", "resembling", "several")


def headline(data: Mapping[str, Any]) -> dict[str, Any]:
    """Per kind, the median over its networks of the largest injector shift and of the spread, for the ways
    RESULTS.md shows."""
    found = tracking(data)
    rows = []
    for kind, names in data["networks"].items():
        row: dict[str, str] = {"kind": kind, "networks": ", ".join(names)}
        for way in HEADLINE_WAYS:
            worst = [max((found[n][way][c] for c in CONDITIONS if c != "none"), key=abs) for n in names]
            spread = [found[n][way]["spread"] for n in names]
            row[way] = f"{pct(statistics.median(worst))} / {100 * statistics.median(spread):.1f}%"
        rows.append(row)
    return {"rows": rows, "sets": len(data["sets"]), "rounds": data["rounds"]}


def median_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def adjusted(rounds: Mapping[str, list[float]], network: str, way: str, kind: str,
             quiet_s: Mapping[str, float]) -> float:
    """The network's time in one (set, condition), adjusted the named way."""
    if way == "raw":
        return statistics.median(rounds[network])
    if way == "several":
        logs = [math.log(median_ratio(rounds[network], rounds[f"ref:{c}"]) * quiet_s[c]) for c in SEVERAL]
        return math.exp(statistics.fmean(logs))
    candidate = RESEMBLING[kind] if way == "resembling" else way
    return median_ratio(rounds[network], rounds[f"ref:{candidate}"]) * quiet_s[candidate]


def tracking(data: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """Per network and way of adjusting: spread (IQR / median) and each injector's shift from quiet."""
    sets = data["sets"]
    quiet_s = {c: statistics.median(statistics.median(s["none"][f"ref:{c}"]) for s in sets)
               for c in REFERENCE_CANDIDATES}
    ways = ["raw", *REFERENCE_CANDIDATES, "resembling", "several"]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for kind, names in data["networks"].items():
        for name in names:
            out[name] = {}
            for way in ways:
                per = {c: [adjusted(s[c], name, way, kind, quiet_s) for s in sets] for c in CONDITIONS}
                everything = [v for values in per.values() for v in values]
                q1, _, q3 = statistics.quantiles(everything, n=4)
                quiet = statistics.median(per["none"])
                shifts = {c: statistics.median(per[c]) / quiet - 1 for c in CONDITIONS if c != "none"}
                out[name][way] = {"spread": (q3 - q1) / statistics.median(everything), **shifts}
    return out


def signed(x: float) -> str:
    return pct(x, signed=True) if x < 0 or x > 0 else "0.0%"


def tables(data: Mapping[str, Any], document: Mapping[str, Any]) -> str:
    """The tables of a run's ``data`` (a result file's values), headed by its ``document``'s machine and commit (a
    file from before the schema holds them in its data)."""
    found = tracking(data)
    ways = ["raw", *REFERENCE_CANDIDATES, "resembling", "several"]
    machine = document["machine"]
    machine = machine.get("details") or machine.get("cpu") if isinstance(machine, Mapping) else machine
    commit = document["commit"]
    commit = (commit.get("sha") or "not recorded")[:7] if isinstance(commit, Mapping) else commit
    lines = [(f"{machine}; commit {commit}; {len(data['sets'])} sets of {data['rounds']} interleaved "
             f"rounds per condition; torch, 1 thread, pinned to CPU 0\n"),
             "### Spread of the adjusted times over every set and condition (IQR / median), by network\n",
             "| kind | network | " + " | ".join(ways) + " |", "|---|---|" + "---:|" * len(ways)]
    for kind, names in data["networks"].items():
        for name in names:
            lines.append(f"| {kind} | {name} | " + " | ".join(f"{100 * found[name][w]['spread']:.1f}%"
                                                             for w in ways) + " |")
    lines += ["", "### Largest shift of an injector's median from the quiet one, median over the kind's networks\n",
              "| kind | " + " | ".join(ways) + " |", "|---|" + "---:|" * len(ways)]
    for kind, names in data["networks"].items():
        if not names:
            continue
        cells = []
        for w in ways:
            worst = [max((found[n][w][c] for c in CONDITIONS if c != "none"), key=abs) for n in names]
            cells.append(signed(statistics.median(worst)))
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines += ["", "### Each injector's shift, by network (the resembling reference beside nnperf's and raw)\n",
              "| network | condition | raw | resnet18@112 | resembling | several |", "|---|---|---:|---:|---:|---:|"]
    for names in data["networks"].values():
        for name in names:
            for c in CONDITIONS[1:]:
                lines.append(f"| {name} | {c} | " + " | ".join(signed(found[name][w][c]) for w in
                                                             ("raw", "resnet18@112", "resembling", "several")) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None, help="the torchvision corpus folder")
    parser.add_argument("--sets", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--json", type=Path, default=result_path("prediction", "reference_tracking"))
    parser.add_argument("--tables", action="store_true", help="print the tables of --json and stop")
    args = parser.parse_args()
    if args.tables:
        document = json.loads(args.json.read_text())
        print(tables(read_values(args.json), document))
        return
    data: dict[str, Any] = {"rounds": args.rounds, "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                            "sets": []}
    began = time.monotonic()
    run_sets(args, data)
    data["wall_s"] = time.monotonic() - began
    print(tables(data, save(args.json, data)))


if __name__ == "__main__":
    main()
