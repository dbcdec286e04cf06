"""Profiling the primitive-time dataset into the store (Mulder et al. 3.2), and reading it back.

Every configuration is a run of its own (campaign ``primitives|KEY``, ``KEY`` its :func:`config_key`) on the
system ``primitives/cpu[threads=N]``: each applicable, available primitive and each layout transformation of
the configuration's input activation is one layer measurement (``op`` 'primitive' or 'transform', method
'isolated'), stored as soon as it is timed. A finished configuration is read back instead of measured again, an
interrupted one resumes at its first missing primitive, and a ``budget_s`` stops the profile between two
configurations, so that running the same command again goes on where it stopped.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from nnperf.campaign._campaign import Campaign, Progress, no_progress, open_campaign
from nnperf.errors import NnperfError
from nnperf.measure import HarnessConfig, LayerMeasurement, Method, SystemSpec, Timing, host_info
from nnperf.primitives import (
    ConvConfig,
    ConvSample,
    Primitive,
    PrimitiveDataset,
    TransformSample,
    all_primitives,
    all_transforms,
    config_from_dict,
    config_key,
    config_label,
    time_primitive,
    time_transform,
)
from nnperf.store import Store, SystemRecord

PRIMITIVE_CAMPAIGN = "primitives|"
"""The prefix of a profiled configuration's campaign key."""

PRIMITIVE_BACKEND = "primitives"
"""The backend name of a primitive-profiling system (the library is many libraries: torch, ONNX Runtime, OpenCV)."""

DATASET_HARNESS = HarnessConfig(warmup_s=0.02, warmup_runs=1, min_block_s=0.002, target_ci=0.02, min_samples=5,
                                max_samples=25, budget_s=0.4)
"""Lighter than the default harness: a dataset has thousands of samples (Mulder et al. took the median of 25
runs; here at most 25 blocks, stopping at a 2% confidence interval or after 0.4 s of timing, and at least 5
blocks, which is what a primitive taking seconds per call gets)."""


def primitive_system(threads: int = 1) -> SystemSpec:
    """The system the primitives are profiled on: this CPU with ``threads`` threads (the instruction-set caps
    ``ONEDNN_MAX_CPU_ISA`` and ``ATEN_CPU_CAPABILITY``, when set, are part of its identity through the host)."""
    if threads < 1:
        raise NnperfError(f"threads must be at least 1, got {threads}")
    host = host_info()
    return SystemSpec(PRIMITIVE_BACKEND, "cpu", host.cpu_model, (("threads", str(threads)),), host)


@dataclass(frozen=True)
class PrimitiveProfileReport:
    """What :func:`profile_primitives` did: configurations measured now, read back (finished before), and left for
    later by the budget; samples measured now; primitives that failed (name, configuration label, error)."""

    system_id: int
    measured: int
    reused: int
    remaining: int
    samples: int
    elapsed_s: float
    failures: tuple[tuple[str, str, str], ...]


def profile_primitives(store: Store, configs: Sequence[ConvConfig], threads: int = 1,
                       harness: HarnessConfig = DATASET_HARNESS, budget_s: float | None = None,
                       primitives: Sequence[Primitive] | None = None,
                       progress: Progress | None = None) -> PrimitiveProfileReport:
    """Times every applicable primitive and every layout transformation on each of ``configs`` into ``store``.

    ``primitives`` defaults to every registered primitive that is available here. A primitive that raises while
    it runs is reported in ``failures`` and the profile goes on. ``budget_s`` (seconds of profiling) is checked
    before each configuration that still needs measuring.
    """
    if budget_s is not None and budget_s <= 0:
        raise NnperfError(f"the profiling budget must be positive, got {budget_s} s")
    chosen = list(primitives) if primitives is not None else [p for p in all_primitives() if p.availability().ok]
    system = primitive_system(threads)
    record = store.add_system(system)
    report = progress or no_progress
    start = time.perf_counter()
    measured = reused = samples = 0
    failures: list[tuple[str, str, str]] = []
    unique = list(dict.fromkeys(configs))
    for i, config in enumerate(unique):
        label = config_label(config)
        if budget_s is not None and time.perf_counter() - start > budget_s and not _finished(store, record, config):
            remaining = sum(1 for c in unique[i:] if not _finished(store, record, c))
            report("budget spent", i, len(unique))
            return PrimitiveProfileReport(record.id, measured, reused, remaining, samples,
                                          time.perf_counter() - start, tuple(failures))
        report(label, i, len(unique))
        with open_campaign(store, system, PRIMITIVE_CAMPAIGN + config_key(config), label, config_key(config),
                           Method.ISOLATED.value, {**config.to_dict(), "threads": threads, "harness": asdict(harness)},
                           reuse=True) as campaign:
            if campaign.reused:
                reused += 1
                continue
            samples += _measure_config(campaign, config, chosen, threads, harness, failures)
            measured += 1
    report("done", len(unique), len(unique))
    return PrimitiveProfileReport(record.id, measured, reused, 0, samples, time.perf_counter() - start,
                                  tuple(failures))


