"""What profiling one configuration of the primitive dataset costs under the old code and the new, paired, and what
the new rounds do to its labels.

Run: nice -n 5 env PYTHONPATH=src .venv/bin/python bench/primitive_cost.py [--configs 24] [--repeat 12]
     [--old 9459b3b] [--new HEAD] [--max-gmacs 2] [--seed 0] [--work /tmp/primitive_cost]
     [--json bench/results/primitives/primitive_cost.json] [--md bench/results/primitives/primitive_cost.md]

The old and the new code are the ``src`` folders of two revisions of this repository (``git archive``; "." is the
working tree): by default the last commit before per-ratio rounds (every workload of a configuration timed until
every ratio is within the harness's interval, or its most rounds) and HEAD. Each runs in a process of its own, its
own store under --work, and profiles one configuration when asked (``nnperf.campaign.profile_primitives`` with its
defaults: every available primitive, the layout transformations, the machine-speed reference, one thread). A
seeded sample of --configs configurations of the paper's grid (at most --max-gmacs billion MACs) is profiled by
both, configuration by configuration, the two alternating which goes first (ABBA...), and the first --repeat of
them a second time by the old code (a third process and store), right after the pair: the old code's repeat noise.

Cost: seconds per configuration of each code (wall, and the CPU time of its process), as measured inside the
process around the profile; their median and interquartile range, each configuration's new/old ratio, and the
total's. Labels: each primitive's time over torch-conv2d's on the same configuration (the cost models' relative
targets), and each layout transformation's over it in the rounds that timed it; the median relative difference
|b/a - 1| between the old and the new code, and between the old code and its repeat on the repeated
configurations (the floor two passes of the same code reach). The rounds each configuration took and, for the new
code, the standard errors its ratios reached (the run's record). The machine's load average is read at the start
and the end: a shared machine slows both codes alike, and pairing configuration by configuration is what keeps
their ratio meaningful.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import IO, Any

from _shared import read_values, table_rows, write_result

from nnperf.api import dataset_configs
from nnperf.campaign import DATASET_REFERENCE, load_primitive_dataset, primitive_systems
from nnperf.measure import host_info
from nnperf.primitives import ConvConfig, config_key, config_label
from nnperf.store import Store

OLD = "9459b3b"
"""The last commit before per-ratio rounds, a slow workload's block from its first call, shared operands and the FFT
kernel spectrum as one GEMM."""

WORKER = r"""
import json, sys, time
from nnperf.campaign import profile_primitives
from nnperf.primitives import config_from_dict
from nnperf.store import Store

store = Store(sys.argv[1])
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    config = config_from_dict(json.loads(line))
    wall, cpu = time.perf_counter(), time.process_time()
    report = profile_primitives(store, [config], threads=1)
    print(json.dumps({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                      "measured": report.measured, "failures": len(report.failures)}), flush=True)
store.close()
"""
"""A profiling process: one configuration (its JSON form) per line in, its seconds out."""

CODES = ("old", "new", "repeat")


class Worker:
    """A process of one revision's code that profiles configurations into its own store."""

    def __init__(self, src: Path, db: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, str(db)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        self._read()

    def _read(self) -> dict[str, Any]:
        out: IO[str] = self.process.stdout  # type: ignore[assignment]
        line = out.readline()
        if not line:
            raise SystemExit(f"a profiling process ended (exit {self.process.wait()})")
        return json.loads(line)

    def profile(self, config: ConvConfig) -> dict[str, Any]:
        stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        stdin.write(json.dumps(config.to_dict()) + "\n")
        stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def _source(revision: str, work: Path, name: str) -> Path:
    """The ``src`` folder of ``revision`` ("." is the working tree's), unpacked under ``work``."""
    if revision == ".":
        return Path("src").resolve()
    target = work / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = work / f"{name}.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", revision, "src"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target / "src"


def _labels(db: Path, configs: list[ConvConfig]) -> dict[str, dict[str, float]]:
    """By configuration key, each primitive's and transformation's time over the reference's (as timed, not
    levelled; a transformation on the configuration that timed its activation)."""
    with Store(db) as store:
        (system,) = primitive_systems(store)
        dataset = load_primitive_dataset(store, system.id, level=False)
    layout = {(t.batch, t.c, t.im): t.times_s for t in dataset.layout}
    found: dict[str, dict[str, float]] = {}
    for sample in dataset.conv:
        ref = sample.times_s.get(DATASET_REFERENCE)
        if not ref:
            continue
        row = {name: t / ref for name, t in sample.times_s.items() if name != DATASET_REFERENCE}
        activation = (sample.config.batch, sample.config.c, sample.config.im)
        first = next(c for c in configs if (c.batch, c.c, c.im) == activation)  # the one that timed them
        if first == sample.config:
            row.update((name, t / ref) for name, t in layout.get(activation, {}).items())
        found[config_key(sample.config)] = row
    return found


def _records(db: Path) -> dict[str, dict[str, Any]]:
    """By configuration key: the rounds its reference took and the stored standard errors, if any."""
    with Store(db) as store:
        (system,) = primitive_systems(store)
        found = {}
        for run in store.runs(system_id=system.id):
            timings = {m.layer: m.timing for m in store.layer_measurements(run_id=run.id)}
            reference = timings.get(DATASET_REFERENCE)
            found[run.network_hash] = {"rounds": len(reference.times_s) if reference else None,
                                       "ratio_se": run.config.get("ratio_se")}
    return found


def _differences(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]],
                 keys: list[str]) -> list[float]:
    """b / a - 1 of every ratio of the configurations ``keys`` that both hold."""
    return [b[k][name] / a[k][name] - 1 for k in keys if k in a and k in b
            for name in a[k] if name in b[k] and a[k][name] > 0]


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return (values[0],) * 3 if values else (float("nan"),) * 3
    q1, _q2, q3 = statistics.quantiles(values, n=4)
    return q1, statistics.median(values), q3


