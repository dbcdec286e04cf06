"""The primitive dataset's repeat-to-repeat noise under the sequential and the interleaved protocol.

Run: flock /tmp/nnperf-bench.lock env .venv/bin/python bench/primitive_noise.py [--configs 20]
     [--conditions none periodic hog] [--protocols sequential interleaved ...] [--json PATH]

A seeded sample of --configs configurations of the dataset grid (``nnperf.api.dataset_configs(random=200)``, the
grid of bench/primitive_dataset.py) is profiled twice (two repeats) under each protocol, into two fresh stores per
protocol (``nnperf.campaign.profile_primitives`` with ``DATASET_HARNESS``: every applicable primitive and the
layout transformations). The protocols: sequential; interleaved, with the machine-speed reference in every round
(the default); interleaved without it. Per configuration and repeat the protocols run back to back, their order
alternating. It is all done under each condition: with nothing added ("none"); with a ``PeriodicSlowdown`` (1 s
period, half of it spinning) on CPU 0, the one CPU this process is pinned to ("periodic"); and with a ``CpuHog``
on CPU 0 while one configuration in four is timed, a different quarter in each repeat ("hog": a slow window as
long as a configuration's rounds, which pairing the rounds cannot see and the machine-speed reference levels).

For every primitive of every configuration timed in both repeats, the relative difference |b - a| / a of (i) its
dataset time and (ii) its dataset time over the reference's (torch-conv2d, the framework default) of the same
configuration and repeat; the tables give their medians. "Interleaved" is the dataset as read
(``load_primitive_dataset``: paired, levelled by the machine-speed reference), "interleaved, not levelled" the
same rounds paired only (``level=False``), "interleaved, round medians" the stored medians alone, without the
pairing; under "hog", the hogged configurations (one of the repeats ran beside the hog) also alone. Stdout gets
Markdown.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path

from _shared import write_result

from nnperf.api import dataset_configs
from nnperf.campaign import DATASET_REFERENCE, PrimitiveProfileReport, load_primitive_dataset, profile_primitives
from nnperf.measure import CpuHog, Method, PeriodicSlowdown, host_info, interference_availability
from nnperf.primitives import ConvConfig, config_from_dict
from nnperf.store import Store

NO_REFERENCE = "interleaved, no reference"
PROTOCOLS = ("sequential", "interleaved", NO_REFERENCE)
REPEATS = (0, 1)
CONDITIONS = ("none", "periodic", "hog")

Times = dict[ConvConfig, dict[str, float]]
"""Configuration -> primitive -> seconds."""

Medians = tuple[float, float, int]
"""(median over every primitive and configuration, median over primitives of each one's median, pairs)."""


def _injector(condition: str) -> contextlib.AbstractContextManager[object]:
    """The injector that runs through a whole condition."""
    if condition == "periodic":
        return PeriodicSlowdown(cpus=(0,), max_s=3600.0)  # the default 600 s deadline could end it mid-run
    return contextlib.nullcontext()


def _window(condition: str, config_index: int, repeat: int) -> contextlib.AbstractContextManager[object]:
    """The injector around one configuration's timing: under "hog", a CPU hog on CPU 0 for one configuration in
    four, a different quarter in each repeat."""
    if condition == "hog" and (config_index + 2 * repeat) % 4 == 0:
        return CpuHog(cpus=(0,), max_s=600.0)
    return contextlib.nullcontext()


def _stored_medians(store: Store, system_id: int) -> Times:
    """The stored median of each primitive per configuration (no pairing of rounds)."""
    configs = {r.id: config_from_dict(r.config) for r in store.runs(system_id=system_id)}
    found: Times = {}
    for m in store.layer_measurements(system_id=system_id, method=Method.ISOLATED):
        if m.op == "primitive":
            found.setdefault(configs[m.run_id], {})[m.layer] = m.timing.stats.median_s
    return found


def _differences(a: Mapping[object, Mapping[str, float]], b: Mapping[object, Mapping[str, float]],
                 relative: bool) -> dict[str, list[float]]:
    """Per primitive, |b - a| / a over the configurations in both (each time over the reference's when
    ``relative``)."""
    out: dict[str, list[float]] = defaultdict(list)
    for config, times_a in a.items():
        times_b = b.get(config, {})
        for name, ta in times_a.items():
            tb = times_b.get(name)
            if tb is None:
                continue
            if relative:
                if name == DATASET_REFERENCE or DATASET_REFERENCE not in times_a or DATASET_REFERENCE not in times_b:
                    continue
                ta, tb = ta / times_a[DATASET_REFERENCE], tb / times_b[DATASET_REFERENCE]
            out[name].append(abs(tb - ta) / ta)
    return out


def _medians(diffs: Mapping[str, list[float]]) -> Medians:
    """(median over every primitive and configuration, median over primitives of each one's median, pairs)."""
    pooled = [d for values in diffs.values() for d in values]
    per_primitive = [statistics.median(v) for v in diffs.values() if v]
    return statistics.median(pooled), statistics.median(per_primitive), len(pooled)


def _profile(store: Store, config: ConvConfig, protocol: str, repeat: int) -> PrimitiveProfileReport:
    """One configuration profiled under ``protocol`` ("interleaved, no reference": without the machine-speed
    reference in the rounds)."""
    if protocol == NO_REFERENCE:
        return profile_primitives(store, [config], protocol="interleaved", seed=repeat, speed_reference=False)
    return profile_primitives(store, [config], protocol=protocol, seed=repeat)


def _run_condition(condition: str, configs: list[ConvConfig], folder: Path, log: dict[str, object],
                   protocols: tuple[str, ...] = PROTOCOLS) -> Iterator[str]:
    stores = {(p, r): Store(folder / f"{condition}-{p}-{r}.db") for p in protocols for r in REPEATS}
    wall: dict[str, list[float]] = defaultdict(list)
    spreads: list[float] = []
    system_ids: dict[tuple[str, int], int] = {}
    hogged: set[ConvConfig] = set()
    began = time.perf_counter()
    try:
        with _injector(condition):
            for i, config in enumerate(configs):
                for r in REPEATS:
                    order = protocols if (i + r) % 2 == 0 else protocols[::-1]
                    for p in order:
                        start = time.perf_counter()
                        with _window(condition, i, r) as window:
                            report = _profile(stores[p, r], config, p, r)
                        hogged |= {config} if window is not None else set()
                        wall[p].append(time.perf_counter() - start)
                        system_ids[p, r] = report.system_id
                        spreads += [s for _, s in report.ratio_spreads]
                        for name, label, error in report.failures:
                            print(f"# failed: {name} on {label}: {error}", flush=True)
                print(f"# {condition}: {i + 1}/{len(configs)} configurations, "
                      f"{time.perf_counter() - began:.0f} s", flush=True)
        rows = _rows(stores, system_ids, protocols, hogged)
    finally:
        for store in stores.values():
            store.close()
    log[condition] = {"rows": rows, "wall_s": {p: statistics.median(w) for p, w in wall.items()},
                      "ratio_spread": statistics.median(spreads), "elapsed_s": time.perf_counter() - began,
                      "hogged": len(hogged)}
    for name, ((abs_pooled, abs_per, n), (rel_pooled, rel_per, n_rel)) in rows.items():
        seconds = f"{statistics.median(wall[name]):.2f}" if name in wall else "-"
        spread = f"{statistics.median(spreads) * 100:.1f}%" if name == "interleaved" else "-"
        yield (f"| {condition} | {name} | {abs_pooled * 100:.1f}% ({abs_per * 100:.1f}%) | "
               f"{rel_pooled * 100:.1f}% ({rel_per * 100:.1f}%) | {spread} | {seconds} |")


def _rows(stores: Mapping[tuple[str, int], Store], system_ids: Mapping[tuple[str, int], int],
          protocols: tuple[str, ...], hogged: set[ConvConfig]) -> dict[str, tuple[Medians, Medians]]:
    """Each table row's ((i), (ii)) medians: every protocol's dataset as read, and for the interleaved one its
    rounds not levelled, its stored medians alone and, where a hog ran, the hogged configurations alone."""
    def read(p: str, level: bool = True) -> list[Times]:
        return [{s.config: s.times_s for s in load_primitive_dataset(stores[p, r], system_ids[p, r], level).conv}
                for r in REPEATS]

    def row(pair: list[Times], only: set[ConvConfig] | None = None) -> tuple[Medians, Medians]:
        a, b = ({c: t for c, t in times.items() if only is None or c in only} for times in pair)
        return _medians(_differences(a, b, False)), _medians(_differences(a, b, True))

    as_read = {p: read(p) for p in protocols}
    rows = {p: row(pair) for p, pair in as_read.items()}
    if "interleaved" in protocols:
        as_timed = read("interleaved", level=False)
        rows["interleaved, not levelled"] = row(as_timed)
        rows["interleaved, round medians"] = row([_stored_medians(stores["interleaved", r],
                                                                  system_ids["interleaved", r]) for r in REPEATS])
        if hogged:
            rows["interleaved, hogged configurations"] = row(as_read["interleaved"], hogged)
            rows["interleaved, not levelled, hogged configurations"] = row(as_timed, hogged)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=20, help="configurations sampled from the grid (default 20)")
    parser.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS),
                        help="the injector conditions to run (default all)")
    parser.add_argument("--protocols", nargs="+", choices=PROTOCOLS, default=list(PROTOCOLS),
                        help="the protocols to compare (default all)")
    parser.add_argument("--json", type=Path, default=None, help="also write the result file here "
                        "(bench/results/interference/primitive_noise.json)")
    args = parser.parse_args()
    availability = interference_availability()
    if not availability.ok:
        parser.error(f"the interference injector cannot run here: {availability.reason}")
    os.sched_setaffinity(0, {0})  # the measured core is the one the slowdown spins on
    host = host_info()
    grid = dataset_configs(random=200)
    configs = [grid[i] for i in sorted(random.Random(0).sample(range(len(grid)), args.configs))]
    print(f"{host.cpu_model}, {host.logical_cores} logical cores, pinned to CPU 0, 1 thread; {len(configs)} of "
          f"the {len(grid)} grid configurations, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| injector | protocol | (i) time, repeat-to-repeat: all (per-primitive median) | (ii) time / "
          f"{DATASET_REFERENCE}, repeat-to-repeat: all (per-primitive median) | per-round ratio IQR / median | "
          "s per configuration |")
    print("|---|---|---|---|---|---|")
    log: dict[str, object] = {"configs": [c.to_dict() for c in configs]}
    with tempfile.TemporaryDirectory() as folder:
        for condition in args.conditions:
            for line in _run_condition(condition, configs, Path(folder), log, tuple(args.protocols)):
                print(line, flush=True)
    if args.json is not None:
        write_result(args.json, method="interference", concern="the primitive dataset's repeat-to-repeat noise",
                     values=log)


if __name__ == "__main__":
    main()
