"""The ``nnperf`` command line: one module per subcommand."""

from nnperf.cli._main import main

__all__ = ["main"]
