"""Profiling the primitive-time dataset into the store (Mulder et al. 3.2), and reading it back.

Every configuration is profiled in a run of its own (campaign ``primitives|KEY``, ``KEY`` its
:func:`config_key`) on the system ``primitives/cpu[threads=N]``, or ``primitives/cuda[tf32=off,threads=N]`` on a
CUDA GPU (:func:`primitive_system`): each applicable, available primitive that runs on the device and each layout
transformation of the configuration's input activation is one layer measurement (``op`` 'primitive' or
'transform', method 'isolated').

How a configuration is timed is its ``protocol``. The default, interleaved, times every primitive and
transformation of the configuration once per round, in a fresh random order each round, each until the standard
error of its ratio to the reference is 1% (``nnperf.campaign._ratio_rounds``; earlier datasets ran all of them until
all were known: ``nnperf.measure.measure_interleaved``), and stores them all at once, in one transaction, when the
rounds end.
The cost models learn the primitives' relative times, and timing the primitives one after the other on a shared VM
whose speed moves by tens of percent within minutes puts that drift into their ratios (bench/primitive_noise.py: a
primitive's time over oneDNN chw's moved 14.0% between repeats timed one after the other, 3.2% interleaved). Each
stored timing then holds the primitive's per-round times, round ``r`` of every primitive of the configuration taken
in the same round (a workload that left the rounds early has the first rounds only). The sequential
protocol measures each primitive to the harness's stopping rule, one after the other, and stores each as soon
as it is timed.

What the store holds for a configuration is never measured again: a profile of more primitives measures only
the new ones (in a new run of the same campaign), and a ``budget_s`` stops between two configurations, so
running the same command again goes on where it stopped. A configuration interrupted while its rounds ran held
nothing yet and is measured again as a whole; under the sequential protocol an interrupted configuration resumes
at its first missing primitive.

On a fleet (``runner``, see ``nnperf.fleet``) each configuration is one :class:`PrimitiveItem`, measured on a node of
the primitive system and stored here, in the configuration's run, when it comes back; the budget then stops the
profile when a result comes back after it is spent, and the configurations still in flight are measured again by
the next profile.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from nnperf.campaign._campaign import Campaign, Progress, no_progress, open_campaign
from nnperf.campaign._items import ItemRunner, LocalRunner
from nnperf.campaign._ratio_rounds import DATASET_STOPPING, RatioRounds, RatioStopping, measure_ratio_rounds
from nnperf.errors import NnperfError
from nnperf.measure import (
    ComparisonProtocol,
    HarnessConfig,
    LayerMeasurement,
    Method,
    Rounds,
    RoundsConfig,
    SystemSpec,
    Timer,
    Timing,
    fixed_timing,
    host_info,
    measure,
    measure_interleaved,
    parse_protocol,
)
from nnperf.primitives import (
    ConvConfig,
    ConvSample,
    LayoutTransform,
    Primitive,
    PrimitiveDataset,
    SharedOperands,
    TransformSample,
    all_primitives,
    all_transforms,
    config_from_dict,
    config_key,
    config_label,
    device_name,
    device_type,
    primitive_timer,
    require_device,
    transform_timer,
)
from nnperf.store import RunRecord, Store, SystemRecord

PRIMITIVE_CAMPAIGN = "primitives|"
"""The prefix of a profiled configuration's campaign key."""

PRIMITIVE_BACKEND = "primitives"
"""The backend name of a primitive-profiling system (the library is many libraries: torch, ONNX Runtime, OpenCV)."""

DATASET_HARNESS = HarnessConfig(warmup_s=0.02, warmup_runs=1, min_block_s=0.002, target_ci=0.02, min_samples=5,
                                max_samples=25, budget_s=0.4)
"""Lighter than the default harness: a dataset has thousands of samples (Mulder et al. took the median of 25
runs; here at most 25 blocks, stopping at a 2% confidence interval or after 0.4 s of timing, and at least 5
blocks, which is what a primitive taking seconds per call gets). The interleaved protocol takes its rounds from
the same settings (:func:`dataset_rounds`); under a ``RatioStopping`` (the default) a workload leaves them at its
ratio's standard error instead of the interval."""

DATASET_REFERENCE = "torch-conv2d"
"""The primitive that a configuration's rounds are judged against (the stopping rule, :func:`ratio_spread`) and
its paired times taken from (:func:`paired_times`): the framework default, torch's own ``conv2d`` on chw
(``nnperf.optimize.select.DEFAULT_PRIMITIVE``, a layer above this one), which applies to every configuration.
Where it was not timed, :data:`EARLIER_REFERENCE` is, else the first workload timed."""

EARLIER_REFERENCE = "onednn-chw"
"""The reference of rounds timed before ``torch-conv2d`` was a primitive (oneDNN on chw, which needs symmetric
padding): the stored rounds of those datasets were judged against it, and their paired times keep it."""

SPEED_REFERENCE = "machine-speed reference"
"""The workload timed in every round of a configuration's interleaved rounds to say how fast the machine ran while
they ran (stored with op 'reference'): :data:`DATASET_REFERENCE` on :data:`SPEED_REFERENCE_CONFIG`, the same
convolution wherever it is timed. The rounds protect a configuration's ratios from a change of machine speed, but
not its level: a configuration timed while a neighbour's work halves the machine's speed is stored 2x slow (on a
shared 2-vCPU VM, a profile of the nine networks of bench/select_networks.py held 39 of 206 configurations timed 2-5x
slow, 36 of them within six minutes). :func:`load_primitive_dataset` levels every configuration to the
system's median reference time (:func:`paired_times`); :func:`profile_speed` names the slow ones."""

SPEED_REFERENCE_CONFIG = ConvConfig.make(1, 32, 32, 28, 3, padding=1)
"""The machine-speed reference's convolution: 3x3, 32 -> 32 channels at 28x28 (7.2 M MACs), the drift sentinel
and ``nnperf.measure.REFERENCE_CANDIDATES['conv']``. The whole-network reference (ResNet-18 at 112x112) tracks
networks better, but a configuration is one convolution, of the small reference's kind, and ResNet-18 would add
a block of about 19 ms (one thread, this AMD EPYC) to each round of 13 or more blocks of 2 ms; this one adds one
block of 2 ms."""

