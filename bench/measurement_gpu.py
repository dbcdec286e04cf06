"""The comparison protocols on a CUDA device: sequential against interleaved, with and without a CPU hog on the
core that launches the kernels (a small network's GPU time is mostly launch overhead, which the host's CPU sets).

Run: .venv/bin/python bench/measurement_gpu.py [--sets 5] [--networks resnet18 mobilenet_v2 squeezenet1_1]

The process pins itself to one CPU; in each set, with no injector and then with a CpuHog sharing that CPU, it
times every network under the sequential protocol (each to the harness's stopping rule, one after the other) and
the interleaved one (every network once per round, 15 rounds), on the torch backend with CUDA events. Each
network's ratio to the first is judged per set; the spread is (max - min) / median over the sets. Markdown on
stdout. Needs a CUDA device (skips with a message otherwise).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from _shared import pct, print_table, spread, write_result

from nnperf.measure import CpuHog, HarnessConfig, RoundsConfig, measure_interleaved, measure_sequential
from nnperf.measure.backends import BackendOptions, create_backend
from nnperf.zoo import zoo_network


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=5)
    parser.add_argument("--networks", nargs="+", default=["resnet18", "mobilenet_v2", "squeezenet1_1"])
    parser.add_argument("--json", type=Path, help="write the result file here "
                        "(bench/results/interference/measurement_gpu.json)")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing measured")
        return
    cpu = min(os.sched_getaffinity(0))
    hog = CpuHog(cpus=(cpu,), max_s=600)
    os.sched_setaffinity(0, {cpu})
    backend = create_backend("torch", BackendOptions(device="cuda"))
    timers = {name: backend.network_timer(zoo_network(name)) for name in args.networks}
    base = args.networks[0]
    harness = HarnessConfig(budget_s=1.0)
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    own: dict[tuple[str, str], dict[str, list[float]]] = {}
    began = time.monotonic()
    for k in range(args.sets):
        for condition in ("none", "cpu hog"):
            if condition != "none":
                hog.start()
            try:
                sequential = measure_sequential(timers, harness)
                interleaved = measure_interleaved(timers, RoundsConfig(min_rounds=15, max_rounds=15, seed=k))
            finally:
                hog.stop()
            for name in args.networks:
                own.setdefault((condition, "sequential"), {}).setdefault(name, []).append(sequential.median_s(name))
                own.setdefault((condition, "interleaved"), {}).setdefault(name, []).append(
                    interleaved.median_s(name))
                if name != base:
                    results.setdefault((condition, "sequential"), {}).setdefault(name, []).append(
                        sequential.ratio(name, base).median)
                    results.setdefault((condition, "interleaved"), {}).setdefault(name, []).append(
                        interleaved.ratio(name, base).median)
        print(f"set {k + 1} done after {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; {args.sets} sets, "
          f"{time.monotonic() - began:.0f} s; the process and the hog on CPU {cpu}\n")
    rows = []
    for name in args.networks:
        for condition in ("none", "cpu hog"):
            times = own[(condition, "interleaved")][name]
            cells = [f"{statistics.median(times) * 1e3:.3f}", pct(spread(own[(condition, "sequential")][name]))]
            if name == base:
                cells += ["-", "-", "-"]
            else:
                seq, inter = results[(condition, "sequential")][name], results[(condition, "interleaved")][name]
                cells += [pct(spread(seq)), pct(spread(inter)), f"{statistics.median(inter):.3f}"]
            rows.append([name, condition, *cells])
    print_table(["network", "condition", "median time (ms)", "own-time spread, sequential",
                 f"ratio to {base}: sequential spread", "interleaved spread", "interleaved ratio"], rows)
    if args.json:
        write_result(args.json, method="interference", concern="comparison protocols on a CUDA device",
                     values={"own_s": {f"{c}/{p}": v for (c, p), v in own.items()},
                             "ratios": {f"{c}/{p}": v for (c, p), v in results.items()}, "table": rows},
                     spread={f"{c}/{p}": {name: spread(v) for name, v in by.items()} for (c, p), by in results.items()},
                     sets=args.sets)

if __name__ == "__main__":
    main()
