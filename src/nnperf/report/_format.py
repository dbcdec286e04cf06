"""Number and shape formatting for display (SI inside the code, prefixes only here)."""

from __future__ import annotations

import csv
import io
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnperf.errors import OutputFileError
from nnperf.ir import shape_text

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["console", "png_bytes", "pyplot", "shape_text", "si", "write_png"]


def si(count: float, unit: str = "") -> str:
    """A count with an SI prefix: 1.81 G, 11.7 M, 832 k, 64."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(count) >= factor:
            return f"{count / factor:.3g} {prefix}{unit}"
    text = f"{int(count)}" if float(count).is_integer() else f"{count:.3g}"
    return f"{text} {unit}".rstrip()


def console() -> Console:
    """A console for stdout; as wide as ``COLUMNS`` says, else the terminal, else (piped) 200 columns so
    tables do not wrap in logs.

    Markup is off: names such as 'torch/cpu[threads=1]' print as they are.
    Styles go through ``rich.text.Text`` instead. rich is imported here, not with the package, so that
    ``import nnperf.report`` stays cheap.
    """
    from rich.console import Console

    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else None if sys.stdout.isatty() else 200
    return Console(width=width, soft_wrap=False, markup=False)


def pyplot() -> Any:
    """pyplot on the Agg backend (files only, no display), imported only when a figure is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig: Any) -> bytes:
    """The figure as PNG bytes (120 dpi); the figure is closed."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    pyplot().close(fig)
    return buffer.getvalue()


def write_csv(path: str | Path, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """A CSV file of ``columns`` and ``rows``, cells as the store's export writes them (:func:`csv_cell`: empty
    for None, text a spreadsheet would run as a formula quoted); returns the rows written, header excluded."""
    from nnperf.store import csv_cell

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
        count += 1
    write_bytes(path, text.getvalue().encode("utf-8"))
    return count


def write_png(fig: Any, path: Path) -> Path:
    """The figure written as a PNG file (parent folders created); the figure is closed."""
    return write_bytes(path, png_bytes(fig))


def write_bytes(path: str | Path, data: bytes) -> Path:
    """``data`` written to ``path`` (parent folders created); an :class:`OutputFileError` naming the path, and
    the part of it that is in the way, when it cannot be."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        # mkdir fails on the folder (a file of that name), write_bytes on the file itself (a folder)
        if isinstance(exc, FileExistsError | NotADirectoryError) and str(exc.filename) != str(path):
            reason = f"{exc.filename} is a file, not a folder"
        else:
            culprit = f"{exc.filename}: " if exc.filename and str(exc.filename) != str(path) else ""
            reason = f"{culprit}{exc.strerror or exc}"
        raise OutputFileError(f"cannot write {path}: {reason}") from None
    return path
