"""RESULTS.md, built from the result files under bench/results/ and the sections of bench/results_sections.yaml.

Run: .venv/bin/python bench/results_document.py > RESULTS.md

Each section of the YAML names its result files (``results``: file, and optionally ``as``, ``concern``, ``goal``,
``achieved``), its prose (``text``, ``after``) and its tables (``tables``: file alias, ``rows`` as a dotted path into
the result file, ``columns``). Cells and ``achieved`` are Python format strings over the result files, each under its
alias (the file's stem unless ``as`` names it), and, in a table, over the row's fields: ``{oracle[values][results]
[composed][kendall_tau]:.3f}``; a field that is None or NaN makes its cell '-'. A section with ``summary`` also gets a
row in the summary table at the top. Every section's headline table (goal, achieved, machine, date, commit, command,
raw file) comes from its result files' own records.

Adding a section for a new result file is one entry in the YAML. The document is checked by
tests/test_results_document.py: regenerated, it equals RESULTS.md, and every file it links exists.
"""

from __future__ import annotations

import argparse
import math
import re
import string
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from _shared import RESULTS, ROOT, markdown_table, read_result

SECTIONS = Path(__file__).resolve().parent / "results_sections.yaml"


class MissingValue(Exception):
    """A field of a cell is None or NaN: the cell is '-'."""


class Cells(string.Formatter):
    """Format strings over nested result files; a missing key names the file and the field."""

    def get_field(self, field_name: str, args: Any, kwargs: Mapping[str, Any]) -> tuple[Any, str]:
        first, rest = field_name.split("[", 1) if "[" in field_name else (field_name, "")
        try:
            value = kwargs[first]
            for key in re.findall(r"\[([^\]]*)\]", "[" + rest) if rest else []:
                value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise KeyError(f"no {field_name} ({error!r})") from None
        return value, first

    def format_field(self, value: Any, format_spec: str) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            raise MissingValue
        return super().format_field(value, format_spec)


def cell(spec: str, context: Mapping[str, Any]) -> str:
    """``spec`` formatted over ``context``; '-' when a field it needs is None or NaN."""
    try:
        return Cells().vformat(spec, (), context)
    except MissingValue:
        return "-"


def dig(document: Any, path: str) -> Any:
    """The part of ``document`` at a dotted path ('headline.rows')."""
    for key in path.split("."):
        document = document[int(key)] if isinstance(document, list) else document[key]
    return document


