"""``nnperf completion SHELL``: a tab-completion script for bash, zsh or tcsh (made by shtab from the parser)."""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "tcsh")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh, tcsh)",
                       description="Print a tab-completion script for nnperf's commands and options. Load it in "
                                   "the current shell with `eval \"$(nnperf completion bash)\"`, or write it where "
                                   "your shell reads completions, e.g. `nnperf completion zsh > "
                                   "~/.zfunc/_nnperf`.")
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help=f"one of {', '.join(SHELLS)}")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import shtab

    print(shtab.complete(args.root_parser, shell=args.shell), end="")
    return 0
