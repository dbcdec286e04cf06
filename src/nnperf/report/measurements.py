"""Terminal tables and JSON documents for measurements (profiles, systems)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from nnperf.campaign import ProfileReport
from nnperf.ir import Network
from nnperf.measure import Timing
from nnperf.report.tables import layer_type
from nnperf.store import SystemRecord

PROFILE_FORMAT = ("nnperf-profile", 1)


def ms(seconds: float) -> str:
    """Seconds shown as milliseconds with 3-4 significant digits."""
    value = seconds * 1e3
    return f"{value:.4g}" if value >= 1 else f"{value:.3g}"


def timing_text(timing: Timing) -> str:
    """'46.2 ms (IQR 45.9-46.8, +/-0.4%, n=20x3)'."""
    s = timing.stats
    return (f"{ms(s.median_s)} ms (IQR {ms(s.q1_s)}-{ms(s.q3_s)}, CI +/-{s.ci_rel:.1%}, "
            f"n={s.n}x{timing.block_size})")


def profile_table(network: Network, report: ProfileReport) -> Table:
    """Per-layer times: median, IQR, CI half-width, share of the layer sum, fused group, energy."""
    total = report.layer_sum_s
    has_energy = any(m.energy_j is not None for m in report.layers)
    has_groups = bool(report.unattributed_s) or any(m.group_size > 1 for m in report.layers)
    table = Table(title=Text(f"{network.name} on {report.system_label}: per-layer times ({report.method})"),
                  title_justify="left", show_footer=True)
    table.add_column("#", justify="right")
    names = [m.layer for m in report.layers] + list(report.unattributed_s)
    # the layer names keep their width on a narrow terminal; the numbers' columns give way first
    table.add_column("layer", footer="sum of layers", no_wrap=True, min_width=max(map(len, names), default=5))
    table.add_column("type")
    table.add_column("median ms", justify="right", footer=ms(total))
    table.add_column("IQR ms", justify="right")
    table.add_column("CI +/-", justify="right")
    table.add_column("n x block", justify="right")
    table.add_column("share", justify="right")
    if has_groups:
        table.add_column("fused group")
    if has_energy:
        table.add_column("energy mJ", justify="right")
    counted: set[str] = set()
    index = {layer.name: i for i, layer in enumerate(network.layers, start=1)}
    for m in report.layers:
        s = m.timing.stats
        group = m.group or m.layer
        first = group not in counted
        counted.add(group)
        share = f"{s.median_s / total:.1%}" if first and total > 0 else ""
        fused = f"{group} ({m.group_size} layers)" if m.group_size > 1 else ""
        row: list[str | Text] = [str(index.get(m.layer, "")), m.layer, layer_type(network, m.layer),
               ms(s.median_s) if first else Text(ms(s.median_s), style="dim"), f"{ms(s.q1_s)}-{ms(s.q3_s)}",
               f"{s.ci_rel:.1%}", f"{s.n}x{m.timing.block_size}", share] + ([fused] if has_groups else [])
        if has_energy:
            row.append(f"{m.energy_j * 1e3:.4g}" if m.energy_j is not None else "-")
        table.add_row(*row)
    for node, seconds in report.unattributed_s.items():
        row = ["", Text(node, style="italic"), "framework", ms(seconds), "", "", "", f"{seconds / total:.1%}",
               "not an IR layer"]
        table.add_row(*(row + ([""] if has_energy else [])))
    return table


def op_type_table(network: Network, report: ProfileReport) -> Table:
    """Time by op type (as torch.profiler's ``key_averages`` and ONNX Runtime's op summary): each type's summed
    median, its share of the layer sum and its layer count; a fused group counts once, with its first member."""
    from nnperf.report.optypes import time_by_op

    counted: set[str] = set()
    times = []
    for m in report.layers:
        group = m.group or m.layer
        times.append((layer_type(network, m.layer), 0.0 if group in counted else m.timing.stats.median_s))
        counted.add(group)
    times.extend(("framework", seconds) for seconds in report.unattributed_s.values())
    table = Table(title=Text(f"{network.name}: time by op type ({report.method})"), title_justify="left")
    for column, justify in (("op type", "left"), ("layers", "right"), ("total ms", "right"), ("share", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in time_by_op(times):
        table.add_row(row.op, str(row.layers), ms(row.total_s), f"{row.share:.1%}")
    return table


def profile_summary(report: ProfileReport) -> list[str]:
    """The whole-network time, the layer-sum ratio, drift and resume notes, one line each."""
    net = report.network
    what = {"isolated": "isolated layer times", "profiler": "profiler node times", "none": ""}[report.method]
    lines = [f"whole network: {timing_text(net.timing)}"]
    if net.energy_j is not None:
        lines.append(f"whole-network energy: {net.energy_j * 1e3:.4g} mJ per inference ({net.power_meter})")
    if what:
        lines.append(f"sum of {what}: {ms(report.layer_sum_s)} ms = {report.sum_ratio:.3f} x the whole network")
    if any(m.group_size > 1 for m in report.layers):
        lines.append("fused groups: the framework ran these IR layers as one node; each member shows the group's "
                     "time (dimmed after the first) and it is counted once")
    if report.drift is not None:
        lines.append(f"drift sentinel: {report.drift:+.1%} between the start and the end of the campaign")
    if report.resumed:
        lines.append(f"resumed an interrupted campaign: {report.skipped} layer(s) were already measured")
    return lines


def profile_document(network: Network, report: ProfileReport) -> dict[str, Any]:
    """The profile as a versioned JSON-ready dict (seconds and joules)."""
    return {
        "format": PROFILE_FORMAT[0], "version": PROFILE_FORMAT[1],
        "network": network.name, "system": report.system_label, "system_key": report.system_key,
        "run_id": report.run_id, "method": report.method, "resumed": report.resumed,
        "whole_network": _timing_dict(net := report.network.timing) | {"energy_j": report.network.energy_j},
        "layer_sum_s": report.layer_sum_s, "sum_ratio": report.sum_ratio, "drift": report.drift,
        "warnings": list(report.warnings), "unattributed_s": dict(report.unattributed_s),
        "layers": [{"layer": m.layer, "op": m.op, "group": m.group, "group_size": m.group_size,
                    "energy_j": m.energy_j, **_timing_dict(m.timing)} for m in report.layers],
        "whole_network_times_s": list(net.times_s),
    }


def _timing_dict(timing: Timing) -> dict[str, Any]:
    s = timing.stats
    return {"median_s": s.median_s, "q1_s": s.q1_s, "q3_s": s.q3_s, "ci_low_s": s.ci_low_s,
            "ci_high_s": s.ci_high_s, "n": s.n, "block_size": timing.block_size, "n_outliers": s.n_outliers,
            "stop_reason": timing.stop_reason}


def systems_table(systems: Sequence[SystemRecord], counts: Mapping[int, tuple[int, int, int]]) -> Table:
    """The systems in a store with how much was measured on each."""
    table = Table(title="systems in the store", title_justify="left")
    for name, justify in (("id", "right"), ("key", "left"), ("backend", "left"), ("device", "left"),
                          ("device name", "left"), ("options", "left"), ("versions", "left"), ("runs", "right"),
                          ("layer meas.", "right"), ("network meas.", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in systems:
        runs, layers, networks = counts.get(s.id, (0, 0, 0))
        versions = s.host.get("versions", {})
        framework = ", ".join(f"{k} {v}" for k, v in versions.items() if k in ("torch", "onnxruntime",
                                                                        "opencv-python-headless"))
        table.add_row(str(s.id), s.key[:8], s.backend, s.device, s.device_name,
                      ", ".join(f"{k}={v}" for k, v in s.options.items()), framework, str(runs), str(layers),
                      str(networks))
    return table
