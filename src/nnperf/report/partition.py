"""Client/cloud partitioning as tables and figures (NeuPart Fig. 10, 12, 13(a) and Table IV; a Pareto plot)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from nnperf.optimize.partition import ChannelSweep, PartitionResult, QuartileRow, pareto_front
from nnperf.report._format import pyplot, write_png

__all__ = ["partition_table", "plot_delay", "plot_energy_cost", "plot_pareto", "plot_savings", "quartile_rich_table"]


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


def _log_x(ax: Any, values: Sequence[float]) -> None:
    if min(values) > 0 and max(values) / min(values) > 20:
        ax.set_xscale("log")


def plot_energy_cost(result: PartitionResult, path: Path) -> Path:
    """NeuPart Fig. 10: energy cost per split point, stacked client compute + transmit, the optimum outlined."""
    plt = pyplot()
    names = result.names
    fig, ax = plt.subplots(figsize=(max(6.4, 0.45 * len(names)), 4.2), layout="constrained")
    x = np.arange(len(names))
    compute = np.array([p.client_energy_j for p in result.points]) * 1e3
    transmit = np.array(result.transmit_energy_j) * 1e3
    edges = ["black" if i == result.best else "none" for i in range(len(names))]
    ax.bar(x, compute, 0.7, color="tab:blue", edgecolor=edges, linewidth=1.8, label="client compute")
    ax.bar(x, transmit, 0.7, bottom=compute, color="tab:orange", edgecolor=edges, linewidth=1.8, label="transmit")
    top = result.energy_cost_j[result.best] * 1e3
    ax.annotate(f"optimum {names[result.best]}", (x[result.best], top), xytext=(0, 8), textcoords="offset points",
                ha="center", fontsize=8, arrowprops={"arrowstyle": "->"})
    ax.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("client energy cost (mJ)")
    ax.set_title(f"Energy cost per split point ({_channel_text(result)}): {result.savings_vs_fcc:.1%} below FCC, "
                 f"{result.savings_vs_fisc:.1%} below FISC", fontsize=9)
    ax.legend(fontsize=8)
    return write_png(fig, path)


def plot_savings(sweep: ChannelSweep, path: Path) -> Path:
    """NeuPart Fig. 12: savings of the optimum against FCC and against FISC vs bit rate, one line per power."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 4.0), layout="constrained", sharex=True, sharey=True)
    rates = np.array(sweep.bitrates_bps) / 1e6
    for ax, grid, label in ((axes[0], sweep.savings_vs_fcc, "FCC"), (axes[1], sweep.savings_vs_fisc, "FISC")):
        for power, row in zip(sweep.powers_w, grid, strict=True):
            ax.plot(rates, 100 * np.array(row), marker=".", label=f"P_tx = {power:.3g} W")
        _log_x(ax, rates)
        ax.set_xlabel("effective bit rate (Mbit/s)")
        ax.set_title(f"savings vs {label}", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("client energy saved at the optimum (%)")
    axes[0].legend(fontsize=8)
    return write_png(fig, path)


def plot_delay(sweep: ChannelSweep, path: Path) -> Path:
    """NeuPart Fig. 13(a): delay at the energy-optimal split vs bit rate, one line per power, with FCC and FISC.

    Filled markers where the optimum is an intermediate point, hollow where it is FCC or FISC itself.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    rates = np.array(sweep.bitrates_bps) / 1e6
    last = len(sweep.names) - 1
    ax.plot(rates, 1e3 * np.array(sweep.fcc_delay_s), "k--", label=f"FCC ({sweep.names[0]})")
    ax.plot(rates, 1e3 * np.array(sweep.fisc_delay_s), "k:", label=f"FISC ({sweep.names[-1]})")
    for power, delays, best in zip(sweep.powers_w, sweep.delay_s, sweep.best, strict=True):
        delay_ms = 1e3 * np.array(delays)
        line = ax.plot(rates, delay_ms, label=f"energy optimum, P_tx = {power:.3g} W")[0]
        inner = np.array([0 < b < last for b in best])
        ax.scatter(rates[inner], delay_ms[inner], color=line.get_color(), s=14)
        ax.scatter(rates[~inner], delay_ms[~inner], facecolors="none", edgecolors=line.get_color(), s=14)
    _log_x(ax, rates)
    every = np.concatenate([np.ravel(sweep.delay_s), sweep.fcc_delay_s, sweep.fisc_delay_s])
    if every.min() > 0 and every.max() / every.min() > 20:
        ax.set_yscale("log")
    ax.set_xlabel("effective bit rate (Mbit/s)")
    ax.set_ylabel("end-to-end delay (ms)")
    ax.set_title("Delay at the energy-optimal split (filled: intermediate optimum)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return write_png(fig, path)


def plot_pareto(result: PartitionResult, path: Path) -> Path:
    """Client energy cost vs end-to-end delay of every split point: all grey, the Pareto front coloured and named."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6), layout="constrained")
    energy = np.array(result.energy_cost_j) * 1e3
    delay = np.array(result.delay_s) * 1e3
    front = pareto_front(result)
    ax.scatter(energy, delay, color="0.65", s=18, label="split points")
    ax.plot(energy[front], delay[front], color="tab:red", marker="o", markersize=5, label="Pareto front")
    for i in front:
        ax.annotate(result.names[i], (energy[i], delay[i]), xytext=(4, 4), textcoords="offset points", fontsize=8)
    ax.scatter([energy[result.best]], [delay[result.best]], marker="*", s=140, color="tab:red", zorder=3,
               label=f"energy optimum ({result.best_point.name})")
    ax.set_xlabel("client energy cost (mJ, Eq. 1)")
    ax.set_ylabel("end-to-end delay (ms, Eq. 26)")
    ax.set_title(f"Energy vs delay per split point ({_channel_text(result)})", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return write_png(fig, path)
