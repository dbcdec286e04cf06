"""Accelerator energy as tables and figures: per layer with its breakdown, the schedule, design sweeps."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text

from nnperf.accel import COMPONENTS, DesignSweep, NetworkEnergy
from nnperf.report._format import pyplot, si, write_png

COMPONENT_LABELS = {"mac": "MAC", "rf": "RF", "inter_pe": "inter-PE", "glb": "GLB", "dram": "DRAM", "clock": "clock",
                    "control": "other ctrl"}


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


def sweep_table(sweep: DesignSweep) -> Table:
    """Total energy per configuration, the optimum and the smallest GLB within 2% of it marked."""
    best, near = sweep.best, sweep.smallest_near_best()
    table = Table(title=Text(f"{sweep.network}: energy per image over the design space "
                             f"(GLB energy law: {sweep.spec.glb_energy_law})"), title_justify="left",
                  caption=Text(f"optimum GLB {best.glb_kb:g} kB ({best.energy_j * 1e3:.4g} mJ); smallest within 2%: "
                               f"{near.glb_kb:g} kB ({near.energy_j * 1e3:.4g} mJ, "
                               f"{1 - near.glb_kb / best.glb_kb:.1%} less GLB)"), caption_justify="left")
    for column in ("GLB kB", "PE array", "RF scale", "energy mJ", ""):
        table.add_column(column, justify="right" if column != "" else "left")
    for p in sweep.points:
        mark = "optimum" if p is best else ("within 2%, smallest" if p is near else "")
        energy = f"{p.energy_j * 1e3:.4g}" if p.energy_j is not None else f"cannot run: {p.why_not}"
        table.add_row(f"{p.glb_kb:g}", f"{p.pe_rows}x{p.pe_cols}", f"{p.rf_scale:g}", energy, mark)
    return table


def plot_energy(energy: NetworkEnergy, path: Path) -> Path:
    """Energy per reporting layer stacked by component, with the cumulative energy (NeuPart Fig. 2(a), 8)."""
    plt = pyplot()
    blocks = energy.blocks()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(blocks) + 2), 4.2))
    names = [name for name, _ in blocks]
    bottom = [0.0] * len(blocks)
    for c in COMPONENTS:
        values = [sum(r.breakdown()[c] for r in rows) * 1e3 for _, rows in blocks]
        ax.bar(names, values, bottom=bottom, label=COMPONENT_LABELS[c])
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("energy per image (mJ)")
    ax.set_title(f"{energy.name}: {energy.total_j * 1e3:.3g} mJ on {energy.spec.name}, {energy.spec.bits}-bit")
    ax.tick_params(axis="x", rotation=60)
    twin = ax.twinx()
    cumulative, running = [], 0.0
    for total in bottom:
        running += total
        cumulative.append(running)
    twin.plot(names, cumulative, color="black", marker="o", label="cumulative")
    twin.set_ylabel("cumulative energy (mJ)")
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    return write_png(fig, path)


def plot_sweep(sweep: DesignSweep, path: Path) -> Path:
    """Total energy against GLB size, one line per PE array and RF scale (NeuPart Fig. 13(c))."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    series: dict[tuple[int, int, float], list[tuple[float, float]]] = {}
    for p in sweep.valid():
        assert p.energy_j is not None
        series.setdefault((p.pe_rows, p.pe_cols, p.rf_scale), []).append((p.glb_kb, p.energy_j * 1e3))
    for (rows, cols, scale), values in series.items():
        values.sort()
        ax.plot([v[0] for v in values], [v[1] for v in values], marker="o",
                label=f"{rows}x{cols} PEs, RF x{scale:g}")
    best, near = sweep.best, sweep.smallest_near_best()
    assert best.energy_j is not None and near.energy_j is not None
    ax.scatter([best.glb_kb], [best.energy_j * 1e3], s=120, facecolors="none", edgecolors="red", zorder=3,
               label=f"optimum {best.glb_kb:g} kB")
    ax.scatter([near.glb_kb], [near.energy_j * 1e3], s=120, marker="s", facecolors="none", edgecolors="green",
               zorder=3, label=f"within 2%: {near.glb_kb:g} kB")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GLB size (kB)")
    ax.set_ylabel("energy per image (mJ)")
    ax.set_title(f"{sweep.network}: energy vs GLB size ({sweep.spec.bits}-bit, GLB law {sweep.spec.glb_energy_law})")
    ax.legend(fontsize=8)
    return write_png(fig, path)
