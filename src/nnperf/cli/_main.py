"""Entry point: parses arguments, dispatches, turns errors into one-line messages."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import TextIO

from nnperf.cli._parser import build_parser
from nnperf.errors import NnperfError, NnperfWarning, ParameterError

EXIT_ERROR = 1
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE, what a shell reports for a pipeline member whose reader went away."""

RESUMABLE_COMMANDS = frozenset({"calibrate", "profile", "evaluate", "sweep"})
"""Commands that store every measurement as it is taken and resume where an interrupted one stopped."""


def interrupted_message(args: argparse.Namespace) -> str:
    """The one line printed on Ctrl-C: a measuring command says where its measurements are and how to resume."""
    if args.command not in RESUMABLE_COMMANDS:
        return "nnperf: interrupted"
    from nnperf.api import default_store_path

    db = getattr(args, "db", None) or default_store_path()
    return f"nnperf: interrupted; everything measured so far is saved in {db}; run the same command again to resume"


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the CLI; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # plain `nnperf`: what it can do, not a usage error
        parser.print_help()
        return 0
    try:
        with warnings.catch_warnings():  # restores the hook and the filters when the command ends
            warnings.simplefilter("always", NnperfWarning)
            warnings.showwarning = _show_warning
            code = int(args.run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers, not at interpreter exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except NnperfError as exc:
        if args.debug:
            traceback.print_exc()
        message = exc.worded(option_names(parser, args)) if isinstance(exc, ParameterError) else str(exc)
        print(f"nnperf: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(interrupted_message(args), file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a bare traceback
        if args.debug:
            traceback.print_exc()
        print(f"nnperf: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
              file=sys.stderr)
        return EXIT_INTERNAL


def option_names(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """How the command that ``args`` ran writes each of its arguments, by destination: an option by its longest
    name (``--client-power``), a positional argument by its metavar (``MODEL``). A command names its options after
    the parameters of the :mod:`nnperf.api` function it calls, so that a :class:`~nnperf.errors.ParameterError`
    reads with the options in a shell."""
    names: dict[str, str] = {}
    while True:
        commands = None
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                commands = action
            elif action.option_strings:
                names[action.dest] = max(action.option_strings, key=len)
            elif isinstance(action.metavar, str):
                names[action.dest] = action.metavar
        chosen = getattr(args, commands.dest, None) if commands is not None else None
        if chosen is None:
            return names
        parser = commands.choices[chosen]


_python_showwarning = warnings.showwarning


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """A choice nnperf made for the user as one line on stderr; any other warning as Python shows it."""
    if issubclass(category, NnperfWarning):
        print(f"nnperf: warning: {message}", file=sys.stderr)
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


def _reader_gone() -> int:
    """The reader of stdout stopped (``nnperf measurements export | head``): stop quietly, as a killed
    pipeline member would, with stdout pointed at /dev/null so the final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def entry_point() -> None:
    sys.exit(main())
