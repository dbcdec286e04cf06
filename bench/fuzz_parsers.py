"""Long fuzzing run of every parser of user input: the parser fuzz tests (tests/fuzz/) on many more inputs.

Run: .venv/bin/python bench/fuzz_parsers.py [--examples 10000] [--parsers onnx,ir_json,...]
     [--json bench/results/reliability/fuzz_parsers.json]   (about 25 minutes for 10,000 inputs per parser here)

Each parser's "any input parses or is refused" test runs under pytest with ``NNPERF_FUZZ_EXAMPLES`` set to
``--examples`` (the tests' fixed sequence of inputs, continued; hypothesis may stop earlier when it has seen every
input a strategy can make):

1. onnx: corrupted valid models (truncated, bits flipped, bytes spliced in), valid models with one or two
   edits, models built from random nodes, random bytes; through ``nnperf.api.load_model``.
2. ir_json: edited valid IR documents, any JSON, corrupted files, deep nesting; through ``load_model``.
3. layer_csv: the shipped AlexNet table with cells or lines edited, random text and bytes, a cell over
   csv's field limit; through ``accel.read_table``.
4. spec_yaml: edited valid specs, odd YAML, random text and bytes, deep nesting; through ``accel.load_spec``.
5. cli_args: the CLI's parsers of shapes, counts, fractions, PE arrays, bit rates, powers, ranges and
   NAME=VALUE lists, on numbers joined with separators and units, odd numbers and random text.

An input passes when its parser returns or refuses it with a one-line NnperfError (argparse's
ArgumentTypeError for argument parsers); anything else is an internal error (the CLI's exit 3), and the test
fails with the smallest such input hypothesis finds. Per parser: whether it passed, the failure (type, message,
input), and the wall time. Stdout gets a Markdown table; the result file keeps everything.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from _shared import ROOT, print_table, result_path, write_result

TESTS = {
    "onnx": "tests/fuzz/test_fuzz_onnx.py::test_any_onnx_input_imports_or_is_refused",
    "ir_json": "tests/fuzz/test_fuzz_ir_json.py::test_any_ir_json_input_loads_or_is_refused",
    "layer_csv": "tests/fuzz/test_fuzz_layer_table.py::test_any_layer_table_reads_or_is_refused",
    "spec_yaml": "tests/fuzz/test_fuzz_spec.py::test_any_spec_file_loads_or_is_refused",
    "cli_args": "tests/fuzz/test_fuzz_cli_args.py::test_any_argument_text_parses_or_is_refused",
}
"""Each parser's fuzz test."""


def fuzz(test: str, examples: int) -> dict[str, Any]:
    """Runs ``test`` under pytest on ``examples`` inputs: passed, the failure's first lines, wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test,
                               f"--junitxml={report}"], cwd=ROOT, capture_output=True, text=True, check=False,
                              env={**os.environ, "NNPERF_FUZZ_EXAMPLES": str(examples)})
        wall_s = time.perf_counter() - start
        cases = ElementTree.parse(report).getroot().iter("testcase") if report.exists() else iter(())
        failures = [f.get("message", "") for case in cases for f in [*case.iter("failure"), *case.iter("error")]]
    passed = done.returncode == 0
    if not passed and not failures:
        failures = [done.stdout[-2000:] + done.stderr[-2000:]]
    return {"test": test, "examples": examples, "passed": passed,
            "failures": [message[:2000] for message in failures], "wall_s": round(wall_s, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per parser (default 10000)")
    parser.add_argument("--parsers", default=",".join(TESTS), help=f"comma list of {', '.join(TESTS)}")
    parser.add_argument("--json", type=Path, default=result_path("reliability", "fuzz_parsers"))
    args = parser.parse_args()
    names = [n.strip() for n in args.parsers.split(",") if n.strip()]
    unknown = sorted(set(names) - set(TESTS))
    if unknown:
        parser.error(f"unknown parser(s) {', '.join(unknown)}; choose from {', '.join(TESTS)}")
    results = {}
    for name in names:
        print(f"fuzzing {name} ({args.examples} inputs)...", file=sys.stderr, flush=True)
        results[name] = fuzz(TESTS[name], args.examples)
        write_result(args.json, method="reliability", concern="parser fuzzing", values=results,
                     examples=args.examples)
    print_table(["parser", "inputs asked", "internal error found", "wall (s)"],
                [[name, r["examples"], "no" if r["passed"] else "yes", f"{r['wall_s']:.1f}"]
                 for name, r in results.items()], title=f"Parser fuzzing, {args.examples} inputs per parser",
                right=(1, 3))
    for name, r in results.items():
        for message in r["failures"]:
            print(f"\n- {name}: {message[:300]}")


if __name__ == "__main__":
    main()