SLOW_FACTOR = 1.5
"""A configuration whose machine-speed reference ran over this many times its system's median was timed in a slow
window (:meth:`ProfileSpeed.slow`)."""

_FAILURES = (RuntimeError, ValueError, NnperfError)
"""What a primitive or transformation raises when its library refuses the shape: noted, and the profile goes on."""


def primitive_system(threads: int = 1, device: str = "cpu") -> SystemSpec:
    """The system the primitives are profiled on: this CPU with ``threads`` threads (the instruction-set caps
    ``ONEDNN_MAX_CPU_ISA`` and ``ATEN_CPU_CAPABILITY``, when set, are part of its identity through the host).

    With ``device`` "cuda" or "cuda:N", the CUDA GPU: device "cuda" (the GPU's model names it, not its index), its
    name from ``torch.cuda.get_device_name``, and options ``threads`` (the host threads, which launch the kernels)
    and ``tf32=off`` (the primitives compute in IEEE float32 there, ``nnperf.primitives.ieee_float32``). So a CPU's
    and a GPU's datasets are two systems of one store. A device that is not here raises ``UnavailableError``.
    """
    if threads < 1:
        raise NnperfError(f"threads must be at least 1, got {threads}")
    kind = device_type(device)
    host = host_info()
    if kind == "cpu":
        return SystemSpec(PRIMITIVE_BACKEND, "cpu", host.cpu_model, (("threads", str(threads)),), host)
    return SystemSpec(PRIMITIVE_BACKEND, kind, device_name(device), (("tf32", "off"), ("threads", str(threads))), host)


def dataset_rounds(harness: HarnessConfig, workloads: int, seed: int = 0) -> RoundsConfig:
    """The interleaved rounds of a configuration of ``workloads`` primitives and transformations, from the
    harness that would time each of them alone: its block length, warm-up time, interval target, ``min_samples``
    to ``max_samples`` rounds, and ``workloads`` times its budget (the same timing time per workload).
    ``warmup_runs`` has no counterpart (a warm-up here lasts ``warmup_s``, at least one call when it is > 0)."""
    # RoundsConfig wants a positive budget; a zero one (stop at the fewest rounds) is the smallest positive one
    budget_s = harness.budget_s * workloads or math.ulp(0.0)
    return RoundsConfig(min_rounds=harness.min_samples, max_rounds=harness.max_samples,
                        min_block_s=harness.min_block_s, warmup_s=harness.warmup_s, target_ci=harness.target_ci,
                        budget_s=budget_s, seed=seed)


def ratio_spread(rounds: Rounds, reference: str) -> dict[str, float]:
    """For every other workload of ``rounds``, the interquartile range of its per-round ratio to ``reference``
    over the ratio's median (a fraction): how much a configuration's relative times move from round to round."""
    return {name: rounds.ratio(name, reference).iqr_rel for name in rounds.names if name != reference}


def _protocol(protocol: ComparisonProtocol | str) -> ComparisonProtocol:
    chosen = parse_protocol(protocol)
    if chosen is ComparisonProtocol.DUET:
        raise NnperfError("the primitive dataset is timed 'interleaved' or 'sequential'; 'duet' compares two "
                          "workloads on two cores, and a configuration has many")
    return chosen


@dataclass(frozen=True)
class PrimitiveProfileReport:
    """What :func:`profile_primitives` did: configurations measured now, read back (finished before), and left for
    later by the budget; samples measured now; primitives that failed (name, configuration label, error).

    ``ratio_spreads`` holds, for each configuration measured now under the interleaved protocol, (label, its
    repeat noise): the median over its primitives and transformations of :func:`ratio_spread` (a fraction);
    ``speed_readings_s`` (label, seconds) the median of its rounds of the machine-speed reference
    (:data:`SPEED_REFERENCE`), where it was timed (a configuration timed again: its new reading); ``retimed`` the
    labels of the configurations timed again because their reading was slow (``retime_over``).
    """

    system_id: int
    measured: int
    reused: int
    remaining: int
    samples: int
    elapsed_s: float
    failures: tuple[tuple[str, str, str], ...]
    ratio_spreads: tuple[tuple[str, float], ...] = ()
    speed_readings_s: tuple[tuple[str, float], ...] = ()
    retimed: tuple[str, ...] = ()


