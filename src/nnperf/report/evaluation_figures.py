"""The evaluation's figures: Fig. 5 (every layer, predicted against measured) and Fig. 7 (every network's
latency, measured and predicted, and each method's error).

Each figure comes in two widths: ``wide`` for a laptop page (at most 9.2 in, the page's 1,100 px at
:data:`~nnperf.report._format.FIGURE_DPI`, so it is never shrunk) and ``narrow`` for a phone (3.4 in, 408 px),
with the same text sizes, so that text stays at least 9 px on either. Networks run down the y axis of Fig. 7,
so that more networks make it taller, not its text smaller.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from nnperf.prediction.evaluation import Evaluation, LayerComparison, NetworkComparison, method_label
from nnperf.report._format import OKABE_ITO, pyplot

Width = Literal["wide", "narrow"]
WIDTH_IN = {"wide": 9.2, "narrow": 3.4}
"""Figure widths in inches: 1,104 px and 408 px at 120 dpi."""

KIND_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("conv:standard", ("conv:standard",)),
    ("conv:pointwise", ("conv:pointwise",)),
    ("conv:depthwise", ("conv:depthwise",)),
    ("conv:grouped", ("conv:grouped",)),
    ("linear", ("linear", "matmul", "gemm")),
    ("normalisation", ("batch_norm", "layer_norm", "instance_norm", "group_norm", "lrn")),
    ("elementwise and activation", ("relu", "relu6", "sigmoid", "tanh", "gelu", "silu", "hardswish",
                                    "hardsigmoid", "eltwise", "add", "mul", "clip", "leaky_relu", "softmax")),
)
"""Fig. 5's colour groups: the four convolution kernels apart (they run at very different rates), then the
layer types that behave alike; everything else (pooling, reshapes, concatenation, ...) is 'other'."""

NETWORK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
"""Fig. 5's marker per network, in the evaluation's order (cycled past twelve networks)."""

OUTLIERS_LABELLED = 3
"""Fig. 5 names the layers with the largest absolute error in milliseconds, this many."""


@dataclass(frozen=True)
class Figure:
    """One figure in both renderings: PNG bytes and the pixel height of its smallest text in each."""

    wide_png: bytes
    narrow_png: bytes
    wide_min_text_px: float
    narrow_min_text_px: float


def kind_group(kind: str) -> str:
    """The Fig. 5 colour group of a layer's kernel kind (:data:`KIND_GROUPS`, else 'other')."""
    for group, members in KIND_GROUPS:
        if kind in members:
            return group
    return "other"


def _fit_title(fig: Any, title: str, fontsize: float = 10) -> None:
    """``title`` above the figure, wrapped onto more lines until it is narrower than the figure: constrained
    layout makes room above a title but never beside it, so a long system label ran off both sides."""
    renderer = fig.canvas.get_renderer()
    text = fig.suptitle(title, fontsize=fontsize)
    width = len(title)
    while text.get_window_extent(renderer).width > 0.96 * fig.bbox.width and width > 12:
        width = int(width * 0.85)
        text.set_text(textwrap.fill(title, width))


def _error_limits(values_pct: Sequence[float], margin: float = 0.12, floor_pct: float = 1.0) -> tuple[float, float]:
    """Limits for errors in percent: the finite values and 0, widened by ``margin`` of the span on each side
    (at least ``floor_pct``), so that a small error fills the plot instead of a fixed +/-100%."""
    finite = [v for v in values_pct if math.isfinite(v)]
    low, high = min([0.0, *finite]), max([0.0, *finite])
    pad = max(margin * (high - low), floor_pct)
    return low - pad, high + pad


def worst_layers(evaluation: Evaluation, count: int = OUTLIERS_LABELLED) -> list[tuple[str, LayerComparison]]:
    """The ``count`` layers (with their network) whose prediction is furthest off in milliseconds: the ones
    that move a network's total, which a log-log plot of thousands of small layers hides."""
    layers = [(n.network, c) for n in evaluation.networks for c in n.layers]
    layers.sort(key=lambda item: -abs(item[1].predicted_s - item[1].measured_s))
    return layers[:count]


