"""An evaluation as tables (Table I and II of PreVIous), figures (Fig. 5 and 7), a per-layer CSV and one
self-contained HTML file with where its numbers come from.

Two "measured" times appear side by side, and every column says which it is: Table I sums the layers each
measured in isolation (``measured_layer_sum_s``); the network table and Fig. 7 use the whole network run as one
(``measured_s``).
"""

from __future__ import annotations

import base64
import html
import math
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from nnperf.prediction.evaluation import Evaluation, NetworkComparison, method_description, method_label
from nnperf.report._format import png_bytes, pyplot, si, write_csv
from nnperf.report.measurements import ms
from nnperf.store import RunRecord, Store, SystemRecord

LAYER_SUM_MEASURED = "sum of isolated layers ms"
LAYER_SUM_PREDICTED = "sum of layer predictions ms"
WHOLE_MEASURED = "whole network ms (measured)"
LAYER_MEASURED = "isolated layer ms (measured)"
LAYER_PREDICTED = "layer predicted ms"

LAYER_CSV_COLUMNS = ("system", "system_key", "network", "run_id", "layer", "op", "model", "measured_s",
                     "predicted_s", "error")
"""The header of :func:`write_layer_csv`: seconds; ``measured_s`` is the layer's isolated median,
``error`` = predicted_s / measured_s - 1 (a fraction)."""


def _pct(value: float) -> str:
    return f"{value:+.1%}"


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
             _pct(n.layer_sum_error)] for n in evaluation.networks]


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
    table.add_column("network", footer="MAPE / within +/-10%")
    table.add_column("MACs", justify="right")
    table.add_column(WHOLE_MEASURED, justify="right", footer="spread (IQR)")
    table.add_column("IQR", justify="right", footer=f"{evaluation.measurement_spread:.1%}")
    for method in evaluation.methods:
        table.add_column(f"{method_label(method)} ms", justify="right")
        table.add_column("error", justify="right",
                         footer=f"{evaluation.mape(method):.1%} / {evaluation.within(method):.0%}")
    for n in evaluation.networks:
        row = [n.network, si(n.macs), ms(n.measured_s), f"{n.measured_spread:.1%}"]
        for method in evaluation.methods:
            row += [ms(n.predicted_s[method]), _pct(n.error(method))]
        table.add_row(*row)
    return table


def summary_lines(evaluation: Evaluation) -> list[str]:
    lines = []
    for m in evaluation.methods:
        adjusted = evaluation.adjusted_mape(m)
        lines.append(f"{method_label(m)}: network MAPE {evaluation.mape(m):.1%}"
                     + (f" ({adjusted:.1%} against the speed-adjusted measurements)" if adjusted is not None else "")
                     + f", within +/-10% {evaluation.within(m):.0%} of {len(evaluation.networks)} networks")
    times = [n.prediction_time_s for n in evaluation.networks]
    lines.append(f"prediction time per network: median {float(np.median(times)) * 1e3:.2f} ms, "
                 f"max {max(times) * 1e3:.2f} ms")
    return lines


# -- CSV ---------------------------------------------------------------------------------------------------------
def write_layer_csv(evaluation: Evaluation, path: str | Path, system_key: str = "") -> int:
    """Every layer of every network as one CSV row (:data:`LAYER_CSV_COLUMNS`, seconds); returns the rows
    written, header excluded. Raises :class:`OutputFileError` when ``path`` cannot be written."""
    rows = [(evaluation.system, system_key, n.network, n.run_id, c.layer, c.op, c.key, c.measured_s, c.predicted_s,
             c.error) for n in evaluation.networks for c in n.layers]
    return write_csv(path, LAYER_CSV_COLUMNS, rows)


