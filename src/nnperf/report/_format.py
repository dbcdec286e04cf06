"""Number and shape formatting for display (SI inside the code, prefixes only here)."""

from __future__ import annotations

import csv
import io
import math
import os
import shlex
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnperf.errors import OutputFileError
from nnperf.ir import shape_text

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["FIGURE_DPI", "HOUSE_STYLE", "command_line", "console", "figure_metadata", "min_text_px", "png_bytes", "pyplot",
           "shape_text", "si", "write_png"]

FIGURE_DPI = 120
"""Pixels per inch of every PNG nnperf writes: a 6.4 in figure is 768 px wide, and a point of text is
120 / 72 = 1.67 px."""

HOUSE_STYLE: dict[str, Any] = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "xtick.labelsize": 8.5, "ytick.labelsize": 8.5,
    "legend.fontsize": 8, "figure.titlesize": 10,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.color": "0.88",
    "grid.linewidth": 0.6, "axes.axisbelow": True,
}
"""One plotting style for every figure: text of at least 8 pt (13 px at :data:`FIGURE_DPI`), light grid, no
top or right spine, a colour-blind-safe cycle (Okabe and Ito)."""

SMALLEST_TEXT_KEY = "Smallest text px"
"""The PNG text field holding the pixel height of a figure's smallest text at its own size: shown at width w,
a figure of natural width W has its smallest text at that times w / W pixels."""

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
"""The colour cycle of :data:`HOUSE_STYLE`."""


def si(count: float, unit: str = "") -> str:
    """A count with an SI prefix: 1.81 G, 11.7 M, 832 k, 64."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(count) >= factor:
            return f"{count / factor:.3g} {prefix}{unit}"
    text = f"{int(count)}" if float(count).is_integer() else f"{count:.3g}"
    return f"{text} {unit}".rstrip()


def signed_pct(fraction: float) -> str:
    """A signed fraction as a percentage with one decimal ('+12.3%'), 'n/a' when not finite."""
    return f"{fraction:+.1%}" if math.isfinite(fraction) else "n/a"


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
    """pyplot on the Agg backend (files only, no display) in nnperf's :data:`HOUSE_STYLE`, imported only when a
    figure is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from cycler import cycler

    plt.rcParams.update({**HOUSE_STYLE, "axes.prop_cycle": cycler(color=OKABE_ITO)})
    return plt


def command_line() -> str:
    """This process's command line as a shell would take it ('nnperf evaluate resnet18 --out eval/'; a Python
    program's own arguments otherwise)."""
    if sys.argv and Path(sys.argv[0]).name in {"nnperf", "__main__.py"}:
        return shlex.join(["nnperf", *sys.argv[1:]])
    return shlex.join(sys.argv)


def figure_metadata(title: str = "", **fields: str) -> dict[str, str]:
    """PNG text fields saying where a figure comes from: its title, the command line that drew it, the nnperf
    version, the time and this machine's CPU; ``fields`` add more (for example ``System``, ``Calibrated``).

    PNG keys are free text (Title, Software, Source, Creation Time and Comment are the registered ones); an
    image viewer's properties, ``exiftool`` or PIL's ``Image.open(path).text`` show them.
    """
    from importlib.metadata import version

    from nnperf.measure import cpu_details

    metadata = {
        "Title": title,
        "Software": f"nnperf {version('nnperf')}",
        "Source": command_line(),
        "Creation Time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "CPU": cpu_details(),
    }
    metadata.update(fields)
    return {key: value for key, value in metadata.items() if value}


def min_text_px(fig: Any) -> float:
    """The height in pixels, at :data:`FIGURE_DPI`, of the smallest visible text in ``fig`` (titles, labels,
    tick labels, legends, annotations): an HTML page shows the figure scaled by its width on screen over its
    width in pixels, and that times this is the smallest text a reader sees."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=0.0) * FIGURE_DPI / 72


def png_bytes(fig: Any, metadata: Mapping[str, str] | None = None) -> bytes:
    """The figure as PNG bytes (:data:`FIGURE_DPI`) with ``metadata`` (default :func:`figure_metadata` with the
    figure's title) in its text chunks, and the pixel height of its smallest text under
    :data:`SMALLEST_TEXT_KEY`; the figure is closed."""
    if metadata is None:
        metadata = figure_metadata(figure_title(fig))
    fig.canvas.draw()  # lay out first: the smallest text is measured on the drawn figure
    metadata = {**metadata, SMALLEST_TEXT_KEY: f"{min_text_px(fig):.1f}"}
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=FIGURE_DPI, metadata=metadata)
    pyplot().close(fig)
    return buffer.getvalue()


def figure_title(fig: Any) -> str:
    """The figure's title on one line: its suptitle, else its axes' titles."""
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        return " ".join(suptitle.get_text().split())
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    return " / ".join(" ".join(t.split()) for t in titles)


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


def write_png(fig: Any, path: Path, metadata: Mapping[str, str] | None = None) -> Path:
    """The figure written as a PNG file (parent folders created) with ``metadata`` (see :func:`png_bytes`); the
    figure is closed."""
    return write_bytes(path, png_bytes(fig, metadata))


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