def profile_primitives(store: Store, configs: Sequence[ConvConfig], threads: int = 1,
                       harness: HarnessConfig = DATASET_HARNESS, budget_s: float | None = None,
                       primitives: Sequence[Primitive] | None = None, progress: Progress | None = None,
                       runner: ItemRunner | None = None,
                       protocol: ComparisonProtocol | str = ComparisonProtocol.INTERLEAVED,
                       seed: int = 0, device: str = "cpu", speed_reference: bool = True,
                       retime_over: float | None = None,
                       stopping: RatioStopping | None = DATASET_STOPPING) -> PrimitiveProfileReport:
    """Times every applicable primitive and every layout transformation on each of ``configs`` into ``store``.

    ``primitives`` defaults to every registered primitive that is available here. What the store already holds
    for a configuration on this system (from any earlier profile, finished or interrupted) is not measured
    again, so a profile of more primitives after one of a few adds only the missing ones. A primitive that
    raises while it runs is reported in ``failures`` and the profile goes on. ``budget_s`` (seconds of
    profiling) is checked before each configuration that still needs measuring. With ``runner`` (a fleet's nodes
    of a primitive system) the configurations are measured there, on the runner's system and thread count.

    ``protocol`` is 'interleaved' (default: a configuration's primitives and transformations timed in rounds,
    :func:`dataset_rounds` of ``harness``) or 'sequential' (each measured with ``harness``, one after the other).
    ``seed`` (default 0) is mixed with each configuration's key to seed the random order of its rounds. Under
    ``stopping`` (default :data:`DATASET_STOPPING`) each workload leaves the interleaved rounds once its ratio to
    the reference is known to the rule's standard error, and a slow one runs one call per block as soon as its
    warm-up shows it (``nnperf.campaign._ratio_rounds``); the configuration's run then records its rounds and
    those standard errors (``rounds``, ``ratio_se``). With ``stopping`` None every workload runs until every ratio
    is within the harness's ``target_ci`` (``nnperf.measure.measure_interleaved``, how datasets were timed before).
    With ``speed_reference`` (default) the interleaved rounds also time :data:`SPEED_REFERENCE`, which levels the
    configuration's times to the machine's usual speed when the dataset is read (:func:`load_primitive_dataset`).
    With ``retime_over`` (a factor, e.g. :data:`SLOW_FACTOR`), once every configuration is stored, each of
    ``configs`` whose reading is over that many times the system's median (:meth:`ProfileSpeed.slow`) is timed
    again as a whole, in a new run that the dataset reads instead of the slow one (which stays in the store); the
    budget still applies.

    ``device`` (default "cpu"; "cuda" or "cuda:N": :func:`primitive_system`'s CUDA system) is where the primitives
    and transformations compute; ``primitives`` then defaults to those that run there
    (:meth:`~nnperf.primitives.Primitive.supports`), and a given one that does not is an error, as is a device that
    is not here (``UnavailableError``, before anything is measured).
    """
    if budget_s is not None and budget_s <= 0:
        raise NnperfError(f"the profiling budget must be positive, got {budget_s} s")
    timing = _protocol(protocol)
    _check_retime(retime_over, timing, speed_reference)
    if runner is None:
        require_device(device)
    chosen = _device_primitives(primitives, device)
    return _profile(store, configs, runner or PrimitiveRunner(threads, device), harness, budget_s, chosen,
                    progress or no_progress, timing, seed, device, speed_reference, retime_over, stopping)


def _check_retime(retime_over: float | None, protocol: ComparisonProtocol, speed_reference: bool) -> None:
    """A configuration is timed again for a slow machine-speed reading: a factor of at least 1, and a profile that
    takes the readings (interleaved rounds with the reference)."""
    if retime_over is None:
        return
    if not retime_over >= 1:
        raise NnperfError(f"a slow configuration's reading is over a factor of at least 1 of the median; got "
                          f"{retime_over}")
    if protocol is not ComparisonProtocol.INTERLEAVED or not speed_reference:
        raise NnperfError("slow configurations are found by the machine-speed reference, which only the interleaved "
                          "protocol times: time them interleaved, with the reference, to time the slow ones again")


def profile_transforms(store: Store, shapes: Sequence[tuple[int, int, tuple[int, int]]], threads: int = 1,
                       harness: HarnessConfig = DATASET_HARNESS, budget_s: float | None = None,
                       progress: Progress | None = None, runner: ItemRunner | None = None,
                       protocol: ComparisonProtocol | str = ComparisonProtocol.INTERLEAVED, seed: int = 0,
                       device: str = "cpu", retime_over: float | None = None,
                       stopping: RatioStopping | None = DATASET_STOPPING) -> PrimitiveProfileReport:
    """Times every layout transformation on each activation (batch, c, (h, w)) of ``shapes`` into ``store``, under
    ``protocol`` (default: the dataset's interleaved rounds), and no primitive: more activations for the
    transformations' model than the configurations' inputs give. Each activation is stored under its
    :meth:`ConvConfig.carrier` (the dataset reads it as an activation, not as a configuration); what the store
    holds already is not measured again, and ``budget_s`` stops between two activations and ``runner`` measures on
    a fleet, ``retime_over`` times the slow ones again and ``stopping`` ends the rounds, as in
    :func:`profile_primitives`.
    ``nnperf.primitives.unread_outputs`` gives the activations a set of configurations leaves without times."""
    carriers = [ConvConfig.carrier(batch, c, im) for batch, c, im in shapes]
    return profile_primitives(store, carriers, threads, harness, budget_s, (), progress, runner, protocol, seed,
                              device, retime_over=retime_over, stopping=stopping)


def _device_primitives(primitives: Sequence[Primitive] | None, device: str) -> list[Primitive]:
    """``primitives`` (None: every available one that runs on ``device``); one that does not run there is an
    error that names each such primitive and why."""
    if primitives is None:
        return [p for p in all_primitives() if p.availability().ok and p.supports(device).ok]
    refused = [f"{p.name} ({p.supports(device).reason})" for p in primitives if not p.supports(device).ok]
    if refused:
        raise NnperfError(f"these primitives cannot be profiled on {device}: {'; '.join(refused)}")
    return list(primitives)


class PrimitiveRunner(LocalRunner):
    """Runs :class:`PrimitiveItem` s in this process, one after the other, lazily, on the primitive system of
    ``threads`` threads on ``device`` (:func:`primitive_system`): a local runner without a backend (the primitives
    are the libraries themselves) and without a power meter."""

    def __init__(self, threads: int = 1, device: str = "cpu") -> None:
        super().__init__(None)  # type: ignore[arg-type]  # primitives need no backend
        self.threads = threads
        self.device = device

    def system(self) -> SystemSpec:
        return primitive_system(self.threads, self.device)

    with_meter = ItemRunner.with_meter  # no energy for primitives: refused as on a fleet