# -- provenance --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Provenance:
    """Where an evaluation's numbers come from: the stored system (with its host), the store runs of the
    measurements, and the nnperf that wrote the report. ``generated_at`` is Unix time (seconds)."""

    system: SystemRecord
    runs: tuple[RunRecord, ...]
    nnperf_version: str
    generated_at: float
    store_path: str = ""

    def fields(self, evaluation: Evaluation) -> list[tuple[str, str]]:
        """(label, value) pairs for display, in reading order; only fields the store holds."""
        host = self.system.host
        versions = host.get("versions") or {}
        allocator = host.get("allocator_env") or {}
        options = self.system.options
        run_of = {r.id: r for r in self.runs}
        started = [r.started_at for r in self.runs]
        finished = [r.finished_at for r in self.runs if r.finished_at is not None]
        calibration_runs = evaluation.calibration.get("runs") or []
        pairs = [
            ("report generated", _date(self.generated_at)),
            ("nnperf version", self.nnperf_version),
            ("system", f"{self.system.label} (id {self.system.id}, key {self.system.key[:12]})"),
            ("backend", self.system.backend),
            ("device", f"{self.system.device} ({self.system.device_name})"),
            ("threads", options.get("threads", "not set")),
            ("backend options", ", ".join(f"{k}={v}" for k, v in options.items()) or "none"),
            ("package versions (when measured)", ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
             or "not recorded"),
            ("CPU model", str(host.get("cpu_model") or "not recorded")),
            ("logical cores", str(host.get("logical_cores", "not recorded"))),
            ("CPU frequency governor", str(host.get("governor") or "not recorded")),
            ("host name", str(host.get("hostname") or "not recorded")),
            ("operating system", str(host.get("os") or "not recorded")),
            ("Python", str(host.get("python") or "not recorded")),
            ("allocator environment", ", ".join(f"{k}={v}" for k, v in sorted(allocator.items())) or "none set"),
            ("measured", f"{_date(min(started))} to {_date(max(finished))}" if started and finished
             else "unknown"),
            ("evaluation runs (store run ids)", ", ".join(
                f"{n.network}: run {n.run_id}" + (f" ({run_of[n.run_id].status})" if n.run_id in run_of else "")
                for n in evaluation.networks)),
            ("calibration runs (store run ids)", ", ".join(str(r) for r in calibration_runs) or "not recorded"),
        ]
        if self.store_path:
            pairs.append(("store", self.store_path))
        return pairs


def _date(unix_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(unix_s))


def provenance(store: Store, evaluation: Evaluation, nnperf_version: str,
               generated_at: float | None = None) -> Provenance:
    """The provenance of ``evaluation`` read from ``store``: the system of its runs and the runs themselves.

    ``generated_at`` (Unix time, seconds) defaults to now. Raises :class:`StoreError` for a run id the store
    lacks; an evaluation without run ids has no provenance to read (a :class:`ValueError`).
    """
    ids = [n.run_id for n in evaluation.networks if n.run_id is not None]
    if not ids:
        raise ValueError("the evaluation names no store runs")
    runs = tuple(store.run(i) for i in dict.fromkeys(ids))
    return Provenance(store.system(runs[0].system_id), runs, nnperf_version,
                      time.time() if generated_at is None else generated_at, str(store.path))


# -- figures -----------------------------------------------------------------------------------------------------
def _fit_title(fig: Any, title: str, fontsize: float = 9) -> None:
    """``title`` above the figure, wrapped onto more lines until it is narrower than the figure: constrained
    layout makes room above a title but never beside it, so a long system label ran off both sides."""
    renderer = fig.canvas.get_renderer()
    text = fig.suptitle(title, fontsize=fontsize)
    width = len(title)
    while text.get_window_extent(renderer).width > 0.96 * fig.bbox.width and width > 12:
        width = int(width * 0.85)
        text.set_text(textwrap.fill(title, width))


def _error_limits(values_pct: Sequence[float], margin: float = 0.12, floor_pct: float = 1.0) -> tuple[float, float]:
    """y limits for errors in percent: the finite values and 0, widened by ``margin`` of the span on each side
    (at least ``floor_pct``), so that a small error fills the plot instead of a fixed +/-100%."""
    finite = [v for v in values_pct if math.isfinite(v)]
    low, high = min([0.0, *finite]), max([0.0, *finite])
    pad = max(margin * (high - low), floor_pct)
    return low - pad, high + pad


def _figure_5(evaluation: Evaluation):  # type: ignore[no-untyped-def]
    """Fig. 5: predicted against measured per layer, log axes, one colour per layer type, ideal line."""
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6.4, 6.0), layout="constrained")
    by_key: dict[str, tuple[list[float], list[float]]] = {}
    for n in evaluation.networks:
        for layer in n.layers:
            if layer.measured_s > 0 and layer.predicted_s > 0:
                xs, ys = by_key.setdefault(layer.key, ([], []))
                xs.append(layer.measured_s * 1e3)
                ys.append(layer.predicted_s * 1e3)
    everything = [v for xs, ys in by_key.values() for v in xs + ys]
    colours = plt.get_cmap("tab20").colors  # type: ignore[attr-defined]  # 20 distinct colours, one per layer type
    for i, (key, (xs, ys)) in enumerate(sorted(by_key.items(), key=lambda kv: -len(kv[1][0]))):
        ax.scatter(xs, ys, s=10, alpha=0.7, color=colours[i % len(colours)], label=f"{key} ({len(xs)})")
    if everything:
        low, high = min(everything) / 1.5, max(everything) * 1.5
        ax.plot([low, high], [low, high], "k--", linewidth=1, label="ideal")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured layer latency (ms, isolated)")
    ax.set_ylabel("predicted layer latency (ms)")
    _fit_title(fig, f"Fig. 5: per-layer predictions, {evaluation.system}")
    ax.legend(fontsize=7, ncols=2)
    return fig


