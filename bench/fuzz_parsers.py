"""Long fuzzing run of every parser of user input.

Run: .venv/bin/python bench/fuzz_parsers.py [--examples 10000] [--parsers onnx,ir_json,...] [--seed 0]
     [--report bench/results/fuzz_parsers.json]   (about 25 minutes for 10,000 inputs per parser here)

The inputs are those of the bounded fuzz tests (tests/fuzz/strategies.py), drawn at random from ``--seed``
instead of the tests' fixed sequence, ``--examples`` per parser (hypothesis may stop earlier when it has
seen every input a strategy can make):

1. onnx: corrupted valid models (truncated, bits flipped, bytes spliced in), valid models with one or two
   edits, models built from random nodes, random bytes; through ``nnperf.api.load_model``.
2. ir_json: edited valid IR documents, any JSON, corrupted files, deep nesting; through ``load_model``.
3. layer_csv: the shipped AlexNet table with cells or lines edited, random text and bytes, a cell over
   csv's field limit; through ``accel.read_table``.
4. spec_yaml: edited valid specs, odd YAML, random text and bytes, deep nesting; through ``accel.load_spec``.
5. cli_args: the CLI's parsers of shapes, counts, fractions, PE arrays, bit rates, powers, ranges and
   NAME=VALUE lists, on numbers joined with separators and units, odd numbers and random text.

Per parser: inputs tried, clean results, refusals (an NnperfError, or argparse's ArgumentTypeError for
argument parsers), internal errors (anything else: the CLI's exit 3) with the first few distinct ones
(type, message, input), the slowest input, and the wall time. Dimensions stay at or below 10**6.
Stdout gets a Markdown table; the JSON report keeps everything.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import nnperf
from fuzz.strategies import PARSERS, FuzzTarget, outcome

KEPT_ERRORS = 5
"""Distinct internal errors (by type and message) kept per parser."""


def shown(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 20] + f"... ({len(text)} chars)"


def fuzz(target: FuzzTarget, examples: int, random_seed: int) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    errors: dict[tuple[str, str], dict[str, Any]] = {}
    slowest = {"seconds": 0.0, "input": ""}

    @seed(random_seed)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(target.inputs)
    def run(value: Any) -> None:
        start = time.perf_counter()
        kind, result = outcome(target, value)
        elapsed = time.perf_counter() - start
        counts["tried"] += 1
        counts[kind] += 1
        if elapsed > slowest["seconds"]:
            slowest.update(seconds=elapsed, input=shown(value, 120))
        if kind != "internal":
            return
        key = (type(result).__name__, str(result)[:200])
        if key in errors:
            errors[key]["count"] += 1
        elif len(errors) < KEPT_ERRORS:
            errors[key] = {"type": key[0], "message": key[1], "input": shown(value), "count": 1}

    start = time.perf_counter()
    run()
    wall_s = time.perf_counter() - start
    return {"tried": counts["tried"], "ok": counts["ok"], "refused": counts["refused"],
            "internal": counts["internal"],
            "first_internal_errors": list(errors.values()), "slowest_input_s": round(slowest["seconds"], 4),
            "slowest_input": slowest["input"], "wall_s": round(wall_s, 2)}


def markdown(results: dict[str, dict[str, Any]], examples: int, random_seed: int) -> str:
    lines = [f"Parser fuzzing, {examples} inputs asked per parser, seed {random_seed}", "",
             ("| parser | tried | clean results | NnperfError refusals | internal errors | slowest input (s) | "
             "wall (s) |"), "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['tried']} | {r['ok']} | {r['refused']} | {r['internal']} | "
                     f"{r['slowest_input_s']:.3f} | {r['wall_s']:.1f} |")
    for name, r in results.items():
        for error in r["first_internal_errors"]:
            lines.append(f"\n- {name}: {error['type']}: {error['message']} ({error['count']}x; e.g. "
                         f"{error['input'][:160]})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per parser (default 10000)")
    parser.add_argument("--parsers", default=",".join(PARSERS), help=f"comma list of {', '.join(PARSERS)}")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the inputs (default 0)")
    parser.add_argument("--report", type=Path, default=Path("bench/results/fuzz_parsers.json"))
    args = parser.parse_args()
    names = [n.strip() for n in args.parsers.split(",") if n.strip()]
    unknown = sorted(set(names) - set(PARSERS))
    if unknown:
        parser.error(f"unknown parser(s) {', '.join(unknown)}; choose from {', '.join(PARSERS)}")
    results = {}
    for name in names:
        print(f"fuzzing {name} ({args.examples} inputs)...", file=sys.stderr, flush=True)
        results[name] = fuzz(PARSERS[name], args.examples, args.seed)
        print(f"  {name}: {results[name]['internal']} internal errors in {results[name]['wall_s']} s",
              file=sys.stderr, flush=True)
    report = {"format": "nnperf-bench-fuzz-parsers", "version": 1, "nnperf": nnperf.__version__,
              "host": {"python": platform.python_version(), "machine": platform.machine(),
                       "platform": platform.platform()},
              "command": " ".join(sys.argv), "examples": args.examples, "seed": args.seed, "parsers": results}
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=1) + "\n")
    print(markdown(results, args.examples, args.seed))


if __name__ == "__main__":
    main()