def _measure_config(campaign: Campaign, config: ConvConfig, primitives: Sequence[Primitive], threads: int,
                    harness: HarnessConfig, failures: list[tuple[str, str, str]]) -> int:
    """Times what ``campaign`` does not hold yet on ``config``, storing each time as it is taken; returns how many.

    A primitive or transformation that raises while it runs (a library refusing a shape) is noted in
    ``failures`` and skipped.
    """
    label, stored = config_label(config), 0
    jobs: list[tuple[str, str, str, Callable[[], Timing]]] = [
        (p.name, "primitive", p.family.value, functools.partial(time_primitive, p, config, threads, harness))
        for p in primitives if p.applies(config)]
    jobs += [(t.name, "transform", "layout",
              functools.partial(time_transform, t, config.batch, config.c, config.im, threads, harness))
             for t in all_transforms() if t.src != t.dst]
    for name, op, group, timed in jobs:
        if name in campaign.done:
            continue
        try:
            timing = timed()
        except (RuntimeError, ValueError, NnperfError) as exc:
            failures.append((name, label, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__))
            continue
        campaign.add_layer(LayerMeasurement(name, op, Method.ISOLATED, timing, group))
        stored += 1
    return stored


def _finished(store: Store, system: SystemRecord, config: ConvConfig) -> bool:
    return store.finished_run(system.id, PRIMITIVE_CAMPAIGN + config_key(config)) is not None


def primitive_systems(store: Store) -> list[SystemRecord]:
    """The stored systems that hold profiled primitives, oldest first."""
    return [s for s in store.systems() if s.backend == PRIMITIVE_BACKEND]


def load_primitive_dataset(store: Store, system_id: int) -> PrimitiveDataset:
    """Every primitive and transformation time stored for system ``system_id`` (finished and interrupted
    configurations alike: what was measured counts), as a :class:`PrimitiveDataset`.

    A transformation measured on the same activation in several configurations keeps the first time stored.
    """
    system = store.system(system_id)
    if system.backend != PRIMITIVE_BACKEND:
        raise NnperfError(f"system {system.id} ({system.backend}/{system.device}) holds no profiled primitives; "
                          "profile them with `nnperf primitives profile`")
    runs = {r.id: r for r in store.runs(system_id=system.id) if r.campaign.startswith(PRIMITIVE_CAMPAIGN)}
    conv: dict[int, dict[str, float]] = {run_id: {} for run_id in runs}
    layout: dict[tuple[int, int, tuple[int, int]], dict[str, float]] = {}
    for m in store.layer_measurements(system_id=system.id, method=Method.ISOLATED):
        run = runs.get(m.run_id)
        if run is None:
            continue
        if m.op == "primitive":
            conv[m.run_id][m.layer] = m.timing.stats.median_s
        elif m.op == "transform":
            c = run.config
            shape = (int(c["batch"]), int(c["c"]), (int(c["im"][0]), int(c["im"][1])))
            layout.setdefault(shape, {}).setdefault(m.layer, m.timing.stats.median_s)
    by_config: dict[ConvConfig, dict[str, float]] = {}
    for run_id, times in conv.items():
        if times:  # a configuration profiled in two runs (two processes at once) merges them
            by_config.setdefault(config_from_dict(runs[run_id].config), {}).update(times)
    samples = tuple(ConvSample(config, times) for config, times in by_config.items())
    transforms = tuple(TransformSample(b, c, im, times) for (b, c, im), times in layout.items())
    return PrimitiveDataset(system.key, tuple(sorted({n for s in samples for n in s.times_s})),
                            tuple(sorted({n for t in transforms for n in t.times_s})), samples, transforms)
