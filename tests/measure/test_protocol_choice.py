"""The comparison protocol chosen from the machine check: duet only with enough free cores and nothing contending,
interleaved otherwise, never a protocol the comparison cannot run."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnperf.errors import NnperfError
from nnperf.measure import (
    DUET_MIN_CPUS,
    IN_PROCESS_PROTOCOLS,
    ComparisonProtocol,
    Finding,
    Level,
    MachineCheck,
    check_document,
    recommended_protocol,
    resolve_protocol,
)

QUIET = tuple(Finding(name, Level.OK, 0.0, "fine") for name in
              ("busy_processes", "load", "steal", "cpu_pressure", "memory", "smt", "noise"))


def machine(cpus: int = 8, **levels: Level) -> MachineCheck:
    findings = tuple(Finding(f.name, levels.get(f.name, f.level), f.value, f.detail) for f in QUIET)
    return MachineCheck(findings, (), None, cpus, 0.2)


def test_a_quiet_machine_with_enough_cores_gets_a_duet() -> None:
    choice = recommended_protocol(machine(), usable_cpus=DUET_MIN_CPUS)
    assert choice.protocol is ComparisonProtocol.DUET
    assert choice.reason.startswith("duet: 4 usable CPUs and nothing contending")


def test_two_cores_get_interleaved_rounds() -> None:
    choice = recommended_protocol(machine(cpus=2), usable_cpus=2)
    assert choice.protocol is ComparisonProtocol.INTERLEAVED
    assert "2 usable CPUs, fewer than the 4" in choice.reason


@pytest.mark.parametrize("finding", ["busy_processes", "steal", "load", "cpu_pressure", "smt"])
def test_contention_the_check_sees_rules_the_duet_out(finding: str) -> None:
    choice = recommended_protocol(machine(**{finding: Level.WARN}), usable_cpus=16)
    assert choice.protocol is ComparisonProtocol.INTERLEAVED and f"contention ({finding})" in choice.reason


def test_memory_alone_does_not_rule_the_duet_out() -> None:
    assert recommended_protocol(machine(memory=Level.BAD), usable_cpus=16).protocol is ComparisonProtocol.DUET


def test_multi_threaded_sides_and_in_process_comparisons_get_interleaved() -> None:
    threads = recommended_protocol(machine(), threads=2, usable_cpus=16)
    assert threads.protocol is ComparisonProtocol.INTERLEAVED and "2 threads" in threads.reason
    in_process = recommended_protocol(machine(), usable_cpus=16, allowed=IN_PROCESS_PROTOCOLS)
    assert in_process.protocol is ComparisonProtocol.INTERLEAVED and "in this process" in in_process.reason


def test_resolve_takes_a_named_protocol_as_asked_and_refuses_an_unknown_one() -> None:
    assert resolve_protocol("sequential").protocol is ComparisonProtocol.SEQUENTIAL
    with pytest.raises(NnperfError, match="unknown comparison protocol 'fastest'"):
        resolve_protocol("fastest")
    with pytest.raises(NnperfError, match="cannot compare its programs under the duet protocol"):
        resolve_protocol("duet", IN_PROCESS_PROTOCOLS, "synthesis")


def test_auto_reads_the_machine(tmp_path: Path) -> None:
    """An empty tree reads as unknown everywhere: the choice then rests on this process's CPUs alone."""
    import os

    choice = resolve_protocol("auto", root=tmp_path)
    expected = (ComparisonProtocol.DUET if len(os.sched_getaffinity(0)) >= DUET_MIN_CPUS
                else ComparisonProtocol.INTERLEAVED)
    assert choice.protocol is expected


def test_the_check_document_carries_the_recommendation() -> None:
    check = machine(steal=Level.BAD)
    document = check_document(check)
    assert document["format"] == "nnperf-check"
    assert document["protocol"] == {"recommended": "interleaved", "reason": recommended_protocol(check).reason}
