"""Accelerator energy as tables and figures: per layer with its breakdown, the schedule, design sweeps."""

from __future__ import annotations

import itertools
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from nnperf.accel import COMPONENTS, AcceleratorSpec, DesignPoint, DesignSweep, NetworkEnergy
from nnperf.report._format import HOUSE_STYLE, OKABE_ITO, figure_metadata, pyplot, si, write_png

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COMPONENT_LABELS = {"mac": "MAC", "rf": "RF", "inter_pe": "inter-PE", "glb": "GLB", "dram": "DRAM", "clock": "clock",
                    "control": "other ctrl"}
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P")
SERIES_LINES = ("-", "--", "-.", ":")
CANNOT_RUN_BAND = 0.08
"""The bottom fraction of a sweep figure's axes where configurations that cannot run are marked."""


def _uj(joules: float) -> str:
    return f"{joules * 1e6:,.1f}"


def energy_table(energy: NetworkEnergy, by_block: bool = False) -> Table:
    """Energy per image of each layer (or reporting layer) in uJ, its breakdown and the cumulative energy."""
    spec = energy.spec
    title = (f"{energy.name} on {spec.name} ({spec.bits}-bit, {spec.pe_rows}x{spec.pe_cols} PEs, "
             f"GLB {spec.glb_kb:g} kB): {energy.total_j * 1e3:.4g} mJ per image")
    table = Table(title=Text(title), title_justify="left", show_footer=True)
    table.add_column("reporting layer" if by_block else "layer", footer="total")
    table.add_column("MACs", justify="right", footer=si(energy.macs))
    if not by_block:
        table.add_column("n", justify="right")
    breakdown = energy.breakdown()
    for c in COMPONENTS:
        table.add_column(f"{COMPONENT_LABELS[c]} uJ", justify="right", footer=_uj(breakdown[c]))
    table.add_column("energy uJ", justify="right", footer=_uj(energy.total_j))
    table.add_column("cumulative mJ", justify="right")
    cumulative = 0.0
    if by_block:
        for name, rows in energy.blocks():
            total = sum(r.energy_j for r in rows)
            cumulative += total
            parts = [sum(r.breakdown()[c] for r in rows) for c in COMPONENTS]
            table.add_row(name, si(sum(r.macs for r in rows)), *map(_uj, parts), _uj(total), f"{cumulative * 1e3:.4g}")
        return table
    for row in energy.layers:
        cumulative += row.energy_j
        table.add_row(row.name, si(row.macs), str(row.schedule.batch), *(_uj(row.breakdown()[c]) for c in COMPONENTS),
                      _uj(row.energy_j), f"{cumulative * 1e3:.4g}")
    return table


def explain_table(energy: NetworkEnergy) -> Table:
    """Each layer's computation-scheduling parameters and the exception rules that fired (NeuPart Table II)."""
    table = Table(title=Text(f"{energy.name}: scheduling parameters (docs/cnnergy.md, section 2)"),
                  title_justify="left")
    for column in ("layer", "R M H C U E", "S", "c_set", "c_pass", "f_set", "f_pass", "z", "x_of", "y_of", "y_comp",
                   "n (n_max)", "GLB ifmap+psum kB", "rules"):
        table.add_column(column, justify="left" if column in ("layer", "R M H C U E", "rules") else "right")
    for row in energy.layers:
        s, layer = row.schedule, row.layer
        shape = (f"{layer.filter_size} {layer.filters} {layer.ifmap_size} {layer.channels} {layer.stride} "
                 f"{layer.ofmap_size}")
        table.add_row(layer.name, shape, str(s.sets_per_pass), f"{s.channels_per_set:g}", f"{s.channels_per_pass:g}",
                      f"{s.filters_per_set:.4g}", f"{s.filters_per_pass:.4g}", "1" if s.all_channels_in_pass else "0",
                      f"{s.x_ofmap:.4g}", f"{s.y_ofmap:g}", f"{s.y_ofmap_glb:.4g}", f"{s.batch} ({s.batch_max:.3g})",
                      f"{s.ifmap_kb:.3g}+{s.psum_kb:.3g}", "+".join(map(str, s.rules)) or "-")
    return table


def _reason(why_not: str) -> str:
    """A configuration's 'cannot run' reason without its own GLB size, so that sizes failing alike share it."""
    return re.sub(r"the GLB of [0-9.e+]+ kB", "the GLB", why_not)


