"""The evaluation as one self-contained HTML page that reads on a laptop and on a phone.

- A run whose measurements were noisy opens with a caution that says which networks, how much, and which
  verdicts the noise can overturn (:meth:`~nnperf.prediction.evaluation.Evaluation.noise`).
- Tables fit the page: text columns align left and numbers right, headers wrap instead of widening the table,
  long tables scroll inside a box whose header stays in view, and errors beyond both the +/-10% band and the
  noise floor are highlighted. Below 640 px every table becomes a stack of cards, one per row, each value
  labelled.
- Figures come in a laptop and a phone rendering (:mod:`nnperf.report.evaluation_figures`); each ``<img>``
  carries the pixel height of its smallest text (``data-min-text-px``) so that a browser check can compute the
  smallest text a reader sees.
- Terms and methods are defined once, with their citations.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nnperf.prediction.evaluation import (
    NOISY_SPREAD,
    READ_ADJUSTED_DRIFT,
    SHARE_TOLERANCES,
    SPEED_DRIFT_LIMIT,
    Evaluation,
    LayerComparison,
    NetworkComparison,
    method_description,
    method_label,
    reading_advice,
)
from nnperf.report._format import si, signed_pct
from nnperf.report.evaluation_figures import Figure
from nnperf.report.measurements import ms

if TYPE_CHECKING:
    from nnperf.report.provenance import Provenance

PHONE_MAX_PX = 640
"""Below this page width tables become cards and figures switch to their phone rendering."""

BIG_ERROR = 0.10
"""An error is highlighted when it is beyond +/- this and beyond the measurement's noise floor."""


@dataclass(frozen=True)
class Column:
    """A table column: its header, whether it holds numbers (right-aligned), and its header's meaning for the
    caption when the header is abbreviated."""

    header: str
    numeric: bool = True
    meaning: str = ""


@dataclass(frozen=True)
class Cell:
    """A table cell's text and its classes (``big``: an error worth a look; ``noise``: within the noise)."""

    text: str
    classes: str = ""


def error_cell(error: float, floor: float, text: str | None = None) -> Cell:
    """An error's cell: ``big`` beyond +/-:data:`BIG_ERROR` and the noise floor, ``noise`` within the floor."""
    shown = signed_pct(error) if text is None else text
    if not math.isfinite(error) or abs(error) > max(BIG_ERROR, floor):
        return Cell(shown, "big")
    return Cell(shown, "noise" if abs(error) <= floor else "")


def _wbr(text: str) -> str:
    """``text`` escaped, with break opportunities after separators, so that a long value wraps between its
    parts instead of mid-token."""
    escaped = html.escape(text)
    for separator in (",", "/", ";", "[", "="):
        escaped = escaped.replace(separator, separator + "<wbr>")
    return escaped


