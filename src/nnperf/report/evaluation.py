"""An evaluation as tables (Table I and II of PreVIous), figures (Fig. 5 and 7) and one self-contained HTML file."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np
from rich.table import Table
from rich.text import Text

from nnperf.prediction.evaluation import Evaluation, method_description, method_label
from nnperf.report._format import png_bytes, pyplot, si
from nnperf.report.measurements import ms


def _pct(value: float) -> str:
    return f"{value:+.1%}"


def table1(evaluation: Evaluation) -> Table:
    """PreVIous' Table I: summed measured and predicted layer times per network, with the error."""
    table = Table(title=Text(f"Table I: per-layer predictions summed (Eq. 5) on {evaluation.system}"),
                  title_justify="left", show_footer=True)
    table.add_column("network", footer="average (absolute values)")
    table.add_column("layers", justify="right")
    table.add_column("measured ms (t)", justify="right")
    table.add_column("predicted ms (t-hat)", justify="right")
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


def table2(evaluation: Evaluation) -> Table:
    """PreVIous' Table II, with nnperf's per-layer error statistics beside it."""
    table = Table(title=Text("Table II: average per-layer absolute prediction error"), title_justify="left")
    for column in ("system", "Table II (mean |Table I error|)", "layers", "mean |layer error|",
                   "median |layer error|"):
        table.add_column(column, justify="left" if column == "system" else "right")
    table.add_row(*_table2_row(evaluation))
    return table


def network_table(evaluation: Evaluation) -> Table:
    """Fig. 7 as a table: whole-network measured against every method, with the errors and the summary."""
    table = Table(title=Text(f"network latency: measured whole network vs predicted on {evaluation.system}"),
                  title_justify="left", show_footer=True)
    table.add_column("network", footer="MAPE / within +/-10%")
    table.add_column("MACs", justify="right")
    table.add_column("measured ms", justify="right", footer="spread (IQR)")
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
    lines = [f"{method_label(m)}: network MAPE {evaluation.mape(m):.1%}, within +/-10% "
             f"{evaluation.within(m):.0%} of {len(evaluation.networks)} networks" for m in evaluation.methods]
    times = [n.prediction_time_s for n in evaluation.networks]
    lines.append(f"prediction time per network: median {float(np.median(times)) * 1e3:.2f} ms, "
                 f"max {max(times) * 1e3:.2f} ms")
    return lines


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
    ax.set_title(f"Fig. 5: per-layer predictions, {evaluation.system}", fontsize=9)
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
    for i, method in enumerate(evaluation.methods):
        errors = [100 * n.error(method) for n in evaluation.networks]
        ax.bar(x + (i - (len(evaluation.methods) - 1) / 2) * width, errors, width,
               label=f"{method_label(method)} (MAPE {evaluation.mape(method):.1%})")
    ax.axhspan(-10, 10, color="0.9", zorder=0)
    ax.axhline(0, color="k", linewidth=0.8)
    ax.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("network latency error (%)")
    ax.set_ylim(-100, 100)
    ax.set_title(f"Fig. 7: network predictions vs measurements, {evaluation.system} (grey: +/-10%, "
                 "bars clipped at +/-100%)", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def write_report(evaluation: Evaluation, out_dir: Path) -> list[Path]:
    """fig5_layers.png, fig7_networks.png and report.html (the figures embedded) in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = {"fig5_layers.png": png_bytes(_figure_5(evaluation)), "fig7_networks.png": png_bytes(_figure_7(evaluation))}
    paths = []
    for name, data in figures.items():
        path = out_dir / name
        path.write_bytes(data)
        paths.append(path)
    report = out_dir / "report.html"
    report.write_text(_html(evaluation, figures), encoding="utf-8")
    paths.append(report)
    return paths


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html(evaluation: Evaluation, figures: dict[str, bytes]) -> str:
    methods = evaluation.methods
    summary = _html_table(
        ["method", "what it is", "network MAPE", "within +/-10%"],
        [[method_label(m), method_description(m), f"{evaluation.mape(m):.1%}", f"{evaluation.within(m):.0%}"]
         for m in methods])
    table_1 = _html_table(
        ["network", "layers", "measured ms (t)", "predicted ms (t-hat)", "error"],
        _table1_rows(evaluation) + [["average (absolute values)", "", "", "", f"{evaluation.table2_error:.2%}"]])
    table_2 = _html_table(["system", "Table II", "layers", "mean |layer error|", "median |layer error|"],
                          [_table2_row(evaluation)])
    networks = _html_table(
        ["network", "MACs", "measured ms", "IQR"] + [f"{method_label(m)} ms (error)" for m in methods],
        [[n.network, si(n.macs), ms(n.measured_s), f"{n.measured_spread:.1%}"]
         + [f"{ms(n.predicted_s[m])} ({_pct(n.error(m))})" for m in methods] for n in evaluation.networks])
    images = {name: base64.b64encode(data).decode("ascii") for name, data in figures.items()}
    calibration = evaluation.calibration
    cal_text = (f"Calibrated on {len(calibration.get('networks', []))} networks, {calibration.get('layers', '?')} "
                f"layers; calibration wall time {calibration.get('wall_s', float('nan')):.0f} s."
                if calibration else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nnperf evaluation: {html.escape(evaluation.system)}</title>
<style>
body {{ font-family: sans-serif; max-width: 70em; margin: 2em auto; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
img {{ max-width: 100%; }}
</style></head><body>
<h1>nnperf evaluation on {html.escape(evaluation.system)}</h1>
<p>{len(evaluation.networks)} networks, measured whole and layer by layer in isolation, against predictions
from this system's calibration. {html.escape(cal_text)} Median spread (IQR over median) of the whole-network
measurements: {evaluation.measurement_spread:.1%}.</p>
<h2>Network latency</h2>{summary}{networks}
<img src="data:image/png;base64,{images['fig7_networks.png']}" alt="Fig. 7: network errors">
<h2>Table I: per-layer predictions summed</h2>{table_1}
<h2>Table II: average per-layer error</h2>{table_2}
<img src="data:image/png;base64,{images['fig5_layers.png']}" alt="Fig. 5: per-layer predictions">
</body></html>
"""