def figure_5(evaluation: Evaluation, width: Width = "wide") -> Any:
    """Fig. 5: every layer's predicted time against its isolated measurement, log axes; colour = kernel kind,
    marker = network; the ideal line with +/-10% and 2x guides; horizontal bars = the layer's measured
    interquartile range; the worst layers in milliseconds named."""
    plt = pyplot()
    size = WIDTH_IN[width]
    narrow = width == "narrow"
    fig, ax = plt.subplots(figsize=(size, size * (0.78 if not narrow else 2.6)), layout="constrained")
    groups = [g for g, _ in KIND_GROUPS] + ["other"]
    colour = {g: OKABE_ITO[i % len(OKABE_ITO)] for i, g in enumerate(groups)}
    everything: list[float] = []
    used_groups: dict[str, int] = {}
    for n_index, network in enumerate(evaluation.networks):
        marker = NETWORK_MARKERS[n_index % len(NETWORK_MARKERS)]
        for group in groups:
            points = [c for c in network.layers
                      if kind_group(c.kind or c.key) == group and c.measured_s > 0 and c.predicted_s > 0]
            if not points:
                continue
            used_groups[group] = used_groups.get(group, 0) + len(points)
            xs = np.array([c.measured_s for c in points]) * 1e3
            ys = np.array([c.predicted_s for c in points]) * 1e3
            half = np.array([c.measured_spread for c in points]) * xs / 2
            everything += [*xs, *ys]
            ax.errorbar(xs, ys, xerr=[np.minimum(half, xs * 0.9), half], fmt="none", ecolor=colour[group],
                        alpha=0.45, linewidth=0.7)
            ax.scatter(xs, ys, s=16, marker=marker, color=colour[group], alpha=0.8, linewidths=0)
    if everything:
        low, high = min(everything) / 1.5, max(everything) * 1.5
        line = np.array([low, high])
        ax.plot(line, line, color="k", linewidth=1, label="ideal (predicted = measured)")
        for factor, style, label in ((1.1, ":", "+/-10%"), (2.0, "--", "2x off")):
            ax.plot(line, line * factor, color="0.45", linestyle=style, linewidth=0.8, label=label)
            ax.plot(line, line / factor, color="0.45", linestyle=style, linewidth=0.8)
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        for i, (name, layer) in enumerate(worst_layers(evaluation)):  # a column of labels, bottom right
            ax.annotate(f"{name}/{layer.layer}:{chr(10) if narrow else ' '}{layer.measured_s * 1e3:.3g} ms "
                        f"measured, {layer.predicted_s * 1e3:.3g} predicted",
                        (layer.measured_s * 1e3, layer.predicted_s * 1e3), xytext=(0.98, 0.03 + (0.1 if narrow else 0.06) * i),
                        textcoords="axes fraction", fontsize=8, ha="right", va="bottom",
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "0.7",
                              "linewidth": 0.5},
                        arrowprops={"arrowstyle": "-", "color": "0.3", "linewidth": 0.6})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured layer latency, alone (ms)")
    ax.set_ylabel("predicted layer latency (ms)")
    handles = [plt.Line2D([], [], color=colour[g], marker="s", linestyle="", label=f"{g} ({count})")
               for g, count in used_groups.items()]
    handles += [plt.Line2D([], [], color="0.3", markerfacecolor="none", marker=NETWORK_MARKERS[i % len(
        NETWORK_MARKERS)], linestyle="", label=f"marker: {n.network}") for i, n in enumerate(evaluation.networks)]
    guides, _ = ax.get_legend_handles_labels()
    if narrow:
        fig.legend(handles=handles + guides, fontsize=8, ncols=1, loc="outside lower center")
    else:
        ax.legend(handles=handles + guides, fontsize=8, ncols=2, loc="upper left", framealpha=0.85)
    _fit_title(fig, f"Fig. 5: how close is each layer's prediction? {evaluation.system}")
    return fig


def _symlog_ticks(low: float, high: float) -> list[float]:
    """Ticks for the error axis: 0, +/-10% (the band's edges) and the decades 100%, 1000%, ... within the
    limits (at most -100% below: a prediction cannot be more than 100% under)."""
    steps = (10, 100, 1000, 10000)
    return sorted([0.0] + [float(s) for s in steps if s <= high] + [-float(s) for s in steps if s <= -low])


def figure_7(evaluation: Evaluation, width: Width = "wide") -> Any:
    """Fig. 7: per network (rows), (a) the whole-network time measured, with its interquartile range, and each
    method's prediction in milliseconds; (b) each method's error in percent on a symmetric-log axis (linear
    within +/-10%, so that a 0.3% error and a 500% one both show), with the value printed on every bar, the
    +/-10% band and each network's noise floor."""
    plt = pyplot()
    networks = evaluation.networks
    methods = evaluation.methods
    rows = len(networks)
    row_height = 0.32 + 0.2 * len(methods)
    narrow = width == "narrow"
    height = 1.4 + rows * row_height * (2 if narrow else 1)
    fig, (ax_ms, ax_err) = plt.subplots(
        2 if narrow else 1, 1 if narrow else 2, figsize=(WIDTH_IN[width], height), layout="constrained",
        **({} if narrow else {"gridspec_kw": {"width_ratios": [1, 1.25]}}))
    y = np.arange(rows)[::-1].astype(float)
    bar = 0.8 / max(len(methods), 1)
    colours = {m: OKABE_ITO[(i + 1) % len(OKABE_ITO)] for i, m in enumerate(methods)}
    _latency_panel(ax_ms, networks, methods, y, colours, narrow)
    _error_panel(ax_err, networks, methods, y, bar, colours, linscale=1.0 if narrow else 2.0)
    names = [textwrap.fill(n.network, 16) if narrow else n.network for n in networks]
    ax_ms.set_yticks(y, [f"{name}\n{n.measured_s * 1e3:.3g} ms" for name, n in zip(names, networks, strict=True)])
    ax_err.set_yticks(y, names)
    for ax in (ax_ms, ax_err):
        ax.set_ylim(-0.6, rows - 0.4)
    if not narrow:
        ax_err.tick_params(labelleft=False)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[m],
                             label=f"{method_label(m)} (MAPE {evaluation.mape(m):.1%})") for m in methods]
    handles.append(plt.Rectangle((0, 0), 1, 1, color="0.9", label="+/-10% band"))
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="none", edgecolor="0.6", hatch="///",
                                 label="noise floor (spread or speed drift)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=1 if narrow else 3, fontsize=8)
    _fit_title(fig, f"Fig. 7: how close is each method's whole-network prediction? {evaluation.system}")
    return fig


