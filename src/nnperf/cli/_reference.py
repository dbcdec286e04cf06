"""The command line's reference as Markdown, generated from its parser: ``docs/cli.md``.

``python -m nnperf.cli._reference > docs/cli.md`` writes it, and ``tests/test_cli_reference.py`` checks that the
committed file is what the parser gives now. Every command and subcommand gets a section with its usage, its
description and a table of its arguments. Usage lines are argparse's own, wrapped at a fixed width (:data:`WIDTH`)
rather than the terminal's, and the tables are written here rather than by argparse's help formatter, so the text is
the same in any terminal.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

WIDTH = 100
"""The columns argparse wraps usage lines at (as if ``COLUMNS=100``)."""

REGENERATE = "python -m nnperf.cli._reference > docs/cli.md"
"""The command that writes the reference."""


def render_reference(parser: argparse.ArgumentParser | None = None) -> str:
    """The Markdown reference of every command of ``parser`` (default: nnperf's own)."""
    if parser is None:
        from nnperf.cli._parser import build_parser

        parser = build_parser()
    commands = list(_subcommands(parser, depth=2))
    intro = (f"Generated from the parser (`src/nnperf/cli/_parser.py` and the `*_cmd.py` module of each command) "
             f"by `{REGENERATE}`; do not edit it by hand. In a terminal, `nnperf COMMAND --help` gives each "
             "command's help.")
    lines = ["# Command-line reference", "", intro, "",
             *_usage(parser), parser.description or "", "", *_arguments(parser),
             "| command | what it does |", "|---|---|"]
    lines += [f"| [`{sub.prog}`](#{_anchor(sub.prog)}) | {_cell(summary)} |" for _, summary, sub in commands]
    lines.append("")
    for depth, summary, sub in commands:
        lines += _section(depth, summary, sub)
    return "\n".join(lines).rstrip("\n") + "\n"


def _subcommands(parser: argparse.ArgumentParser, depth: int) -> Iterator[tuple[int, str, argparse.ArgumentParser]]:
    """(heading depth, one-line help, parser) of every subcommand under ``parser``, depth first, in the order the
    parser lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                sub = action.choices[choice.dest]
                yield depth, choice.help or "", sub
                yield from _subcommands(sub, depth + 1)


def _section(depth: int, summary: str, parser: argparse.ArgumentParser) -> list[str]:
    lines = [f"{'#' * depth} `{parser.prog}`", "", *_usage(parser)]
    lines += [parser.description or summary, ""]
    if parser.epilog:
        lines += [parser.epilog, ""]
    lines += _arguments(parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            lines += ["| subcommand | what it does |", "|---|---|"]
            lines += [f"| [`{parser.prog} {choice.dest}`](#{_anchor(f'{parser.prog} {choice.dest}')}) | "
                      f"{_cell(choice.help or '')} |" for choice in action._choices_actions]
            lines.append("")
    return lines


def _usage(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser.formatter_class(prog=parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return ["```text", formatter.format_help().strip("\n"), "```", ""]


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    """The table of ``parser``'s arguments (its help option and subcommands left out), empty when it has none."""
    formatter = parser.formatter_class(prog=parser.prog, width=WIDTH)
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            invocation = ", ".join(action.option_strings)
            if action.nargs != 0:
                invocation += " " + formatter._format_args(action, action.dest.upper())
        else:
            invocation = formatter._format_args(action, action.dest)
        rows.append(f"| `{_cell(invocation)}` | {_cell(formatter._expand_help(action) if action.help else '')} |")
    return ["| argument | meaning |", "|---|---|", *rows, ""] if rows else []


def _cell(text: str) -> str:
    """``text`` on one line of a Markdown table cell (a pipe escaped, in a code span too, as GitHub's tables need)."""
    return " ".join(text.split()).replace("|", "\\|")


def _anchor(prog: str) -> str:
    """The anchor GitHub gives the heading `` `PROG` ``: lower case, spaces to hyphens."""
    return prog.lower().replace(" ", "-")


if __name__ == "__main__":
    sys.stdout.write(render_reference())
