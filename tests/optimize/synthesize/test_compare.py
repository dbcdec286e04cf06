"""Table I's speed-ups from paired rounds: on a fake machine that slows down halfway through a comparison, the
interleaved speed-up stays at the true ratio and the sequential one does not; the protocol is checked at the API
and on the command line."""

from __future__ import annotations

import numpy as np
import pytest

from cli_helpers import assert_error, run_cli
from fake_machine import SLOWDOWN, Machine
from nnperf.errors import NnperfError
from nnperf.measure import ComparisonProtocol, HarnessConfig, RoundsConfig
from nnperf.optimize.synthesize import PROTOCOLS, SynthesisError, check_protocol, compare_programs

BASELINE_S = 10e-3  # the baseline's time per execution on the fast machine
PROGRAM_S = 1e-3  # the program's: a true speed-up of 10

ROUNDS = RoundsConfig(min_rounds=20, max_rounds=20, min_block_s=0.02, warmup_s=0.0, target_ci=0.0, budget_s=100.0)
HARNESS = HarnessConfig(warmup_s=0.0, min_block_s=0.02, target_ci=0.0, min_samples=10, max_samples=10,
                        budget_s=100.0)


def compare_on(machine: Machine, protocol: str):  # type: ignore[no-untyped-def]
    timers = {"baseline": machine.timer(BASELINE_S), "program": machine.timer(PROGRAM_S)}
    return compare_programs(timers, protocol, rounds=ROUNDS, harness=HARNESS, clock=machine.clock)


@pytest.mark.parametrize("protocol", ["interleaved", "sequential"])
def test_on_a_steady_machine_both_protocols_find_the_true_speedup(protocol: str) -> None:
    speedup = compare_on(Machine(), protocol).speedup("program")
    assert speedup.median == pytest.approx(BASELINE_S / PROGRAM_S)


def test_a_slowdown_halfway_leaves_the_paired_speedup_at_the_true_ratio_and_halves_the_sequential_one() -> None:
    found = {}
    for protocol in ("interleaved", "sequential"):
        steady = Machine()
        compare_on(steady, protocol)
        halfway = Machine(slow_after_s=steady.now_s / 2)  # the same comparison, slowing down halfway through it
        found[protocol] = compare_on(halfway, protocol)
    paired = found["interleaved"].speedup("program")
    # every round but the one the slowdown falls in saw both sides at one speed: the median ratio is the true one
    assert paired.paired and len(paired.ratios) == ROUNDS.max_rounds
    assert paired.median == pytest.approx(BASELINE_S / PROGRAM_S)
    assert paired.ci_low == pytest.approx(BASELINE_S / PROGRAM_S)
    assert paired.ci_high == pytest.approx(BASELINE_S / PROGRAM_S)
    slow_rounds = np.asarray(found["interleaved"].rounds.times("baseline")) > BASELINE_S * 1.5
    assert 5 <= slow_rounds.sum() <= 15  # the slowdown did fall in the middle of the rounds
    # sequentially the baseline was timed on the fast machine and the program on the slow one
    sequential = found["sequential"].speedup("program")
    assert not sequential.paired
    assert sequential.median == pytest.approx(BASELINE_S / (PROGRAM_S * SLOWDOWN))  # 5x, not 10x
    assert found["sequential"].median_s("baseline") == pytest.approx(BASELINE_S)
    assert found["sequential"].median_s("program") == pytest.approx(PROGRAM_S * SLOWDOWN)


def test_the_baseline_over_itself_is_one_and_an_unknown_program_is_named() -> None:
    comparison = compare_on(Machine(), "interleaved")
    assert comparison.baseline == "baseline"
    assert comparison.speedup("baseline").median == 1.0
    with pytest.raises(SynthesisError, match="'other'.*baseline, program"):
        comparison.speedup("other")
    document = comparison.to_dict()
    assert document["protocol"] == "interleaved" and document["rounds"] == ROUNDS.max_rounds
    assert document["programs"]["program"] == pytest.approx(PROGRAM_S)


def test_the_protocol_is_checked() -> None:
    assert check_protocol("sequential") is ComparisonProtocol.SEQUENTIAL
    assert check_protocol(ComparisonProtocol.INTERLEAVED) is ComparisonProtocol.INTERLEAVED
    assert PROTOCOLS == (ComparisonProtocol.SEQUENTIAL, ComparisonProtocol.INTERLEAVED)
    with pytest.raises(SynthesisError, match="duet protocol; use one of sequential, interleaved"):
        check_protocol("duet")
    with pytest.raises(SynthesisError, match="'paired'; use one of sequential, interleaved"):
        check_protocol("paired")
    with pytest.raises(SynthesisError, match="at least one program"):
        compare_programs({"baseline": Machine().timer(BASELINE_S)})


def test_the_api_refuses_a_bad_protocol_before_any_work(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nnperf.api import synthesize

    with pytest.raises(SynthesisError, match="'fastest'"):
        synthesize("resnet18", protocol="fastest", out=tmp_path / "p")


def test_the_cli_passes_protocol_on_and_refuses_a_bad_one(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import nnperf.api

    asked = {}

    def fake_synthesize(model: str, **kwargs: object) -> None:
        asked.update(kwargs)
        raise NnperfError("stopped before measuring")

    monkeypatch.setattr(nnperf.api, "synthesize", fake_synthesize)
    for given, expected in ((("--protocol", "sequential"), "sequential"), ((), "auto")):
        code, _, err = run_cli(capsys, "synthesize", "digits-cnn", "--out", str(tmp_path / "p"), *given)
        assert_error(code, err, "stopped before measuring")
        assert asked["protocol"] == expected
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, "synthesize", "digits-cnn", "--protocol", "duet")
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--protocol: invalid choice: 'duet'" in err and "'sequential', 'interleaved'" in err
