"""Client/cloud partitioning as tables and figures (NeuPart Fig. 10, 12, 13(a) and Table IV; a Pareto plot)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.table import Table
from rich.text import Text

from nnperf.optimize.partition import Channel, ChannelSweep, PartitionResult, QuartileRow, pareto_front
from nnperf.report._format import HOUSE_STYLE, OKABE_ITO, figure_metadata, pyplot, write_png

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FigureSetting", "delay_figure", "energy_cost_figure", "label_points", "pareto_figure", "partition_table",
           "plot_delay", "plot_energy_cost", "plot_pareto", "plot_savings", "quartile_rich_table", "savings_figure"]


def _mj(joules: float) -> str:
    return f"{joules * 1e3:.4g}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g}"


def _channel_text(result: PartitionResult) -> str:
    return f"{result.channel.bitrate_bps / 1e6:.4g} Mbit/s, {result.channel.tx_power_w:.3g} W"


def partition_table(result: PartitionResult, title: str) -> Table:
    """One row per split point: cumulative client energy, data sent, transmit energy, energy cost, delay.

    The energy-optimal row is bold and marked; the caption gives the savings against FCC and FISC.
    """
    table = Table(title=Text(f"{title} ({_channel_text(result)})"), title_justify="left",
                  caption=Text(f"optimum {result.best_point.name}: saves {result.savings_vs_fcc:.1%} against FCC "
                               f"({result.points[0].name}) and {result.savings_vs_fisc:.1%} against FISC "
                               f"({result.points[-1].name})"), caption_justify="left")
    table.add_column("#", justify="right")
    table.add_column("split after")
    for column in ("client compute mJ", "sent kbit", "transmit mJ", "energy cost mJ (Eq. 1)", "delay ms (Eq. 26)"):
        table.add_column(column, justify="right")
    table.add_column("")
    for i, point in enumerate(result.points):
        best = i == result.best
        table.add_row(str(i), point.name, _mj(point.client_energy_j), f"{point.sent_bits / 1e3:.4g}",
                      _mj(result.transmit_energy_j[i]), _mj(result.energy_cost_j[i]), _ms(result.delay_s[i]),
                      "<- optimum" if best else "", style="bold" if best else None)
    return table


def quartile_rich_table(rows: Sequence[QuartileRow], title: str) -> Table:
    """NeuPart's Table IV: per input sparsity, the optimum and its savings against FCC and FISC."""
    table = Table(title=Text(title), title_justify="left")
    table.add_column("input sparsity", justify="right")
    table.add_column("optimum")
    for column in ("energy cost mJ", "FCC mJ", "FISC mJ", "savings vs FCC", "savings vs FISC", "delay ms"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(f"{row.input_sparsity:.2%}", row.best_name, _mj(row.energy_cost_j), _mj(row.fcc_energy_j),
                      _mj(row.fisc_energy_j), f"{row.savings_vs_fcc:.1%}", f"{row.savings_vs_fisc:.1%}",
                      _ms(row.delay_s))
    return table


# --- figures ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureSetting:
    """What produced a partition figure, named in its title and in its PNG metadata (each part may be empty)."""

    network: str = ""
    client: str = ""
    """What computes before the split, with its bit width: 'CNNergy accelerator (eyeriss-like, 8-bit)'."""
    input: str = ""
    """How the input image is sent at the fully-cloud point: 'RLC-coded, input sparsity 60.80%'."""
    cloud: str = ""
    """The cloud's throughput: '92 TOPS'."""


def _power_text(watts: float) -> str:
    return f"{watts:.3g} W"


def _rate_text(bps: float) -> str:
    return f"{bps / 1e6:.4g} Mbit/s"


def _settings_line(setting: FigureSetting, channel: Channel | None) -> str:
    """'client ...; uplink 60 Mbit/s at 0.5 W; input RLC-coded ...; cloud 92 TOPS' (parts that are known)."""
    parts = [f"client: {setting.client}" if setting.client else ""]
    if channel is not None:
        parts.append(f"uplink {_rate_text(channel.bitrate_bps)} at {_power_text(channel.tx_power_w)}")
    parts += [f"input {setting.input}" if setting.input else "", f"cloud {setting.cloud}" if setting.cloud else ""]
    return "; ".join(p for p in parts if p)


def _suptitle(fig: Figure, question: str, settings: str) -> None:
    """The question the figure answers, then what produced it, wrapped to the figure's width."""
    width = int(fig.get_figwidth() * 72 / (0.56 * HOUSE_STYLE["figure.titlesize"]))
    lines = [*textwrap.wrap(question, width, break_on_hyphens=False),
             *textwrap.wrap(settings, width, break_on_hyphens=False)]
    fig.suptitle("\n".join(lines))


def _metadata(fig: Figure, setting: FigureSetting, settings: str) -> dict[str, str]:
    suptitle = fig.get_suptitle()
    return figure_metadata(" ".join(suptitle.split()), Network=setting.network, Accelerator=setting.client,
                           Settings=settings)


def _network(setting: FigureSetting) -> str:
    return setting.network or "the network"


def _plain_log_ticks(axis: Any, low: float, high: float) -> None:
    """Labelled ticks at 1-2-5 steps (plain numbers: 5, 10, 20, 50) between ``low`` and ``high`` on a log axis,
    1-2-3-5 or every integer multiple where that gives fewer than three."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    for mantissas in ((1, 2, 5), (1, 2, 3, 5), tuple(range(1, 10))):
        ticks = [m * 10.0**e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
                 for m in mantissas if low * (1 - 1e-9) <= m * 10.0**e <= high * (1 + 1e-9)]
        if len(ticks) >= 3:
            break
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _log_x(ax: Any, values: Sequence[float]) -> None:
    if min(values) > 0 and max(values) / min(values) > 20:
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis, min(values), max(values))


def _split_labels(names: Sequence[str]) -> list[str]:
    """The split points' names, the first and last with what they mean (FCC, FISC)."""
    return [f"{name} (FCC)" if i == 0 else f"{name} (FISC)" if i == len(names) - 1 else name
            for i, name in enumerate(names)]


def energy_cost_figure(result: PartitionResult, setting: FigureSetting = FigureSetting()) -> Figure:
    """NeuPart Fig. 10: energy cost per split point, stacked client compute + transmit, the optimum outlined
    and annotated with its energy, delay and savings, FCC's and FISC's costs as reference lines."""
    plt = pyplot()
    names = result.names
    fig, ax = plt.subplots(figsize=(max(6.4, 0.5 * len(names)), 4.6), layout="constrained")
    x = np.arange(len(names))
    compute = np.array([p.client_energy_j for p in result.points]) * 1e3
    transmit = np.array(result.transmit_energy_j) * 1e3
    cost = np.array(result.energy_cost_j) * 1e3
    edges = ["black" if i == result.best else "none" for i in range(len(names))]
    ax.bar(x, compute, 0.7, color=OKABE_ITO[0], edgecolor=edges, linewidth=1.8, label="client compute")
    ax.bar(x, transmit, 0.7, bottom=compute, color=OKABE_ITO[1], edgecolor=edges, linewidth=1.8,
           label=f"transmit ({_power_text(result.channel.tx_power_w)} x bits / {_rate_text(result.channel.bitrate_bps)})")
    ax.axhline(cost[0], color="0.3", linestyle="--", linewidth=1, zorder=1,
               label=f"FCC, send the input: {cost[0]:.3g} mJ")
    ax.axhline(cost[-1], color="0.3", linestyle=":", linewidth=1.2, zorder=1,
               label=f"FISC, all on the client: {cost[-1]:.3g} mJ")
    best = result.best
    top = float(cost.max())
    ax.set_ylim(0, top * 1.42)
    # the box over the optimum, but inside the axes when the optimum is near either end
    align, shift = (("left", -0.4) if best < len(names) / 4 else ("right", 0.4) if best > 3 * len(names) / 4
                    else ("center", 0.0))
    ax.annotate(f"optimum: split after {names[best]}\n{cost[best]:.3g} mJ, {result.delay_s[best] * 1e3:.3g} ms\n"
                f"{result.savings_vs_fcc:.1%} below FCC, {result.savings_vs_fisc:.1%} below FISC",
                (x[best], cost[best]), xytext=(x[best] + shift, top * 1.2), ha=align, va="center", fontsize=8,
                bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.5"},
                arrowprops={"arrowstyle": "->", "color": "black"})
    ax.set_xticks(x, _split_labels(names), rotation=45, ha="right")
    ax.set_xlabel("split point: the client computes up to and including this layer and sends its output")
    ax.set_ylabel("client energy cost per image (mJ, Eq. 1)")
    ax.legend(loc="upper right" if best < len(names) / 2 else "upper left")
    _suptitle(fig, f"Where should {_network(setting)} be split so that the client spends the least energy?",
              _settings_line(setting, result.channel))
    return fig


def plot_energy_cost(result: PartitionResult, path: Path, setting: FigureSetting = FigureSetting()) -> Path:
    """:func:`energy_cost_figure` written as a PNG with the network and settings in its metadata."""
    fig = energy_cost_figure(result, setting)
    return write_png(fig, path, _metadata(fig, setting, _settings_line(setting, result.channel)))


def _sweep_settings(sweep: ChannelSweep, setting: FigureSetting, result: PartitionResult | None) -> str:
    rates = f"bit rates {_rate_text(min(sweep.bitrates_bps))} to {_rate_text(max(sweep.bitrates_bps))}"
    return "; ".join(p for p in (_settings_line(setting, result.channel if result else None), rates) if p)


def _power_styles(sweep: ChannelSweep, result: PartitionResult | None) -> list[tuple[float, dict[str, Any]]]:
    """Each swept power and how its curve is drawn: the requested power solid and labelled as such, any other
    (asked for with --sweep-powers) thin, dashed and labelled as context."""
    requested = result.channel.tx_power_w if result is not None else None
    styles = []
    for i, power in enumerate(sweep.powers_w):
        if requested is None:
            styles.append((power, {"label": f"P_tx = {_power_text(power)}", "color": OKABE_ITO[i % 8]}))
        elif math.isclose(power, requested, rel_tol=1e-9):
            styles.append((power, {"label": f"P_tx = {_power_text(power)} (requested)", "color": OKABE_ITO[0],
                                   "linewidth": 1.8}))
        else:
            styles.append((power, {"label": f"P_tx = {_power_text(power)} (context: --sweep-powers)",
                                   "color": OKABE_ITO[1 + i % 6], "linestyle": "--", "linewidth": 1.1}))
    return styles


def _requested_label(result: PartitionResult) -> str:
    return f"requested: {_rate_text(result.channel.bitrate_bps)}, {_power_text(result.channel.tx_power_w)}"


def savings_figure(sweep: ChannelSweep, result: PartitionResult | None = None,
                   setting: FigureSetting = FigureSetting()) -> Figure:
    """NeuPart Fig. 12: savings of the optimum against FCC and against FISC vs bit rate, one line per swept
    power; ``result`` (the requested channel) is marked on both panels with its savings."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 4.8), layout="constrained", sharex=True, sharey=True)
    rates = np.array(sweep.bitrates_bps) / 1e6
    panels = ((axes[0], sweep.savings_vs_fcc, "FCC", "sending the input"),
              (axes[1], sweep.savings_vs_fisc, "FISC", "computing everything on the client"))
    for ax, grid, label, meaning in panels:
        for (_, style), row in zip(_power_styles(sweep, result), grid, strict=True):
            ax.plot(rates, 100 * np.array(row), marker=".", markersize=4, **style)
        _log_x(ax, rates)
        ax.set_xlabel("effective uplink bit rate (Mbit/s)")
        ax.set_title(f"saved against {label} ({meaning})")
        if result is not None:
            saved = result.savings_vs_fcc if label == "FCC" else result.savings_vs_fisc
            rate = result.channel.bitrate_bps / 1e6
            ax.axvline(rate, color="0.5", linestyle=":", linewidth=1, zorder=1)
            ax.scatter([rate], [100 * saved], marker="*", s=180, color=OKABE_ITO[3], edgecolors="black",
                       linewidths=0.8, zorder=5,
                       label=f"{_requested_label(result)}: optimum {result.best_point.name} saves "
                             f"{result.savings_vs_fcc:.1%} against FCC, {result.savings_vs_fisc:.1%} against FISC")
            ax.annotate(f"{saved:.1%} saved", (rate, 100 * saved), xytext=(8, 6), textcoords="offset points",
                        fontsize=8, zorder=6, bbox={"boxstyle": "round,pad=0.2", "facecolor": "white",
                                                    "edgecolor": "none", "alpha": 0.8})
    axes[0].set_ylabel("client energy saved at the optimal split (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=1 if len(labels) > 2 else 2)
    _suptitle(fig, f"How much client energy does splitting {_network(setting)} at its optimum save, "
                   "as the uplink bit rate changes?", _sweep_settings(sweep, setting, result))
    return fig


def plot_savings(sweep: ChannelSweep, path: Path, result: PartitionResult | None = None,
                 setting: FigureSetting = FigureSetting()) -> Path:
    """:func:`savings_figure` written as a PNG with the network and settings in its metadata."""
    fig = savings_figure(sweep, result, setting)
    return write_png(fig, path, _metadata(fig, setting, _sweep_settings(sweep, setting, result)))


def delay_figure(sweep: ChannelSweep, result: PartitionResult | None = None,
                 setting: FigureSetting = FigureSetting()) -> Figure:
    """NeuPart Fig. 13(a): delay at the energy-optimal split vs bit rate, one line per swept power, with FCC and
    FISC drawn above them; ``result`` (the requested channel) is marked with its delay.

    Filled markers where the optimum is an intermediate point, hollow where it is FCC or FISC itself.
    """
    from matplotlib.lines import Line2D

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.2, 5.6), layout="constrained")
    rates = np.array(sweep.bitrates_bps) / 1e6
    last = len(sweep.names) - 1
    for (_, style), delays, best in zip(_power_styles(sweep, result), sweep.delay_s, sweep.best, strict=True):
        delay_ms = 1e3 * np.array(delays)
        style = {**style, "label": f"optimal split, {style['label']}"}
        line = ax.plot(rates, delay_ms, zorder=2, **style)[0]
        inner = np.array([0 < b < last for b in best])
        ax.scatter(rates[inner], delay_ms[inner], color=line.get_color(), s=14, zorder=2)
        ax.scatter(rates[~inner], delay_ms[~inner], facecolors="white", edgecolors=line.get_color(), s=14, zorder=2)
    # the references above the curves: where an optimum is FCC or FISC itself, its curve shows through the dashes
    ax.plot(rates, 1e3 * np.array(sweep.fcc_delay_s), color="black", linestyle=(0, (5, 3)), linewidth=1.2,
            zorder=4, label="FCC: send the input")
    ax.plot(rates, 1e3 * np.array(sweep.fisc_delay_s), color="black", linestyle=(0, (1, 2)), linewidth=1.6,
            zorder=4, label=f"FISC: all on the client (up to {sweep.names[-1]})")
    every = np.concatenate([np.ravel(sweep.delay_s), sweep.fcc_delay_s, sweep.fisc_delay_s]) * 1e3
    if result is not None:
        rate, delay = result.channel.bitrate_bps / 1e6, result.delay_s[result.best] * 1e3
        ax.scatter([rate], [delay], marker="*", s=180, color=OKABE_ITO[3], edgecolors="black", linewidths=0.8,
                   zorder=5, label=f"{_requested_label(result)}:\n{result.best_point.name}, {delay:.3g} ms "
                                   f"(FCC {result.delay_s[0] * 1e3:.3g} ms, FISC {result.delay_s[-1] * 1e3:.3g} ms)")
        ax.annotate(f"{delay:.3g} ms", (rate, delay), xytext=(8, 6), textcoords="offset points", fontsize=8,
                    zorder=6, bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none",
                                    "alpha": 0.8})
        every = np.append(every, delay)
    _log_x(ax, rates)
    if every.min() > 0 and every.max() / every.min() > 20:
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis, every.min(), every.max())
    ax.set_xlabel("effective uplink bit rate (Mbit/s)")
    ax.set_ylabel("end-to-end delay per image (ms, Eq. 26)")
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="0.3", marker="o", markersize=4, linestyle="none",
                       label="filled: the optimum is an intermediate split"),
                Line2D([], [], color="0.3", marker="o", markersize=4, markerfacecolor="white", linestyle="none",
                       label="hollow: the optimum is FCC or FISC itself")]
    fig.legend(handles=handles, loc="outside lower center", ncols=2)
    _suptitle(fig, f"How long does one {_network(setting)} image take end to end when split for the least "
                   "client energy?", _sweep_settings(sweep, setting, result))
    return fig


def plot_delay(sweep: ChannelSweep, path: Path, result: PartitionResult | None = None,
               setting: FigureSetting = FigureSetting()) -> Path:
    """:func:`delay_figure` written as a PNG with the network and settings in its metadata."""
    fig = delay_figure(sweep, result, setting)
    return write_png(fig, path, _metadata(fig, setting, _sweep_settings(sweep, setting, result)))


_LABEL_OFFSETS = ((6, 5), (6, -5), (-6, 5), (-6, -5), (0, 9), (0, -9), (10, 0), (-10, 0), (14, 12), (-14, 12),
                  (14, -12), (-14, -12), (0, 18), (0, -18))
"""Where a point's label may go, in points from the point, nearest first."""


def label_points(ax: Any, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str],
                 merge_px: float = 5.0) -> list[Any]:
    """Every point named, labels placed where they overlap no other label, no point and stay inside the axes
    (the first free place of :data:`_LABEL_OFFSETS`, else the least-overlapping); points closer than
    ``merge_px`` pixels share one label ('FC7, FC8'). Returns the annotations."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    fig.canvas.draw()  # the layout and the limits the labels are placed in
    renderer = fig.canvas.get_renderer()
    pixels = ax.transData.transform(np.column_stack([xs, ys]))
    groups: list[list[int]] = []
    for i in range(len(labels)):
        near = next((g for g in groups if np.hypot(*(pixels[g[0]] - pixels[i])) < merge_px), None)
        if near is None:
            groups.append([i])
        else:
            near.append(i)
    r = 4.0
    taken = [Bbox.from_extents(px - r, py - r, px + r, py + r) for px, py in pixels]
    inside = ax.get_window_extent(renderer)
    annotations = []
    for group in groups:
        x, y = xs[group[0]], ys[group[0]]
        text = ", ".join(labels[i] for i in group)
        best: tuple[float, tuple[int, int]] | None = None
        for dx, dy in _LABEL_OFFSETS:
            note = _label_at(ax, text, x, y, dx, dy)
            box = note.get_window_extent(renderer)
            note.remove()
            clash = sum(_overlap(box, other) for other in taken) + (
                box.width * box.height - _overlap(box, inside))
            if best is None or clash < best[0]:
                best = (clash, (dx, dy))
            if clash == 0:
                break
        assert best is not None
        note = _label_at(ax, text, x, y, *best[1])
        taken.append(note.get_window_extent(renderer))
        annotations.append(note)
    return annotations


def _label_at(ax: Any, text: str, x: float, y: float, dx: int, dy: int) -> Any:
    return ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=8,
                       ha="left" if dx > 0 else "right" if dx < 0 else "center",
                       va="bottom" if dy > 0 else "top" if dy < 0 else "center")


def _overlap(a: Any, b: Any) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)


def pareto_figure(result: PartitionResult, setting: FigureSetting = FigureSetting()) -> Figure:
    """Client energy cost vs end-to-end delay of every split point, each named; the Pareto front joined, the
    energy optimum starred with its energy, delay and savings in the legend."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 5.0), layout="constrained")
    energy = np.array(result.energy_cost_j) * 1e3
    delay = np.array(result.delay_s) * 1e3
    front = pareto_front(result)
    best = result.best
    ax.scatter(energy, delay, color="0.6", s=18, zorder=2, label="split point (not on the front)")
    ax.plot(energy[front], delay[front], color=OKABE_ITO[0], marker="o", markersize=5, zorder=3,
            label="Pareto front: no other split is both cheaper and faster")
    ax.scatter([energy[best]], [delay[best]], marker="*", s=200, color=OKABE_ITO[3], edgecolors="black",
               linewidths=0.8, zorder=4,
               label=f"energy optimum {result.best_point.name}: {energy[best]:.3g} mJ, {delay[best]:.3g} ms\n"
                     f"saves {result.savings_vs_fcc:.1%} vs FCC ({energy[0]:.3g} mJ), "
                     f"{result.savings_vs_fisc:.1%} vs FISC ({energy[-1]:.3g} mJ)")
    ax.set_xlabel("client energy cost per image (mJ, Eq. 1)")
    ax.set_ylabel("end-to-end delay per image (ms, Eq. 26)")
    ax.margins(0.08)
    ax.legend(loc="best")
    _suptitle(fig, f"Which splits of {_network(setting)} trade client energy against delay best?",
              _settings_line(setting, result.channel))
    label_points(ax, energy.tolist(), delay.tolist(), _split_labels(result.names))
    return fig


def plot_pareto(result: PartitionResult, path: Path, setting: FigureSetting = FigureSetting()) -> Path:
    """:func:`pareto_figure` written as a PNG with the network and settings in its metadata."""
    fig = pareto_figure(result, setting)
    return write_png(fig, path, _metadata(fig, setting, _settings_line(setting, result.channel)))