def _profile(store: Store, configs: Sequence[ConvConfig], runner: ItemRunner, harness: HarnessConfig,
             budget_s: float | None, chosen: Sequence[Primitive], report: Progress,
             protocol: ComparisonProtocol, seed: int, device: str = "cpu",
             speed_reference: bool = True, retime_over: float | None = None,
             stopping: RatioStopping | None = DATASET_STOPPING) -> PrimitiveProfileReport:
    """:func:`profile_primitives` with each configuration still needed a :class:`PrimitiveItem` measured by
    ``runner`` on ``device``, stored (one transaction) as it comes back; the budget is checked before each result is
    taken (a runner of this process measures nothing more once it is spent). With ``retime_over``, the slow ones of
    ``configs`` are then measured again the same way, each in a new run marked :data:`RETIMED`."""
    system = runner.system()
    if system.backend != PRIMITIVE_BACKEND:
        raise NnperfError(f"the primitive dataset is profiled on a system of backend {PRIMITIVE_BACKEND!r}, not on "
                          f"{system.label}: start the fleet's nodes with `nnperf fleet up --backend primitives`")
    if system.device != device_type(device):
        raise NnperfError(f"the primitives were asked for on {device}, but the runner measures on {system.label}")
    threads = int(dict(system.options).get("threads", "1"))
    record = store.add_system(system)
    tally = _Tally(time.perf_counter(), budget_s)
    unique = list(dict.fromkeys(configs))

    def item(config: ConvConfig, done: frozenset[str]) -> PrimitiveItem:
        return PrimitiveItem(config, tuple(chosen), done, threads, harness, protocol, seed, device, speed_reference,
                             stopping)

    items = [item(config, done) for config, done in _needed(store, record, unique, chosen)]
    measured = _measure_items(store, system, runner, items, report, tally)
    retimed: list[PrimitiveItem] = []
    if retime_over is not None and measured == len(items):
        retimed = [item(config, frozenset()) for config in _slow_configs(store, record, unique, retime_over)]
        retimed = retimed[:_measure_items(store, system, runner, retimed, report, tally, retimed=True)]
    report("done", len(unique), len(unique))
    return PrimitiveProfileReport(record.id, measured, len(unique) - len(items), len(items) - measured, tally.samples,
                                  time.perf_counter() - tally.start_s, tuple(tally.failures), tuple(tally.spreads),
                                  tuple(tally.speeds_s.items()), tuple(i.label for i in retimed))


RETIMED = "|retimed"
"""The suffix of the campaign key of a configuration timed again for a slow machine-speed reading: a run of its
own, never resumed by a profile of the configuration (nor the other way round). The dataset reads a time from the
configuration's latest run that holds it (:func:`load_primitive_dataset`), so the new times replace the slow ones,
which stay in the store."""


@dataclass
class _Tally:
    """What a profile's measuring has gathered so far (see :class:`PrimitiveProfileReport`), and when its budget
    ends."""

    start_s: float
    budget_s: float | None
    samples: int = 0
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    spreads: list[tuple[str, float]] = field(default_factory=list)
    speeds_s: dict[str, float] = field(default_factory=dict)

    def spent(self) -> bool:
        return self.budget_s is not None and time.perf_counter() - self.start_s > self.budget_s


def _measure_items(store: Store, system: SystemSpec, runner: ItemRunner, items: Sequence[PrimitiveItem],
                   report: Progress, tally: _Tally, retimed: bool = False) -> int:
    """Measures ``items`` with ``runner``, storing each in its configuration's run as it comes back (a new run
    marked :data:`RETIMED` when ``retimed``) and adding what it gave to ``tally``; returns how many were measured
    before the budget was spent (the first ones)."""
    measured = 0
    with contextlib.closing(runner.run(items, report)) as results:
        while measured < len(items):
            if tally.spent():
                report("budget spent", measured, len(items))
                break
            index, outcomes = next(results)
            item = items[index]
            with _config_campaign(store, system, item.config, item.threads, item.harness, item.protocol,
                                  retimed, _rounds_record(item, outcomes)) as campaign:
                tally.samples += _store_outcomes(campaign, item.label, outcomes, tally.failures, together=True)
            if item.protocol is ComparisonProtocol.INTERLEAVED:
                tally.spreads.append((item.label, _config_spread(outcomes)))
            tally.speeds_s.update((item.label, o.timing.stats.median_s) for o in outcomes
                                  if o.name == SPEED_REFERENCE and o.timing is not None)
            measured += 1
    return measured


def _rounds_record(item: PrimitiveItem, outcomes: Sequence[PrimitiveOutcome]) -> dict[str, Any]:
    """What a configuration's run records of rounds ended by ``item.stopping``: the rule, the rounds the
    configuration took (its reference's) and the standard error each ratio reached (:class:`PrimitiveOutcome`);
    nothing for other rounds and for a configuration with nothing timed."""
    timed = [o for o in outcomes if o.timing is not None]
    if item.stopping is None or item.protocol is not ComparisonProtocol.INTERLEAVED or not timed:
        return {}
    return {"stopping": asdict(item.stopping), "rounds": max(len(o.timing.times_s) for o in timed if o.timing),
            "ratio_se": {o.name: round(o.ratio_se, 6) for o in timed if math.isfinite(o.ratio_se)}}


def _slow_configs(store: Store, system: SystemRecord, configs: Sequence[ConvConfig],
                  factor: float) -> list[ConvConfig]:
    """Those of ``configs`` whose latest machine-speed reading is over ``factor`` times the system's median
    (:class:`ProfileSpeed`)."""
    readings = _latest_readings(*_profiled(store, system))
    standard_s = ProfileSpeed(tuple(readings.values())).standard_s
    return [config for config in configs if config_key(config) in readings
            and standard_s is not None and readings[config_key(config)][1] > factor * standard_s]


def _needed(store: Store, system: SystemRecord, configs: Sequence[ConvConfig],
            primitives: Sequence[Primitive]) -> list[tuple[ConvConfig, frozenset[str]]]:
    """Each of ``configs`` that still needs a primitive or transformation timed on ``system``, with the names it
    does not need: those stored for it, and the layout transformations of its input activation that the store holds
    from another configuration or that an earlier one of ``configs`` will time (an activation's transformations are
    timed once: the paper's grid has 100 input activations for 3,317 configurations)."""
    stored = _stored_names(store, system)
    claimed = _stored_activations(store, system, stored)
    transforms = [t.name for t in _layout_changes()]
    needed: list[tuple[ConvConfig, frozenset[str]]] = []
    for config in configs:
        activation = (config.batch, config.c, config.im)
        have = stored.get(config_key(config), set()) | claimed.get(activation, set())
        # a primitive stored is not asked whether it applies (ONNX Runtime's blocked one builds a session to say)
        if (any(name not in have for name in transforms)
                or any(p.name not in have and p.applies(config) for p in primitives)):
            needed.append((config, frozenset(have)))
            claimed.setdefault(activation, set()).update(transforms)
    return needed


