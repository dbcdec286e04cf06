"""Time every available convolution primitive on one layer, with the measurement harness.

Run: .venv/bin/python bench/primitive_times.py [--threads 1] [--c 64] [--f 64] [--im 56] [--k 3]
     [--transforms]

The layer defaults to Mulder et al.'s typical ResNet stage: 64 -> 64 channels, 3x3, stride 1, padding 1, on
56x56, batch 1. Weights are prepared (transformed, reordered, sessions built) before timing; the time is one
prepared call, input in the primitive's own layout. Stdout gets a Markdown table of medians with the harness's
confidence interval and spread; on a shared machine quote medians only.
"""

from __future__ import annotations

import argparse

from nnperf.measure import HarnessConfig, host_info
from nnperf.primitives import ConvConfig, all_primitives, all_transforms, time_primitive, time_transform


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--c", type=int, default=64)
    parser.add_argument("--f", type=int, default=64)
    parser.add_argument("--im", type=int, default=56)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of timing per primitive (default 3)")
    parser.add_argument("--transforms", action="store_true", help="time the layout transformations of the input too")
    args = parser.parse_args()
    config = ConvConfig.make(1, args.c, args.f, args.im, args.k, 1, args.k // 2)
    harness = HarnessConfig(budget_s=args.budget)
    host = host_info()
    print(f"{config}, {args.threads} thread(s), {host.cpu_model}, {host.logical_cores} logical cores\n")
    rows = []
    for p in all_primitives():
        available = p.availability()
        if not available.ok:
            rows.append((p.name, p.family.value, f"unavailable: {available.reason}", "", "", ""))
            continue
        if not p.applies(config):
            rows.append((p.name, p.family.value, "does not apply", "", "", ""))
            continue
        timing = time_primitive(p, config, args.threads, harness)
        s = timing.stats
        rows.append((p.name, p.family.value, f"{s.median_s * 1e3:.3f}", f"{s.iqr_s / s.median_s * 100:.1f}%",
                     str(len(timing.times_s)), timing.stop_reason))
    timed = sorted((r for r in rows if r[3]), key=lambda r: float(r[2]))
    print("| primitive | family | median ms | IQR/median | samples | stop |")
    print("|---|---|---|---|---|---|")
    for r in timed + [r for r in rows if not r[3]]:
        print("| " + " | ".join(r) + " |")
    if args.transforms:
        print("\n| transformation | median ms | IQR/median |")
        print("|---|---|---|")
        for t in all_transforms():
            if t.src != t.dst:
                s = time_transform(t, 1, args.c, (args.im, args.im), args.threads, harness).stats
                print(f"| {t.name} | {s.median_s * 1e3:.3f} | {s.iqr_s / s.median_s * 100:.1f}% |")


if __name__ == "__main__":
    main()
