"""Profiling the primitive-time dataset into the store (Mulder et al. 3.2), and reading it back.

Every configuration is profiled in a run of its own (campaign ``primitives|KEY``, ``KEY`` its
:func:`config_key`) on the system ``primitives/cpu[threads=N]``: each applicable, available primitive and each
layout transformation of the configuration's input activation is one layer measurement (``op`` 'primitive' or
'transform', method 'isolated'), stored as soon as it is timed. What the store holds for a configuration is
never measured again: an interrupted profile resumes at its first missing primitive, a profile of more
primitives measures only the new ones (in a new run of the same campaign), and a ``budget_s`` stops between two
configurations, so running the same command again goes on where it stopped.

On a fleet (``runner``, see ``nnperf.fleet``) each configuration is one :class:`PrimitiveItem`, measured on a node of
the primitive system and stored here, in the configuration's run, when it comes back; the budget then stops the
profile when a result comes back after it is spent, and the configurations still in flight are measured again by
the next profile.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass

from nnperf.campaign._campaign import Campaign, Progress, no_progress, open_campaign
from nnperf.campaign._items import ItemRunner
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
    get_primitive,
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
                       primitives: Sequence[Primitive] | None = None, progress: Progress | None = None,
                       runner: ItemRunner | None = None) -> PrimitiveProfileReport:
    """Times every applicable primitive and every layout transformation on each of ``configs`` into ``store``.

    ``primitives`` defaults to every registered primitive that is available here. What the store already holds
    for a configuration on this system (from any earlier profile, finished or interrupted) is not measured
    again, so a profile of more primitives after one of a few adds only the missing ones. A primitive that
    raises while it runs is reported in ``failures`` and the profile goes on. ``budget_s`` (seconds of
    profiling) is checked before each configuration that still needs measuring. With ``runner`` (a fleet's nodes
    of a primitive system) the configurations are measured there, on the runner's system and thread count.
    """
    if budget_s is not None and budget_s <= 0:
        raise NnperfError(f"the profiling budget must be positive, got {budget_s} s")
    chosen = list(primitives) if primitives is not None else [p for p in all_primitives() if p.availability().ok]
    if runner is not None:
        return _profile_on_runner(store, configs, runner, harness, budget_s, chosen, progress or no_progress)
    system = primitive_system(threads)
    record = store.add_system(system)
    stored = _stored_names(store, record)
    report = progress or no_progress
    start = time.perf_counter()
    measured = reused = samples = 0
    failures: list[tuple[str, str, str]] = []
    unique = list(dict.fromkeys(configs))

    def still_needed(config: ConvConfig) -> list[_Job]:
        return _still_needed(config, stored, chosen, threads, harness)

    for i, config in enumerate(unique):
        jobs = still_needed(config)
        if not jobs:
            reused += 1
            continue
        if budget_s is not None and time.perf_counter() - start > budget_s:
            report("budget spent", i, len(unique))
            remaining = 1 + sum(1 for later in unique[i + 1:] if still_needed(later))
            return PrimitiveProfileReport(record.id, measured, reused, remaining, samples,
                                          time.perf_counter() - start, tuple(failures))
        label = config_label(config)
        report(label, i, len(unique))
        with _config_campaign(store, system, config, threads, harness) as campaign:
            samples += _measure_config(campaign, label, jobs, failures)
        measured += 1
    report("done", len(unique), len(unique))
    return PrimitiveProfileReport(record.id, measured, reused, 0, samples, time.perf_counter() - start,
                                  tuple(failures))


def _profile_on_runner(store: Store, configs: Sequence[ConvConfig], runner: ItemRunner, harness: HarnessConfig,
                       budget_s: float | None, chosen: Sequence[Primitive],
                       report: Progress) -> PrimitiveProfileReport:
    """:func:`profile_primitives` with each configuration a :class:`PrimitiveItem` measured by ``runner``."""
    system = runner.system()
    if system.backend != PRIMITIVE_BACKEND:
        raise NnperfError(f"the primitive dataset is profiled on a system of backend {PRIMITIVE_BACKEND!r}, not on "
                          f"{system.label}: start the fleet's nodes with `nnperf fleet up --backend primitives`")
    threads = int(dict(system.options).get("threads", "1"))
    record = store.add_system(system)
    stored = _stored_names(store, record)
    start = time.perf_counter()
    unique = list(dict.fromkeys(configs))
    names = tuple(p.name for p in chosen)
    items: list[PrimitiveItem] = []
    for config in unique:
        if _still_needed(config, stored, chosen, threads, harness):
            items.append(PrimitiveItem(config, names, frozenset(stored.get(config_key(config), set())), threads,
                                       harness))
    measured = samples = 0
    failures: list[tuple[str, str, str]] = []
    with contextlib.closing(runner.run(items, report)) as results:
        for index, outcomes in results:
            item = items[index]
            with _config_campaign(store, system, item.config, threads, harness) as campaign:
                samples += _store_outcomes(campaign, item.label, outcomes, failures)
            measured += 1
            if budget_s is not None and time.perf_counter() - start > budget_s and measured < len(items):
                report("budget spent", measured, len(items))
                break
    report("done", len(unique), len(unique))
    return PrimitiveProfileReport(record.id, measured, len(unique) - len(items), len(items) - measured, samples,
                                  time.perf_counter() - start, tuple(failures))


def _still_needed(config: ConvConfig, stored: dict[str, set[str]], primitives: Sequence[Primitive], threads: int,
                  harness: HarnessConfig) -> list[_Job]:
    """The jobs of ``config`` whose names ``stored`` (see :func:`_stored_names`) does not hold."""
    have = stored.get(config_key(config), set())
    return [job for job in _jobs(config, primitives, threads, harness) if job[0] not in have]


def _config_campaign(store: Store, system: SystemSpec, config: ConvConfig, threads: int,
                     harness: HarnessConfig) -> contextlib.AbstractContextManager[Campaign]:
    """The campaign (one run) that holds ``config``'s primitive and transformation times on ``system``."""
    key = config_key(config)
    return open_campaign(store, system, PRIMITIVE_CAMPAIGN + key, config_label(config), key, Method.ISOLATED.value,
                         {**config.to_dict(), "threads": threads, "harness": asdict(harness)})