@dataclass(frozen=True)
class SweepNote:
    """One reason configurations of a sweep cannot run, numbered, and the configurations it stops."""

    number: int
    reason: str
    points: tuple[DesignPoint, ...]

    def __str__(self) -> str:
        arrays: dict[str, list[str]] = {}
        for p in self.points:
            arrays.setdefault(_array_text(p), []).append(f"{p.glb_kb:g}")
        where = "; ".join(f"{array} at GLB {', '.join(sizes)} kB" for array, sizes in arrays.items())
        return f"({self.number}) {self.reason} ({where})"


def _array_text(p: DesignPoint) -> str:
    return f"{p.pe_rows}x{p.pe_cols} PEs, RF x{p.rf_scale:g}"


def sweep_notes(sweep: DesignSweep) -> list[SweepNote]:
    """Why the configurations that cannot run cannot: one numbered note per distinct reason, in sweep order."""
    reasons: dict[str, list[DesignPoint]] = {}
    for p in sweep.points:
        if p.energy_j is None:
            reasons.setdefault(_reason(p.why_not), []).append(p)
    return [SweepNote(i, reason, tuple(points)) for i, (reason, points) in enumerate(reasons.items(), start=1)]


def _note_numbers(notes: Sequence[SweepNote]) -> dict[int, int]:
    """The note number of every configuration that cannot run, by its id."""
    return {id(p): note.number for note in notes for p in note.points}


GLB_LAW_WORDS = {
    "sqrt": "GLB law 'sqrt': the energy of one GLB access scales with sqrt(GLB size / {ref:g} kB), as "
            "wire-dominated SRAM does in CACTI: a bigger GLB saves DRAM traffic but costs more per access.",
    "constant": "GLB law 'constant': one GLB access costs the same at every GLB size (the public CNNergy model), "
                "so a bigger GLB is never worse.",
}
"""Each GLB energy law in words, for captions."""


def glb_law_text(spec: AcceleratorSpec) -> str:
    """The spec's GLB energy law in words."""
    return GLB_LAW_WORDS[spec.glb_energy_law].format(ref=spec.glb_reference_kb)


def sweep_summary(sweep: DesignSweep) -> str:
    """The optimum (GLB size and PE array) and the smallest GLB within 2% of it, in one line."""
    best, near = sweep.best, sweep.smallest_near_best()
    assert best.energy_j is not None and near.energy_j is not None
    return (f"optimum GLB {best.glb_kb:g} kB with {best.pe_rows}x{best.pe_cols} PEs ({best.energy_j * 1e3:.4g} mJ); "
            f"smallest within 2%: {near.glb_kb:g} kB ({near.energy_j * 1e3:.4g} mJ, "
            f"{1 - near.glb_kb / best.glb_kb:.1%} less GLB)")


def sweep_table(sweep: DesignSweep) -> Table:
    """Total energy per configuration, the optimum and the smallest GLB within 2% of it marked; a configuration
    that cannot run says so with the number of its note (:func:`sweep_notes`). :func:`sweep_report` prints
    the table with the optimum and the notes below it."""
    best, near = sweep.best, sweep.smallest_near_best()
    numbers = _note_numbers(sweep_notes(sweep))
    table = Table(title=Text(f"{sweep.network}: energy per image over the design space "
                             f"(GLB energy law: {sweep.spec.glb_energy_law})"), title_justify="left")
    for column in ("GLB kB", "PE array", "RF scale", "energy mJ", ""):
        table.add_column(column, justify="right" if column != "" else "left")
    for p in sweep.points:
        mark = "optimum" if p is best else ("within 2%, smallest" if p is near else "")
        energy = f"{p.energy_j * 1e3:.4g}" if p.energy_j is not None else f"cannot run ({numbers[id(p)]})"
        table.add_row(f"{p.glb_kb:g}", f"{p.pe_rows}x{p.pe_cols}", f"{p.rf_scale:g}", energy, mark)
    return table


def sweep_report(sweep: DesignSweep) -> Group:
    """:func:`sweep_table`, the optimum (:func:`sweep_summary`), the GLB law in words, then the numbered notes:
    why each configuration that cannot run cannot, once."""
    notes = [Text(str(note)) for note in sweep_notes(sweep)]
    return Group(sweep_table(sweep), Text(sweep_summary(sweep)), Text(glb_law_text(sweep.spec)),
                 *([Text("cannot run:"), *notes] if notes else []))



def _energy_settings(energy: NetworkEnergy) -> tuple[str, str]:
    spec = energy.spec
    return (f"{spec.name} accelerator, {spec.bits}-bit, {spec.pe_rows}x{spec.pe_cols} PEs",
            f"GLB {spec.glb_kb:g} KiB; GLB energy law {spec.glb_energy_law}")


