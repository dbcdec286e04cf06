"""Rounds in which each workload leaves once its ratio to the reference is known (``nnperf.campaign._ratio_rounds``),
slow workloads calibrated from their first call, operands made once per configuration, and what a profile under
them stores and reads back."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from fake_machine import Machine
from harness_presets import SMOKE_HARNESS
from nnperf.campaign import (
    DATASET_STOPPING,
    RatioStopping,
    load_primitive_dataset,
    measure_ratio_rounds,
    profile_primitives,
    ratio_standard_error,
)
from nnperf.campaign._primitives import DATASET_REFERENCE, _jobs, paired_times
from nnperf.campaign._ratio_rounds import JUDGED_CALLS, warm_block
from nnperf.errors import NnperfError
from nnperf.measure import HarnessConfig, LayerMeasurement, Method, RoundsConfig, fixed_timing
from nnperf.primitives import Bound, ConvConfig, Primitive, get_primitive
from nnperf.store import Store

UP, DOWN = 1.5, 1 / 1.5
"""A disturbed round: the workload's call took 1.5x (or 1/1.5x) its usual time."""

NOISY = tuple(math.exp(v) for v in (0.3, -0.3, 0.15, -0.15, 0.0) * 3)
"""A workload whose log ratio moves by 0.15 to 0.3 in four rounds of five: half its deviations from the median are
0.15 or more, whatever the number of rounds."""


@dataclass
class ScriptedTimer:
    """A workload of ``cost_s`` per call on ``machine`` whose k-th timed block after the first two (the warm-up's
    calls, when there is no warm-up time) takes ``factors[k]`` times as long (1 once the script ends)."""

    machine: Machine
    cost_s: float
    factors: tuple[float, ...] = ()
    blocks: list[int] = field(default_factory=list)

    def time_block(self, n: int) -> float:
        k = len(self.blocks) - JUDGED_CALLS
        self.blocks.append(n)
        factor = self.factors[k] if 0 <= k < len(self.factors) else 1.0
        return self.machine.run(self.cost_s * factor, n)


ROUNDS = RoundsConfig(min_rounds=5, max_rounds=12, min_block_s=1e-4, warmup_s=0.0, target_ci=0.02, budget_s=1e9)
"""Five to twelve rounds; every fake call (1 ms or more) already lasts a block."""


def rounds_of(factors: dict[str, tuple[float, ...]], config: RoundsConfig = ROUNDS,
              stopping: RatioStopping = DATASET_STOPPING) -> dict[str, tuple[int, str, float]]:
    """Each workload's (rounds, why it left, standard error) when the reference (1 ms a call, steady) and workloads
    of 2 ms a call disturbed by ``factors`` are timed together."""
    machine = Machine()
    timers = {DATASET_REFERENCE: ScriptedTimer(machine, 1e-3)}
    timers.update((name, ScriptedTimer(machine, 2e-3, script)) for name, script in factors.items())
    measured = measure_ratio_rounds(timers, config, stopping, clock=machine.clock)
    return {name: (len(times), reason, se) for name, times, reason, se in
            zip(measured.names, measured.times_s, measured.stop_reasons, measured.standard_errors)}


def test_the_standard_error_of_a_median_ratio_comes_from_the_median_absolute_deviation_of_its_logarithms() -> None:
    # log ratios 0, +-0.01, +-0.02: deviations from the median 0, 0.01, 0.01, 0.02, 0.02, whose median is 0.01;
    # sqrt(pi / 2) * 1.4826 * 0.01 / sqrt(5) = 0.0083098
    ratios = [2 * math.exp(d) for d in (0.0, 0.01, -0.01, 0.02, -0.02)]
    assert ratio_standard_error(ratios) == pytest.approx(0.0083098, rel=1e-4)
    assert ratio_standard_error([3.0] * 5) == 0.0
    assert ratio_standard_error([3.0]) == math.inf


def test_a_steady_ratio_leaves_at_the_fewest_rounds_and_a_noisy_one_stays_to_the_most() -> None:
    found = rounds_of({"steady": (), "noisy": NOISY})
    assert found["steady"] == (5, "converged", 0.0)
    # twelve rounds: log ratios 0.3, -0.3, 0.15, -0.15, 0 and again; median 0; deviations 0 (2), 0.15 (4) and 0.3
    # (6), whose median is (0.15 + 0.3) / 2 = 0.225: sqrt(pi / 2) * 1.4826 * 0.225 / sqrt(12) = 0.1207
    assert found["noisy"] == (12, "max_samples", pytest.approx(0.1207, rel=1e-3))
    assert found[DATASET_REFERENCE][:2] == (12, "max_samples")  # the reference stays as long as anyone


