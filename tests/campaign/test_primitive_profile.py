"""Profiling the primitive dataset into a real store: stored as measured, read back, resumed, budgeted."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from fake_machine import FakeTimer, Machine
from harness_presets import SMOKE_HARNESS
from nnperf.campaign import (
    DATASET_HARNESS,
    PRIMITIVE_BACKEND,
    SPEED_REFERENCE,
    PrimitiveOutcome,
    PrimitiveProfileReport,
    ProfileSpeed,
    export_primitive_dataset,
    import_primitive_dataset,
    load_primitive_dataset,
    primitive_system,
    primitive_systems,
    profile_primitives,
    profile_speed,
    profile_transforms,
    profiling_durations,
)
from nnperf.campaign._primitives import (
    DATASET_REFERENCE,
    EARLIER_REFERENCE,
    RETIMED,
    _config_campaign,
    _config_spread,
    _Job,
    _store_outcomes,
    _timed,
    dataset_rounds,
    paired_times,
)
from nnperf.errors import NnperfError
from nnperf.measure import ComparisonProtocol, HarnessConfig, LayerMeasurement, Method, RoundsConfig, fixed_timing
from nnperf.measure.backends._fake import FakeBackend
from nnperf.primitives import Bound, ConvConfig, Primitive, config_key, config_label, get_primitive, unread_outputs
from nnperf.store import Store

BLOCKED = str(get_primitive("ort-nchwc").input_layout)  # chw16c with AVX-512, chw8c with AVX2

THREE_BY_THREE = ConvConfig.make(1, 8, 16, 12, 3, 1, 1)
ONE_BY_ONE = ConvConfig.make(1, 8, 16, 12, 1)
TRANSFORMS = 12  # chw, hwc, hcw, chw16c: 4 x 4 pairs less the identities


def chosen() -> list[Primitive]:
    return [get_primitive(name) for name in ("direct", "im2col-fhw", "winograd-2x3")]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "primitives.db") as opened:
        yield opened


def profile(store: Store, configs: list[ConvConfig], primitives: list[Primitive] | None = None,
            **kwargs: Any) -> PrimitiveProfileReport:
    return profile_primitives(store, configs, harness=SMOKE_HARNESS,
                              primitives=chosen() if primitives is None else primitives, **kwargs)


def test_every_applicable_primitive_and_transformation_is_stored_and_read_back(store: Store) -> None:
    report = profile(store, [THREE_BY_THREE, ONE_BY_ONE, THREE_BY_THREE])
    assert (report.measured, report.reused, report.remaining, report.failures) == (2, 0, 0, ())
    # Winograd F(2,3) does not apply to the 1x1 layer; both read the same 8 x 12 x 12 activation, whose
    # transformations are timed once, with the first
    assert report.samples == 3 + 2 + TRANSFORMS
    runs = store.runs(system_id=report.system_id)
    assert [sum(m.op == "transform" for m in store.layer_measurements(run_id=r.id)) for r in runs] == [TRANSFORMS, 0]
    dataset = load_primitive_dataset(store, report.system_id)
    assert dataset.system_key == primitive_system().key
    assert dataset.primitives == ("direct", "im2col-fhw", "winograd-2x3")
    layouts = ("chw", "hwc", "hcw", BLOCKED)
    assert set(dataset.transforms) == {f"{a}->{b}" for a in layouts for b in layouts if a != b}
    assert len(dataset.transforms) == TRANSFORMS
    times = {s.config: s.times_s for s in dataset.conv}
    assert set(times) == {THREE_BY_THREE, ONE_BY_ONE} and set(times[ONE_BY_ONE]) == {"direct", "im2col-fhw"}
    assert all(0 < t < 1 for row in times.values() for t in row.values())
    assert len(dataset.layout) == 1  # both layers read the same 8 x 12 x 12 activation: one transformation row
    assert (dataset.layout[0].c, dataset.layout[0].im) == (8, (12, 12))
    assert [s.id for s in primitive_systems(store)] == [report.system_id]
    assert store.system(report.system_id).backend == PRIMITIVE_BACKEND


def test_profiled_configurations_are_read_back_not_measured_again(store: Store) -> None:
    profile(store, [THREE_BY_THREE])
    again = profile(store, [THREE_BY_THREE, ONE_BY_ONE])
    assert (again.measured, again.reused) == (1, 1)
    assert again.samples == 2  # its input's transformations were timed with the first


def test_a_store_read_from_a_dataset_file_is_not_profiled_again(store: Store, tmp_path: Path) -> None:
    # a file holds each activation's transformations once, with the first configuration that reads it
    first = profile(store, [THREE_BY_THREE, ONE_BY_ONE])
    export_primitive_dataset(store, first.system_id, tmp_path / "dataset.json")
    with Store(tmp_path / "imported.db") as imported:
        import_primitive_dataset(imported, tmp_path / "dataset.json")
        again = profile(imported, [THREE_BY_THREE, ONE_BY_ONE])
    assert (again.measured, again.reused, again.samples) == (0, 2, 0)


def test_a_profile_of_more_primitives_measures_only_the_new_ones(store: Store) -> None:
    profile(store, [THREE_BY_THREE], [get_primitive("direct")])
    more = profile(store, [THREE_BY_THREE])
    assert (more.measured, more.reused, more.samples) == (1, 0, 2)  # im2col-fhw and winograd-2x3; no transform
    dataset = load_primitive_dataset(store, more.system_id)
    assert len(dataset.conv) == 1 and set(dataset.conv[0].times_s) == {"direct", "im2col-fhw", "winograd-2x3"}
    assert profile(store, [THREE_BY_THREE]).reused == 1


def test_activations_profiled_for_their_transformations_alone_are_activations_not_configurations(
        store: Store) -> None:
    shapes = [(1, 8, (12, 12)), (1, 4, (6, 10))]
    report = profile_transforms(store, shapes, harness=SMOKE_HARNESS)
    assert (report.measured, report.samples, report.failures) == (2, 2 * TRANSFORMS, ())
    dataset = load_primitive_dataset(store, report.system_id)
    assert dataset.conv == () and dataset.primitives == ()
    assert sorted((t.batch, t.c, t.im) for t in dataset.layout) == sorted(shapes)
    assert all(len(t.times_s) == TRANSFORMS and all(0 < s < 1 for s in t.times_s.values()) for t in dataset.layout)
    assert profile_transforms(store, shapes, harness=SMOKE_HARNESS).reused == 2  # not measured again
    both = profile(store, [THREE_BY_THREE])  # reads the first activation, whose transformations are stored
    assert (both.measured, both.samples) == (1, 3)
    dataset = load_primitive_dataset(store, report.system_id)
    assert [s.config for s in dataset.conv] == [THREE_BY_THREE] and len(dataset.layout) == 2


def test_the_outputs_no_configuration_reads_are_the_ones_left_without_transformations() -> None:
    strided = ConvConfig.make(1, 16, 8, 12, 3, 2, 1)  # 16 x 12 x 12 -> 8 x 6 x 6, which nothing reads
    assert unread_outputs([THREE_BY_THREE, strided]) == [(1, 8, (6, 6))]  # 3x3's 16 x 12 x 12 is strided's input
    assert unread_outputs([THREE_BY_THREE]) == [(1, 16, (12, 12))]


def test_a_carrier_is_the_1x1_convolution_that_reads_its_activation() -> None:
    carrier = ConvConfig.carrier(2, 24, (7, 9))
    assert carrier == ConvConfig.make(2, 24, 24, (7, 9), 1)
    assert (carrier.input_shape(), carrier.output_shape()) == ((2, 24, 7, 9), (2, 24, 7, 9))


@dataclass(frozen=True)
class Interrupting(Primitive):
    """Pressing Ctrl-C while it is timed."""

    def prepare(self, w, b, config, threads=1) -> Bound:  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt


@dataclass(frozen=True)
class Refusing(Primitive):
    """A library that refuses the shape."""

    def prepare(self, w, b, config, threads=1) -> Bound:  # type: ignore[no-untyped-def]
        raise RuntimeError("this library does not like the shape\nsecond line")


def _stand_in(kind: type[Primitive], name: str) -> Primitive:
    direct = get_primitive("direct")
    return kind(name, direct.family, direct.input_layout, direct.output_layout, "test", "any")


@pytest.mark.parametrize("protocol", ["sequential", "interleaved"])
def test_an_interrupted_configuration_is_measured_again_as_a_whole(store: Store, protocol: str) -> None:
    """A configuration is one item of the campaign: stored in one transaction when it comes back, so one
    interrupted while it was measured had nothing stored and is measured again whole."""
    primitives = [*chosen(), _stand_in(Interrupting, "ctrl-c")]
    with pytest.raises(KeyboardInterrupt):
        profile(store, [THREE_BY_THREE], primitives, protocol=protocol)
    resumed = profile(store, [THREE_BY_THREE], protocol=protocol)
    assert (resumed.measured, resumed.samples) == (1, 3 + TRANSFORMS)  # nothing of it had been stored
    assert len(load_primitive_dataset(store, resumed.system_id).conv[0].times_s) == 3


def test_a_primitive_that_fails_is_reported_and_the_rest_is_measured(store: Store) -> None:
    report = profile(store, [ONE_BY_ONE], [*chosen(), _stand_in(Refusing, "refuses")])
    assert report.failures == (("refuses", "c8 f16 12x12 k1x1 s1 p0", "this library does not like the shape"),)
    assert report.samples == 2 + TRANSFORMS


def test_the_budget_stops_between_configurations_and_the_next_call_goes_on(store: Store) -> None:
    first = profile(store, [THREE_BY_THREE, ONE_BY_ONE], budget_s=1e-9)
    assert (first.measured, first.remaining) == (0, 2)
    rest = profile(store, [THREE_BY_THREE, ONE_BY_ONE])
    assert (rest.measured, rest.remaining) == (2, 0)
    with pytest.raises(NnperfError, match="budget must be positive"):
        profile(store, [ONE_BY_ONE], budget_s=0)


def test_a_system_without_primitives_has_no_dataset(store: Store) -> None:
    other = store.add_system(FakeBackend().system())
    with pytest.raises(NnperfError, match="holds no profiled primitives"):
        load_primitive_dataset(store, other.id)


# ------------------------------------------------------------ interleaved rounds against a drifting machine


COSTS_S = {DATASET_REFERENCE: 1e-3, "im2col-fhw": 3e-3, "fft": 0.5e-3}
"""The reference (torch's conv2d on chw) first; 3x and 0.5x the reference."""

TEN_ROUNDS = HarnessConfig(warmup_s=0.0, warmup_runs=1, min_block_s=2e-3, target_ci=0.0, min_samples=10,
                           max_samples=10, budget_s=1e9)
"""Exactly ten blocks (sequential) or rounds (interleaved) of at least 2 ms, whatever the clock says."""


def fake_jobs(machine: Machine, fail: str = "") -> list[_Job]:
    return [_Job(name, "primitive", "test", functools.partial(FakeTimer, machine, cost, 3 if name == fail else 0))
            for name, cost in COSTS_S.items()]


def timed_on(machine: Machine, protocol: ComparisonProtocol, fail: str = "") -> dict[str, PrimitiveOutcome]:
    outcomes = _timed(fake_jobs(machine, fail), (), protocol, TEN_ROUNDS, clock=machine.clock)
    return {o.name: o for o in outcomes}


def stored_ratios(store: Store, protocol: ComparisonProtocol) -> dict[str, float]:
    """Each primitive's dataset time over the reference's, after timing on a machine that halves its speed
    halfway through (half the fake time the same protocol takes on a steady machine)."""
    steady = Machine()
    timed_on(steady, protocol)
    outcomes = timed_on(Machine(slow_after_s=steady.now_s / 2), protocol).values()
    with _config_campaign(store, primitive_system(), THREE_BY_THREE, 1, TEN_ROUNDS, protocol) as campaign:
        _store_outcomes(campaign, "fake", outcomes, [], together=True)
    times = load_primitive_dataset(store, store.runs()[-1].system_id).conv[0].times_s
    return {name: t / times[DATASET_REFERENCE] for name, t in times.items()}


def test_interleaved_rounds_keep_the_ratios_exact_when_the_machine_halves_its_speed(store: Store) -> None:
    assert stored_ratios(store, ComparisonProtocol.INTERLEAVED) == {
        DATASET_REFERENCE: 1.0, "im2col-fhw": pytest.approx(3e-3 / 1e-3, rel=1e-12),
        "fft": pytest.approx(0.5e-3 / 1e-3, rel=1e-12)}


def test_sequential_timing_puts_the_slowdown_into_the_ratios(store: Store) -> None:
    # the reference is measured before the change, fft after it (twice as slow), im2col-fhw across it (7 of its 10
    # blocks after it: its median is a slow one)
    assert stored_ratios(store, ComparisonProtocol.SEQUENTIAL) == {
        DATASET_REFERENCE: 1.0, "im2col-fhw": pytest.approx(2 * 3e-3 / 1e-3, rel=1e-12),
        "fft": pytest.approx(2 * 0.5e-3 / 1e-3, rel=1e-12)}


def test_the_round_medians_alone_would_not_keep_the_ratios() -> None:
    # ten rounds on a machine that halves its speed during round 5, after the reference's block and before
    # im2col-fhw's: each median is the mean of the 5th and 6th fastest rounds, 2 ms for the reference (four fast
    # rounds) and (3 + 6) / 2 ms for im2col-fhw (five), yet im2col-fhw took 3x the reference in all but round 5
    ref_ms = [1.0] * 4 + [2.0] * 6
    im2col_ms = [3.0] * 5 + [6.0] * 5
    window = {"started_at": 1e9, "ended_at": 1e9 + 1}
    measurements = [LayerMeasurement(name, "primitive", Method.ISOLATED,
                                     replace(fixed_timing([t / 1e3 for t in ms]), **window))
                    for name, ms in ((DATASET_REFERENCE, ref_ms), ("im2col-fhw", im2col_ms))]
    medians = {m.layer: m.timing.stats.median_s for m in measurements}
    assert medians["im2col-fhw"] / medians[DATASET_REFERENCE] == pytest.approx((3 + 6) / 2 / 2)
    paired = paired_times(measurements)
    assert paired == {DATASET_REFERENCE: pytest.approx(2e-3), "im2col-fhw": pytest.approx(3 * 2e-3)}
    # timed apart (different windows), each keeps its own median
    apart = [replace(measurements[1], timing=replace(measurements[1].timing, started_at=2e9)), measurements[0]]
    assert paired_times(apart) == medians


def test_rounds_timed_before_torch_conv2d_keep_onednn_as_their_reference() -> None:
    # the same rounds as above, stored with oneDNN on chw (the reference then) after im2col-fhw: oneDNN is still the
    # reference, not the first one stored (which would give im2col-fhw its median, 4.5 ms, and oneDNN a third of it)
    assert DATASET_REFERENCE == "torch-conv2d" and EARLIER_REFERENCE == "onednn-chw"
    window = {"started_at": 1e9, "ended_at": 1e9 + 1}
    measurements = [LayerMeasurement(name, "primitive", Method.ISOLATED,
                                     replace(fixed_timing([t / 1e3 for t in ms]), **window))
                    for name, ms in (("im2col-fhw", [3.0] * 5 + [6.0] * 5), (EARLIER_REFERENCE, [1.0] * 4 + [2.0] * 6))]
    assert paired_times(measurements) == {EARLIER_REFERENCE: pytest.approx(2e-3), "im2col-fhw": pytest.approx(6e-3)}
    # with torch-conv2d in the rounds, it is the reference
    newer = [*measurements, replace(measurements[1], layer=DATASET_REFERENCE,
                                    timing=replace(fixed_timing([t / 2e3 for t in [1.0] * 4 + [2.0] * 6]), **window))]
    assert paired_times(newer) == {DATASET_REFERENCE: pytest.approx(1e-3), EARLIER_REFERENCE: pytest.approx(2e-3),
                                   "im2col-fhw": pytest.approx(6e-3)}


def test_the_rounds_keep_block_sizes_and_report_their_spread() -> None:
    outcomes = timed_on(Machine(), ComparisonProtocol.INTERLEAVED)
    assert [o.ratio_iqr_rel for o in outcomes.values()][1:] == [0.0, 0.0]  # a steady machine: the same every round
    # a stored timing keeps its block size (the harness aims 20% past 2 ms: 2.4 ms / 1 ms, 2.4 ms / 0.5 ms)
    assert {name: o.timing.block_size for name, o in outcomes.items() if o.timing is not None} == {
        DATASET_REFERENCE: math.ceil(2.4 / 1), "im2col-fhw": 1, "fft": math.ceil(2.4 / 0.5)}


def test_a_workload_that_fails_during_the_rounds_is_reported_and_the_others_are_timed_again() -> None:
    outcomes = timed_on(Machine(), ComparisonProtocol.INTERLEAVED, fail="fft")
    assert (outcomes["fft"].timing, outcomes["fft"].error) == (None, "refused on this block")
    assert [len(o.timing.times_s) for o in outcomes.values() if o.timing is not None] == [10, 10]
    assert outcomes["im2col-fhw"].timing.stats.median_s == pytest.approx(3e-3)  # type: ignore[union-attr]


def test_a_single_workload_is_measured_alone() -> None:
    machine = Machine()
    jobs = fake_jobs(machine)[:1]
    (outcome,) = _timed(jobs, (), ComparisonProtocol.INTERLEAVED, TEN_ROUNDS, clock=machine.clock)
    assert outcome.timing is not None and outcome.timing.stop_reason == "converged"
    assert outcome.timing.stats.median_s == pytest.approx(1e-3)


def test_the_rounds_come_from_the_harness_with_its_budget_per_workload() -> None:
    assert dataset_rounds(DATASET_HARNESS, 20, seed=3) == RoundsConfig(
        min_rounds=5, max_rounds=25, min_block_s=0.002, warmup_s=0.02, target_ci=0.02, budget_s=20 * 0.4, seed=3)


def test_an_interleaved_profile_stores_one_window_of_rounds_and_reports_its_spread(store: Store) -> None:
    report = profile(store, [ONE_BY_ONE])
    (label, spread), = report.ratio_spreads
    assert label == "c8 f16 12x12 k1x1 s1 p0" and 0 <= spread < 1
    (run,) = store.runs(system_id=report.system_id)
    assert run.config["protocol"] == "interleaved"
    stored = store.layer_measurements(run_id=run.id)
    # the two primitives, the transformations and the machine-speed reference: one window (a workload that left the
    # rounds early has fewer of them)
    windows = {(m.timing.started_at, m.timing.ended_at) for m in stored}
    assert len(windows) == 1
    assert [m.op for m in stored if m.layer == SPEED_REFERENCE] == ["reference"]
    assert report.speed_readings_s == ((label, pytest.approx(profile_speed(store, report.system_id).standard_s)),)
    assert profile(store, [ONE_BY_ONE], protocol="sequential").reused == 1
    with pytest.raises(NnperfError, match="'duet' compares two workloads"):
        profile(store, [ONE_BY_ONE], protocol="duet")


# ------------------------------------------------------------ the machine-speed reference in the rounds


SPEED_COST_S = 0.2e-3
"""The fake machine-speed reference: a fifth of the fake reference primitive."""


def speed_job(machine: Machine) -> _Job:
    return _Job(SPEED_REFERENCE, "reference", "reference", functools.partial(FakeTimer, machine, SPEED_COST_S))


def store_timed(store: Store, config: ConvConfig, machine: Machine) -> None:
    """``config``'s fake primitives and the machine-speed reference timed in interleaved rounds on ``machine``,
    stored as a profile stores them."""
    outcomes = _timed(fake_jobs(machine), (), ComparisonProtocol.INTERLEAVED, TEN_ROUNDS, clock=machine.clock,
                      speed_reference=speed_job(machine))
    assert [o.name for o in outcomes] == [*COSTS_S, SPEED_REFERENCE]
    with _config_campaign(store, primitive_system(), config, 1, TEN_ROUNDS, ComparisonProtocol.INTERLEAVED) as c:
        _store_outcomes(c, str(config), outcomes, [], together=True)


def test_a_configuration_timed_in_a_slow_window_is_levelled_to_the_machine_s_usual_speed(store: Store) -> None:
    # two configurations timed on a steady machine, one on a machine twice as slow all through its rounds
    slow_one = ConvConfig.make(1, 4, 4, 6, 3, 1, 1)
    for config, machine in ((THREE_BY_THREE, Machine()), (ONE_BY_ONE, Machine()), (slow_one, Machine(0.0))):
        store_timed(store, config, machine)
    system_id = store.runs()[-1].system_id
    speed = profile_speed(store, system_id)
    assert speed.standard_s == pytest.approx(SPEED_COST_S)  # the median of 0.2, 0.2 and 0.4 ms
    assert speed.slow() == ((config_label(slow_one), pytest.approx(2.0)),)
    assert speed.slow(2.5) == ()
    levelled = {s.config: s.times_s for s in load_primitive_dataset(store, system_id).conv}
    as_timed = {s.config: s.times_s for s in load_primitive_dataset(store, system_id, level=False).conv}
    for config in (THREE_BY_THREE, ONE_BY_ONE, slow_one):  # every configuration at the steady machine's speed
        assert levelled[config] == {name: pytest.approx(cost, rel=1e-9) for name, cost in COSTS_S.items()}
    assert as_timed[slow_one] == {name: pytest.approx(2 * cost, rel=1e-9) for name, cost in COSTS_S.items()}
    assert SPEED_REFERENCE not in {name for row in levelled.values() for name in row}


def test_levelling_keeps_a_configuration_s_ratios_when_the_machine_slows_during_its_rounds(store: Store) -> None:
    # the machine halves its speed halfway through the rounds: the ratios stay exact, and the level is the
    # reference primitive's per-round ratio to the machine-speed reference (5x) at the usual 0.2 ms
    steady = Machine()
    _timed(fake_jobs(steady), (), ComparisonProtocol.INTERLEAVED, TEN_ROUNDS, clock=steady.clock,
           speed_reference=speed_job(steady))
    store_timed(store, THREE_BY_THREE, Machine(slow_after_s=steady.now_s / 2))
    store_timed(store, ONE_BY_ONE, Machine())  # two steady configurations: the usual speed is the steady one
    store_timed(store, ConvConfig.make(1, 4, 4, 6, 3, 1, 1), Machine())
    times = load_primitive_dataset(store, store.runs()[-1].system_id).conv
    assert all(s.times_s == {name: pytest.approx(cost, rel=1e-9) for name, cost in COSTS_S.items()} for s in times)


def test_the_machine_speed_reference_is_timed_only_beside_something_and_left_out_of_the_spread() -> None:
    machine = Machine()
    jobs = fake_jobs(machine)
    done = [job.name for job in jobs]
    assert _timed(jobs, done, ComparisonProtocol.INTERLEAVED, TEN_ROUNDS, clock=machine.clock,
                  speed_reference=speed_job(machine)) == ()
    # one primitive left: timed in rounds with the machine-speed reference, not alone
    first, reference = _timed(jobs, done[1:], ComparisonProtocol.INTERLEAVED, TEN_ROUNDS, clock=machine.clock,
                              speed_reference=speed_job(machine))
    assert (first.name, reference.name) == (DATASET_REFERENCE, SPEED_REFERENCE)
    assert first.timing is not None and len(first.timing.times_s) == 10
    assert _config_spread([replace(first, ratio_iqr_rel=0.1), replace(reference, ratio_iqr_rel=0.9)]) == 0.1
    # sequential timing has no rounds to put it in
    sequential = _timed(jobs, (), ComparisonProtocol.SEQUENTIAL, TEN_ROUNDS, clock=machine.clock,
                        speed_reference=speed_job(machine))
    assert [o.name for o in sequential] == list(COSTS_S)


def test_a_profile_without_the_machine_speed_reference_is_read_as_timed(store: Store) -> None:
    report = profile(store, [ONE_BY_ONE], speed_reference=False)
    assert report.speed_readings_s == ()
    assert SPEED_REFERENCE not in {m.layer for m in store.layer_measurements(system_id=report.system_id)}
    assert profile_speed(store, report.system_id) == ProfileSpeed(())
    assert ProfileSpeed(()).standard_s is None and ProfileSpeed(()).slow() == ()
    assert load_primitive_dataset(store, report.system_id) == load_primitive_dataset(store, report.system_id, False)


def test_a_configuration_s_profiling_time_is_the_span_of_its_rounds(store: Store) -> None:
    report = profile(store, [THREE_BY_THREE, ONE_BY_ONE])
    durations = profiling_durations(store, report.system_id)
    assert set(durations) == {config_key(THREE_BY_THREE), config_key(ONE_BY_ONE)}
    for run in store.runs(system_id=report.system_id):  # one window of rounds per configuration: its span
        (started, ended), = {(m.timing.started_at, m.timing.ended_at) for m in store.layer_measurements(run_id=run.id)}
        assert durations[run.network_hash] == pytest.approx(ended - started) and 0 < ended - started < report.elapsed_s
    # a configuration measured again in a second run adds its span; an unfinished one has none
    more = profile(store, [THREE_BY_THREE], [get_primitive("fft")])
    assert more.measured == 1
    key = config_key(THREE_BY_THREE)
    assert profiling_durations(store, report.system_id)[key] > durations[key]
    run = store.start_run(report.system_id, "primitives|0123", "c1", "0123", "isolated", {})
    assert profiling_durations(store, report.system_id)[run.network_hash] is None


# ------------------------------------------------------------ configurations timed again for a slow reading


def test_a_configuration_timed_again_is_read_from_its_new_rounds_and_the_slow_ones_stay_stored(store: Store) -> None:
    slow_one = ConvConfig.make(1, 4, 4, 6, 3, 1, 1)
    for config, machine in ((THREE_BY_THREE, Machine()), (ONE_BY_ONE, Machine()), (slow_one, Machine(0.0))):
        store_timed(store, config, machine)
    system_id = store.runs()[-1].system_id
    assert [label for label, _ in profile_speed(store, system_id).slow()] == [config_label(slow_one)]
    # timed again on the steady machine: that is its reading and its times, as timed
    machine = Machine()
    outcomes = _timed(fake_jobs(machine), (), ComparisonProtocol.INTERLEAVED, TEN_ROUNDS, clock=machine.clock,
                      speed_reference=speed_job(machine))
    with _config_campaign(store, primitive_system(), slow_one, 1, TEN_ROUNDS, ComparisonProtocol.INTERLEAVED,
                          retimed=True) as campaign:
        _store_outcomes(campaign, config_label(slow_one), outcomes, [], together=True)
    assert store.runs()[-1].campaign.endswith(RETIMED)
    speed = profile_speed(store, system_id)
    assert dict(speed.readings_s)[config_label(slow_one)] == pytest.approx(SPEED_COST_S)
    assert speed.slow() == ()
    as_timed = {s.config: s.times_s for s in load_primitive_dataset(store, system_id, level=False).conv}
    assert as_timed[slow_one] == {name: pytest.approx(cost, rel=1e-9) for name, cost in COSTS_S.items()}
    # nothing measured is lost: both runs' rounds are in the store
    assert sum(m.layer == SPEED_REFERENCE for m in store.layer_measurements(system_id=system_id)) == 4


def test_a_profile_times_again_the_configurations_read_slow_and_the_dataset_reads_them_anew(store: Store) -> None:
    configs = [THREE_BY_THREE, ONE_BY_ONE, ConvConfig.make(1, 4, 4, 6, 3, 1, 1)]
    first = profile(store, configs)
    readings = dict(first.speed_readings_s)
    slowest = max(readings, key=readings.__getitem__)
    before = load_primitive_dataset(store, first.system_id, level=False)
    # over 1x the median: the one configuration (of three) above the middle reading is timed again, as a whole
    again = profile(store, configs, retime_over=1.0)
    assert (again.measured, again.reused, again.retimed) == (0, 3, (slowest,))
    assert again.samples == sum(len(s.times_s) for s in before.conv if config_label(s.config) == slowest) + TRANSFORMS
    (run,) = [r for r in store.runs(system_id=first.system_id) if r.campaign.endswith(RETIMED)]
    assert run.model == slowest and dict(again.speed_readings_s)[slowest] != readings[slowest]
    dataset = load_primitive_dataset(store, first.system_id, False)
    after = {config_label(s.config): s.times_s for s in dataset.conv}
    fresh = paired_times([m.measurement() for m in store.layer_measurements(run_id=run.id)])
    assert after[slowest] == {name: fresh[name] for name in after[slowest]}
    (retimed,) = [s.config for s in dataset.conv if config_label(s.config) == slowest]
    (layout,) = [t.times_s for t in dataset.layout if (t.batch, t.c, t.im) == (retimed.batch, retimed.c, retimed.im)]
    assert len(layout) == TRANSFORMS and layout == {name: fresh[name] for name in layout}
    assert all(after[config_label(s.config)] == s.times_s for s in before.conv if config_label(s.config) != slowest)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"retime_over": 0.5}, "a factor of at least 1"),
    ({"retime_over": 1.5, "protocol": "sequential"}, "only the interleaved protocol times"),
    ({"retime_over": 1.5, "speed_reference": False}, "only the interleaved protocol times")])
def test_timing_slow_configurations_again_needs_their_readings(store: Store, kwargs: dict, message: str) -> None:
    with pytest.raises(NnperfError, match=message):
        profile(store, [ONE_BY_ONE], **kwargs)
    assert store.runs() == []
