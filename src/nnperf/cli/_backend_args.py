"""Backend-choosing options shared by profile, calibrate and predict."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nnperf.api import System


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


BACKEND_HELP = ("torch, onnxruntime, opencv, or a deployment runtime: openvino, litert, executorch "
                "(see `nnperf backends`)")
PRIMITIVES_HELP = "primitives, this CPU's convolution primitives (the only system primitives are profiled on)"


def add_backend_arguments(parser: argparse.ArgumentParser, required: bool = False, default: str = "torch",
                          backend_help: str = BACKEND_HELP) -> None:
    """``--backend``, ``--device``, ``--threads`` and ``--option``: the settings of a system
    (:func:`system_from_args`)."""
    parser.add_argument("--backend", required=required, default=None if required else default, metavar="NAME",
                        help=backend_help + ("" if required else f"; default {default}"))
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    parser.add_argument("--threads", type=positive_int, default=1, help="intra-op threads (default 1, the quietest)")
    parser.add_argument("--option", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                        help="backend option, e.g. memory_format=channels_last (torch), opt_level=basic "
                             "(onnxruntime), engine=classic (opencv); repeatable")


def add_primitive_system_arguments(parser: argparse.ArgumentParser) -> None:
    """The settings of the primitive system (``--backend primitives``, ``--threads``) and ``--system ID|KEY``, a
    stored one."""
    add_backend_arguments(parser, default="primitives", backend_help=PRIMITIVES_HELP)
    parser.add_argument("--system", metavar="ID|KEY",
                        help="the stored primitive system (default: this CPU with --threads threads, else the only "
                             "one stored; see `nnperf systems`)")


def system_from_args(args: argparse.Namespace) -> System:
    """The :class:`nnperf.api.System` of ``--backend``, ``--device``, ``--threads`` and ``--option``."""
    from nnperf.api import System

    return System(args.backend, args.device, args.threads, dict(args.option))


class Progress:
    """A rich progress bar with an ETA on stderr (a no-op when ``enabled`` is false or stderr is no terminal,
    where a transient bar would leave only an empty line).

    Used as a context manager; it yields the ``(what, done, total)`` callback
    the measurement code reports through.
    """

    def __init__(self, enabled: bool, label: str = "profiling") -> None:
        self.enabled = enabled
        self.label = label
        self.bar = None
        self.task = None

    def __enter__(self):  # type: ignore[no-untyped-def]
        if not self.enabled:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        console = Console(stderr=True)
        if not console.is_terminal:
            return None
        self.bar = Progress(TextColumn("{task.description:<48}"), BarColumn(), MofNCompleteColumn(),
                            TimeRemainingColumn(), console=console, transient=True)
        self.bar.__enter__()
        self.task = self.bar.add_task(self.label, total=None)
        return self.update

    def update(self, what: str, done: int, total: int) -> None:
        assert self.bar is not None and self.task is not None
        self.bar.update(self.task, description=what[:48], completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