def _figure_7(evaluation: Evaluation):  # type: ignore[no-untyped-def]
    """Fig. 7: network-level error per network, one bar per method, with the +/-10% band."""
    plt = pyplot()

    names = [n.network for n in evaluation.networks]
    fig, ax = plt.subplots(figsize=(max(6.4, 0.55 * len(names) * len(evaluation.methods) / 2), 4.2),
                           layout="constrained")
    width = 0.8 / max(len(evaluation.methods), 1)
    x = np.arange(len(names))
    drawn: list[float] = []
    for i, method in enumerate(evaluation.methods):
        errors = [100 * n.error(method) for n in evaluation.networks]
        drawn += errors
        ax.bar(x + (i - (len(evaluation.methods) - 1) / 2) * width,
               [e if math.isfinite(e) else math.nan for e in errors], width,
               label=f"{method_label(method)} (MAPE {evaluation.mape(method):.1%})")
    ax.axhspan(-10, 10, color="0.9", zorder=0, label="+/-10%")
    ax.axhline(0, color="k", linewidth=0.8)
    ax.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("network latency error (%)")
    ax.set_ylim(*_error_limits(drawn))
    _fit_title(fig, f"Fig. 7: whole-network prediction error per network, {evaluation.system}")
    ax.legend(fontsize=7)
    return fig


def figures(evaluation: Evaluation) -> dict[str, Any]:
    """The report's matplotlib figures by file name (the caller closes them, or ``png_bytes`` does)."""
    return {"fig5_layers.png": _figure_5(evaluation), "fig7_networks.png": _figure_7(evaluation)}


# -- HTML --------------------------------------------------------------------------------------------------------
def write_report(evaluation: Evaluation, out_dir: Path, provenance: Provenance | None = None) -> list[Path]:
    """fig5_layers.png, fig7_networks.png and report.html (the figures embedded) in ``out_dir``.

    ``provenance`` (see :func:`provenance`) adds the block that says where the numbers come from.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    pngs = {name: png_bytes(fig) for name, fig in figures(evaluation).items()}
    paths = []
    for name, data in pngs.items():
        path = out_dir / name
        path.write_bytes(data)
        paths.append(path)
    report = out_dir / "report.html"
    report.write_text(report_html(evaluation, pngs, provenance), encoding="utf-8")
    paths.append(report)
    return paths


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]], caption: str) -> str:
    """A table in a scrolling box (a wide table scrolls there, not the page), captioned underneath."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<figure class="table"><div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}'
            f"</tbody></table></div><figcaption>{html.escape(caption)}</figcaption></figure>")