def _stored_activations(store: Store, system: SystemRecord,
                        stored: Mapping[str, set[str]]) -> dict[tuple[int, int, tuple[int, int]], set[str]]:
    """For every input activation (batch, c, (h, w)) of a configuration profiled on ``system``, the layout
    transformations the store holds for it (``stored``: :func:`_stored_names`)."""
    transforms = {t.name for t in _layout_changes()}
    found: dict[tuple[int, int, tuple[int, int]], set[str]] = {}
    for run in store.runs(system_id=system.id):
        if run.campaign.startswith(PRIMITIVE_CAMPAIGN):
            names = stored.get(run.network_hash, set()) & transforms
            found.setdefault(_input_activation(run.config), set()).update(names)
    return found


def _layout_changes() -> list[LayoutTransform]:
    """The layout transformations a configuration's input is timed under: every one but the identities."""
    return [t for t in all_transforms() if t.src != t.dst]


def _input_activation(config: Mapping[str, Any]) -> tuple[int, int, tuple[int, int]]:
    """The input activation (batch, c, (h, w)) of a configuration's run config."""
    return int(config["batch"]), int(config["c"]), (int(config["im"][0]), int(config["im"][1]))


def _rounds_seed(config: ConvConfig, seed: int) -> int:
    """The seed of ``config``'s round order: ``seed`` mixed with the configuration's key, so that configurations
    do not all share one sequence of orders."""
    return int(config_key(config), 16) ^ seed


def _config_campaign(store: Store, system: SystemSpec, config: ConvConfig, threads: int, harness: HarnessConfig,
                     protocol: ComparisonProtocol, retimed: bool = False,
                     record: Mapping[str, Any] | None = None) -> contextlib.AbstractContextManager[Campaign]:
    """The campaign (one run) that holds ``config``'s primitive and transformation times on ``system`` (with
    ``retimed``, its times taken again: :data:`RETIMED`); the run config (written when the run starts) names the
    protocol, so a reader knows whether the rounds line up, and holds ``record`` (:func:`_rounds_record`)."""
    key = config_key(config)
    campaign = PRIMITIVE_CAMPAIGN + key + (RETIMED if retimed else "")
    return open_campaign(store, system, campaign, config_label(config), key, Method.ISOLATED.value,
                         {**config.to_dict(), "threads": threads, "harness": asdict(harness),
                          "protocol": protocol.value, **(record or {})})


def _stored_names(store: Store, system: SystemRecord) -> dict[str, set[str]]:
    """For every configuration key, the primitives and transformations the store holds for it on ``system``."""
    keys = {r.id: r.network_hash for r in store.runs(system_id=system.id) if r.campaign.startswith(PRIMITIVE_CAMPAIGN)}
    found: dict[str, set[str]] = {}
    for m in store.layer_measurements(system_id=system.id, method=Method.ISOLATED):
        if m.run_id in keys:
            found.setdefault(keys[m.run_id], set()).add(m.layer)
    return found


@dataclass(frozen=True)
class _Job:
    """One primitive or layout transformation to time on a configuration: its name, op and group as stored, and
    what builds its timer (preparing weights and input layout, untimed; a refusing library may raise)."""

    name: str
    op: str
    group: str
    timer: Callable[[], Timer]


def _jobs(config: ConvConfig, primitives: Sequence[Primitive], threads: int, device: str = "cpu") -> list[_Job]:
    """Every applicable primitive and every layout transformation of the configuration's input, on ``device``
    (the primitives are those that run there: :func:`_device_primitives`). The primitives' operands are made
    once, when the first of them is prepared, each getting a copy (``nnperf.primitives.SharedOperands``)."""
    operands = SharedOperands(config, device=device)
    jobs = [_Job(p.name, "primitive", p.family.value,
                 functools.partial(primitive_timer, p, config, threads, device=device, operands=operands))
            for p in primitives if p.applies(config)]
    jobs += [_Job(t.name, "transform", "layout",
                  functools.partial(transform_timer, t, config.batch, config.c, config.im, threads, device=device))
             for t in _layout_changes()]
    return jobs


def _speed_reference_job(threads: int, device: str = "cpu") -> _Job:
    """:data:`SPEED_REFERENCE` as a job of ``threads`` threads on ``device``."""
    from nnperf.primitives import get_primitive

    return _Job(SPEED_REFERENCE, "reference", "reference",
                functools.partial(primitive_timer, get_primitive(DATASET_REFERENCE), SPEED_REFERENCE_CONFIG, threads,
                                  device=device))


@dataclass(frozen=True)
class PrimitiveOutcome:
    """One primitive or layout transformation timed on a configuration, or why it failed (``timing`` None).

    ``ratio_iqr_rel`` is, under the interleaved protocol, the interquartile range of its per-round ratio to the
    configuration's reference over that ratio's median (:func:`ratio_spread`); nan for the reference itself,
    under the sequential protocol and for a failure. ``ratio_se`` is, in rounds ended by a
    :class:`~nnperf.campaign._ratio_rounds.RatioStopping`, the standard error of that ratio's median when the
    workload left them (a fraction); nan elsewhere.
    """

    name: str
    op: str
    group: str
    timing: Timing | None
    error: str = ""
    ratio_iqr_rel: float = math.nan
    ratio_se: float = math.nan


def _failed(job: _Job, exc: BaseException) -> PrimitiveOutcome:
    """The outcome of ``job`` that raised ``exc``: the error's first line (at most 200 characters)."""
    return PrimitiveOutcome(job.name, job.op, job.group, None, _first_line(exc))


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _timed(jobs: Sequence[_Job], done: Collection[str], protocol: ComparisonProtocol, harness: HarnessConfig,
           seed: int = 0, clock: Callable[[], float] = time.perf_counter,
           speed_reference: _Job | None = None, stopping: RatioStopping | None = None) -> Iterable[PrimitiveOutcome]:
    """Times each of ``jobs`` not in ``done`` under ``protocol``: one outcome each, in the order of ``jobs``.

    Sequential outcomes come one at a time, as each measurement ends; interleaved ones all together when the
    rounds end (:func:`dataset_rounds` of ``harness``, seeded by ``seed``), with ``speed_reference`` (a job timed
    in every round, its outcome last) when there is something to time. A primitive or transformation that
    raises while it is prepared or runs (a library refusing a shape) gives an outcome with the error's first
    line instead of a timing. ``clock`` measures budgets only (a fake clock makes the protocols testable).
    With ``stopping`` each interleaved workload leaves the rounds once its ratio is known well enough
    (:func:`~nnperf.campaign._ratio_rounds.measure_ratio_rounds`); None: all run until all are.
    """
    todo = [job for job in jobs if job.name not in done]
    if protocol is ComparisonProtocol.SEQUENTIAL:
        return _timed_sequential(todo, harness, clock)
    return _timed_interleaved(todo + [speed_reference] if todo and speed_reference else todo, harness, seed, clock,
                              stopping)


