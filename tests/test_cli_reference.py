"""docs/cli.md is the command line's reference as the parser gives it now: generated, never edited by hand."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from nnperf.cli._parser import COMMANDS, build_parser
from nnperf.cli._reference import REGENERATE, render_reference

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "cli.md"


def test_docs_cli_md_is_the_reference_the_parser_gives() -> None:
    committed = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    assert committed == render_reference(), (
        f"docs/cli.md is not the reference of the parser as it is now; regenerate it: .venv/bin/{REGENERATE}")


def test_the_reference_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    narrow = render_reference()
    monkeypatch.setenv("COLUMNS", "250")
    assert render_reference() == narrow


def test_every_command_and_subcommand_has_a_section() -> None:
    text = render_reference()
    for module in COMMANDS:
        command = module.__name__.rsplit(".", 1)[1].removesuffix("_cmd")
        assert f"\n## `nnperf {command}`\n" in text, command
    for nested in ("nnperf steps fit", "nnperf accel energy", "nnperf primitives transfer", "nnperf fleet up",
                   "nnperf measurements export"):
        assert f"\n### `{nested}`\n" in text, nested


def test_a_section_has_the_usage_description_and_every_option() -> None:
    parser = argparse.ArgumentParser(prog="tool")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser("run", help="run it", description="Run the thing.", epilog="examples: tool run x")
    run.add_argument("model", metavar="MODEL", help="what to run")
    run.add_argument("--system", metavar="ID|KEY", help="which system | stored")
    run.add_argument("--verify", action="store_true", help="also measure")
    text = render_reference(parser)
    assert "## `tool run`\n\n```text\nusage: tool run [-h] [--system ID|KEY] [--verify] MODEL\n```" in text
    assert "Run the thing.\n\nexamples: tool run x\n" in text
    assert "| `MODEL` | what to run |" in text
    assert "| `--system ID\\|KEY` | which system \\| stored |" in text  # a pipe would split the table's cell
    assert "| `--verify` | also measure |" in text
    assert "| [`tool run`](#tool-run) | run it |" in text


def test_the_default_parser_is_nnperf_s() -> None:
    assert render_reference() == render_reference(build_parser())
