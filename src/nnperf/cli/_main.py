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
from nnperf.errors import NnperfError, NnperfWarning

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
    from nnperf.store import default_store_path

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
        print(f"nnperf: error: {exc}", file=sys.stderr)
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