def html_table(columns: Sequence[Column], rows: Sequence[Sequence[str | Cell]], caption: str,
               tall: bool = False, table_id: str = "") -> str:
    """A table in a scrolling box, captioned underneath, with each cell's header in ``data-label`` for the
    phone's cards; ``tall`` caps the box's height, with the header kept in view. Abbreviated headers are
    explained after the caption."""
    head = "".join(f'<th class="{"num" if c.numeric else "text"}" scope="col">{html.escape(c.header)}</th>'
                   for c in columns)
    body = []
    for row in rows:
        cells = []
        for column, value in zip(columns, row, strict=True):
            cell = value if isinstance(value, Cell) else Cell(value)
            classes = " ".join(filter(None, ["num" if column.numeric else "text", cell.classes]))
            cells.append(f'<td class="{classes}" data-label="{html.escape(column.header)}">'
                         f"{_wbr(cell.text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    legend = "; ".join(f"{c.header}: {c.meaning}" for c in columns if c.meaning)
    full_caption = caption + (f" Columns: {legend}." if legend else "")
    identifier = f' id="{html.escape(table_id)}"' if table_id else ""
    return (f'<figure class="table"{identifier}><div class="scroll{" tall" if tall else ""}"><table class="cards">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
            f"<figcaption>{html.escape(full_caption)}</figcaption></figure>")


def html_figure(figure: Figure, alt: str, caption: str) -> str:
    """A figure with its phone rendering as a ``<source>`` below :data:`PHONE_MAX_PX`."""
    wide = base64.b64encode(figure.wide_png).decode("ascii")
    narrow = base64.b64encode(figure.narrow_png).decode("ascii")
    return (f'<figure><picture><source media="(max-width: {PHONE_MAX_PX}px)" '
            f'srcset="data:image/png;base64,{narrow}" data-min-text-px="{figure.narrow_min_text_px:.1f}">'
            f'<img src="data:image/png;base64,{wide}" alt="{html.escape(alt)}" '
            f'data-min-text-px="{figure.wide_min_text_px:.1f}" '
            f'data-narrow-min-text-px="{figure.narrow_min_text_px:.1f}"></picture>'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def noise_warning_html(evaluation: Evaluation) -> str:
    """The caution that opens a noisy run's report (empty for a quiet run)."""
    noise = evaluation.noise()
    if not noise.warnings:
        return ""
    items = "".join(f"<li>{html.escape(w)}</li>" for w in noise.warnings)
    return (f'<aside class="warning" id="noise-warning" role="alert"><strong>Caution: the noise in these '
            f"measurements can overturn this report's verdicts.</strong><ul>{items}</ul></aside>")


def _method_rows(evaluation: Evaluation) -> list[list[str | Cell]]:
    noise = evaluation.noise()
    close = {(a, b) for a, b, _ in noise.close_methods}
    ranked = sorted(evaluation.methods, key=evaluation.mape)
    rows: list[list[str | Cell]] = []
    for rank, m in enumerate(ranked, start=1):
        adjusted = evaluation.adjusted_mape(m)
        neighbours = [method_label(b) for a, b in close if a == m] + [method_label(a) for a, b in close if b == m]
        verdict = f"#{rank}" + (f", within noise of {', '.join(neighbours)}" if neighbours else "")
        rows.append([method_label(m), method_description(m), f"{evaluation.mape(m):.1%}",
                     _shares(evaluation.within, m), "n/a" if adjusted is None else f"{adjusted:.1%}",
                     "n/a" if adjusted is None else _shares(evaluation.adjusted_within, m),
                     Cell(verdict, "noise" if neighbours else "")])
    return rows


def _shares(share: Callable[[str, float], float | None], method: str) -> str:
    """'50% / 75%': ``share(method, tolerance)`` for each of :data:`SHARE_TOLERANCES`."""
    return " / ".join(f"{share(method, t) or 0.0:.0%}" for t in SHARE_TOLERANCES)


def _reading_html(evaluation: Evaluation) -> str:
    """The line that says which error to read, under the methods' table (empty without speed-adjusted times)."""
    advice = reading_advice(evaluation.speed_drifts)
    return "" if advice is None else f'<p id="error-to-read">{html.escape(advice)}</p>'


def _measured_rows(evaluation: Evaluation) -> list[list[str | Cell]]:
    rows: list[list[str | Cell]] = []
    for n in evaluation.networks:
        drift = n.speed_drift
        rows.append([n.network, si(n.macs), ms(n.measured_s),
                     Cell(f"{n.measured_spread:.1%}", "big" if n.measured_spread > NOISY_SPREAD else ""),
                     "n/a" if n.adjusted_s is None else ms(n.adjusted_s),
                     "n/a" if drift is None else Cell(f"{1 + drift:.2f}x",
                                                      "big" if abs(drift) > SPEED_DRIFT_LIMIT else ""),
                     f"{n.noise_floor:.1%}"])
    return rows


def _predicted_rows(evaluation: Evaluation) -> list[list[str | Cell]]:
    return [[n.network] + [error_cell(n.error(m), n.noise_floor, f"{ms(n.predicted_s[m])} ({signed_pct(n.error(m))})")
                           for m in evaluation.methods] for n in evaluation.networks]


def _layer_rows(n: NetworkComparison) -> list[list[str | Cell]]:
    total = n.measured_layer_sum_s or 1.0
    return [[c.layer, _kind_text(c), "x".join(str(d) for d in c.output_shape) or "n/a", si(c.macs) if c.macs else "0",
             ms(c.measured_s), f"{c.measured_spread:.0%}", f"{c.measured_s / total:.1%}", ms(c.predicted_s),
             error_cell(c.error, c.measured_spread)] for c in n.layers]


def _kind_text(layer: LayerComparison) -> str:
    """The kernel kind, with the per-layer model's key where it says something else."""
    kind = layer.kind or layer.op
    return kind if layer.key in (kind, layer.op) else f"{kind} (model {layer.key})"


LAYER_COLUMNS = (
    Column("layer", numeric=False), Column("kind", numeric=False),
    Column("output", numeric=False, meaning="output shape (batch x channels x height x width)"),
    Column("MACs"), Column("alone ms", meaning="median time of the layer measured alone (isolated)"),
    Column("IQR", meaning="interquartile range of those runs over their median"),
    Column("share", meaning="share of the network's summed isolated layer times"),
    Column("predicted ms"), Column("error", meaning="predicted / measured - 1; highlighted beyond +/-10% and "
                                                    "the layer's IQR, grey within it"),
)


def _layer_details(n: NetworkComparison) -> str:
    table = html_table(
        LAYER_COLUMNS, _layer_rows(n),
        f"Every layer of {n.network}: its kernel kind, output, MACs, its time measured alone (isolated) with "
        "the spread of those runs, its share of the network, the per-layer model's prediction and the error. "
        "The rows sum to this network's Table I row.", tall=True)
    return (f"<details><summary>{html.escape(n.network)}: {len(n.layers)} layers, sum of isolated layers "
            f"{html.escape(ms(n.measured_layer_sum_s))} ms, error {html.escape(signed_pct(n.layer_sum_error))}</summary>"
            f"{table}</details>")


TERMS: tuple[tuple[str, str], ...] = (
    ("PreVIous", ("Velasco-Montero et al.'s method [1]: per-layer regression models fitted on PreVIousNet, a "
                 "calibration network built to span common layer parameters; nnperf implements it and compares "
                 "its own predictors with it.")),
    ("Eq. 5 (Table I)", ("PreVIous' network time as the sum of its layers' times: t = sum of measured layer times, "
                        "t-hat = sum of predicted layer times [1, Sec. VI-A].")),
    ("Eq. 6, PreVIous (c)", ("PreVIous' network prediction: c x t-hat, with c fitted by linear regression between "
                            "summed layer predictions and whole-network measurements of the calibration networks "
                            "[1, Sec. VI-B].")),
    ("alone (isolated) / whole", ("A layer measured alone runs by itself, with its input ready; the whole network "
                                 "runs as one, where the framework fuses and overlaps layers, so its time is not "
                                 "the sum of its layers'.")),
    ("IQR, spread", ("Interquartile range of the timed rounds over their median: how much repeated runs "
                    "disagree. A quiet machine gives 1-3% for a whole network.")),
    ("speed-adjusted, speed drift", ("Each network is timed in interleaved rounds beside a fixed reference "
                                    "workload; its ratio to the reference times the reference's time at "
                                    "calibration gives its time at the calibration's machine speed. Drift: "
                                    "measured over speed-adjusted time.")),
    ("noise floor", ("The larger of a network's spread and its speed drift: an error below it cannot be told "
                    "apart from noise.")),
    ("MAPE", "Mean absolute percentage error over the networks: mean of |predicted / measured - 1|."),
    ("within +/-5% / +/-10%", "The share of networks whose |predicted / measured - 1| is at most 5% and 10%."),
    ("raw / adjusted", ("Raw: against the time measured now; adjusted: against the speed-adjusted time. Read the "
                        f"raw error when the speed drift is within {READ_ADJUSTED_DRIFT:.0%} (the adjustment then only adds the "
                        "reference's own error), the adjusted one when it is beyond.")),
    ("kernel kind", ("conv:standard (groups 1, kernel larger than 1x1), conv:pointwise (1x1), conv:depthwise (one "
                    "input channel per group), conv:grouped (other groups > 1); other layers by type.")),
)
REFERENCES = (
    ("[1] D. Velasco-Montero, J. Fernández-Berni, R. Carmona-Galán and Á. Rodríguez-Vázquez, \"PreVIous: A "
    "Methodology for Prediction of Visual Inference Performance on IoT Devices\", IEEE Internet of Things "
    "Journal, vol. 7, no. 10, 2020."),
)


def _terms_html() -> str:
    items = "".join(f"<dt>{html.escape(term)}</dt><dd>{html.escape(meaning)}</dd>" for term, meaning in TERMS)
    refs = "".join(f"<li>{html.escape(r)}</li>" for r in REFERENCES)
    return (f'<section id="terms"><h2>Terms and methods</h2><dl class="terms">{items}</dl>'
            f'<ol class="references">{refs}</ol></section>')


def _provenance_html(evaluation: Evaluation, provenance: Provenance | None) -> str:
    if provenance is None:
        return ('<section id="provenance"><h2>Provenance</h2><p>Not recorded: this evaluation was not read '
                "from a measurement store.</p></section>")
    items = "".join(f"<dt>{html.escape(label)}</dt><dd>{_wbr(value)}</dd>"
                    for label, value in provenance.fields(evaluation))
    return f'<section id="provenance"><h2>Provenance</h2><dl class="provenance">{items}</dl></section>'


_CSS = f"""
body {{ font-family: sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; color: #222;
       line-height: 1.4; font-size: 16px; }}
h1, h2, p, dd, li, summary, figcaption {{ overflow-wrap: break-word; }}
figure {{ margin: 1em 0 1.5em; min-width: 0; }}
figcaption {{ font-size: 0.85em; color: #444; margin-top: 0.3em; }}
.scroll {{ max-width: 100%; overflow-x: auto; }}
.scroll.tall {{ max-height: 70vh; overflow-y: auto; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.5em; vertical-align: top; }}
th {{ background: #f2f2f2; font-weight: 600; }}
.scroll.tall thead th {{ position: sticky; top: 0; z-index: 1; }}
th.num, td.num {{ text-align: right; }}
th.text, td.text {{ text-align: left; }}
td.num {{ white-space: nowrap; }}
td.big {{ background: #fde2d6; font-weight: 600; }}
td.noise {{ color: #777; }}
img {{ max-width: 100%; height: auto; }}
aside.warning {{ border: 2px solid #d55e00; background: #fff3ec; padding: 0.6em 1em; margin: 1em 0; }}
aside.warning ul {{ margin: 0.4em 0 0; padding-left: 1.2em; }}
dl.provenance, dl.terms {{ display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.15em 1em; }}
dl.provenance dt, dl.terms dt {{ font-weight: bold; }}
dl.provenance dd, dl.terms dd {{ margin: 0; }}
details {{ margin: 0.4em 0; }}
summary {{ cursor: pointer; }}
@media (max-width: {PHONE_MAX_PX}px) {{
  body {{ margin: 1em auto; padding: 0 0.6em; }}
  dl.provenance, dl.terms {{ display: block; }}
  dl.provenance dd, dl.terms dd {{ margin: 0 0 0.5em; }}
  .scroll, .scroll.tall {{ overflow: visible; max-height: none; }}
  table.cards, table.cards tbody, table.cards tr, table.cards td {{ display: block; width: auto; }}
  table.cards thead {{ display: none; }}
  table.cards tr {{ border: 1px solid #ccc; margin: 0 0 0.6em; padding: 0.2em 0; }}
  table.cards td {{ border: none; text-align: left; white-space: normal; padding: 0.1em 0.5em;
                    display: grid; grid-template-columns: 9em minmax(0, 1fr); gap: 0.5em; }}
  table.cards td::before {{ content: attr(data-label); font-weight: 600; color: #555; }}
}}
"""


def _network_section(evaluation: Evaluation, fig7: Figure) -> str:
    """The methods' summary, what was measured, what each method predicted, and Fig. 7."""
    methods = evaluation.methods
    summary = html_table(
        [Column("method", numeric=False), Column("what it is", numeric=False), Column("MAPE"),
         Column("within +/-5% / +/-10%", meaning="the share of networks predicted within +/-5% and +/-10%"),
         Column("adjusted MAPE", meaning="MAPE against the speed-adjusted measurements"),
         Column("adjusted within +/-5% / +/-10%", meaning="the same shares against the speed-adjusted "
                                                          "measurements"),
         Column("rank", numeric=False, meaning="by MAPE; 'within noise' when the next method is closer than "
                                               "the noise floor")],
        _method_rows(evaluation),
        "Each network-level prediction method, best first: its mean absolute error (MAPE) and the share of "
        "networks it predicts within +/-5% and +/-10%, against the whole-network measurements (raw) and against "
        "the speed-adjusted ones.", table_id="methods")
    measured = html_table(
        [Column("network", numeric=False), Column("MACs"), Column("whole ms", meaning="median time of the whole "
                                                                                      "network run as one"),
         Column("IQR", meaning="spread of those rounds (highlighted beyond 5%)"),
         Column("adjusted ms", meaning="its time at the calibration's machine speed"),
         Column("drift", meaning="measured over adjusted time (highlighted beyond 10% either way)"),
         Column("noise floor", meaning="the larger of IQR and drift")],
        _measured_rows(evaluation),
        "Per network, what was measured and how far it can be trusted.", table_id="measured")
    abbreviations = {m: method_label(m) for m in methods}
    predicted = html_table(
        [Column("network", numeric=False)] + [Column(abbreviations[m]) for m in methods],
        _predicted_rows(evaluation),
        "Per network, each method's predicted whole-network time in ms and its error (predicted / measured "
        "- 1), highlighted beyond +/-10% and the network's noise floor, grey within the floor.",
        table_id="predicted")
    figure = html_figure(
        fig7, f"Fig. 7: whole-network latency and prediction errors, {evaluation.system}",
        "Fig. 7: per network, left: the whole network's measured time (grey bar, +/- half its IQR) and each "
        "method's prediction (diamonds), in ms; right: each method's error, printed on its bar, on an axis "
        "that is linear within +/-10% (the grey band) and logarithmic beyond, so that small and large errors "
        "both show; hatched: the network's noise floor.")
    return (f'<section id="networks"><h2>Network latency (whole network)</h2>{summary}{_reading_html(evaluation)}'
            f"{measured}{predicted}"
            f"{figure}{_error_trace_html(evaluation)}</section>")


def _error_trace_html(evaluation: Evaluation) -> str:
    """Where the primary method's error comes from, for every network it predicts beyond +/-10%."""
    traced = evaluation.traced_errors()
    if not traced:
        return ""
    method = method_label(evaluation.primary_method)
    rows: list[list[str | Cell]] = []
    for network, parts in traced:
        shown = [p for p in parts if abs(p.share) >= 0.05][:4] or list(parts[:1])
        rows.append([network.network, error_cell(network.error(evaluation.primary_method), network.noise_floor),
                     ms(network.predicted_s[evaluation.primary_method] - network.measured_s),
                     "; ".join(f"{p.part}{f' ({p.layers})' if p.layers else ''}: {p.error_s * 1e3:+.3g} ms "
                               f"({p.share:.0%})" for p in shown)])
    return html_table(
        [Column("network", numeric=False), Column("error"), Column("error ms", meaning="predicted - measured"),
         Column("where it comes from", numeric=False,
                meaning="each kernel kind's summed layer error (its layer count in brackets) and the composition's, "
                        "in ms and as a share of the network's error; parts under 5% left out")],
        rows, f"Where {method}'s error comes from, for every network it predicts beyond +/-10%: the layers' "
        "isolated predictions against their isolated measurements (the same run), by kernel kind, and the rest, "
        "which composing the layers into the network adds (in-network context, fusion, per-call costs).",
        table_id="error-trace")


def _layer_sections(evaluation: Evaluation, fig5: Figure) -> str:
    """Table I, Table II with Fig. 5, and the per-layer tables."""
    table_1 = html_table(
        [Column("network", numeric=False), Column("layers"), Column("t ms", meaning="sum of the layers' times "
                                                                                     "measured alone (Eq. 5)"),
         Column("t-hat ms", meaning="sum of the layer predictions (Eq. 5)"), Column("error")],
        [[n.network, str(len(n.layers)), ms(n.measured_layer_sum_s), ms(n.predicted_layer_sum_s),
          error_cell(n.layer_sum_error, 0.0)] for n in evaluation.networks]
        + [["average (absolute values)", "", "", "", f"{evaluation.table2_error:.2%}"]],
        "Table I (PreVIous, Eq. 5): per network, the summed per-layer measurements against the summed "
        "per-layer predictions; the last row is the mean absolute error (Table II).", table_id="table1")
    layer_errors = evaluation.layer_errors
    table_2 = html_table(
        [Column("system", numeric=False), Column("Table II", meaning="mean |Table I error|"), Column("layers"),
         Column("mean |layer error|"), Column("median |layer error|")],
        [[evaluation.system, f"{evaluation.table2_error:.2%}", str(len(layer_errors)),
          f"{layer_errors.mean():.1%}" if len(layer_errors) else "n/a",
          f"{float(np.median(layer_errors)):.1%}" if len(layer_errors) else "n/a"]],
        "Table II (PreVIous): the mean absolute Table I error over the networks, beside the mean and median "
        "absolute error of the individual layers.", table_id="table2")
    figure = html_figure(
        fig5, f"Fig. 5: per-layer predictions, {evaluation.system}",
        "Fig. 5: every layer's predicted time against its time measured alone, log axes; colour: the kernel "
        "kind (count in brackets), marker: the network; solid line: exact, dotted: +/-10%, dashed: 2x off; "
        "horizontal bars: the layer's measured IQR. The layers furthest off in milliseconds are named.")
    layers = "".join(_layer_details(n) for n in evaluation.networks)
    return f"""<section id="table1"><h2>Table I: per-layer predictions summed</h2>{table_1}</section>
<section id="table2"><h2>Table II: average per-layer error</h2>{table_2}{figure}</section>
<section id="layers"><h2>Per-layer results</h2>
<p>One table per network (click to open); <code>nnperf evaluate --csv FILE</code> writes these rows as CSV.</p>
{layers}</section>"""


def report_html(evaluation: Evaluation, figures: dict[str, Figure], provenance: Provenance | None = None) -> str:
    """The self-contained HTML report; ``figures`` holds Fig. 5 and 7 by file name (``fig5_layers.png``,
    ``fig7_networks.png``) in both renderings."""
    calibration = evaluation.calibration
    cal_text = (f"Calibrated on {len(calibration.get('networks', []))} networks, {calibration.get('layers', '?')} "
                "layers" + (f"; calibration wall time {calibration['wall_s']:.0f} s." if "wall_s" in calibration
                            else ".") if calibration else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>nnperf evaluation: {html.escape(evaluation.system)}</title>
<style>{_CSS}</style></head><body>
<h1>nnperf evaluation on {_wbr(evaluation.system)}</h1>
{noise_warning_html(evaluation)}
<p>{len(evaluation.networks)} networks, measured whole and layer by layer alone, against predictions from this
system's calibration. {html.escape(cal_text)} Median spread (IQR over median) of the whole-network
measurements: {evaluation.measurement_spread:.1%}; median noise floor: {evaluation.noise_floor:.1%}. Terms are
defined at the end.</p>
{_network_section(evaluation, figures["fig7_networks.png"])}
{_layer_sections(evaluation, figures["fig5_layers.png"])}
{_provenance_html(evaluation, provenance)}
{_terms_html()}
</body></html>
"""
