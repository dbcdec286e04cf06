"""Every ONNX file of a corpus imported, rebuilt by nnperf's torch and ONNX Runtime graph builders with the file's
own parameters, and compared with ONNX Runtime's run of the file itself: whether every network can be verified
on both backends.

Run (the corpus from bench/export_model_families.py):

    nice -n 10 .venv/bin/python bench/verify_corpus.py --corpus /work/tv-corpus \\
        --json bench/results/verify/torchvision_corpus.json [--md bench/results/verify/torchvision_corpus.md] \\
        [--only resnet18 swin_t] [--resume] [--timeout-s 1800]

For each ``*.onnx`` file under ``--corpus`` (each checked in a process of its own, so that a large network's
weights are freed when it ends and a crash is one file's), ``nnperf.measure.backends.check_rebuild``:

- imported: whether ``from_onnx_with_weights`` imports it, else the refusal in one line;
- per backend (torch, onnxruntime): built, ran, the largest absolute difference from ONNX Runtime's run of the
  file over the compared tensors (the network's outputs and its head's input, on the inputs the backends measure
  with), and that difference over the file's largest magnitude; it matches within ``REBUILD_TOLERANCE`` (1e-4);
- the error text of the first stage that failed.

Writes the JSON after every file (``--resume`` skips the files it already holds) and the Markdown table at the end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from _shared import log, markdown_table, read_values, write_result

from nnperf.errors import NnperfWarning
from nnperf.measure.backends import check_rebuild

BACKENDS = ("torch", "onnxruntime")


def check_one(path: Path) -> dict[str, Any]:
    """The check of one file, as the JSON records it."""
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NnperfWarning)
        check = check_rebuild(str(path), BACKENDS)
    row: dict[str, Any] = {"imported": check.imported, "layers": check.layers, "error": check.error,
                           "compared": list(check.compared), "scales": list(check.scales),
                           "weights_missing": list(check.weights_missing), "verified": check.verified}
    for backend in check.backends:
        row[backend.backend] = {"built": backend.built, "ran": backend.ran, "max_abs_diff": backend.max_abs_diff,
                                "relative_diff": backend.relative_diff, "matches": backend.matches,
                                "error": backend.error}
    row["wall_s"] = round(time.perf_counter() - started, 1)
    return row


def check_in_a_process(path: Path, timeout_s: float) -> dict[str, Any]:
    """:func:`check_one` in a child process; a crash or a timeout is recorded as the file's error."""
    try:
        done = subprocess.run([sys.executable, __file__, "--one", str(path)], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"imported": None, "verified": False, "error": f"the check took over {timeout_s:.0f} s"}
    if done.returncode != 0 or not done.stdout.strip():
        tail = " ".join(done.stderr.strip().splitlines()[-1:])[:300]
        return {"imported": None, "verified": False,
                "error": f"the check process ended with code {done.returncode}: {tail}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def cell(row: dict[str, Any], backend: str) -> str:
    """A backend's outcome: the difference relative to the file's magnitude, or the stage it stopped at."""
    got = row.get(backend)
    if not got:
        return "-"
    if not got["built"]:
        return "not built"
    if not got["ran"]:
        return "did not run"
    if got["relative_diff"] is None:
        return "no comparison"
    verdict = "ok" if got["matches"] else "DIFFERS"
    return f"{verdict} {got['max_abs_diff']:.1e} ({got['relative_diff']:.1e})"


def markdown(rows: dict[str, dict[str, Any]], command: str) -> str:
    """The report: counts, then one row per file."""
    verified = sum(1 for r in rows.values() if r.get("verified"))
    imported = sum(1 for r in rows.values() if r.get("imported"))
    per_backend = {b: sum(1 for r in rows.values() if (r.get(b) or {}).get("matches")) for b in BACKENDS}
    lines = [
        "# The torchvision corpus rebuilt on both backends and compared with the files",
        "",
        f"Command: `{command}`",
        "",
        (f"{len(rows)} files; {imported} imported; matching the file within 1e-4 of its largest magnitude: "
         f"torch {per_backend['torch']}, ONNX Runtime {per_backend['onnxruntime']}; verified on both: {verified}."),
        "",
        ("Each cell: the largest absolute difference from ONNX Runtime's run of the file over the outputs and the "
         "head's input, and in brackets that over the file's largest magnitude."),
        "",
    ]
    table = [(name, r.get("layers", "-"), cell(r, "torch"), cell(r, "onnxruntime"),
              "yes" if r.get("verified") else "no", r.get("wall_s", "-"), _first_error(r))
             for name, r in sorted(rows.items())]
    lines.append(markdown_table(["file", "layers", "torch", "ONNX Runtime", "verified", "s", "error"], table,
                                right=(1, 5)))
    return "\n".join(lines) + "\n"


def _first_error(row: dict[str, Any]) -> str:
    texts = [row.get("error") or ""] + [(row.get(b) or {}).get("error") or "" for b in BACKENDS]
    return next((t for t in texts if t), "")[:160].replace("|", "/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="folder searched for *.onnx files")
    parser.add_argument("--json", type=Path, default=Path("bench/results/verify/torchvision_corpus.json"))
    parser.add_argument("--md", type=Path, help="the Markdown report (default: the JSON's path with .md)")
    parser.add_argument("--only", nargs="+", default=[], help="files whose name starts with one of these")
    parser.add_argument("--resume", action="store_true", help="keep the files the JSON already holds")
    parser.add_argument("--timeout-s", type=float, default=1800.0, help="per file")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # the child process: one file, JSON on stdout
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(check_one(args.one), default=float))
        return
    if args.corpus is None or not args.corpus.is_dir():
        parser.error(f"--corpus must be a folder, got {args.corpus}")
    files = sorted(args.corpus.rglob("*.onnx"), key=lambda p: (p.stat().st_size, p.name))
    files = [p for p in files if not args.only or any(p.name.startswith(o) for o in args.only)]
    rows: dict[str, dict[str, Any]] = dict(read_values(args.json)["files"]) if args.resume and args.json.exists() \
        else {}
    for index, path in enumerate(files, start=1):
        name = str(path.relative_to(args.corpus))
        if name in rows:
            continue
        rows[name] = check_in_a_process(path, args.timeout_s)
        log(f"[{index}/{len(files)}] {name}: {'verified' if rows[name].get('verified') else 'NOT verified'} "
            f"({rows[name].get('wall_s', '-')} s) {_first_error(rows[name])}")
        _write(args.json, rows)
    document = _write(args.json, rows)
    md = args.md or args.json.with_suffix(".md")
    md.write_text(markdown(rows, document["command"]))
    print(md.read_text())


def _write(path: Path, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    verified = sorted(name for name, r in rows.items() if r.get("verified"))
    return write_result(path, method="verify", concern="networks rebuilt on torch and ONNX Runtime against the file",
                        values={"files": rows, "verified": len(verified), "total": len(rows)},
                        headline={"verified": f"{len(verified)} of {len(rows)}"})


if __name__ == "__main__":
    main()
