"""Which comparison protocol a command uses when none is given: chosen from what the machine check finds.

The rule (documented in docs/measurement.md, "Which protocol by default"):

- **duet** when the comparison is of one-thread sides, at least :data:`DUET_MIN_CPUS` CPUs are free for this
  process and the check finds nothing contending for them (no busy process, no steal, load or CPU pressure above
  its warning level, no shared SMT sibling while something is busy). Two sides running at the same moment on
  idle cores see the same machine, and judging them pair by pair removes what drifts (Bulej et al., ICPE 2020).
- **interleaved** otherwise. On a 2-vCPU VM the two sides of a duet share the only two cores with the OS and with
  each other's memory traffic: there the duet's ratio spread 50-166% while interleaved rounds spread 9-13%
  (bench/measurement_interference.py), and contention that a check sees does the same on larger
  machines.
- never **sequential**: it is the old way, kept to show what the others fix.

A comparison that cannot run a protocol (synthesis and selection time in-process programs) takes interleaved
when duet is chosen.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnperf.errors import NnperfError
from nnperf.measure._check import Level, MachineCheck, check_machine
from nnperf.measure._interleave import ComparisonProtocol, parse_protocol

AUTO = "auto"
"""The protocol argument that asks for the machine check's choice (every comparing command's default)."""

DUET_MIN_CPUS = 4
"""The fewest CPUs this process may use for a duet to be chosen: two sides plus room for the OS and the rest."""

CONTENTION = ("busy_processes", "steal", "load", "cpu_pressure", "smt")
"""The findings that say another program competes for the cores a duet's sides would run on."""

CHOICE_SAMPLE_S = 0.2
"""Seconds over which the check behind an automatic choice samples steal and busy processes."""


@dataclass(frozen=True)
class ProtocolChoice:
    """The protocol a comparison uses, and why (a sentence)."""

    protocol: ComparisonProtocol
    reason: str


def recommended_protocol(check: MachineCheck, threads: int = 1, usable_cpus: int | None = None,
                         allowed: Sequence[ComparisonProtocol] = tuple(ComparisonProtocol)) -> ProtocolChoice:
    """The protocol the rule above picks for ``threads``-thread sides on the machine ``check`` describes
    (``usable_cpus``: the CPUs this process may run on, default its affinity), among ``allowed``."""
    cpus = usable_cpus if usable_cpus is not None else _usable_cpus(check)
    choice = _rule(check, threads, cpus)
    if choice.protocol not in allowed:
        return ProtocolChoice(ComparisonProtocol.INTERLEAVED,
                              f"interleaved: the machine suits a duet ({choice.reason}), but this comparison runs "
                              "its programs in this process")
    return choice


def _rule(check: MachineCheck, threads: int, cpus: int) -> ProtocolChoice:
    if threads != 1:
        return ProtocolChoice(ComparisonProtocol.INTERLEAVED,
                              f"interleaved: a duet pins each side to one core, and these sides use {threads} threads")
    if cpus < DUET_MIN_CPUS:
        return ProtocolChoice(ComparisonProtocol.INTERLEAVED,
                              f"interleaved: {cpus} usable CPUs, fewer than the {DUET_MIN_CPUS} a duet needs "
                              "(its sides would share the cores with the OS and each other)")
    contended = [f.name for f in check.findings if f.name in CONTENTION and f.level in (Level.WARN, Level.BAD)]
    if contended:
        return ProtocolChoice(ComparisonProtocol.INTERLEAVED,
                              f"interleaved: the check found contention ({', '.join(contended)}), which would "
                              "reach the two sides of a duet differently")
    return ProtocolChoice(ComparisonProtocol.DUET,
                          f"duet: {cpus} usable CPUs and nothing contending for them, so both sides see the same "
                          "machine at the same moment")


def check_document(check: MachineCheck, threads: int = 1) -> dict[str, Any]:
    """The check's versioned document (``nnperf check --json``) with the protocol it recommends for
    ``threads``-thread comparisons and why (``protocol``: ``recommended`` and ``reason``)."""
    choice = recommended_protocol(check, threads)
    return {**check.to_dict(), "protocol": {"recommended": choice.protocol.value, "reason": choice.reason}}


def _usable_cpus(check: MachineCheck) -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return check.cpus


def resolve_protocol(text: str | ComparisonProtocol, allowed: Sequence[ComparisonProtocol] = tuple(ComparisonProtocol),
                     what: str = "this comparison", error: type[NnperfError] = NnperfError, threads: int = 1,
                     root: Path | str = "/") -> ProtocolChoice:
    """``text`` as a protocol of ``allowed`` (see :func:`parse_protocol`), or with ``auto`` the one a quick
    machine check (no noise measurement, :data:`CHOICE_SAMPLE_S` of sampling) recommends."""
    if text != AUTO:
        chosen = parse_protocol(text, allowed, what, error)
        return ProtocolChoice(chosen, f"{chosen.value}: asked for")
    check = check_machine(None, sample_s=CHOICE_SAMPLE_S, root=root)
    return recommended_protocol(check, threads, allowed=allowed)