def _html_figure(png: bytes, alt: str, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _layer_details(n: NetworkComparison) -> str:
    rows = [[c.layer, c.op, c.key, ms(c.measured_s), ms(c.predicted_s), _pct(c.error)] for c in n.layers]
    table = _html_table(
        ["layer", "op type", "model", LAYER_MEASURED, LAYER_PREDICTED, "error"], rows,
        f"Every layer of {n.network}: its median time measured alone (isolated), the per-layer model's "
        "prediction, and the error (predicted / measured - 1). The rows sum to this network's Table I row.")
    return (f"<details><summary>{html.escape(n.network)}: {len(n.layers)} layers, sum of isolated layers "
            f"{html.escape(ms(n.measured_layer_sum_s))} ms, error {html.escape(_pct(n.layer_sum_error))}</summary>"
            f"{table}</details>")


def _provenance_html(evaluation: Evaluation, provenance: Provenance | None) -> str:
    if provenance is None:
        return ('<section id="provenance"><h2>Provenance</h2><p>Not recorded: this evaluation was not read '
                "from a measurement store.</p></section>")
    items = "".join(f"<dt>{html.escape(label)}</dt><dd>{html.escape(value)}</dd>"
                    for label, value in provenance.fields(evaluation))
    return f'<section id="provenance"><h2>Provenance</h2><dl class="provenance">{items}</dl></section>'


_CSS = """
body { font-family: sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.4; }
h1, h2, p, dd, summary, figcaption { overflow-wrap: anywhere; }
figure { margin: 1em 0 1.5em; min-width: 0; }
figcaption { font-size: 0.85em; color: #444; margin-top: 0.3em; }
.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
img { max-width: 100%; height: auto; }
dl.provenance { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.15em 1em; }
dl.provenance dt { font-weight: bold; }
dl.provenance dd { margin: 0; }
details { margin: 0.4em 0; }
summary { cursor: pointer; }
"""


def report_html(evaluation: Evaluation, pngs: dict[str, bytes], provenance: Provenance | None = None) -> str:
    """The self-contained HTML report; ``pngs`` holds the figures by file name (see :func:`figures`)."""
    methods = evaluation.methods
    summary = _html_table(
        ["method", "what it is", "network MAPE", "within +/-10%"],
        [[method_label(m), method_description(m), f"{evaluation.mape(m):.1%}", f"{evaluation.within(m):.0%}"]
         for m in methods],
        "Each network-level prediction method: its mean absolute error (MAPE) against the whole-network "
        "measurements, and the share of networks it predicts within +/-10%.")
    networks = _html_table(
        ["network", "MACs", WHOLE_MEASURED, "IQR"] + [f"{method_label(m)}: predicted ms (error)" for m in methods],
        [[n.network, si(n.macs), ms(n.measured_s), f"{n.measured_spread:.1%}"]
         + [f"{ms(n.predicted_s[m])} ({_pct(n.error(m))})" for m in methods] for n in evaluation.networks],
        "Per network: the median time of the whole network run as one, its spread (interquartile range over "
        "the median), and each method's predicted network time with its error (predicted / measured - 1).")
    table_1 = _html_table(
        ["network", "layers", f"{LAYER_SUM_MEASURED} (t)", f"{LAYER_SUM_PREDICTED} (t-hat)", "error"],
        _table1_rows(evaluation) + [["average (absolute values)", "", "", "", f"{evaluation.table2_error:.2%}"]],
        "Table I (PreVIous, Eq. 5): per network, the sum of every layer's median time measured alone "
        "(isolated) against the sum of the per-layer predictions, and their error; the last row is the mean "
        "absolute error (Table II).")
    table_2 = _html_table(
        TABLE2_COLUMNS, [_table2_row(evaluation)],
        "Table II (PreVIous): the mean absolute Table I error over the networks, beside the mean and median "
        "absolute error of the individual layers.")
    fig7 = _html_figure(
        pngs["fig7_networks.png"], "Fig. 7: network errors",
        "Fig. 7: each method's whole-network prediction error per network, in percent of the measured "
        "whole-network time; grey: +/-10%. The axis is scaled to the errors.")
    fig5 = _html_figure(
        pngs["fig5_layers.png"], "Fig. 5: per-layer predictions",
        "Fig. 5: every layer's predicted time against its time measured alone (isolated), log axes, one colour "
        "per per-layer model (count in brackets); points on the dashed line are predicted exactly.")
    layers = "".join(_layer_details(n) for n in evaluation.networks)
    calibration = evaluation.calibration
    cal_text = (f"Calibrated on {len(calibration.get('networks', []))} networks, {calibration.get('layers', '?')} "
                "layers" + (f"; calibration wall time {calibration['wall_s']:.0f} s." if "wall_s" in calibration
                            else ".") if calibration else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>nnperf evaluation: {html.escape(evaluation.system)}</title>
<style>{_CSS}</style></head><body>
<h1>nnperf evaluation on {html.escape(evaluation.system)}</h1>
<p>{len(evaluation.networks)} networks, measured whole and layer by layer in isolation, against predictions
from this system's calibration. {html.escape(cal_text)} Median spread (IQR over median) of the whole-network
measurements: {evaluation.measurement_spread:.1%}. "Sum of isolated layers" is the sum of the layers' times
each measured alone; "whole network" is the network run as one.</p>
{_provenance_html(evaluation, provenance)}
<section id="networks"><h2>Network latency (whole network)</h2>{summary}{networks}{fig7}</section>
<section id="table1"><h2>Table I: per-layer predictions summed</h2>{table_1}</section>
<section id="table2"><h2>Table II: average per-layer error</h2>{table_2}{fig5}</section>
<section id="layers"><h2>Per-layer results</h2>
<p>One table per network (click to open); <code>nnperf evaluate --csv FILE</code> writes these rows as CSV.</p>
{layers}</section>
</body></html>
"""