def _run(args: argparse.Namespace, configs: list[ConvConfig]) -> dict[str, dict[str, dict[str, Any]]]:
    """Profiles ``configs`` with the old and the new code, alternating, and the first ``--repeat`` again with the
    old; returns each code's seconds by configuration key."""
    args.work.mkdir(parents=True, exist_ok=True)
    sources = {"old": _source(args.old, args.work, "old"), "new": _source(args.new, args.work, "new")}
    sources["repeat"] = sources["old"]
    for code in CODES:
        (args.work / f"{code}.db").unlink(missing_ok=True)
    workers = {code: Worker(sources[code], args.work / f"{code}.db") for code in CODES}
    seconds: dict[str, dict[str, dict[str, Any]]] = {code: {} for code in CODES}
    try:
        for i, config in enumerate(configs):
            order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
            if i < args.repeat:
                order.append("repeat")
            for code in order:
                seconds[code][config_key(config)] = workers[code].profile(config)
            row = {code: round(seconds[code][config_key(config)]["wall_s"], 1) for code in order}
            print(f"{i + 1}/{len(configs)} {config_label(config)}: {row}", flush=True)
    finally:
        for worker in workers.values():
            worker.close()
    return seconds


def _summary(args: argparse.Namespace, configs: list[ConvConfig], seconds: dict[str, dict[str, dict[str, Any]]],
             load: tuple[tuple[float, ...], tuple[float, ...]]) -> dict[str, Any]:
    keys = [config_key(c) for c in configs]
    repeated = keys[:args.repeat]
    labels = {code: _labels(args.work / f"{code}.db", configs) for code in CODES}
    records = {code: _records(args.work / f"{code}.db") for code in ("old", "new")}
    cost = {}
    for what in ("wall_s", "cpu_s"):
        old = [seconds["old"][k][what] for k in keys]
        new = [seconds["new"][k][what] for k in keys]
        cost[what] = {"old": _quartiles(old), "new": _quartiles(new),
                      "ratio": _quartiles([b / a for a, b in zip(old, new)]), "total_ratio": sum(new) / sum(old),
                      "old_total": sum(old), "new_total": sum(new)}

    def split(a: str, b: str, subset: list[str]) -> dict[str, float]:
        found: dict[str, float] = {}
        for part, transform in (("primitives", False), ("transformations", True)):
            mine = {k: {n: v for n, v in row.items() if ("->" in n) == transform} for k, row in labels[a].items()}
            values = _differences(mine, labels[b], subset)
            found[part] = statistics.median(map(abs, values)) if values else float("nan")
            found[f"{part}_shift"] = statistics.median(values) if values else float("nan")
            found[f"{part}_pairs"] = len(values)
        return found

    rounds = {code: [records[code][k]["rounds"] for k in keys if records[code].get(k, {}).get("rounds")]
              for code in ("old", "new")}
    errors = [se for k in keys for se in (records["new"].get(k, {}).get("ratio_se") or {}).values()]
    return {
        "machine": f"{host_info().cpu_model}, {os.cpu_count()} logical cores, shared; 1 thread; nice -n 5",
        "load_average": {"start": load[0], "end": load[1]}, "old": args.old, "new": args.new,
        "configs": [config_label(c) for c in configs], "repeat": args.repeat, "cost": cost,
        "per_config": {config_label(c): {code: seconds[code].get(config_key(c)) for code in CODES} for c in configs},
        "labels": {"old_vs_new": split("old", "new", keys), "old_vs_new_on_repeated": split("old", "new", repeated),
                   "old_vs_repeat": split("old", "repeat", repeated)},
        "rounds": {code: _quartiles(values) for code, values in rounds.items()},
        "new_ratio_se": _quartiles(errors),
        "new_ratio_se_at_most_target": sum(se <= 0.01 for se in errors) / len(errors) if errors else float("nan"),
    }


