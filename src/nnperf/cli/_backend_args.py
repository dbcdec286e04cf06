"""Backend-choosing options shared by profile, calibrate and predict."""

from __future__ import annotations

import argparse

from nnperf.measure.backends import Backend


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


def add_backend_arguments(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument("--backend", required=required, default=None if required else "torch", metavar="NAME",
                        help="torch, onnxruntime or opencv (see `nnperf backends`)"
                             + ("" if required else "; default torch"))
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    parser.add_argument("--threads", type=positive_int, default=1, help="intra-op threads (default 1, the quietest)")
    parser.add_argument("--option", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                        help="backend option, e.g. memory_format=channels_last (torch), opt_level=basic "
                             "(onnxruntime), engine=classic (opencv); repeatable")


def backend_from_args(args: argparse.Namespace) -> Backend:
    from nnperf.measure.backends import BackendOptions, create_backend

    return create_backend(args.backend, BackendOptions(device=args.device, threads=args.threads,
                                                       extra=dict(args.option)))


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
