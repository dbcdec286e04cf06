"""An evaluation as tables (Table I and II of PreVIous), figures (Fig. 5 and 7), a per-layer CSV and one
self-contained HTML file with where its numbers come from.

Two "measured" times appear side by side, and every column says which it is: Table I sums the layers each
measured in isolation (``measured_layer_sum_s``); the network table and Fig. 7 use the whole network run as one
(``measured_s``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.table import Table
from rich.text import Text

from nnperf.prediction.evaluation import SHARE_TOLERANCES, Evaluation, method_label, reading_advice
from nnperf.report._format import (
    figure_metadata,
    figure_title,
    min_text_px,
    png_bytes,
    si,
    signed_pct,
    write_bytes,
    write_csv,
)
from nnperf.report.evaluation_figures import Figure
from nnperf.report.measurements import ms
from nnperf.report.provenance import Provenance

LAYER_SUM_MEASURED = "sum of isolated layers ms"
LAYER_SUM_PREDICTED = "sum of layer predictions ms"
WHOLE_MEASURED = "whole network ms (measured)"
LAYER_MEASURED = "isolated layer ms (measured)"
LAYER_PREDICTED = "layer predicted ms"

LAYER_CSV_COLUMNS = ("system", "system_key", "network", "run_id", "layer", "op", "model", "measured_s",
                     "predicted_s", "error")
"""The header of :func:`write_layer_csv`: seconds; ``measured_s`` is the layer's isolated median,
``error`` = predicted_s / measured_s - 1 (a fraction)."""


# -- terminal ----------------------------------------------------------------------------------------------------
def table1(evaluation: Evaluation) -> Table:
    """PreVIous' Table I: summed measured and predicted layer times per network, with the error."""
    table = Table(title=Text(f"Table I: per-layer predictions summed (Eq. 5) on {evaluation.system}"),
                  title_justify="left", show_footer=True)
    table.add_column("network", footer="average (absolute values)")
    table.add_column("layers", justify="right")
    table.add_column(f"{LAYER_SUM_MEASURED} (t)", justify="right")
    table.add_column(f"{LAYER_SUM_PREDICTED} (t-hat)", justify="right")
    table.add_column("error", justify="right", footer=f"{evaluation.table2_error:.2%}")
    for row in _table1_rows(evaluation):
        table.add_row(*row)
    return table


def _table1_rows(evaluation: Evaluation) -> list[list[str]]:
    return [[n.network, str(len(n.layers)), ms(n.measured_layer_sum_s), ms(n.predicted_layer_sum_s),
             signed_pct(n.layer_sum_error)] for n in evaluation.networks]


def _table2_row(evaluation: Evaluation) -> list[str]:
    errors = evaluation.layer_errors
    return [evaluation.system, f"{evaluation.table2_error:.2%}", str(len(errors)), f"{errors.mean():.1%}",
            f"{float(np.median(errors)):.1%}"]


TABLE2_COLUMNS = ("system", "Table II (mean |Table I error|)", "layers", "mean |layer error|",
                  "median |layer error|")


def table2(evaluation: Evaluation) -> Table:
    """PreVIous' Table II, with nnperf's per-layer error statistics beside it."""
    table = Table(title=Text("Table II: average per-layer absolute prediction error"), title_justify="left")
    for column in TABLE2_COLUMNS:
        table.add_column(column, justify="left" if column == "system" else "right")
    table.add_row(*_table2_row(evaluation))
    return table


def network_table(evaluation: Evaluation) -> Table:
    """Fig. 7 as a table: whole-network measured against every method, with the errors and the summary."""
    table = Table(title=Text(f"network latency: measured whole network vs predicted on {evaluation.system}"),
                  title_justify="left", show_footer=True)
    table.add_column("network", footer="MAPE / within +/-5% / +/-10%")
    table.add_column("MACs", justify="right")
    table.add_column(WHOLE_MEASURED, justify="right", footer="spread (IQR)")
    table.add_column("IQR", justify="right", footer=f"{evaluation.measurement_spread:.1%}")
    for method in evaluation.methods:
        table.add_column(f"{method_label(method)} ms", justify="right")
        table.add_column("error", justify="right",
                         footer=f"{evaluation.mape(method):.1%} / {evaluation.within(method, 0.05):.0%} / "
                                f"{evaluation.within(method, 0.10):.0%}")
    for n in evaluation.networks:
        row = [n.network, si(n.macs), ms(n.measured_s), f"{n.measured_spread:.1%}"]
        for method in evaluation.methods:
            row += [ms(n.predicted_s[method]), signed_pct(n.error(method))]
        table.add_row(*row)
    return table