def _timed_sequential(jobs: Sequence[_Job], harness: HarnessConfig,
                      clock: Callable[[], float]) -> Iterator[PrimitiveOutcome]:
    def timing(job: _Job) -> Timing:
        return measure(job.timer(), harness, clock=clock)

    return _timed_each([(job.name, job.op, job.group, functools.partial(timing, job)) for job in jobs], ())


_TimedJob = tuple[str, str, str, Callable[[], Timing]]
"""(name, op, group, timing call) of one thing measured on its own (a primitive under the sequential protocol, a
layer in a layout: ``nnperf.campaign._layer_layouts``)."""


def _timed_each(jobs: Sequence[_TimedJob], done: Collection[str]) -> Iterator[PrimitiveOutcome]:
    """Times each of ``jobs`` not in ``done``, one outcome each as it ends (a failure's outcome as in
    :func:`_timed`)."""
    for name, op, group, timed in jobs:
        if name in done:
            continue
        try:
            yield PrimitiveOutcome(name, op, group, timed())
        except _FAILURES as exc:
            yield PrimitiveOutcome(name, op, group, None, _first_line(exc))


class _WorkloadFailed(NnperfError):
    """One workload of a set of interleaved rounds raised: which one, so that the rounds go on without it."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(f"{name}: {error}")
        self.name = name
        self.error = error


@dataclass(frozen=True)
class _Attributed:
    """A timer whose failure names its workload (``measure_interleaved`` times many and does not say which)."""

    name: str
    timer: Timer

    def time_block(self, n: int) -> float:
        try:
            return self.timer.time_block(n)
        except _FAILURES as exc:
            raise _WorkloadFailed(self.name, exc) from exc


def _timed_interleaved(jobs: Sequence[_Job], harness: HarnessConfig, seed: int, clock: Callable[[], float],
                       stopping: RatioStopping | None = None) -> tuple[PrimitiveOutcome, ...]:
    outcomes: dict[str, PrimitiveOutcome] = {}
    timers: dict[str, Timer] = {}
    for job in jobs:
        try:
            timers[job.name] = _Attributed(job.name, job.timer())
        except _FAILURES as exc:
            outcomes[job.name] = _failed(job, exc)
    by_name = {job.name: job for job in jobs}
    # the reference first: the stopping rule judges every other workload's ratio to the first one
    names = sorted(timers, key=lambda name: (name != DATASET_REFERENCE, name != EARLIER_REFERENCE))
    rounds: Rounds | RatioRounds | None = None
    while len(names) >= 2 and rounds is None:
        try:
            chosen = {name: timers[name] for name in names}
            settings = dataset_rounds(harness, len(names), seed)
            rounds = (measure_interleaved(chosen, settings, clock=clock) if stopping is None
                      else measure_ratio_rounds(chosen, settings, stopping, clock=clock))
        except _WorkloadFailed as failed:  # the others start their rounds again without it
            outcomes[failed.name] = _failed(by_name[failed.name], failed.error)
            names.remove(failed.name)
    if rounds is not None:
        outcomes.update((o.name, o) for o in _round_outcomes(rounds, by_name))
    elif names and by_name[names[0]].op != "reference":  # a single workload has nothing to pair with: timed alone
        outcomes.update((o.name, o) for o in _timed_sequential([by_name[names[0]]], harness, clock))
    return tuple(outcomes[job.name] for job in jobs if job.name in outcomes)  # a reference left alone is not timed


def _round_outcomes(rounds: Rounds | RatioRounds, jobs: Mapping[str, _Job]) -> Iterator[PrimitiveOutcome]:
    """The outcome of each workload of ``rounds`` (of ``jobs`` by name): its round times with the rounds' window
    (for power traces) and the block size of its rounds, its ratio's spread and, where the rounds give one, its
    ratio's standard error and why it left them."""
    began = time.time() - rounds.wall_s
    if isinstance(rounds, RatioRounds):
        spreads = {name: _iqr_rel(rounds.ratios(name)) for name in rounds.names[1:]}
        errors = dict(zip(rounds.names, rounds.standard_errors))
        timings = {name: replace(fixed_timing(times), stop_reason=reason)
                   for name, times, reason in zip(rounds.names, rounds.times_s, rounds.stop_reasons)}
    else:
        spreads, errors = ratio_spread(rounds, rounds.names[0]), {}
        timings = {name: rounds.timing(name) for name in rounds.names}
    for i, name in enumerate(rounds.names):
        job = jobs[name]
        timing = replace(timings[name], block_size=rounds.block_sizes[i], started_at=began,
                         ended_at=began + rounds.wall_s)
        yield PrimitiveOutcome(name, job.op, job.group, timing, ratio_iqr_rel=spreads.get(name, math.nan),
                               ratio_se=errors.get(name, math.nan))


def _iqr_rel(ratios: np.ndarray) -> float:
    """The interquartile range of per-round ``ratios`` over their median (``PairedRatio.iqr_rel``)."""
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    return float(q3 - q1) / float(median) if median > 0 else math.inf


def _config_spread(outcomes: Iterable[PrimitiveOutcome]) -> float:
    """The median of the outcomes' ``ratio_iqr_rel`` (nan when none has one), the machine-speed reference's
    left out."""
    values = [o.ratio_iqr_rel for o in outcomes if math.isfinite(o.ratio_iqr_rel) and o.op != "reference"]
    return float(np.median(values)) if values else math.nan