def _stored_names(store: Store, system: SystemRecord) -> dict[str, set[str]]:
    """For every configuration key, the primitives and transformations the store holds for it on ``system``."""
    keys = {r.id: r.network_hash for r in store.runs(system_id=system.id) if r.campaign.startswith(PRIMITIVE_CAMPAIGN)}
    found: dict[str, set[str]] = {}
    for m in store.layer_measurements(system_id=system.id, method=Method.ISOLATED):
        if m.run_id in keys:
            found.setdefault(keys[m.run_id], set()).add(m.layer)
    return found


_Job = tuple[str, str, str, Callable[[], Timing]]
"""(name, op, group, timing call) of one primitive or layout transformation to time on a configuration."""


def _jobs(config: ConvConfig, primitives: Sequence[Primitive], threads: int, harness: HarnessConfig) -> list[_Job]:
    """Every applicable primitive and every layout transformation of the configuration's input."""
    jobs: list[_Job] = [
        (p.name, "primitive", p.family.value, functools.partial(time_primitive, p, config, threads, harness))
        for p in primitives if p.applies(config)]
    jobs += [(t.name, "transform", "layout",
              functools.partial(time_transform, t, config.batch, config.c, config.im, threads, harness))
             for t in all_transforms() if t.src != t.dst]
    return jobs


@dataclass(frozen=True)
class PrimitiveOutcome:
    """One primitive or layout transformation timed on a configuration, or why it failed (``timing`` None)."""

    name: str
    op: str
    group: str
    timing: Timing | None
    error: str = ""


def _timed(jobs: Sequence[_Job], done: Collection[str]) -> Iterator[PrimitiveOutcome]:
    """Times each of ``jobs`` not in ``done``, one outcome each as it ends.

    A primitive or transformation that raises while it runs (a library refusing a shape) gives an outcome with
    the error's first line instead of a timing.
    """
    for name, op, group, timed in jobs:
        if name in done:
            continue
        try:
            yield PrimitiveOutcome(name, op, group, timed())
        except (RuntimeError, ValueError, NnperfError) as exc:
            yield PrimitiveOutcome(name, op, group, None,
                                   str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)


@dataclass(frozen=True)
class PrimitiveItem:
    """A configuration's primitives (by name, those that apply) and layout transformations not in ``done``, timed
    with ``threads`` threads: a fleet's measuring item (see ``nnperf.campaign._items``); gives a tuple of
    :class:`PrimitiveOutcome`. It needs no backend: the primitives are the libraries themselves."""

    config: ConvConfig
    primitives: tuple[str, ...]
    done: frozenset[str]
    threads: int
    harness: HarnessConfig

    @property
    def label(self) -> str:
        return config_label(self.config)

    def measure(self, backend: object = None) -> tuple[PrimitiveOutcome, ...]:
        chosen = [get_primitive(name) for name in self.primitives]
        return tuple(_timed(_jobs(self.config, chosen, self.threads, self.harness), self.done))


def _store_outcomes(campaign: Campaign, label: str, outcomes: Iterable[PrimitiveOutcome],
                    failures: list[tuple[str, str, str]]) -> int:
    """Stores each timed outcome in ``campaign`` (what it holds already is skipped) and notes each failed one
    in ``failures`` with the configuration's ``label``; returns how many were stored."""
    stored = 0
    for outcome in outcomes:
        if outcome.timing is None:
            failures.append((outcome.name, label, outcome.error))
            continue
        if outcome.name in campaign.done:
            continue
        campaign.add_layer(LayerMeasurement(outcome.name, outcome.op, Method.ISOLATED, outcome.timing, outcome.group))
        stored += 1
    return stored


def _measure_config(campaign: Campaign, label: str, jobs: Sequence[_Job],
                    failures: list[tuple[str, str, str]]) -> int:
    """Times the ``jobs`` that ``campaign`` does not hold yet, storing each time as it is taken; returns how many
    (a primitive that raises is noted in ``failures`` and skipped)."""
    return _store_outcomes(campaign, label, _timed(jobs, campaign.done), failures)


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
