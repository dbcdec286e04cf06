"""``nnperf check``: whether this machine is quiet enough for trustworthy timings, and what to change."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from nnperf.cli._backend_args import Progress

if TYPE_CHECKING:
    from nnperf.api import CheckResult, ThreadSettings

EXIT_BAD = 4
"""The exit code of ``--strict`` when the verdict is bad (1 is an error, 3 an internal one)."""

LEVEL_STYLES = {"ok": "green", "warn": "yellow", "bad": "bold red", "unknown": "dim"}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "check", help="check whether this machine is quiet enough for trustworthy timings, and what to change",
        description="Inspect this machine before measuring: other busy processes, load, steal time, CPU and "
                    "memory pressure, free memory, the cpufreq governor and turbo, SMT siblings and allocator "
                    "variables; then time a 3x3 convolution (torch, 1 thread) back to back and report how much "
                    "its time moves. Each finding is ok, warn or bad with one sentence of advice; the verdict is "
                    "the worst. Exit code 0 unless --strict and the verdict is bad (then 4, as compare's --fail-if-slower: 2 is a usage error).",
        epilog="examples: nnperf check; nnperf check --no-noise --json; nnperf check --noise-s 30 --strict")
    p.add_argument("--json", action="store_true", help='print one JSON document (format "nnperf-check", version 1)')
    p.add_argument("--noise-s", type=float, default=10.0, metavar="S",
                   help="seconds to time the convolution for its noise (default 10)")
    p.add_argument("--no-noise", action="store_true", help="skip the noise measurement (and importing torch)")
    p.add_argument("--sample-s", type=float, default=1.0, metavar="S",
                   help="seconds over which other processes' CPU use and steal time are sampled (default 1)")
    p.add_argument("--no-threads", action="store_true",
                   help="skip reading back each backend's own thread settings (which imports every framework)")
    p.add_argument("--strict", action="store_true", help=f"exit with code {EXIT_BAD} when the verdict is bad")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import check as check_machine

    with Progress(not args.json, "checking the machine") as progress:
        result = check_machine(noise_s=args.noise_s, sample_s=args.sample_s, noise=not args.no_noise,
                               threads=not args.no_threads, progress=progress)
    if result.noise_skipped is not None:
        print(f"nnperf: the noise measurement needs the torch backend ({result.noise_skipped}); skipping it",
              file=sys.stderr)
    document = result.to_dict()
    if args.json:
        print(json.dumps(document, indent=1))
    else:
        if result.threads:
            print_threads(result.threads)
        print_check(result, document["protocol"]["reason"])
    return EXIT_BAD if args.strict and result.check.verdict.value == "bad" else 0


def print_check(result: CheckResult, protocol_reason: str) -> None:
    """The findings as a table (level coloured), the protocol comparisons take by default and why, and the
    verdict line."""
    from rich.table import Table
    from rich.text import Text

    from nnperf.report import console

    check = result.check
    table = Table(title="machine check", title_justify="left")
    for column in ("finding", "level", "value", "advice"):
        table.add_column(column)
    for f in check.findings:
        style = LEVEL_STYLES[f.level.value]
        table.add_row(f.name, Text(f.level.value, style=style), Text(f.detail, style="dim" if style == "dim" else ""),
                      Text(f.advice or ""))
    out = console()
    out.print(table)
    out.print(Text(f"comparison protocol by default (--protocol auto): {protocol_reason}"))
    verdict = check.verdict.value
    to_change = [f.name for f in check.findings if f.level.rank > 0]
    line = Text("verdict: ")
    line.append(verdict, style=LEVEL_STYLES[verdict])
    if to_change:
        line.append(f" ({len(to_change)} to change: {', '.join(to_change)})")
    else:
        line.append(" (nothing to change before measuring)")
    out.print(line)


def print_threads(threads: tuple[ThreadSettings, ...]) -> None:
    """Each backend's own thread settings as nnperf applies them (at one thread, the default), or why it cannot
    run here."""
    from rich.table import Table

    from nnperf.report import console

    table = Table(title="thread settings per backend (--threads 1)", title_justify="left")
    for column in ("backend", "settings"):
        table.add_column(column)
    for t in threads:
        table.add_row(t.backend, ", ".join(f"{key}={value}" for key, value in t.settings) or f"[dim]{t.unavailable}")
    console().print(table)