def energy_figure(energy: NetworkEnergy) -> Figure:
    """Energy per reporting layer stacked by component, with the cumulative energy (NeuPart Fig. 2(a), 8)."""
    plt = pyplot()
    blocks = energy.blocks()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(blocks) + 2), 4.4), layout="constrained")
    names = [name for name, _ in blocks]
    bottom = [0.0] * len(blocks)
    for c in COMPONENTS:
        values = [sum(r.breakdown()[c] for r in rows) * 1e3 for _, rows in blocks]
        ax.bar(names, values, bottom=bottom, label=COMPONENT_LABELS[c])
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("energy per image (mJ)")
    accelerator, settings = _energy_settings(energy)
    ax.set_title(f"Where does {energy.name} spend its {energy.total_j * 1e3:.3g} mJ per image?\n"
                 f"{accelerator}; {settings}")
    ax.tick_params(axis="x", rotation=60)
    twin = ax.twinx()
    cumulative, running = [], 0.0
    for total in bottom:
        running += total
        cumulative.append(running)
    twin.plot(names, cumulative, color="black", marker="o", label="cumulative")
    twin.set_ylabel("cumulative energy (mJ)")
    twin.grid(False)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend([*handles, *twin.get_lines()], [*labels, "cumulative (right axis)"], loc="outside lower center",
               ncols=4)
    return fig


def plot_energy(energy: NetworkEnergy, path: Path) -> Path:
    """:func:`energy_figure` written as a PNG with the network, accelerator and settings in its metadata."""
    fig = energy_figure(energy)
    accelerator, settings = _energy_settings(energy)
    return write_png(fig, path, figure_metadata(" ".join(fig.axes[0].get_title().split()), Network=energy.name,
                                                Accelerator=accelerator, Settings=settings))


def _sweep_settings(sweep: DesignSweep) -> tuple[str, str]:
    """What the sweep ran on (accelerator, bits, PE arrays, RF scales) and over (GLB sizes, law)."""
    spec = sweep.spec
    arrays = list(dict.fromkeys(f"{p.pe_rows}x{p.pe_cols}" for p in sweep.points))
    scales = list(dict.fromkeys(f"x{p.rf_scale:g}" for p in sweep.points))
    accelerator = (f"{spec.name} accelerator, {spec.bits}-bit, PE array{'s' if len(arrays) > 1 else ''} "
                   f"{', '.join(arrays)}, register files {', '.join(scales)}")
    sizes = list(dict.fromkeys(f"{p.glb_kb:g}" for p in sweep.points))
    return accelerator, f"GLB {', '.join(sizes)} KiB; GLB energy law {spec.glb_energy_law}"


def _glb_ticks(ax: Any, sizes: Sequence[float]) -> None:
    """Ticks at exactly the swept GLB sizes, labelled as typed (8, 16, 100); where two lie too close to read,
    the labels stand upright, and one still too close to the last labelled stays an unlabelled tick."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    sizes = sorted(set(sizes))
    octaves = math.log2(sizes[-1] / sizes[0]) if len(sizes) > 1 else 1.0
    inch_per_octave = 0.8 * ax.figure.get_figwidth() / max(octaves, 1.0)
    gaps = [math.log2(b / a) * inch_per_octave for a, b in itertools.pairwise(sizes)]
    upright = bool(gaps) and min(gaps) < 0.4
    labels, last = [], -math.inf
    for size in sizes:
        position = math.log2(size) * inch_per_octave
        show = position - last >= (0.17 if upright else 0.0)
        labels.append(f"{size:g}" if show else "")
        last = position if show else last
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_major_formatter(FixedFormatter(labels))
    ax.xaxis.set_minor_locator(NullLocator())
    if upright:
        ax.tick_params(axis="x", labelrotation=90)


def sweep_figure(sweep: DesignSweep) -> Figure:
    """Total energy against GLB size, one line per PE array and RF scale (NeuPart Fig. 13(c)).

    The x axis is log2 with a tick at each swept size, labelled as typed. A configuration that cannot run
    is an 'x' in a grey band at the bottom of the axes, with a legend entry per reason ("cannot run: ...").
    Series that lie on top of each other stay visible: each has its own marker and line style and a slight
    sideways offset. The optimum and the smallest GLB within 2% of it are marked and named with their PE
    array; the caption says what the GLB energy law means.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 5.4), layout="constrained")
    dodge = _draw_series(ax, sweep)
    best, near = sweep.best, sweep.smallest_near_best()
    assert best.energy_j is not None and near.energy_j is not None
    shift = dodge[(best.pe_rows, best.pe_cols, best.rf_scale)]
    ax.scatter([best.glb_kb * shift], [best.energy_j * 1e3], s=260, facecolors="none",
               edgecolors="black", linewidths=1.8, zorder=5,
               label=f"optimum: GLB {best.glb_kb:g} KiB, {_array_text(best)}, {best.energy_j * 1e3:.4g} mJ")
    ax.scatter([near.glb_kb * shift], [near.energy_j * 1e3], s=260, marker="s", facecolors="none",
               edgecolors="black", linewidths=1.2, zorder=5,
               label=f"smallest GLB within 2% of it: {near.glb_kb:g} KiB, {_array_text(near)}, "
                     f"{near.energy_j * 1e3:.4g} mJ")
    ax.set_xscale("log", base=2)
    _glb_ticks(ax, [p.glb_kb for p in sweep.points])
    if len(sweep.valid()) < len(sweep.points):
        _cannot_run_band(ax)
    ax.set_xlabel("GLB size (KiB, log2 scale)")
    ax.set_ylabel("energy per image (mJ)")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1)
    accelerator, settings = _sweep_settings(sweep)
    width = int(fig.get_figwidth() * 72 / (0.56 * HOUSE_STYLE["figure.titlesize"]))
    fig.suptitle("\n".join([*textwrap.wrap(f"Which GLB size gives {sweep.network} the least energy per image?", width),
                            *textwrap.wrap(f"{accelerator}; {settings}", width, break_on_hyphens=False)]))
    ax.set_title(textwrap.fill(glb_law_text(sweep.spec), int(width * 1.15)), fontsize=8, loc="left")
    return fig