def _markdown(summary: dict[str, Any]) -> str:
    def q(values: tuple[float, float, float], fmt: str = "{:.2f}") -> str:
        return f"{fmt.format(values[1])} [{fmt.format(values[0])}, {fmt.format(values[2])}]"

    cost, labels = summary["cost"], summary["labels"]
    lines = [f"Command: `nice -n 5 env PYTHONPATH=src .venv/bin/python bench/primitive_cost.py {summary['argv']}`", "",
             (f"Machine: {summary['machine']}; load average (1, 5, 15 min) {summary['load_average']['start']} at the "
             f"start, {summary['load_average']['end']} at the end. Old code {summary['old']}, new code "
             f"{summary['new']}; {len(summary['configs'])} configurations of the paper's grid, paired "
             f"configuration by configuration; {summary['repeat']} profiled again by the old code."), "",
             ("| seconds per configuration | old: median [IQR] | new: median [IQR] | new/old per configuration: "
             "median [IQR] | new/old of the totals |"), "|---|---|---|---|---|"]
    for what, name in (("wall_s", "wall"), ("cpu_s", "CPU of the process")):
        c = cost[what]
        lines.append(f"| {name} | {q(c['old'])} | {q(c['new'])} | {q(c['ratio'])} | {c['total_ratio']:.2f} "
                     f"({c['new_total']:.0f} s / {c['old_total']:.0f} s) |")
    lines += ["", ("| labels: median relative difference of the ratios to torch-conv2d (median signed one) | "
                   "primitives | transformations |"), "|---|---|---|"]
    for key, name in (("old_vs_new", "old vs new, every configuration"),
                      ("old_vs_new_on_repeated", "old vs new, the repeated configurations"),
                      ("old_vs_repeat", "old vs old again (the floor), the repeated configurations")):
        row = labels[key]
        lines.append(f"| {name} | {row['primitives'] * 100:.1f}% ({row['primitives_shift'] * 100:+.1f}%; "
                     f"{row['primitives_pairs']} pairs) | {row['transformations'] * 100:.1f}% "
                     f"({row['transformations_shift'] * 100:+.1f}%; {row['transformations_pairs']} pairs) |")
    lines += ["", (f"Rounds per configuration (the reference's): old {q(summary['rounds']['old'], '{:.0f}')}, new "
              f"{q(summary['rounds']['new'], '{:.0f}')}. New code, standard error its ratios reached: "
              f"{q(summary['new_ratio_se'], '{:.4f}')}; at most the 1% target: "
              f"{summary['new_ratio_se_at_most_target'] * 100:.0f}%.")]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=12, help="configurations profiled again by the old code")
    parser.add_argument("--old", default=OLD, help="revision of the old code ('.': the working tree)")
    parser.add_argument("--new", default="HEAD", help="revision of the new code ('.': the working tree)")
    parser.add_argument("--max-gmacs", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/primitive_cost"))
    parser.add_argument("--json", type=Path, default=Path("bench/results/primitives/primitive_cost.json"))
    parser.add_argument("--md", type=Path, default=Path("bench/results/primitives/primitive_cost.md"))
    parser.add_argument("--rejudge", type=Path, default=None, metavar="JSON",
                        help="profile nothing: judge again the stores under --work and the seconds of this JSON")
    args = parser.parse_args()
    if args.configs < 1 or not 0 <= args.repeat <= args.configs:
        parser.error(f"need --configs >= 1 and 0 <= --repeat <= --configs, got {args.configs}, {args.repeat}")
    grid = dataset_configs(grid="paper", max_macs=int(args.max_gmacs * 1e9))
    configs = random.Random(args.seed).sample(grid, min(args.configs, len(grid)))
    if args.rejudge:
        before = read_values(args.rejudge)
        seconds = {code: {config_key(c): before["per_config"][config_label(c)][code] for c in configs
                          if before["per_config"][config_label(c)][code]} for code in CODES}
        load, elapsed_s = before["load_average"], before["elapsed_s"]
        load = (tuple(load["start"]), tuple(load["end"]))
        args.old, args.new = before["old"], before["new"]
        argv = before.get("argv") or f"--configs {args.configs} --repeat {args.repeat} --new {before['new']}"
    else:
        start_load = tuple(round(v, 2) for v in os.getloadavg())
        began = time.perf_counter()
        seconds = _run(args, configs)
        load, elapsed_s = (start_load, tuple(round(v, 2) for v in os.getloadavg())), time.perf_counter() - began
        argv = " ".join(sys.argv[1:])
    summary = _summary(args, configs, seconds, load) | {"elapsed_s": elapsed_s, "argv": argv}
    cost = summary["cost"]
    headline = table_rows(("seconds per configuration", "old median", "new median", "new/old median per config",
                           "new/old of the totals"),
                          [(what, f"{cost[what]['old'][1]:.2f}", f"{cost[what]['new'][1]:.2f}",
                            f"{cost[what]['ratio'][1]:.2f}", f"{cost[what]['total_ratio']:.2f}")
                           for what in ("wall_s", "cpu_s")])
    write_result(args.json, method="primitives", concern="profiling cost per configuration, old and new code",
                 values=summary, headline=headline)
    text = _markdown(summary)
    args.md.write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
