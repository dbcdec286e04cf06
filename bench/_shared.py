"""What the bench scripts share: tables (Markdown, or rich on a terminal), percentages, progress lines, the
spread of repeats, and the one writer of result files.

A bench script imports it as ``from _shared import ...`` (its own folder is first on ``sys.path`` when it runs as
``.venv/bin/python bench/NAME.py``).

Every result file a script writes is JSON in one schema (:func:`write_result`)::

    {"schema": "nnperf-bench-result/1", "method": "prediction", "concern": "held-out networks",
     "values": {...}, "spread": {...} or null, "machine": {"cpu", "vendor", "cores", "details", "versions",
     "environment"}, "commit": {"sha", "dirty"}, "command": ".venv/bin/python bench/x.py --json ...",
     "date": "2026-11-28T10:00:00+00:00", ...}

``values`` and ``spread`` hold the figures as the script has them; other keys are the script's own, among them
``headline``: the table(s) the script printed, as rows of header -> cell (:func:`table_rows`), and the figures a
summary quotes. A file lives in the folder of its method, ``bench/results/<method>/`` (:data:`METHODS`);
``bench/results_document.py`` builds RESULTS.md from these files.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
SCHEMA = "nnperf-bench-result/1"

METHODS = ("zoo", "measurement", "prediction", "steps", "primitives", "selection", "synthesis", "accel",
           "interference", "import", "fleet", "reliability", "reports", "runtimes", "suite", "verify", "adapt")
"""The methods and concerns a result belongs to, each a folder of bench/results/."""

REQUIRED = ("schema", "method", "concern", "values", "spread", "machine", "commit", "command", "date")
"""The keys every result file has."""


class ResultFileError(ValueError):
    """A result file that is not in the schema (its path and what is wrong, in one line)."""


# ------------------------------------------------------------------------------------------- formatting

def pct(value: float | None, digits: int = 1, signed: bool = False) -> str:
    """``value`` (a fraction) as a percentage: ``pct(0.1234)`` is '12.3%', ``pct(0.05, 0, signed=True)`` '+5%';
    '-' for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:{'+' if signed else ''}.{digits}%}"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right: Iterable[int] = ()) -> str:
    """A Markdown table of ``rows`` (cells as ``str`` gives them) under ``headers``; the columns whose indices are
    in ``right`` are right-aligned. No trailing newline."""
    aligned = set(right)
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if i in aligned else "---" for i in range(len(headers))) + "|"]
    for row in rows:
        cells = [str(cell) for cell in row]
        if len(cells) != len(headers):
            raise ValueError(f"a row of {len(cells)} cells under {len(headers)} headers: {cells}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None,
                right: Iterable[int] = ()) -> None:
    """Prints a table: drawn by rich on a terminal, else as Markdown (what a file the output goes to keeps), with
    ``title`` as a '###' heading before it."""
    rows = [[str(cell) for cell in row] for row in rows]
    right = tuple(right)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(*headers, title=title)
        for i in right:
            table.columns[i].justify = "right"
        for row in rows:
            table.add_row(*row)
        Console().print(table)
        return
    if title:
        print(f"\n### {title}\n")
    print(markdown_table(headers, rows, right), flush=True)


