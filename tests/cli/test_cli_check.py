"""``nnperf check``: the table and verdict, the versioned JSON document, bad flags, and --strict's exit code."""

from __future__ import annotations

import json

import pytest

import nnperf.measure
from cli_helpers import assert_error, run_cli
from nnperf.measure import Finding, Level, MachineCheck

FINDINGS = ["busy_processes", "load", "steal", "cpu_pressure", "memory", "memory_pressure", "governor", "turbo",
            "smt", "allocator", "noise"]


def test_json_document_without_noise(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "check", "--no-noise", "--json", "--sample-s", "0.2")
    assert code == 0, err
    document = json.loads(out)
    assert (document["format"], document["version"]) == ("nnperf-check", 1)
    assert [f["name"] for f in document["findings"]] == FINDINGS
    assert document["sample_s"] == 0.2 and document["noise"] is None
    assert document["verdict"] in ("ok", "warn", "bad")
    assert document["protocol"]["recommended"] in ("interleaved", "duet")
    assert document["protocol"]["reason"].startswith(document["protocol"]["recommended"] + ": ")
    noise = document["findings"][-1]
    assert (noise["level"], noise["value"], noise["advice"]) == ("unknown", None, None)
    for finding in document["findings"]:
        assert (finding["advice"] is None) == (finding["level"] in ("ok", "unknown")), finding


def test_table_and_verdict_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "check", "--no-noise", "--sample-s", "0.2")
    assert code == 0
    assert "machine check" in out
    for name in FINDINGS:
        assert name in out
    assert out.strip().splitlines()[-2].startswith("comparison protocol by default (--protocol auto): ")
    assert out.strip().splitlines()[-1].startswith("verdict: ")


def test_a_short_noise_measurement_of_the_reference_workload(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    code, out, err = run_cli(capsys, "check", "--noise-s", "0.5", "--sample-s", "0.2", "--json")
    assert code == 0, err
    noise = json.loads(out)["noise"]
    assert noise["samples"] >= 2 and noise["block_size"] >= 1
    assert noise["duration_s"] >= 0.5
    assert 0 < noise["median_s"] < 0.5  # ResNet-18 at 112x112, 0.45 G MACs: about 12 ms per run when quiet
    assert len(noise["window_medians_s"]) == 2  # half a second is split in two halves
    assert noise["window_spread"] == pytest.approx(
        (max(noise["window_medians_s"]) - min(noise["window_medians_s"]))
        / (sum(noise["window_medians_s"]) / 2))  # the median of two medians is their mean


@pytest.mark.parametrize(("flag", "value"), [("--noise-s", "-1"), ("--noise-s", "0"), ("--sample-s", "nan")])
def test_a_bad_duration_is_a_clear_error(capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    code, _, err = run_cli(capsys, "check", flag, value)
    assert_error(code, err, flag.removeprefix("--").replace("-", "_"), "positive number of seconds", value)


def canned(level: Level) -> MachineCheck:
    finding = Finding("busy_processes", level, 0.9, "PID 1 (hog, 90% of a core)",
                      None if level is Level.OK else "stop PID 1 (hog) before measuring")
    return MachineCheck((finding,), (), None, 2, 1.0)


@pytest.mark.parametrize(("level", "strict", "expected"), [
    (Level.BAD, True, 4), (Level.BAD, False, 0), (Level.WARN, True, 0), (Level.OK, True, 0)])
def test_strict_exits_4_only_when_bad(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                      level: Level, strict: bool, expected: int) -> None:
    monkeypatch.setattr(nnperf.measure, "check_machine", lambda *args, **kwargs: canned(level))
    code, out, _ = run_cli(capsys, "check", "--no-noise", *(["--strict"] if strict else []))
    assert code == expected
    last = out.strip().splitlines()[-1]
    assert last == (f"verdict: {level.value} (1 to change: busy_processes)" if level is not Level.OK
                    else "verdict: ok (nothing to change before measuring)")