def summary_lines(evaluation: Evaluation) -> list[str]:
    """The evaluation's verdict in lines: a caution first where the noise can overturn it, then each method's
    MAPE and shares within +/-5% and +/-10%, raw and (where timed beside the reference) speed-adjusted, which of
    the two to read, and the prediction time."""
    lines = [f"caution: {warning}" for warning in evaluation.noise().warnings]
    count = len(evaluation.networks)
    for m in evaluation.methods:
        adjusted = evaluation.adjusted_mape(m)
        lines.append(f"{method_label(m)}: network MAPE {evaluation.mape(m):.1%}, {_shares(evaluation.within, m)} "
                     f"of {count} networks"
                     + (f"; against the speed-adjusted measurements MAPE {adjusted:.1%}, "
                        f"{_shares(evaluation.adjusted_within, m)}" if adjusted is not None else ""))
    advice = reading_advice(evaluation.speed_drifts)
    if advice is not None:
        lines.append(advice)
    times = [n.prediction_time_s for n in evaluation.networks]
    lines.append(f"prediction time per network: median {float(np.median(times)) * 1e3:.2f} ms, "
                 f"max {max(times) * 1e3:.2f} ms")
    return lines


def _shares(share: Callable[[str, float], float | None], method: str) -> str:
    """'within +/-5% 50%, +/-10% 75%': ``share(method, tolerance)`` for each of :data:`SHARE_TOLERANCES`."""
    return "within " + ", ".join(f"+/-{t:.0%} {share(method, t) or 0.0:.0%}" for t in SHARE_TOLERANCES)


# -- CSV ---------------------------------------------------------------------------------------------------------
def write_layer_csv(evaluation: Evaluation, path: str | Path, system_key: str = "") -> int:
    """Every layer of every network as one CSV row (:data:`LAYER_CSV_COLUMNS`, seconds); returns the rows
    written, header excluded. Raises :class:`OutputFileError` when ``path`` cannot be written."""
    rows = [(evaluation.system, system_key, n.network, n.run_id, c.layer, c.op, c.key, c.measured_s, c.predicted_s,
             c.error) for n in evaluation.networks for c in n.layers]
    return write_csv(path, LAYER_CSV_COLUMNS, rows)


# -- files -------------------------------------------------------------------------------------------------------
def report_figures(evaluation: Evaluation, provenance: Provenance | None = None) -> dict[str, Figure]:
    """Fig. 5 and 7 by file name, each rendered for a laptop and a phone, as PNGs whose metadata says where
    they come from (title, command line, system, calibration, CPU)."""
    from nnperf.report.evaluation_figures import figures

    fields = {"System": evaluation.system}
    if provenance is not None:
        fields.update({"CPU": provenance.cpu, "Calibrated": provenance.calibrated, "Source": provenance.command,
                       "Measured": provenance.measured})
    rendered: dict[str, dict[str, tuple[bytes, float]]] = {}
    for width in ("wide", "narrow"):
        for name, fig in figures(evaluation, width).items():
            metadata = figure_metadata(figure_title(fig), **{k: v for k, v in fields.items() if v})
            smallest = min_text_px(fig)
            rendered.setdefault(name, {})[width] = (png_bytes(fig, metadata), smallest)
    return {name: Figure(r["wide"][0], r["narrow"][0], r["wide"][1], r["narrow"][1]) for name, r in rendered.items()}


def write_report(evaluation: Evaluation, out_dir: Path, provenance: Provenance | None = None) -> list[Path]:
    """fig5_layers.png, fig7_networks.png (the laptop renderings) and report.html (both renderings embedded) in
    ``out_dir``.

    ``provenance`` (see :func:`provenance`) adds the block that says where the numbers come from, and the same
    in the PNGs' metadata.
    """
    from nnperf.report.evaluation_html import report_html

    rendered = report_figures(evaluation, provenance)
    paths = [write_bytes(out_dir / name, figure.wide_png) for name, figure in rendered.items()]
    paths.append(write_bytes(out_dir / "report.html", report_html(evaluation, rendered, provenance).encode("utf-8")))
    return paths


