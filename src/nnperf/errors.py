"""Typed errors raised by the nnperf library.

The library raises these; only the CLI turns them into one-line messages and
exit codes (STYLE.md, habit 4).
"""

from __future__ import annotations

from collections.abc import Mapping


class NnperfError(Exception):
    """Base class of every error nnperf raises on purpose."""


class ParameterError(NnperfError, ValueError):
    """A bad value given to a public function, or a missing one: its message names the parameters at fault.

    The message is written with each parameter as ``{name}`` (listed in ``parameters``): ``str()`` gives it with
    the Python names, and the command line puts its own options in their place (:meth:`worded`), so that
    ``rounds must be at least 1`` from Python reads ``--rounds must be at least 1`` in a shell.
    """

    def __init__(self, template: str, *parameters: str) -> None:
        self.template = template
        self.parameters = parameters
        super().__init__(self.worded({}))

    def worded(self, names: Mapping[str, str]) -> str:
        """The message with each parameter written as ``names`` writes it (its Python name where absent)."""
        text = self.template
        for name in self.parameters:
            text = text.replace("{" + name + "}", names.get(name, name))
        return text


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