@dataclass(frozen=True)
class PrimitiveItem:
    """A configuration's primitives (those that apply) and layout transformations not in ``done``, timed
    with ``threads`` threads under ``protocol`` (default interleaved; ``seed`` as in :func:`profile_primitives`) on
    ``device`` (default "cpu"): a fleet's measuring item (see ``nnperf.campaign._items``); gives a tuple of
    :class:`PrimitiveOutcome`. It needs no backend: the primitives are the libraries themselves. With
    ``speed_reference`` interleaved rounds also time :data:`SPEED_REFERENCE`, whose outcome comes last; ``stopping``
    ends them as in :func:`profile_primitives` (None: the earlier rule)."""

    config: ConvConfig
    primitives: tuple[Primitive, ...]
    done: frozenset[str]
    threads: int
    harness: HarnessConfig
    protocol: ComparisonProtocol = ComparisonProtocol.INTERLEAVED
    seed: int = 0
    device: str = "cpu"
    speed_reference: bool = True
    stopping: RatioStopping | None = DATASET_STOPPING

    @property
    def label(self) -> str:
        return config_label(self.config)

    def measure(self, backend: object = None, meter: object = None) -> tuple[PrimitiveOutcome, ...]:
        reference = _speed_reference_job(self.threads, self.device) if self.speed_reference else None
        return tuple(_timed(_jobs(self.config, self.primitives, self.threads, self.device), self.done, self.protocol,
                            self.harness, _rounds_seed(self.config, self.seed), speed_reference=reference,
                            stopping=self.stopping))


def _store_outcomes(campaign: Campaign, label: str, outcomes: Iterable[PrimitiveOutcome],
                    failures: list[tuple[str, str, str]], together: bool = False) -> int:
    """Stores each timed outcome in ``campaign`` (what it holds already is skipped) and notes each failed one
    in ``failures`` with the configuration's ``label``; returns how many primitives and transformations were stored
    (a machine-speed reading is stored, not counted).

    With ``together`` they are stored in one transaction (a crash keeps all or none: interleaved rounds), else
    each as it comes (a crash keeps those before it)."""
    kept: list[LayerMeasurement] = []
    for outcome in outcomes:
        if outcome.timing is None:
            failures.append((outcome.name, label, outcome.error))
            continue
        if outcome.name in campaign.done:
            continue
        kept.append(LayerMeasurement(outcome.name, outcome.op, Method.ISOLATED, outcome.timing, outcome.group))
        if not together:
            campaign.add_layer(kept[-1])
    if together and kept:
        campaign.add_layers(kept)
    return sum(m.op != "reference" for m in kept)


def primitive_systems(store: Store) -> list[SystemRecord]:
    """The stored systems that hold profiled primitives, oldest first."""
    return [s for s in store.systems() if s.backend == PRIMITIVE_BACKEND]


def load_primitive_dataset(store: Store, system_id: int, level: bool = True) -> PrimitiveDataset:
    """Every primitive and transformation time stored for system ``system_id`` (finished and interrupted
    configurations alike: what was measured counts), as a :class:`PrimitiveDataset`.

    A time is the stored median, except for workloads timed in one set of interleaved rounds (see
    :func:`paired_times`): there the reference's median times the workload's median per-round ratio to it, so that
    a change of machine speed during the rounds leaves the configuration's relative times as measured. With
    ``level`` (default), rounds that timed the machine-speed reference (:data:`SPEED_REFERENCE`) are levelled to
    the system's median reference time (:class:`ProfileSpeed`): a configuration timed in a slow window is read at
    the machine's usual speed. A configuration profiled in several runs (more primitives added later, or timed again
    for a slow reading) takes each time from the latest run that holds it. A transformation measured on the same
    activation in several configurations keeps the first time stored, unless a configuration timed again
    (:data:`RETIMED`) took it later.
    """
    system = store.system(system_id)
    runs, measured = _profiled(store, system)
    standard_s = ProfileSpeed.of(runs, measured).standard_s if level else None
    conv: dict[int, dict[str, float]] = {run_id: {} for run_id in runs}
    layout: dict[tuple[int, int, tuple[int, int]], dict[str, float]] = {}
    for run_id, measurements in measured.items():
        times = paired_times(measurements, standard_s)
        shape = _input_activation(runs[run_id].config)
        retimed = runs[run_id].campaign.endswith(RETIMED)
        for m in measurements:
            if m.op == "primitive":
                conv[run_id][m.layer] = times[m.layer]
            elif m.op == "transform" and (retimed or m.layer not in layout.get(shape, {})):
                layout.setdefault(shape, {})[m.layer] = times[m.layer]
    by_config: dict[ConvConfig, dict[str, float]] = {}
    for run_id, row in conv.items():
        if row:  # a configuration profiled in two runs (two processes at once) merges them
            by_config.setdefault(config_from_dict(runs[run_id].config), {}).update(row)
    samples = tuple(ConvSample(config, row) for config, row in by_config.items())
    transforms = tuple(TransformSample(b, c, im, row) for (b, c, im), row in layout.items())
    return PrimitiveDataset(system.key, tuple(sorted({n for s in samples for n in s.times_s})),
                            tuple(sorted({n for t in transforms for n in t.times_s})), samples, transforms)


def _profiled(store: Store, system: SystemRecord) -> tuple[dict[int, RunRecord], dict[int, list[LayerMeasurement]]]:
    """The configurations' runs of a primitive ``system`` by id, and each run's primitive, transformation and
    machine-speed measurements; a system of another backend is an error."""
    if system.backend != PRIMITIVE_BACKEND:
        raise NnperfError(f"system {system.id} ({system.backend}/{system.device}) holds no profiled primitives; "
                          "profile them with `nnperf primitives profile`")
    runs = {r.id: r for r in store.runs(system_id=system.id) if r.campaign.startswith(PRIMITIVE_CAMPAIGN)}
    measured: dict[int, list[LayerMeasurement]] = {run_id: [] for run_id in runs}
    for m in store.layer_measurements(system_id=system.id, method=Method.ISOLATED):
        if m.run_id in runs and m.op in ("primitive", "transform", "reference"):
            measured[m.run_id].append(m.measurement())
    return runs, measured


