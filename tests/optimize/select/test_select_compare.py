"""Selections compared end to end from paired rounds: on a fake machine that slows down partway through a
comparison, the interleaved speed-ups stay at the true ratios and the sequential ones do not; a real (tiny)
network compared under both protocols; the protocol checked in the library, the API and ``nnperf select``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cli_helpers import assert_error, run_cli
from fake_machine import SLOWDOWN, FakeTimer, Machine
from harness_presets import SMOKE_HARNESS
from networks import asymmetric_residual_network
from nnperf.errors import NnperfError
from nnperf.measure import ComparisonProtocol, HarnessConfig, RoundsConfig
from nnperf.optimize.select import (
    BEST_UNIFORM,
    DEFAULT,
    SELECTED,
    SELECTION_PROTOCOLS,
    SelectionError,
    SelectionProtocolError,
    check_protocol,
    compare_selections,
    compare_timers,
)

SELECTED_S = 10e-3  # the selected network's time per inference on the fast machine
DEFAULT_S = 13e-3  # the default's: a true speed-up of 1.3
UNIFORM_S = 11e-3  # the best uniform one's: a true speed-up of 1.1

ROUNDS = RoundsConfig(min_rounds=20, max_rounds=20, min_block_s=0.02, warmup_s=0.0, target_ci=0.0, budget_s=100.0)
HARNESS = HarnessConfig(warmup_s=0.0, min_block_s=0.02, target_ci=0.0, min_samples=10, max_samples=10,
                        budget_s=100.0)


def timers_on(machine: Machine) -> dict[str, FakeTimer]:
    return {SELECTED: machine.timer(SELECTED_S), DEFAULT: machine.timer(DEFAULT_S),
            BEST_UNIFORM: machine.timer(UNIFORM_S)}


@pytest.mark.parametrize("protocol", ["interleaved", "sequential"])
def test_on_a_steady_machine_both_protocols_find_the_true_speedups(protocol: str) -> None:
    machine = Machine()
    compared = compare_timers(timers_on(machine), protocol, rounds=ROUNDS, harness=HARNESS, clock=machine.clock)
    assert compared.protocol is ComparisonProtocol(protocol)
    assert compared.speedup(SELECTED, over=DEFAULT).median == pytest.approx(DEFAULT_S / SELECTED_S)
    assert compared.speedup(SELECTED, over=BEST_UNIFORM).median == pytest.approx(UNIFORM_S / SELECTED_S)
    assert compared.median_s(DEFAULT) == pytest.approx(DEFAULT_S)


def test_a_slowdown_leaves_the_paired_speedups_at_the_truth_and_doubles_the_sequential_ones() -> None:
    # interleaved: the machine slows down halfway through the rounds
    steady = Machine()
    compare_timers(timers_on(steady), "interleaved", rounds=ROUNDS, clock=steady.clock)
    halfway = Machine(slow_after_s=steady.now_s / 2)
    paired = compare_timers(timers_on(halfway), "interleaved", rounds=ROUNDS, clock=halfway.clock)
    slow_rounds = np.asarray(paired.rounds.times(SELECTED)) > SELECTED_S * 1.5
    assert 5 <= slow_rounds.sum() <= 15  # the slowdown did fall in the middle of the rounds
    over_default = paired.speedup(SELECTED, over=DEFAULT)
    over_uniform = paired.speedup(SELECTED, over=BEST_UNIFORM)
    # every round but the one the slowdown falls in saw all three at one speed: the median ratio is the true one
    assert over_default.paired and len(over_default.ratios) == ROUNDS.max_rounds
    assert (over_default.median, over_default.ci_low, over_default.ci_high) == pytest.approx((1.3, 1.3, 1.3))
    assert (over_uniform.median, over_uniform.ci_low, over_uniform.ci_high) == pytest.approx((1.1, 1.1, 1.1))
    assert paired.ratio(SELECTED, DEFAULT).median == pytest.approx(SELECTED_S / DEFAULT_S)

    # sequential: the machine slows down right after the selected network was measured, so the default and the
    # best uniform one are timed on the slow machine
    steady = Machine()
    timers = timers_on(steady)
    compare_timers(timers, "sequential", harness=HARNESS, clock=steady.clock)
    after_first = Machine(slow_after_s=timers[SELECTED].last_s)
    unpaired = compare_timers(timers_on(after_first), "sequential", harness=HARNESS, clock=after_first.clock)
    over_default = unpaired.speedup(SELECTED, over=DEFAULT)
    assert not over_default.paired and over_default.ratios == ()
    assert over_default.median == pytest.approx(13e-3 * SLOWDOWN / 10e-3)  # 2.6x, not 1.3x
    assert unpaired.speedup(SELECTED, over=BEST_UNIFORM).median == pytest.approx(11e-3 * SLOWDOWN / 10e-3)  # 2.2x
    assert unpaired.median_s(SELECTED) == pytest.approx(SELECTED_S)
    assert unpaired.median_s(DEFAULT) == pytest.approx(DEFAULT_S * SLOWDOWN)


def test_an_unknown_program_is_named_and_the_document_holds_every_median() -> None:
    machine = Machine()
    compared = compare_timers(timers_on(machine), rounds=ROUNDS, clock=machine.clock)
    with pytest.raises(SelectionError, match="'other'.*selected, default, best uniform"):
        compared.speedup(SELECTED, over="other")
    document = compared.to_dict()
    assert document["protocol"] == "interleaved" and document["rounds"] == ROUNDS.max_rounds
    assert document["median_s"] == pytest.approx({SELECTED: SELECTED_S, DEFAULT: DEFAULT_S, BEST_UNIFORM: UNIFORM_S})


def test_the_protocol_is_checked() -> None:
    assert SELECTION_PROTOCOLS == (ComparisonProtocol.SEQUENTIAL, ComparisonProtocol.INTERLEAVED)
    assert check_protocol("sequential") is ComparisonProtocol.SEQUENTIAL
    assert check_protocol(ComparisonProtocol.INTERLEAVED) is ComparisonProtocol.INTERLEAVED
    with pytest.raises(SelectionProtocolError, match="duet protocol; use one of sequential, interleaved"):
        check_protocol("duet")
    with pytest.raises(SelectionProtocolError, match="'paired'; use one of sequential, interleaved"):
        check_protocol("paired")
    with pytest.raises(SelectionError, match="two or more programs, got 1"):
        compare_timers({SELECTED: Machine().timer(SELECTED_S)})


FAST_ROUNDS = RoundsConfig(min_rounds=3, max_rounds=3, min_block_s=2e-4, warmup_s=0.0, target_ci=0.0, budget_s=1.0)


@pytest.mark.parametrize("protocol", ["interleaved", "sequential"])
def test_selections_of_a_real_network_are_compared_and_threads_restored(protocol: str) -> None:
    network = asymmetric_residual_network()
    hwc = {"c1": "direct", "c2": "onednn-hwc", "r1": "hwc", "c3": "direct"}
    chw = {"c1": "direct", "c2": "direct", "c3": "direct"}
    before = torch.get_num_threads()
    compared = compare_selections(network, {"hwc": hwc, "chw": chw}, protocol, rounds=FAST_ROUNDS,
                                  harness=SMOKE_HARNESS)
    assert torch.get_num_threads() == before
    assert compared.names == ("hwc", "chw") and compared.protocol is ComparisonProtocol(protocol)
    assert all(0 < compared.median_s(name) < 0.1 for name in compared.names)
    if protocol == "interleaved":
        assert compared.rounds.rounds == FAST_ROUNDS.max_rounds
    ratio = compared.speedup("hwc", over="chw")
    assert ratio.ci_low <= ratio.median <= ratio.ci_high
    with pytest.raises(SelectionError, match="two or more selections"):
        compare_selections(network, {"hwc": hwc}, protocol)


def test_the_api_refuses_a_bad_protocol_before_any_work() -> None:
    from nnperf.api import select

    with pytest.raises(SelectionProtocolError, match="'fastest'"):
        select("no-such-model", protocol="fastest", verify=True)


def test_the_cli_passes_protocol_on_and_refuses_a_bad_one(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import nnperf.api

    asked = {}
    real = nnperf.api.select

    def fake_select(model: str, **kwargs: object) -> None:
        asked.update(kwargs)
        raise NnperfError("stopped before measuring")

    monkeypatch.setattr(nnperf.api, "select", fake_select)
    for given, expected in ((("--protocol", "sequential"), "sequential"), ((), "auto")):
        code, _, err = run_cli(capsys, "select", "resnet18", "--verify", "--json", *given)
        assert_error(code, err, "stopped before measuring")
        assert asked["protocol"] == expected
    monkeypatch.setattr(nnperf.api, "select", real)
    code, _, err = run_cli(capsys, "select", "resnet18", "--verify", "--protocol", "duet")
    assert_error(code, err, "duet protocol", "use one of sequential, interleaved")
    code, _, err = run_cli(capsys, "select", "resnet18", "--verify", "--protocol", "paired")
    assert_error(code, err, "unknown comparison protocol 'paired'", "use one of sequential, interleaved")
