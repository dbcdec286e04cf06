"""The GLB design sweep's figure and table (nnperf.report.accel): configurations that cannot run are marked,
not dropped; x ticks read the GLB sizes as typed; the optimum names its PE array; series that coincide stay
distinguishable; the GLB energy law is explained; the table stays narrow, its reasons printed once as notes.

AlexNet's shipped table at 8 bits on a 12x14 and a 16x16 PE array: the 16x16 array cannot schedule C1 with an
8 kB GLB (its psums for 16 ofmap rows do not fit). The sweep takes about 10 ms.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image
from rich.console import Console

from nnperf.accel import DesignSweep, eyeriss_spec, reference_network, sweep_design
from nnperf.report.accel import CANNOT_RUN_BAND, plot_energy, plot_sweep, sweep_figure, sweep_notes, sweep_report

GLB_KB = [8, 16, 64, 128]
C1_REASON = "layer 'C1': the GLB cannot hold the psums of one filter for 16 ofmap rows"


@pytest.fixture(scope="module")
def sweep() -> DesignSweep:
    spec = replace(eyeriss_spec(8), glb_energy_law="sqrt")
    return sweep_design(reference_network("alexnet"), spec, GLB_KB, [(12, 14), (16, 16)], name="alexnet")


def legend_texts(fig) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_the_sweep_has_a_configuration_that_cannot_run(sweep: DesignSweep) -> None:
    stopped = [(p.glb_kb, p.pe_rows, p.pe_cols) for p in sweep.points if p.energy_j is None]
    assert stopped == [(8.0, 16, 16), (16.0, 16, 16)]
    assert [(n.number, n.reason, len(n.points)) for n in sweep_notes(sweep)] == [(1, C1_REASON, 2)]


def test_configurations_that_cannot_run_are_marked_at_their_glb_size(sweep: DesignSweep) -> None:
    fig = sweep_figure(sweep)
    ax = fig.axes[0]
    marks = [c for c in ax.collections if "cannot run" in str(c.get_label())]
    assert len(marks) == 1
    assert " ".join(marks[0].get_label().split()) == f"16x16 PEs, RF x1 cannot run: {C1_REASON}"
    # at 8 and 16 kB (offset sideways by a few hundredths of an octave), in the band at the bottom of the axes
    xs = [x for x, _ in marks[0].get_offsets()]
    assert [round(math.log2(x), 1) for x in xs] == [3.0, 4.0]
    assert all(y == CANNOT_RUN_BAND / 2 for _, y in marks[0].get_offsets())
    fig.canvas.draw()
    band_top = ax.transAxes.transform((0, CANNOT_RUN_BAND))[1]
    bottom = ax.transAxes.transform((0, 0))[1]
    for _, y in marks[0].get_offset_transform().transform(marks[0].get_offsets()):
        assert bottom < y < band_top  # y in axes fraction, whatever the energies
    lowest = min(p.energy_j for p in sweep.valid()) * 1e3  # type: ignore[type-var,operator]
    assert ax.transData.transform((8, lowest))[1] > band_top  # no energy is drawn in the band
    assert any("cannot run: layer 'C1'" in text for text in legend_texts(fig))
    # the 16x16 line leaves those sizes out: it starts at 64 kB
    line = next(line for line in ax.get_lines() if line.get_label() == "16x16 PEs, RF x1")
    assert [round(math.log2(x)) for x in line.get_xdata()] == [6, 7]


def test_x_ticks_read_the_typed_glb_sizes(sweep: DesignSweep) -> None:
    fig = sweep_figure(sweep)
    ax = fig.axes[0]
    fig.canvas.draw()
    assert ax.get_xscale() == "log"
    assert list(ax.get_xticks()) == GLB_KB
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8", "16", "64", "128"]
    assert ax.get_xticks(minor=True).size == 0
    assert "KiB" in ax.get_xlabel()


def test_optimum_names_its_pe_array_and_series_stay_distinguishable(sweep: DesignSweep) -> None:
    fig = sweep_figure(sweep)
    ax = fig.axes[0]
    best = sweep.best
    assert (best.glb_kb, best.pe_rows, best.pe_cols) == (128.0, 12, 14)
    legend = legend_texts(fig)
    assert f"optimum: GLB 128 KiB, 12x14 PEs, RF x1, {best.energy_j * 1e3:.4g} mJ" in legend  # type: ignore[operator]
    assert any(text.startswith("smallest GLB within 2% of it: 64 KiB, 12x14 PEs") for text in legend)
    lines = [line for line in ax.get_lines() if "PEs" in line.get_label()]
    assert len({line.get_marker() for line in lines}) == 2 and len({line.get_linestyle() for line in lines}) == 2
    # at 128 kB both arrays cost within 0.1%: drawn side by side, not on top of each other
    at_128 = sorted(x for line in lines for x in line.get_xdata() if abs(math.log2(x) - 7) < 0.1)
    assert len(at_128) == 2 and at_128[0] < 128 < at_128[1]


def test_the_glb_law_is_explained_and_the_title_names_the_settings(sweep: DesignSweep) -> None:
    fig = sweep_figure(sweep)
    title = " ".join(fig.get_suptitle().split())
    for needle in ("alexnet", "eyeriss-like accelerator, 8-bit", "PE arrays 12x14, 16x16", "GLB 8, 16, 64, 128 KiB",
                   "GLB energy law sqrt"):
        assert needle in title
    caption = " ".join(fig.axes[0].get_title(loc="left").split())
    assert "the energy of one GLB access scales with sqrt(GLB size / 100 kB)" in caption


def test_every_text_lies_inside_the_figure(sweep: DesignSweep) -> None:
    from matplotlib.text import Text

    fig = sweep_figure(sweep)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    ax = fig.axes[0]
    low, high = sorted(ax.get_ylim())
    undrawn = {id(t.label1) for t in ax.yaxis.get_major_ticks() if not low <= t.get_loc() <= high}
    for text in fig.findobj(Text):
        if text.get_visible() and text.get_text().strip() and id(text) not in undrawn:
            box = text.get_window_extent(renderer)
            assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, text.get_text()


def test_png_metadata_names_network_accelerator_and_settings(tmp_path: Path, sweep: DesignSweep) -> None:
    with Image.open(plot_sweep(sweep, tmp_path / "glb.png")) as image:
        text = dict(image.text)
    assert text["Title"].startswith("Which GLB size gives alexnet the least energy per image?")
    assert text["Source"] and text["Network"] == "alexnet"
    assert "12x14, 16x16" in text["Accelerator"] and "8-bit" in text["Accelerator"]
    assert text["Settings"] == "GLB 8, 16, 64, 128 KiB; GLB energy law sqrt"


def test_the_table_says_cannot_run_briefly_and_gives_each_reason_once(sweep: DesignSweep) -> None:
    console = Console(record=True, width=200)
    console.print(sweep_report(sweep))
    text = console.export_text()
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert [line.split("│")[4].strip() for line in rows if "16x16" in line] == [
        "cannot run (1)", "cannot run (1)", "6.756", "6.692"]
    assert max(len(line) for line in text.splitlines() if line[:1] in "┏│└") < 80
    assert text.count(C1_REASON) == 1
    assert f"(1) {C1_REASON} (16x16 PEs, RF x1 at GLB 8, 16 kB)" in text
    assert "smallest within 2%: 64 kB" in text and "GLB law 'sqrt'" in text


def test_energy_figure_names_network_accelerator_and_settings(tmp_path: Path) -> None:
    from nnperf.accel import network_energy

    energy = network_energy(reference_network("alexnet"), eyeriss_spec(16), "alexnet")
    with Image.open(plot_energy(energy, tmp_path / "energy.png")) as image:
        text = dict(image.text)
    assert text["Title"].startswith(f"Where does alexnet spend its {energy.total_j * 1e3:.3g} mJ per image?")
    assert text["Network"] == "alexnet" and text["Accelerator"] == "eyeriss-like accelerator, 16-bit, 12x14 PEs"
    assert text["Settings"] == "GLB 100 KiB; GLB energy law constant"