def _draw_series(ax: Any, sweep: DesignSweep) -> dict[tuple[int, int, float], float]:
    """One line per PE array and RF scale, and an 'x' in the bottom band (y in axes fraction) at each size that
    cannot run, per reason; returns each series' sideways offset (a factor on the GLB size, a fraction of an
    octave, so that series of equal energies stay distinguishable)."""
    from matplotlib.transforms import blended_transform_factory

    series: dict[tuple[int, int, float], list[DesignPoint]] = {}
    for p in sweep.points:
        series.setdefault((p.pe_rows, p.pe_cols, p.rf_scale), []).append(p)
    notes = sweep_notes(sweep)
    numbers = _note_numbers(notes)
    dodge = {key: 2 ** (0.035 * (i - (len(series) - 1) / 2)) for i, key in enumerate(series)}
    bottom = blended_transform_factory(ax.transData, ax.transAxes)
    for i, (key, points) in enumerate(series.items()):
        points = sorted(points, key=lambda p: p.glb_kb)
        rows, cols, scale = key
        color = OKABE_ITO[i % len(OKABE_ITO)]
        valid = [p for p in points if p.energy_j is not None]
        ax.plot([p.glb_kb * dodge[key] for p in valid], [p.energy_j * 1e3 for p in valid],  # type: ignore[operator]
                color=color, marker=SERIES_MARKERS[i % len(SERIES_MARKERS)], markersize=6,
                linestyle=SERIES_LINES[i % len(SERIES_LINES)], zorder=3, label=f"{rows}x{cols} PEs, RF x{scale:g}")
        for note in notes:
            stopped = [p.glb_kb * dodge[key] for p in points if numbers.get(id(p)) == note.number]
            if stopped:
                ax.scatter(stopped, [CANNOT_RUN_BAND / 2] * len(stopped), marker="x", s=50, linewidths=1.8,
                           color=color, transform=bottom, zorder=4, clip_on=False,
                           label=textwrap.fill(f"{rows}x{cols} PEs, RF x{scale:g} cannot run: {note.reason}", 75))
    return dodge


def _cannot_run_band(ax: Any) -> None:
    """A grey band at the bottom of the axes for the 'cannot run' marks, below every energy and labelled value."""
    from matplotlib.patches import Rectangle

    low, high = ax.get_ylim()
    ticks = [t for t in ax.get_yticks() if low <= t <= high]
    ax.set_ylim(low - CANNOT_RUN_BAND * (high - low) / (1 - CANNOT_RUN_BAND), high)
    ax.set_yticks(ticks)
    ax.add_patch(Rectangle((0, 0), 1, CANNOT_RUN_BAND, transform=ax.transAxes, facecolor="0.93",
                           edgecolor="none", zorder=0))


def plot_sweep(sweep: DesignSweep, path: Path) -> Path:
    """:func:`sweep_figure` written as a PNG with the network, accelerator and settings in its metadata."""
    fig = sweep_figure(sweep)
    accelerator, settings = _sweep_settings(sweep)
    return write_png(fig, path, figure_metadata(" ".join(fig.get_suptitle().split()), Network=sweep.network,
                                                Accelerator=accelerator, Settings=settings))
