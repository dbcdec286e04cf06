"""Synthesis's speed-up under the sequential and the interleaved protocol, with and without interference.

Run: flock /tmp/nnperf-bench.lock env .venv/bin/python bench/synthesize_paired.py
     [--program bench/results/synth/resnet18] [--repeats 5] [--period 2.0]
     [--json bench/results/interference/synthesize_paired.json]

The program is the one ``bench/synthesize_networks.py`` wrote for ResNet-18 (``--program``), run from its files by
``nnperf.optimize.synthesize.load_program`` on one thread; the baseline is Table I's: ResNet-18 (nnperf's seeded
random weights) in torch eager, fp32, one thread, channels first. Both run one photograph crop (batch of one).

The whole process is pinned to CPU 0 before torch or ONNX Runtime start a thread (hence one thread for the
program, which was synthesised for both cores), and each condition runs ``--repeats`` comparisons of each
protocol, alternating which protocol goes first:

- ``none``: no injector;
- ``cpu hog``: ``CpuHog(cpus=(0,))``, a busy loop sharing the measured core;
- ``memory hog``: ``MemoryHog(cpus=(1,))``, copies between arrays larger than the last-level cache, on the other
  core;
- ``periodic``: ``PeriodicSlowdown(cpus=(0,), period_s=--period, busy_fraction=0.5)``, the measured core shared
  half of each period.

The protocols are synthesis's own (``compare_programs`` with its defaults): ``sequential`` measures the baseline
to the harness's stopping rule (about a second), then the program, and takes the ratio of the medians;
``interleaved`` times both once per round in random order (``SYNTHESIS_ROUNDS``: 10 to 60 rounds, up to 20 s)
and takes the median per-round ratio. The spread of a protocol under a condition is (max - min) / median of its
repeats' speed-ups.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from _shared import pct, print_table, spread, write_result

from nnperf.measure import CpuHog, Interference, MemoryHog, PeriodicSlowdown, host_info

PROTOCOLS = ("sequential", "interleaved")


def injectors(period_s: float) -> dict[str, Interference | None]:
    """The conditions; made before the process is pinned (an injector checks its CPUs against our affinity)."""
    return {"none": None, "cpu hog on CPU 0": CpuHog(cpus=(0,)), "memory hog on CPU 1": MemoryHog(cpus=(1,)),
            f"periodic slowdown on CPU 0 ({period_s:g} s, 50% busy)": PeriodicSlowdown(
                cpus=(0,), period_s=period_s, busy_fraction=0.5)}


def timers(program: Path) -> dict[str, Any]:
    """The baseline's and the program's timers, on one photograph crop."""
    import functools

    from nnperf.api import load_model
    from nnperf.measure.backends import LoopTimer, build_torch
    from nnperf.optimize.synthesize import load_program, photo_set, torch_runner

    network = load_model("resnet18")
    sample = photo_set(tuple(network.inputs[0].shape[1:]), count=1, seed=0).inputs[:1]
    baseline = torch_runner(build_torch(network).eval(), "chw", 1)
    run = load_program(program, threads=1)
    return {"baseline": LoopTimer(functools.partial(baseline, sample)),
            "program": LoopTimer(functools.partial(run, sample))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", type=Path, default=Path("bench/results/synth/resnet18"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--period", type=float, default=2.0, help="seconds of the periodic slowdown's period")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    conditions = injectors(args.period)
    os.sched_setaffinity(0, {0})  # before torch and ONNX Runtime make their threads: they inherit it
    from nnperf.optimize.synthesize import compare_programs, read_manifest

    manifest = read_manifest(args.program)
    measured = timers(args.program)
    host = host_info()
    began = time.perf_counter()
    print(f"{host.cpu_model}, {host.logical_cores} logical cores; bench pinned to CPU 0; program "
          f"{manifest['program']} from {args.program} (synthesised {manifest['created']}), run on 1 thread\n")
    rows: list[dict[str, Any]] = []
    for condition, injector in conditions.items():
        results: dict[str, list[dict[str, Any]]] = {p: [] for p in PROTOCOLS}
        if injector is not None:
            injector.start()
        try:
            for repeat in range(args.repeats):
                for protocol in (PROTOCOLS if repeat % 2 == 0 else PROTOCOLS[::-1]):
                    start = time.perf_counter()
                    comparison = compare_programs(measured, protocol)
                    ratio = comparison.speedup("program")
                    results[protocol].append({"speedup": ratio.median, "ci_low": ratio.ci_low,
                                              "ci_high": ratio.ci_high,
                                              "baseline_ms": comparison.median_s("baseline") * 1e3,
                                              "program_ms": comparison.median_s("program") * 1e3,
                                              "rounds": comparison.rounds.rounds,
                                              "wall_s": time.perf_counter() - start})
                    print(f"  {condition}, {protocol}, repeat {repeat + 1}: {ratio.median:.2f}x "
                          f"[{ratio.ci_low:.2f}, {ratio.ci_high:.2f}], baseline "
                          f"{comparison.median_s('baseline') * 1e3:.2f} ms, program "
                          f"{comparison.median_s('program') * 1e3:.2f} ms", flush=True)
        finally:
            if injector is not None:
                injector.stop()
        for protocol in PROTOCOLS:
            speedups = [r["speedup"] for r in results[protocol]]
            rows.append({"condition": condition, "protocol": protocol, "speedups": speedups,
                         "median": statistics.median(speedups), "spread": spread(speedups),
                         "baseline_ms": [r["baseline_ms"] for r in results[protocol]],
                         "repeats": results[protocol]})
    wall_s = time.perf_counter() - began
    print()
    print_table(["condition", "protocol", f"speed-ups of the {args.repeats} repeats", "median",
                 "spread (max - min) / median", "baseline ms, min-max", "s per comparison"],
                [[r["condition"], r["protocol"], ", ".join(f"{s:.2f}" for s in r["speedups"]), f"{r['median']:.2f}x",
                  pct(r["spread"]), f"{min(r['baseline_ms']):.1f}-{max(r['baseline_ms']):.1f}",
                  f"{statistics.mean(x['wall_s'] for x in r['repeats']):.1f}"] for r in rows])
    print(f"\n{wall_s:.0f} s of comparisons")
    if args.json:
        write_result(args.json, method="interference", concern="a synthesised program over its baseline, under "
                     "interference", values={"program": manifest["program"], "program_created": manifest["created"],
                                             "repeats": args.repeats, "wall_s": wall_s, "rows": rows},
                     spread={f"{r['condition']}/{r['protocol']}": r["spread"] for r in rows})


if __name__ == "__main__":
    main()