def table_rows(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[dict[str, str]]:
    """A printed table as a result file keeps it (its ``headline``): one dict per row, header -> cell text."""
    return [dict(zip(headers, map(str, row), strict=True)) for row in rows]


def log(message: str) -> None:
    """A progress line on stderr, with the time of day."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def progress_logger(label: str, every_s: float = 20.0) -> Callable[[str, int, int], None]:
    """A progress callback ``(what, done, total)`` that logs at most every ``every_s`` seconds, and at the end."""
    last = [0.0]

    def progress(what: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] > every_s or done == total:
            last[0] = now
            log(f"{label}: {done}/{total} {what}")

    return progress


def spread(values: Sequence[float]) -> float:
    """(max - min) / median of repeated figures; NaN for fewer than two."""
    if len(values) < 2:
        return float("nan")
    return (max(values) - min(values)) / statistics.median(values)


# ----------------------------------------------------------------------------------- machine and commit

def machine() -> dict[str, Any]:
    """This machine as a result records it: CPU model, vendor (with family and model), logical cores, the full
    CPU description, package versions, the environment variables that change measured times, and the GPU when
    torch is loaded and sees one."""
    from nnperf.measure import host_info

    host = host_info()
    vendor = next((part.split(" stepping ")[0] for part in host.cpu_details.split("; ") if " family " in part), "")
    found: dict[str, Any] = {"cpu": host.cpu_model, "vendor": vendor, "cores": host.logical_cores,
                             "details": host.cpu_details, "versions": dict(host.versions),
                             "environment": dict(host.allocator_env)}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        found["gpu"] = torch.cuda.get_device_name(0)
    return found


def commit() -> dict[str, Any]:
    """The repository's commit (``git rev-parse HEAD``) and whether tracked files differ from it; None for each
    when git cannot tell."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--untracked-files=no") if sha else None
    return {"sha": sha, "dirty": None if changes is None else bool(changes)}


def command() -> str:
    """The command line this process runs, the interpreter named relative to the working folder when it is
    under it."""
    interpreter = Path(sys.executable)
    try:
        shown = interpreter.relative_to(Path.cwd()).as_posix()
    except ValueError:
        shown = interpreter.name
    return shlex.join([shown, *sys.argv])


# ----------------------------------------------------------------------------------------- result files

def result_path(method: str, name: str) -> Path:
    """bench/results/<method>/<name>.json, the default place of a result."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: one of {', '.join(METHODS)}")
    return RESULTS / method / f"{name}.json"


def write_result(path: str | Path, *, method: str, concern: str, values: Any, spread: Any = None,
                 **extra: Any) -> dict[str, Any]:
    """Writes a result file (JSON, the schema in this module's docstring) to ``path``, replacing it at once (a
    script that writes after every step never leaves half a file), and returns the document. ``extra`` keys follow
    the schema's; the machine, commit, command and date are this process's."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: one of {', '.join(METHODS)}")
    clash = sorted(set(extra) & set(REQUIRED))
    if clash:
        raise ValueError(f"{', '.join(clash)}: set by write_result itself")
    document = {"schema": SCHEMA, "method": method, "concern": concern, "values": values, "spread": spread,
                "machine": machine(), "commit": commit(), "command": command(),
                "date": datetime.now().astimezone().isoformat(timespec="seconds"), **extra}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".part")
    temporary.write_text(json.dumps(document, indent=1, default=str) + "\n")
    os.replace(temporary, path)
    return document


def read_values(path: str | Path) -> Any:
    """The ``values`` of a result file, or the whole JSON of a file a script wrote before the schema existed (a
    finished run that a script reads back, as ``--rejudge`` does)."""
    document = json.loads(Path(path).read_text())
    return document["values"] if isinstance(document, Mapping) and document.get("schema") == SCHEMA else document


def read_result(path: str | Path) -> dict[str, Any]:
    """A result file, checked against the schema (:class:`ResultFileError` naming the file and the fault)."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ResultFileError(f"{path}: not a readable JSON file ({error})") from None
    if not isinstance(document, Mapping):
        raise ResultFileError(f"{path}: a result file holds a JSON object, not {type(document).__name__}")
    missing = [key for key in REQUIRED if key not in document]
    if missing:
        raise ResultFileError(f"{path}: not a bench result file (no {', '.join(missing)})")
    if document["schema"] != SCHEMA:
        raise ResultFileError(f"{path}: schema {document['schema']!r}, expected {SCHEMA!r}")
    if document["method"] not in METHODS:
        raise ResultFileError(f"{path}: unknown method {document['method']!r}")
    return dict(document)