def test_a_ratio_leaves_as_soon_as_most_of_its_rounds_agree() -> None:
    # two disturbed rounds of five: three deviations of 0, the median one is 0 (left at the fifth round); three
    # disturbed rounds: 0.405 in the fifth and the sixth round (half the deviations are), 0 in the seventh
    found = rounds_of({"two": (UP, DOWN), "three": (UP, DOWN, UP)})
    assert found["two"] == (5, "converged", 0.0)
    assert found["three"] == (7, "converged", 0.0)
    assert found[DATASET_REFERENCE][:2] == (7, "converged")  # the rounds end when the last one leaves


def test_the_target_decides_how_disturbed_a_ratio_may_stay() -> None:
    # rounds of 1.02, 1/1.02 and 1 over and again: median 0, two deviations in three d = log 1.02 = 0.0198, so the
    # error is sqrt(pi / 2) * 1.4826 * d / sqrt(n) = 0.0368 / sqrt(n): 1.6% at five rounds (a 2% target leaves there),
    # over 1% until n = 14 (a 1% one stays the twelve rounds, at 1.06%)
    wobble = (1.02, 1 / 1.02, 1.0) * 4
    assert rounds_of({"w": wobble}, stopping=RatioStopping(0.02))["w"] == (5, "converged", pytest.approx(0.01645,
                                                                                                         rel=1e-3))
    assert rounds_of({"w": wobble}, stopping=RatioStopping(0.01))["w"] == (12, "max_samples", pytest.approx(0.010622,
                                                                                                            rel=1e-3))


def test_the_budget_ends_every_workload_s_rounds() -> None:
    # each round takes about 5 ms of fake time: a budget of 10 ms is spent in the second round, yet the rounds go on
    # to the fewest (as the earlier rule's did); then the steady one leaves, and the others stop for the budget
    found = rounds_of({"steady": (), "noisy": NOISY}, replace(ROUNDS, budget_s=0.01))
    assert {name: value[:2] for name, value in found.items()} == {
        DATASET_REFERENCE: (5, "budget"), "steady": (5, "converged"), "noisy": (5, "budget")}
    with pytest.raises(NnperfError, match="positive fraction"):
        RatioStopping(0.0)


def test_a_slow_workload_is_calibrated_from_its_first_call_and_a_fast_one_as_before() -> None:
    harness = HarnessConfig(warmup_s=0.0, min_block_s=2e-3)
    machine = Machine()
    slow, fast = ScriptedTimer(machine, 3e-3), ScriptedTimer(machine, 0.5e-3)
    assert warm_block(slow, harness, machine.clock) == 1
    assert slow.blocks == [1, 1]  # two calls, each 1.5 blocks long: no calibration, no estimates
    # a fast one: two calls, the calibration (1 call, then 2.4 / 0.5 = 5) and three estimates of 5 calls; the block
    # aims 20% past 2 ms: 5 calls
    assert warm_block(fast, harness, machine.clock) == 5
    assert fast.blocks == [1, 1, 1, 5, 5, 5, 5]
    # a call that lasts the block but not 20% past it is calibrated (the estimates say 2 calls per block)
    borderline = ScriptedTimer(machine, 2.1e-3)
    assert warm_block(borderline, harness, machine.clock) == 2 and borderline.blocks == [1] * 6
    # a fast workload whose first call waited 5 ms for the core is judged by its second
    waited = ScriptedTimer(machine, 0.5e-3)
    waited.time_block = _first_call_waits(waited, 5e-3)  # type: ignore[method-assign]
    assert warm_block(waited, harness, machine.clock) == 5


def _first_call_waits(timer: ScriptedTimer, wait_s: float):  # type: ignore[no-untyped-def]
    """``timer``'s blocks, the first one ``wait_s`` longer (the core was busy with another process)."""
    plain = timer.time_block

    def time_block(n: int) -> float:
        return plain(n) + (wait_s if len(timer.blocks) == 1 else 0.0)

    return time_block


def test_a_warm_up_says_how_slow_a_workload_is() -> None:
    harness = HarnessConfig(warmup_s=0.02, min_block_s=2e-3)
    machine = Machine()
    # a 30 ms call lasts the whole 20 ms warm-up: it and one more are all it runs before the rounds
    slow = ScriptedTimer(machine, 30e-3)
    assert warm_block(slow, harness, machine.clock) == 1 and slow.blocks == [1, 1]
    # 6 ms calls: four warm-up calls (at 0, 6, 12 and 18 ms), the last of them 3 blocks long
    medium = ScriptedTimer(machine, 6e-3)
    assert warm_block(medium, harness, machine.clock) == 1 and medium.blocks == [1] * 4
    # 0.7 ms calls: 29 warm-up calls (20.3 ms), then the calibration (1 call, then ceil(2.4 / 0.7) = 4) and three
    # estimates of 4
    fast = ScriptedTimer(machine, 0.7e-3)
    assert warm_block(fast, harness, machine.clock) == 4 and fast.blocks == [1] * 30 + [4] * 4


