"""Typed errors raised by the nnperf library.

The library raises these; only the CLI turns them into one-line messages and
exit codes (STYLE.md, habit 4).
"""

from __future__ import annotations


class NnperfError(Exception):
    """Base class of every error nnperf raises on purpose."""


class NnperfWarning(UserWarning):
    """A choice nnperf made for the user that they should know of (the CLI prints it as ``nnperf: warning:``)."""


class UnknownModelError(NnperfError):
    """A model name that is neither in the zoo nor a readable file."""


class InvalidNetworkError(NnperfError):
    """A network that breaks an IR rule (bad shape, dangling producer, ...)."""


class ImplausibleSizeError(InvalidNetworkError):
    """A layer or network larger than the plausibility bounds (:class:`nnperf.ir.SizeLimits`)."""


class ModelFileError(NnperfError):
    """A model file that is missing, truncated, malformed or of the wrong kind."""


class ShapeInferenceError(NnperfError):
    """Tensor shapes of a model that cannot be inferred statically."""


class UnsupportedOperatorError(NnperfError):
    """One or more operators that nnperf cannot represent.

    ``operators`` maps each unsupported operator to the node names that use it,
    so a user sees every problem at once instead of one per run.
    """

    def __init__(self, source: str, operators: dict[str, list[str]]) -> None:
        self.source = source
        self.operators = {op: list(nodes) for op, nodes in operators.items()}
        parts = []
        for op, nodes in sorted(self.operators.items()):
            shown = ", ".join(nodes[:5]) + (f", ... ({len(nodes)} in all)" if len(nodes) > 5 else "")
            parts.append(f"{op} ({shown})")
        super().__init__(f"{source}: unsupported operator(s): " + "; ".join(parts))


class FormatVersionError(NnperfError):
    """A stored file written by an unknown (usually newer) format version."""


class StoreError(NnperfError):
    """A measurement store that cannot be opened, read or written.

    Raised for a missing folder, a file that is not an nnperf store, a store
    written by a newer nnperf (schema version), or a write that stayed locked.
    """


class MissingStoreError(StoreError):
    """A command that only reads was pointed at a store file that does not exist (none is created)."""


class OutputFileError(NnperfError):
    """An output file (a figure, a report) that cannot be written: its path names a folder, or a
    parent folder's path names a file, or the folder is not writable."""


class InsufficientMemoryError(NnperfError):
    """Building a network or layer for measurement would need more memory than the machine has free."""
