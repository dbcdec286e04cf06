"""What a profiled primitive dataset holds and how noisy it is: counts, ranges, rounds, the per-round spread of
every workload's ratio to the reference, and, given a second store that profiled some of the same
configurations, how far apart the two stores' times and ratios are.

Run: .venv/bin/python bench/primitive_dataset_stats.py STORE [--against OTHER_STORE]

The spread of one configuration is the median over its workloads of the interquartile range of the workload's
per-round ratio to the reference (``DATASET_REFERENCE``) over that ratio's median; 1.25 * IQR / 1.35 / sqrt(rounds)
is roughly the standard error of the median ratio the dataset stores (a normal approximation). With
``--against``, for every configuration in both stores: |b / a - 1| of each primitive's time and of its ratio to
the reference, and the median of b / a (the two stores' machine-speed level).
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import numpy as np

from nnperf.campaign import DATASET_REFERENCE, load_primitive_dataset
from nnperf.measure import Method
from nnperf.store import Store


def spreads(store: Store, system_id: int) -> tuple[list[float], list[int]]:
    """Each interleaved configuration's median ratio spread and its number of rounds."""
    by_run: dict[int, dict[str, np.ndarray]] = collections.defaultdict(dict)
    for m in store.layer_measurements(system_id=system_id, method=Method.ISOLATED):
        by_run[m.run_id][m.layer] = np.asarray(m.measurement().timing.times_s)
    found, rounds = [], []
    for workloads in by_run.values():
        ref = workloads.get(DATASET_REFERENCE)
        if ref is None:
            continue
        values = []
        for name, times in workloads.items():
            if name != DATASET_REFERENCE and len(times) == len(ref):
                q1, q3 = np.percentile(times / ref, [25, 75])
                values.append((q3 - q1) / np.median(times / ref))
        if values:
            found.append(float(np.median(values)))
            rounds.append(len(ref))
    return found, rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path)
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args()
    with Store(args.store, create=False) as store:
        system = store.systems()[0]
        dataset = load_primitive_dataset(store, system.id)
        spread, rounds = spreads(store, system.id)
    configs = [s.config for s in dataset.conv]
    print(f"{args.store} ({system.device_name}): {len(configs)} configurations, {len(dataset.layout)} activations, "
          f"{dataset.n_samples} times")
    print(f"rounds per configuration: median {np.median(rounds):.0f} [{min(rounds)}, {max(rounds)}]")
    q = 100 * np.percentile(spread, [50, 25, 75])
    print(f"per-round ratio spread (IQR / median): median {q[0]:.1f}% [q1 {q[1]:.1f}%, q3 {q[2]:.1f}%]")
    error = [s * 1.25 / 1.35 / np.sqrt(r) for s, r in zip(spread, rounds, strict=True)]
    print(f"standard error of a stored ratio, about: {100 * np.median(error):.1f}%")
    print("kernels", sorted(collections.Counter(c.k[0] for c in configs).items()),
          "strides", sorted(collections.Counter(c.stride[0] for c in configs).items()),
          "grouped", sum(c.groups > 1 for c in configs))
    print("counts", dict(dataset.counts()))
    if args.against:
        with Store(args.against, create=False) as other_store:
            other = load_primitive_dataset(other_store, other_store.systems()[0].id)
        mine = {s.config: s.times_s for s in dataset.conv}
        common = [s for s in other.conv if s.config in mine]
        print(f"\n{len(common)} configurations also in {args.against}: |b/a - 1| of times and of ratios to "
              f"{DATASET_REFERENCE}, and the median b/a (a: {args.against.name}, b: {args.store.name})")
        for name in dataset.primitives:
            pairs = [(s.times_s[name], mine[s.config][name], s.times_s[DATASET_REFERENCE],
                      mine[s.config][DATASET_REFERENCE]) for s in common
                     if name in s.times_s and name in mine[s.config] and DATASET_REFERENCE in s.times_s]
            if pairs:
                t = [abs(b / a - 1) for a, b, _, _ in pairs]
                r = [abs((b / rb) / (a / ra) - 1) for a, b, ra, rb in pairs]
                print(f"{name}: {len(pairs)} time {100 * np.median(t):.1f}% ratio {100 * np.median(r):.1f}% "
                      f"level {np.median([b / a for a, b, _, _ in pairs]):.2f}")


if __name__ == "__main__":
    main()