@dataclass(frozen=True)
class ProfileSpeed:
    """How fast the machine ran while a primitive system's configurations were timed: for each configuration that
    timed the machine-speed reference (:data:`SPEED_REFERENCE`), its label and the reference's median over its
    latest rounds (seconds; a configuration timed again for a slow reading has its new one). ``standard_s``, the
    median of those, is the machine's usual speed, the one :func:`load_primitive_dataset` levels to (None: no run
    timed the reference)."""

    readings_s: tuple[tuple[str, float], ...]

    @classmethod
    def of(cls, runs: Mapping[int, RunRecord], measured: Mapping[int, Sequence[LayerMeasurement]]) -> ProfileSpeed:
        return cls(tuple(_latest_readings(runs, measured).values()))

    @property
    def standard_s(self) -> float | None:
        return float(np.median([s for _, s in self.readings_s])) if self.readings_s else None

    def slow(self, factor: float = SLOW_FACTOR) -> tuple[tuple[str, float], ...]:
        """(label, reading over the standard) of each reading over ``factor`` times the standard, slowest first."""
        standard = self.standard_s
        found = [(label, s / standard) for label, s in self.readings_s if standard and s > factor * standard]
        return tuple(sorted(found, key=lambda item: -item[1]))


def _latest_readings(runs: Mapping[int, RunRecord],
                     measured: Mapping[int, Sequence[LayerMeasurement]]) -> dict[str, tuple[str, float]]:
    """For each configuration key whose runs timed the machine-speed reference, (label, the median of its latest
    run's rounds of it, seconds)."""
    found: dict[str, tuple[str, float]] = {}
    for run_id in sorted(measured):
        for m in measured[run_id]:
            if m.op == "reference":
                found[runs[run_id].network_hash] = (runs[run_id].model, m.timing.stats.median_s)
    return found


def profiling_durations(store: Store, system_id: int) -> dict[str, float | None]:
    """How long each configuration of primitive system ``system_id`` took to profile (s), by configuration key
    (:func:`config_key`; a configuration profiled in several runs sums them): the time its measurements span (an
    interleaved configuration's run is opened and closed when its rounds are stored, so the run's own start and end
    say nothing), or the run's duration where no measurement carries its window; None for an unfinished run."""
    runs, measured = _profiled(store, store.system(system_id))
    found: dict[str, float | None] = {}
    for run_id, run in runs.items():
        windows = [(m.timing.started_at, m.timing.ended_at) for m in measured[run_id] if m.timing.started_at > 0]
        if not run.finished_at:
            found.setdefault(run.network_hash, None)
            continue
        span = (max(end for _, end in windows) - min(start for start, _ in windows) if windows
                else run.finished_at - run.started_at)
        found[run.network_hash] = (found.get(run.network_hash) or 0.0) + span
    return found


def profile_speed(store: Store, system_id: int) -> ProfileSpeed:
    """The machine-speed readings of primitive system ``system_id``'s profile (see :class:`ProfileSpeed`)."""
    return ProfileSpeed.of(*_profiled(store, store.system(system_id)))


def paired_times(measurements: Sequence[LayerMeasurement], speed_standard_s: float | None = None) -> dict[str, float]:
    """The time (seconds) of each of one configuration's ``measurements``, by name.

    Measurements whose timings share one window of interleaved rounds (the same first and last Unix time: round
    ``r`` of each was taken in the same round) are paired: each is the reference's median
    (:data:`DATASET_REFERENCE`, else :data:`EARLIER_REFERENCE`, else the first of those with the most rounds) times
    the median of its per-round ratios to the reference. A workload that left the rounds early
    (``nnperf.campaign._ratio_rounds``) has the first rounds only, and is paired with the reference's first ones.
    The median of each alone would not keep their ratios: when the machine's speed changes during the rounds, each
    workload's median falls on either side of the change, depending on where the change fell in the round that
    straddles it. Any other measurement (timed alone) is its median.

    With ``speed_standard_s``, a window that holds the machine-speed reference (op 'reference') is levelled: the
    reference's median becomes ``speed_standard_s`` times its median per-round ratio to the machine-speed
    reference, its time at the speed where that one takes ``speed_standard_s`` seconds; the members' ratios to it
    are kept.
    """
    times = {m.layer: m.timing.stats.median_s for m in measurements}
    windows: dict[tuple[float, float], list[LayerMeasurement]] = {}
    for m in measurements:
        if m.timing.started_at > 0:
            windows.setdefault((m.timing.started_at, m.timing.ended_at), []).append(m)
    for members in windows.values():
        if len(members) < 2:
            continue
        by_name = {m.layer: m for m in members}
        speed = next((m for m in members if m.op == "reference"), None)
        reference = (by_name.get(DATASET_REFERENCE) or by_name.get(EARLIER_REFERENCE)
                     or max(members, key=lambda m: len(m.timing.times_s)))
        ref = reference.timing.times_s
        level_s = float(np.median(ref))
        if speed is not None and speed_standard_s is not None:
            level_s = speed_standard_s * float(np.median(_paired_ratios(ref, speed.timing.times_s)))
        for m in members:
            times[m.layer] = float(level_s * np.median(_paired_ratios(m.timing.times_s, ref)))
    return times


def _paired_ratios(times_s: Sequence[float], reference_s: Sequence[float]) -> np.ndarray:
    """The per-round ratios of ``times_s`` to ``reference_s`` over the rounds both took part in (the first)."""
    n = min(len(times_s), len(reference_s))
    return np.asarray(times_s[:n]) / np.asarray(reference_s[:n])


def _measure_config(campaign: Campaign, label: str, jobs: Sequence[_TimedJob],
                    failures: list[tuple[str, str, str]]) -> int:
    """Times the ``jobs`` that ``campaign`` does not hold yet, one after the other, storing each time as it is
    taken; returns how many (one that raises is noted in ``failures`` and skipped)."""
    return _store_outcomes(campaign, label, _timed_each(jobs, campaign.done), failures)