def _latency_panel(ax: Any, networks: Sequence[NetworkComparison], methods: Sequence[str], y: np.ndarray,
                   colours: dict[str, str], narrow: bool) -> None:
    measured = np.array([n.measured_s for n in networks]) * 1e3
    half = np.array([n.measured_spread for n in networks]) * measured / 2
    ax.barh(y, measured, height=0.6, color="0.85", xerr=half, error_kw={"ecolor": "0.3", "capsize": 3,
                                                                         "linewidth": 0.8})
    for i, m in enumerate(methods):
        offsets = (i - (len(methods) - 1) / 2) * 0.5 / max(len(methods), 1)
        ax.scatter([n.predicted_s[m] * 1e3 for n in networks], y + offsets, color=colours[m], s=22, zorder=3,
                   marker="D", linewidths=0)
    ax.set_xlabel("latency (ms)" if narrow else "latency (ms): grey bar measured,\n+/- half its IQR; diamonds "
                  "predicted")
    ax.set_xlim(0, max([*measured, *[n.predicted_s[m] * 1e3 for n in networks for m in methods
                                     if math.isfinite(n.predicted_s[m])]]) * 1.08)
    ax.grid(axis="y", visible=False)


def _error_panel(ax: Any, networks: Sequence[NetworkComparison], methods: Sequence[str], y: np.ndarray,
                 bar: float, colours: dict[str, str], linscale: float) -> None:
    errors = {m: [100 * n.error(m) for n in networks] for m in methods}
    finite = [e for values in errors.values() for e in values if math.isfinite(e)]
    low, high = _error_limits(finite, margin=0.3)
    limit = max(abs(low), abs(high), 12.0)
    for yi, n in zip(y, networks, strict=True):
        floor = 100 * n.noise_floor
        ax.fill_betweenx([yi - 0.45, yi + 0.45], -floor, floor, facecolor="none", edgecolor="0.6", hatch="///",
                         linewidth=0, zorder=0)
    ax.axvspan(-10, 10, color="0.9", zorder=-1)
    for i, m in enumerate(methods):
        offset = ((len(methods) - 1) / 2 - i) * bar
        values = [e if math.isfinite(e) else math.nan for e in errors[m]]
        ax.barh(y + offset, values, height=bar * 0.9, color=colours[m], zorder=2)
        for yi, value in zip(y + offset, values, strict=True):
            if math.isfinite(value):
                ax.annotate(f"{value:+.1f}%", (value, yi), xytext=(3 if value >= 0 else -3, 0),
                            textcoords="offset points", va="center", ha="left" if value >= 0 else "right",
                            fontsize=7.5, zorder=4)
    ax.axvline(0, color="k", linewidth=0.8)
    ax.set_xscale("symlog", linthresh=10, linscale=linscale)
    span = limit * 2.2  # room for the printed values beyond the longest bar
    # errors cannot go below -100%; the decade beyond it holds the printed values of the longest negative bars
    ax.set_xlim(-1000 if min(finite, default=0) < -10 else -span if low < 0 else -12, span if high > 0 else 12)
    ax.set_xticks(_symlog_ticks(max(ax.get_xlim()[0], -100), ax.get_xlim()[1]))
    ax.xaxis.set_major_formatter(lambda value, _: f"{value:+.0f}" if value else "0")
    ax.set_xlabel("error (%): predicted / measured - 1")
    ax.grid(axis="y", visible=False)


def figures(evaluation: Evaluation, width: Width = "wide") -> dict[str, Any]:
    """The report's figures by file name (the caller closes them, or ``png_bytes`` does)."""
    return {"fig5_layers.png": figure_5(evaluation, width), "fig7_networks.png": figure_7(evaluation, width)}