def slug(title: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return text.replace(" ", "-")


# ------------------------------------------------------------------------------------------------ records

def machine_text(machine: Mapping[str, Any]) -> str:
    """'AMD EPYC (AuthenticAMD family 25 model 17), 2 cores', with a GPU and a note where recorded."""
    cpu = machine.get("cpu") or "not recorded"
    vendor = machine.get("vendor")
    text = f"{cpu} ({vendor})" if vendor else cpu
    if machine.get("cores"):
        text += f", {machine['cores']} cores"
    if machine.get("gpu"):
        text += f", {machine['gpu']}"
    if machine.get("note"):
        text += f"; {machine['note']}"
    return text


def commit_text(commit: Mapping[str, Any]) -> str:
    sha = commit.get("sha")
    if not sha:
        return "not recorded"
    return f"{sha[:7]}{' (changed)' if commit.get('dirty') else ''}"


def link(path: Path) -> str:
    relative = path.relative_to(ROOT).as_posix()
    return f"[{path.relative_to(RESULTS).as_posix()}]({relative})"


# -------------------------------------------------------------------------------------------------- sections

def entries(section: Mapping[str, Any]) -> list[list[tuple[str, Path]]]:
    """Each result entry of the section as its files, (alias, path): ``file`` is a path or a list of them (runs of one
    concern), ``as`` their alias or aliases (default: each file's stem)."""
    found = []
    for entry in section.get("results", []):
        paths = [entry["file"]] if isinstance(entry["file"], str) else entry["file"]
        aliases = entry.get("as", [Path(p).stem for p in paths])
        aliases = [aliases] if isinstance(aliases, str) else aliases
        found.append([(alias, RESULTS / path) for alias, path in zip(aliases, paths, strict=True)])
    return found


def load(section: Mapping[str, Any]) -> dict[str, tuple[Path, dict[str, Any]]]:
    """The section's result files by alias: (path, document)."""
    return {alias: (path, read_result(path)) for files in entries(section) for alias, path in files}


def joined(values: list[str]) -> str:
    """The distinct values, in order, joined by '; '."""
    return "; ".join(dict.fromkeys(values))


def headline(section: Mapping[str, Any], files: Mapping[str, tuple[Path, dict[str, Any]]]) -> str:
    """The section's table of goal, achieved, machine, date, commit, command and raw files, a row per result entry
    (the distinct records of its files where it has several)."""
    context = {alias: document for alias, (_, document) in files.items()}
    rows = []
    for entry, found in zip(section.get("results", []), entries(section), strict=True):
        documents = [files[alias][1] for alias, _ in found]
        rows.append([cell(entry.get("concern", documents[0]["concern"]), context),
                     entry.get("goal", section.get("goal", "-")),
                     cell(entry.get("achieved", "-"), context), joined([machine_text(d["machine"]) for d in documents]),
                     joined([str(d["date"])[:10] for d in documents]),
                     joined([commit_text(d["commit"]) for d in documents]),
                     joined([f"`{d['command']}`" for d in documents]), ", ".join(link(path) for _, path in found)])
    return markdown_table(["concern", "goal", "achieved", "machine", "date", "commit", "command", "raw"], rows)


def table(spec: Mapping[str, Any], files: Mapping[str, tuple[Path, dict[str, Any]]]) -> str:
    """One table of a section: ``rows`` of the file ``file`` (an alias, or a list of them whose rows follow each
    other), each column a row's key (its header) or {header: key or format string over the row's fields and the
    section's files}."""
    context = {alias: document for alias, (_, document) in files.items()}
    columns = [(column, column) if isinstance(column, str) else next(iter(column.items()))
               for column in spec["columns"]]
    cells = []
    aliases = [spec["file"]] if isinstance(spec["file"], str) else spec["file"]
    for row in (row for alias in aliases for row in dig(files[alias][1], spec["rows"])):
        line = []
        for _, form in columns:
            if "{" in form:
                line.append(cell(form, {**context, **row}))
            else:
                line.append("-" if row.get(form) is None else str(row[form]))
        cells.append(line)
    return markdown_table([header for header, _ in columns], cells, spec.get("right", ()))


def section_text(section: Mapping[str, Any]) -> str:
    """A section: its heading, ``text``, headline table, ``tables`` and ``after``; the prose is a format string over
    the section's files too (a literal brace doubled)."""
    files = load(section)
    context = {alias: document for alias, (_, document) in files.items()}
    parts = [f"{'#' * section.get('level', 2)} {section['title']}"]
    if section.get("text"):
        parts.append(cell(section["text"].strip(), context))
    if files:
        parts.append(headline(section, files))
    for spec in section.get("tables", []):
        parts.append(table(spec, files))
    if section.get("after"):
        parts.append(cell(section["after"].strip(), context))
    return "\n\n".join(parts)


def summary(sections: list[Mapping[str, Any]]) -> str:
    rows = []
    for section in sections:
        if "summary" not in section:
            continue
        files = load(section)
        context = {alias: document for alias, (_, document) in files.items()}
        entry = section["summary"]
        rows.append([f"[{entry['name']}](#{slug(section['title'])})", entry.get("goal", section.get("goal", "-")),
                     cell(entry["achieved"], context), entry.get("met", "-")])
    return markdown_table(["method or concern", "goal", "achieved", "met"], rows)


def document(sections_path: Path = SECTIONS) -> str:
    """RESULTS.md as the sections and the result files make it."""
    spec = yaml.safe_load(sections_path.read_text())
    sections = spec["sections"]
    parts = [f"# {spec['title']}", spec["intro"].strip(), "## Summary", summary(sections)]
    parts += [section_text(section) for section in sections]
    return "\n\n".join(parts) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", type=Path, default=SECTIONS, help="the sections file (default: %(default)s)")
    args = parser.parse_args()
    try:
        sys.stdout.write(document(args.sections))
    except (KeyError, ValueError, OSError) as error:
        print(f"results_document: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
