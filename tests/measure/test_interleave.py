"""Interleaved, duet and sequential comparisons: per-round ratios hold when the machine's speed changes."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from fake_machine import FakeTimer, Machine
from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, OpType
from nnperf.measure import (
    ComparisonProtocol,
    CpuHog,
    HarnessConfig,
    MeasurementError,
    Rounds,
    RoundsConfig,
    backend_timer_factory,
    measure_duet,
    measure_interleaved,
    measure_sequential,
    parse_protocol,
)
from nnperf.measure.backends import BackendOptions, LoopTimer
from nnperf.measure.backends._fake import CostModel, FakeBackend

pytestmark = pytest.mark.serial  # times hogs and slowdowns: a test on the other core would move them


def test_a_slow_phase_moves_the_sequential_ratio_but_not_the_interleaved_one() -> None:
    # B costs 3x A; the machine halves its speed after 0.75 s of work, which falls between A's sequential
    # measurement (its 0.5 s warm-up, then some 30 ms of blocks) and B's (after B's own 0.5 s warm-up), so the
    # ratio of medians reads 6
    machine = Machine(slow_after_s=0.75)
    timers = {"a": FakeTimer(machine, 1e-3), "b": FakeTimer(machine, 3e-3)}
    harness = HarnessConfig(warmup_s=0.5, min_block_s=0.002)
    sequential = measure_sequential(timers, harness, clock=machine.clock)
    assert sequential.ratio("b", "a").median == pytest.approx(6.0)
    assert not sequential.ratio("b", "a").paired

    machine = Machine(slow_after_s=0.75)  # 40 rounds of two 20-24 ms blocks: the change comes mid-way
    timers = {"a": FakeTimer(machine, 1e-3), "b": FakeTimer(machine, 3e-3)}
    config = RoundsConfig(min_rounds=40, max_rounds=40, warmup_s=0.0, min_block_s=0.02, target_ci=0.0)
    rounds = measure_interleaved(timers, config, clock=machine.clock)
    assert rounds.rounds == 40
    assert min(rounds.times("a")) == pytest.approx(1e-3) and max(rounds.times("a")) == pytest.approx(2e-3)
    ratio = rounds.ratio("b", "a")
    # a round can straddle the change (its first side fast, its second slow): at most one such round
    assert ratio.median == pytest.approx(3.0)
    assert ratio.ci_low == pytest.approx(3.0) and ratio.ci_high == pytest.approx(3.0)
    assert ratio.paired and len(ratio.ratios) == 40


def test_rounds_stop_once_the_ratio_is_known() -> None:
    machine = Machine(slow_after_s=math.inf)
    timers = {"a": FakeTimer(machine, 1e-3), "b": FakeTimer(machine, 2e-3)}
    rounds = measure_interleaved(timers, RoundsConfig(min_rounds=7, max_rounds=50, warmup_s=0.0), clock=machine.clock)
    assert rounds.rounds == 7  # exact ratios: converged at the first check
    # blocks of 20 ms on an undisturbed machine, aiming 20% past: 24 ms / 1 ms and 24 ms / 2 ms
    assert rounds.block_sizes == (24, 12)
    assert rounds.timing("b").stats.median_s == pytest.approx(2e-3)


def test_the_bootstrap_interval_brackets_the_median_of_noisy_ratios() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(1.0, 0.05, 200)
    b = 2 * a * rng.normal(1.0, 0.01, 200)  # b tracks a round by round, 1% apart
    rounds = Rounds(ComparisonProtocol.INTERLEAVED, ("a", "b"), (tuple(a), tuple(b)), (1, 1), 1.0)
    ratio = rounds.ratio("b", "a")
    assert ratio.ci_low < ratio.median < ratio.ci_high
    assert ratio.median == pytest.approx(2.0, rel=0.005)
    assert ratio.ci_rel < 0.005  # 1% noise per round, 200 rounds
    assert ratio.iqr_rel == pytest.approx(2 * 0.6745 * 0.01, rel=0.25)  # IQR of a normal: 1.349 sigma


def test_bad_settings_and_names_are_refused_clearly() -> None:
    with pytest.raises(MeasurementError, match="min_rounds"):
        RoundsConfig(min_rounds=1)
    with pytest.raises(MeasurementError, match="budget_s"):
        RoundsConfig(budget_s=0)
    with pytest.raises(NnperfError, match="unknown comparison protocol .paired.; use one of sequential, interleaved, duet"):
        parse_protocol("paired")
    assert parse_protocol("duet") is ComparisonProtocol.DUET
    with pytest.raises(MeasurementError, match="two or more workloads"):
        measure_interleaved({"a": FakeTimer(Machine(1.0), 1e-3)})
    rounds = Rounds(ComparisonProtocol.INTERLEAVED, ("a", "b"), ((1.0,), (2.0,)), (1, 1), 1.0)
    with pytest.raises(NnperfError, match="no workload named 'c' was measured; measured: a, b"):
        rounds.ratio("c", "a")


SMALL = Layer("small", OpType.CONV, ("x",), ((1, 8, 16, 16),), (1, 8, 16, 16), ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))
LARGE = Layer("large", OpType.CONV, ("x",), ((1, 16, 16, 16),), (1, 16, 16, 16), ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a duet needs two CPUs")
def test_a_duet_times_both_sides_at_once_and_pairs_them() -> None:
    options = BackendOptions()
    config = RoundsConfig(min_rounds=5, max_rounds=5, warmup_s=0.0)
    rounds = measure_duet([("small", backend_timer_factory("fake", options, SMALL)),
                           ("large", backend_timer_factory("fake", options, LARGE))], config)
    assert rounds.protocol is ComparisonProtocol.DUET and rounds.rounds == 5
    fake = FakeBackend(model=CostModel())
    truth = fake.model.layer_cost_s(LARGE) / fake.model.layer_cost_s(SMALL)
    assert rounds.ratio("large", "small").median == pytest.approx(truth, rel=0.05)  # the fake's 2% noise


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a duet needs two CPUs")
def test_a_duet_side_that_cannot_start_is_named() -> None:
    options = BackendOptions()
    with pytest.raises(MeasurementError, match="duet side 'broken' failed: .*no-such-backend"):
        measure_duet([("small", backend_timer_factory("fake", options, SMALL)),
                      ("broken", backend_timer_factory("no-such-backend", options, SMALL))],
                     RoundsConfig(min_rounds=2, max_rounds=2, warmup_s=0.0))
    with pytest.raises(MeasurementError, match="exactly two"):
        measure_duet([("small", backend_timer_factory("fake", options, SMALL))])
    with pytest.raises(MeasurementError, match="this machine has no CPU 4096"):
        measure_duet([("a", backend_timer_factory("fake", options, SMALL)),
                      ("b", backend_timer_factory("fake", options, SMALL))], cpus=(0, 4096))


def _python_work(times: int) -> None:
    # pure Python runs in the calling thread (a BLAS call may run in a worker thread on another core)
    for _ in range(times):
        sum(range(2000))


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="the injector pins its hog to a CPU")
def test_a_hog_on_the_measured_core_slows_a_sequential_measurement_but_not_the_interleaved_ratio() -> None:
    cpu = max(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    timers = {"one": LoopTimer(lambda: _python_work(1)), "three": LoopTimer(lambda: _python_work(3))}
    harness = HarnessConfig(warmup_s=0.05, min_block_s=0.005, budget_s=0.5)
    # 50 ms blocks: a core shared with a hog gives this process half of it in slices of a few ms, and a block
    # that long averages many of them
    config = RoundsConfig(min_rounds=25, max_rounds=25, warmup_s=0.05, min_block_s=0.05)
    hog = CpuHog(cpus=(cpu,), max_s=120.0)
    tries = []
    os.sched_setaffinity(0, {cpu})
    try:
        # other work on a shared machine can land on this core too, for a while: up to three tries, each
        # judged whole (a protocol that let the hog through would fail all three by far: the sequential time
        # moves by 2x)
        for _ in range(3):
            quiet_s = measure_sequential({"one": timers["one"]}, harness).median_s("one")
            quiet = measure_interleaved(timers, config).ratio("three", "one").median
            with hog:
                hogged_s = measure_sequential({"one": timers["one"]}, harness).median_s("one")
                hogged = measure_interleaved(timers, config).ratio("three", "one").median
            tries.append((hogged_s / quiet_s, hogged / quiet))
            if hogged_s >= 1.3 * quiet_s and abs(hogged / quiet - 1) < 0.05:
                break
    finally:
        os.sched_setaffinity(0, before)
    slowdown, moved = tries[-1]
    assert slowdown >= 1.3, tries
    assert moved == pytest.approx(1.0, abs=0.05), tries
