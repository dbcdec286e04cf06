"""The partition figures (nnperf.report.partition): NeuPart Fig. 10, 12, 13(a) and the Pareto plot name the
network, the client and the channel, mark the requested operating point, draw only the powers asked for, label
every split point and axis, keep every text inside the figure, and carry their settings as PNG metadata.

The figures are built from four hand-made split points (no network is loaded), so each test takes well under
a second; the figure builders (``*_figure``) return the matplotlib Figure, so artists are read, not pixels.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from nnperf.api._partition import figure_sweep
from nnperf.optimize.partition import Channel, PartitionResult, SplitPoint, partition, sweep_channels
from nnperf.report.partition import (
    FigureSetting,
    delay_figure,
    energy_cost_figure,
    pareto_figure,
    plot_energy_cost,
    plot_pareto,
    plot_savings,
    savings_figure,
)

SETTING = FigureSetting(network="tinynet", client="CNNergy accelerator (eyeriss-like, 8-bit)",
                        input="RLC-coded, input sparsity 60.80%", cloud="92 TOPS")
RATES_BPS = [5e6, 10e6, 20e6, 40e6, 80e6, 160e6]


def points() -> list[SplitPoint]:
    """input -> L1 -> L2 -> L3 -> L4 (L4 sends as much as L3 costs: both land on the same Pareto spot)."""
    return [
        SplitPoint("input", 0.0, client_latency_s=0.0, cloud_latency_s=4e-4, sent_bits=1.2e6),
        SplitPoint("L1", 1e-3, client_latency_s=1e-3, cloud_latency_s=3e-4, sent_bits=2.4e5),
        SplitPoint("L2", 3e-3, client_latency_s=2e-3, cloud_latency_s=1e-4, sent_bits=6e4),
        SplitPoint("L3", 6e-3, client_latency_s=3e-3, cloud_latency_s=0.0, sent_bits=0.0),
        SplitPoint("L4", 6e-3, client_latency_s=3e-3, cloud_latency_s=0.0, sent_bits=0.0),
    ]


@pytest.fixture
def result() -> PartitionResult:
    return partition(points(), Channel(60e6, 0.5))


def drawn_texts(fig: Any) -> Iterator[Any]:
    """Every visible, non-empty text the figure draws (tick labels only inside the view limits)."""
    from matplotlib.text import Text

    fig.canvas.draw()
    undrawn = set()  # matplotlib lays out a few tick labels beyond the view limits but does not draw them
    for ax in fig.axes:
        for axis, (low, high) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if not low <= tick.get_loc() <= high:
                    undrawn.update({id(tick.label1), id(tick.label2)})
    for text in fig.findobj(Text):
        if text.get_visible() and text.get_text().strip() and id(text) not in undrawn:
            yield text


def assert_texts_inside(fig: Any) -> None:
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    for text in drawn_texts(fig):
        box = text.get_window_extent(renderer)
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, (
            f"{text.get_text()!r} leaves the figure: {box} of {width}x{height}")


def legend_texts(fig: Any) -> list[str]:
    return [t.get_text() for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if legend
            for t in legend.get_texts()]


def plain_numbers(labels: list[str]) -> list[str]:
    return [label for label in labels if re.fullmatch(r"\d+(\.\d+)?", label)]


def test_fig10_names_the_split_point_axis_and_the_optimum(result: PartitionResult) -> None:
    fig = energy_cost_figure(result, SETTING)
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("split point")
    title = fig.get_suptitle()
    for needle in ("Where should tinynet be split", "eyeriss-like, 8-bit", "60 Mbit/s at 0.5 W", "60.80%"):
        assert needle in title
    # the optimum is L1 (1 mJ compute + 0.5 W * 240 kbit / 60 Mbit/s = 2 mJ): 70% below FCC (10 mJ), 50% below FISC
    assert result.best_point.name == "L1"
    notes = [t.get_text() for t in ax.texts]
    assert any("split after L1" in n and "3 mJ" in n and "70.0% below FCC, 50.0% below FISC" in n for n in notes)
    assert [t.get_text() for t in ax.get_xticklabels()][0::4] == ["input (FCC)", "L4 (FISC)"]
    assert_texts_inside(fig)


def test_fig12_marks_the_requested_operating_point(result: PartitionResult) -> None:
    sweep = figure_sweep(points(), result, RATES_BPS)
    fig = savings_figure(sweep, result, SETTING)
    for ax, saved in zip(fig.axes, (result.savings_vs_fcc, result.savings_vs_fisc), strict=True):
        marks = [c for c in ax.collections if "requested: 60 Mbit/s, 0.5 W" in str(c.get_label())]
        assert len(marks) == 1, [c.get_label() for c in ax.collections]
        assert marks[0].get_offsets().tolist() == [[60.0, pytest.approx(100 * saved)]]
        notes = [t for t in ax.texts if t.get_text() == f"{saved:.1%} saved"]
        assert len(notes) == 1 and notes[0].xy == (60.0, pytest.approx(100 * saved))
        # the requested power's curve goes through the mark: the sweep took in 60 Mbit/s
        curve = next(line for line in ax.get_lines() if "(requested)" in line.get_label())
        x, y = curve.get_data()
        assert y[list(x).index(60.0)] == pytest.approx(100 * saved)
    assert "60 Mbit/s, 0.5 W: optimum L1 saves 70.0% against FCC, 50.0% against FISC" in " ".join(legend_texts(fig))
    assert "tinynet" in fig.get_suptitle() and "8-bit" in fig.get_suptitle()
    assert_texts_inside(fig)


def test_fig12_draws_only_the_requested_power_unless_more_are_asked_for(result: PartitionResult) -> None:
    sweep = figure_sweep(points(), result, RATES_BPS)
    assert sweep.powers_w == (0.5,) and 60e6 in sweep.bitrates_bps
    fig = savings_figure(sweep, result, SETTING)
    assert [line.get_label() for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")] == [
        "P_tx = 0.5 W (requested)"]
    wider = figure_sweep(points(), result, RATES_BPS, [1.3, 0.5])
    assert wider.powers_w == (0.5, 1.3)
    labels = [line.get_label() for line in savings_figure(wider, result, SETTING).axes[0].get_lines()]
    assert "P_tx = 0.5 W (requested)" in labels and "P_tx = 1.3 W (context: --sweep-powers)" in labels


def test_fig13a_draws_fcc_and_fisc_above_the_curves_with_readable_log_ticks(result: PartitionResult) -> None:
    sweep = figure_sweep(points(), result, np.geomspace(1e6, 1e9, 13).tolist())
    fig = delay_figure(sweep, result, SETTING)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    references = [lines["FCC: send the input"], lines["FISC: all on the client (up to L4)"]]
    curve = lines["optimal split, P_tx = 0.5 W (requested)"]
    assert all(r.get_zorder() > curve.get_zorder() for r in references)
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    fig.canvas.draw()
    low, high = ax.get_ylim()
    y_labels = [t.get_text() for t in ax.get_yticklabels() if low <= t.get_position()[1] <= high]
    assert len(plain_numbers(y_labels)) >= 3 and plain_numbers(y_labels) == [x for x in y_labels if x]
    x_labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert "1000" in x_labels and plain_numbers(x_labels) == x_labels
    delay_ms = result.delay_s[result.best] * 1e3
    marks = [c for c in ax.collections if "requested: 60 Mbit/s, 0.5 W" in str(c.get_label())]
    assert len(marks) == 1 and marks[0].get_offsets().tolist() == [[60.0, pytest.approx(delay_ms)]]
    assert_texts_inside(fig)


def test_pareto_names_every_split_point_and_the_optimum(result: PartitionResult) -> None:
    fig = pareto_figure(result, SETTING)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    # L3 and L4 cost and take the same: one label names both
    assert sorted(labels) == sorted(["input (FCC)", "L1", "L2", "L3, L4 (FISC)"])
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    for i, a in enumerate(boxes):
        assert all(not a.overlaps(b) for b in boxes[i + 1:]), labels
    legend = " ".join(legend_texts(fig))
    assert "energy optimum L1: 3 mJ" in legend and "saves 70.0% vs FCC (10 mJ), 50.0% vs FISC (6 mJ)" in legend
    assert_texts_inside(fig)


def test_figures_carry_network_and_settings_as_png_metadata(tmp_path: Path, result: PartitionResult) -> None:
    sweep = sweep_channels(points(), RATES_BPS, [0.5])
    for path in (plot_energy_cost(result, tmp_path / "fig10.png", SETTING),
                 plot_savings(sweep, tmp_path / "fig12.png", result, SETTING),
                 plot_pareto(result, tmp_path / "pareto.png", SETTING)):
        with Image.open(path) as image:
            text = dict(image.text)
        assert "tinynet" in text["Title"] and "\n" not in text["Title"], path
        assert text["Source"] and text["Network"] == "tinynet"
        assert text["Accelerator"] == "CNNergy accelerator (eyeriss-like, 8-bit)"
        assert "uplink 60 Mbit/s at 0.5 W" in text["Settings"] and "input RLC-coded" in text["Settings"]
