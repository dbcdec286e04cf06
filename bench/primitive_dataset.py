"""Profile the primitive-time dataset (Mulder et al. 3.2) and print its Table 1/2 counts and profiling time.

Run: .venv/bin/python bench/primitive_dataset.py [--db bench/results/primitives/primitives.db] [--random 200]
     [--grid paper] [--max-gmacs G] [--shard I/N] [--budget-s 3000] [--threads 1] [--repeat 40] [--max-configs N]
     [--device cpu|cuda|cuda:N] [--output-activations] [--retime-slow FACTOR]

Configurations: the distinct 2-D convolutions of every zoo network, then --random configurations sampled around
them (``nnperf.primitives.sample_configs``). Every applicable primitive and every layout transformation of the
configuration's input is timed with ``nnperf.campaign.DATASET_HARNESS`` and stored as it is taken, so running
the script again resumes. --max-configs N profiles a random N of them only (seeded: the same N on every run, so
it resumes too), enough for a second platform to transfer a model to (bench/primitive_transfer.py), e.g.
``ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 ... --db bench/results/primitives/primitives-avx2.db --max-configs 120``.
--grid paper profiles Mulder et al.'s grid instead (``nnperf.primitives.paper_grid``: Table 7's shapes x Table 1's
kernels and strides, in a seeded random order, at most --max-gmacs billion MACs each); --shard I/N keeps every N-th
configuration from the I-th (0-based), so that N processes pinned to N cores profile disjoint parts into N stores.
With --repeat N, N configurations already profiled are timed again into a second store (``<db>.repeat``): the
median relative difference between the two passes is the noise floor of the dataset on this machine, the error
a model cannot go below. --device cuda profiles on a CUDA GPU instead of this CPU (``nnperf.campaign.primitive_system``:
a system of its own, named by the GPU, in the same kind of store), with the primitives that run there (those on torch
ops and torch's own conv2d); bench/gpu_smoke.py checks them on the GPU first. --output-activations times, instead
of the configurations, the layout transformations alone on their outputs that none of them reads
(``nnperf.campaign.profile_transforms``): a network's transformations act on those activations too, and the
configurations' inputs alone are few (100 for the paper's grid). Stdout gets Markdown tables.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import defaultdict
from pathlib import Path

from nnperf.api import dataset_configs
from nnperf.campaign import (
    load_primitive_dataset,
    primitive_system,
    profile_primitives,
    profile_transforms,
    profiling_durations,
)
from nnperf.errors import NnperfError
from nnperf.measure import host_info
from nnperf.primitives import (
    PrimitiveDataset,
    device_availability,
    device_name,
    device_type,
    get_primitive,
    unread_outputs,
)
from nnperf.store import Store


def _ranges(dataset: PrimitiveDataset) -> list[tuple[str, str, str]]:
    configs = [s.config for s in dataset.conv]

    def span(values: list[int]) -> str:
        return f"{min(values)} to {max(values)}" if values else "-"

    return [
        ("f (#kernels)", "1 to 2048", span([c.f for c in configs])),
        ("c (#channels)", "1 to 2048", span([c.c for c in configs])),
        ("im (input size)", "7 to 299", span([max(c.im) for c in configs])),
        ("s (stride)", "1, 2 or 4", ", ".join(map(str, sorted({c.stride[0] for c in configs})))),
        ("k (kernel size)", "1 to 11 (odd)", ", ".join(map(str, sorted({c.k[0] for c in configs})))),
        ("groups", "(not in the paper)", span([c.groups for c in configs])),
    ]


def _noise_floor(dataset: PrimitiveDataset, repeat: PrimitiveDataset) -> dict[str, float]:
    first = {s.config: s.times_s for s in dataset.conv}
    errors: dict[str, list[float]] = defaultdict(list)
    for sample in repeat.conv:
        for name, t in sample.times_s.items():
            t0 = first.get(sample.config, {}).get(name)
            if t0:
                errors[name].append(abs(t - t0) / t0)
    return {name: statistics.median(v) for name, v in sorted(errors.items())}


def _check_device(parser: argparse.ArgumentParser, device: str) -> None:
    """Exit with a message naming the problem (status 2) unless ``device`` can compute here."""
    try:
        device_type(device)
    except NnperfError as exc:
        parser.error(f"--device {device}: {exc}")
    available = device_availability(device)
    if not available.ok:
        parser.error(f"--device {device}: {available.reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=Path("bench/results/primitives/primitives.db"))
    parser.add_argument("--random", type=int, default=200)
    parser.add_argument("--budget-s", type=float, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=0, help="configurations to time again for the noise floor")
    parser.add_argument("--grid", choices=("paper",), default=None, help="profile Mulder et al.'s grid")
    parser.add_argument("--max-gmacs", type=float, default=None, help="with --grid: the largest configuration")
    parser.add_argument("--shard", default=None, metavar="I/N", help="profile the I-th of N disjoint parts")
    parser.add_argument("--max-configs", type=int, default=None, metavar="N",
                        help="profile a seeded random N of the configurations (default: all)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N: where the primitives compute")
    parser.add_argument("--retime-slow", type=float, default=None, metavar="FACTOR",
                        help="then time again each configuration whose machine-speed reading is over FACTOR x median")
    parser.add_argument("--output-activations", action="store_true",
                        help="time the transformations on the configurations' outputs instead of the configurations")
    args = parser.parse_args()
    if args.max_configs is not None and args.max_configs < 1:
        parser.error(f"--max-configs must be at least 1, got {args.max_configs}")
    _check_device(parser, args.device)
    host = host_info()
    gpu = "" if args.device == "cpu" else f"{device_name(args.device)} ({args.device}) driven by "
    print(f"{gpu}{host.cpu_model}, {host.logical_cores} logical cores, {args.threads} thread(s)\n")
    max_macs = None if args.max_gmacs is None else int(args.max_gmacs * 1e9)
    configs = dataset_configs(random=args.random, grid=args.grid, max_macs=max_macs)
    if args.shard:
        index, count = (int(v) for v in args.shard.split("/"))
        configs = configs[index::count]
    asked = len(configs)
    if args.max_configs is not None and args.max_configs < len(configs):
        configs = [configs[i] for i in sorted(random.Random(0).sample(range(len(configs)), args.max_configs))]
    args.db.parent.mkdir(parents=True, exist_ok=True)
    with Store(args.db) as store:
        start = time.perf_counter()
        progress = lambda what, done, total: print(f"\r{done}/{total} {what:<40}", end="", flush=True)
        unit = "configurations"
        if args.output_activations:
            unit = "activations"
            report = profile_transforms(store, unread_outputs(configs), args.threads, budget_s=args.budget_s,
                                        device=args.device, progress=progress, retime_over=args.retime_slow)
        else:
            report = profile_primitives(store, configs, args.threads, budget_s=args.budget_s, device=args.device,
                                        progress=progress, retime_over=args.retime_slow)
        print(f"\n\nprofiled now: {report.measured} {unit}, {report.samples} samples in "
              f"{time.perf_counter() - start:.0f} s; profiled before: {report.reused}; left: {report.remaining}; "
              f"timed again for a slow machine-speed reading: {len(report.retimed)}")
        for name, label, error in report.failures:
            print(f"failed: {name} on {label}: {error}")
        system = store.find_system(primitive_system(args.threads, args.device).key)
        assert system is not None
        dataset = load_primitive_dataset(store, system.id)
        profiling_s = sum(d for d in profiling_durations(store, system.id).values() if d is not None)
    subset = f"; a random {len(configs)} of them profiled" if len(configs) < asked else ""
    origin = (f"the paper's grid{', shard ' + args.shard if args.shard else ''}" if args.grid else
              f"{asked - args.random} from the zoo networks, {args.random} sampled")
    print(f"\nTable 1: {len(dataset.conv)} configurations ({asked} asked: {origin}{subset}), "
          f"{len(dataset.layout)} activations; {dataset.n_samples} samples; profiling time (sum over the "
          f"configurations and activations of their timed windows) {profiling_s / 60:.1f} min\n")
    print("| parameter | paper's common range | this dataset |\n|---|---|---|")
    for row in _ranges(dataset):
        print("| " + " | ".join(row) + " |")
    counts = dataset.counts()
    print("\nTable 2: data points per primitive and transformation\n")
    print("| primitive | family | data points |\n|---|---|---|")
    for name in dataset.primitives:
        print(f"| {name} | {get_primitive(name).family.value} | {counts[name]} |")
    for name in dataset.transforms:
        print(f"| {name} | layout | {counts[name]} |")
    if args.repeat:
        chosen = random.Random(0).sample([s.config for s in dataset.conv], min(args.repeat, len(dataset.conv)))
        repeat_db = args.db.with_name(args.db.name + ".repeat")
        with Store(repeat_db) as store:
            again = profile_primitives(store, chosen, args.threads, device=args.device)
            repeat = load_primitive_dataset(store, again.system_id)
        floor = _noise_floor(dataset, repeat)
        print(f"\nNoise floor: median relative difference between two passes over {len(chosen)} configurations\n")
        print("| primitive | pass-to-pass MdRAE |\n|---|---|")
        for name, value in floor.items():
            print(f"| {name} | {value * 100:.1f}% |")


if __name__ == "__main__":
    main()