def test_a_workload_that_left_early_is_paired_with_the_reference_s_first_rounds() -> None:
    # the reference takes 1 ms in five rounds, then 2 ms (the machine slowed down); the workload left after the
    # fifth, at 3 ms: its ratio is 3, its time 3 x the reference's median, 1.5 ms (its own median, 3 ms, would not
    # keep the ratio)
    window = {"started_at": 1e9, "ended_at": 1e9 + 1}
    measurements = [LayerMeasurement(name, "primitive", Method.ISOLATED,
                                     replace(fixed_timing([t / 1e3 for t in ms]), **window))
                    for name, ms in ((DATASET_REFERENCE, [1.0] * 5 + [2.0] * 5), ("im2col-fhw", [3.0] * 5))]
    assert paired_times(measurements) == {DATASET_REFERENCE: pytest.approx(1.5e-3), "im2col-fhw": pytest.approx(4.5e-3)}


# ------------------------------------------------------------ operands made once per configuration


@dataclass(frozen=True)
class Recording(Primitive):
    """A primitive that notes the tensors it was prepared with (and computes nothing worth timing)."""

    seen: list[tuple[object, object]] = field(default_factory=list, compare=False, hash=False)

    def prepare(self, w, b, config, threads=1) -> Bound:  # type: ignore[no-untyped-def]
        self.seen.append((w, b))
        return lambda x: x


def recording(name: str) -> Recording:
    direct = get_primitive("direct")
    return Recording(name, direct.family, direct.input_layout, direct.output_layout, "test", "any")


def test_a_configuration_s_operands_are_made_once_and_each_primitive_gets_its_own_copy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[ConvConfig] = []
    original = ConvConfig.random_operands

    def counted(self: ConvConfig, seed: int = 0):  # type: ignore[no-untyped-def]
        made.append(self)
        return original(self, seed)

    monkeypatch.setattr(ConvConfig, "random_operands", counted)
    config = ConvConfig.make(1, 4, 6, 8, 3, 1, 1)
    primitives = [recording(name) for name in ("a", "b", "c")]
    jobs = [job for job in _jobs(config, primitives, 1) if job.op == "primitive"]
    assert made == []  # nothing is made before a primitive is prepared
    for job in jobs:
        job.timer()
    assert made == [config]  # three primitives prepared, the operands made once
    weights = [p.seen[0][0] for p in primitives]
    assert len({id(w) for w in weights}) == 3  # a copy each
    assert all(w.equal(weights[0]) for w in weights) and weights[0].shape == (6, 4, 3, 3)
    assert weights[0].equal(original(config, 0)[1])  # the seed's weights, as each primitive made them before


# ------------------------------------------------------------ what a profile stores, and stores compatibly


CONFIG = ConvConfig.make(1, 8, 16, 12, 1)


def test_a_configuration_s_run_records_its_rounds_and_the_standard_errors_its_ratios_reached(tmp_path: Path) -> None:
    primitives = [get_primitive(name) for name in ("direct", "im2col-fhw")]
    with Store(tmp_path / "p.db") as store:
        report = profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS, primitives=primitives)
        (run,) = store.runs(system_id=report.system_id)
        stored = {m.layer: m.timing for m in store.layer_measurements(run_id=run.id)}
        # without torch-conv2d the reference is the first primitive, direct; its rounds are the configuration's
        assert run.config["stopping"] == {"target_se": DATASET_STOPPING.target_se}
        assert run.config["rounds"] == len(stored["direct"].times_s) == max(len(t.times_s) for t in stored.values())
        assert set(run.config["ratio_se"]) == set(stored) - {"direct"}
        assert all(len(t.times_s) >= SMOKE_HARNESS.min_samples for t in stored.values())
        for name, timing in stored.items():  # a workload that left converged reached the target
            if name != "direct" and timing.stop_reason == "converged":
                assert run.config["ratio_se"][name] <= DATASET_STOPPING.target_se
        assert profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS, primitives=primitives).reused == 1


def test_a_store_profiled_under_the_earlier_rule_loads_and_grows_under_the_new_one(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as store:
        before = profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS, primitives=[get_primitive("direct")],
                                    stopping=None)
        (run,) = store.runs(system_id=before.system_id)
        assert "rounds" not in run.config and "ratio_se" not in run.config
        assert len({len(m.timing.times_s) for m in store.layer_measurements(run_id=run.id)}) == 1
        old = load_primitive_dataset(store, before.system_id, level=False)
        assert [set(s.times_s) for s in old.conv] == [{"direct"}]
        more = profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS,
                                  primitives=[get_primitive(n) for n in ("direct", "im2col-fhw")])
        assert (more.measured, more.samples) == (1, 1)  # only the new primitive; direct is not timed again
        # as timed (a second machine-speed reading moves the level both are read at)
        both = load_primitive_dataset(store, before.system_id, level=False)
        assert both.conv[0].times_s["direct"] == old.conv[0].times_s["direct"]
        assert set(both.conv[0].times_s) == {"direct", "im2col-fhw"}
