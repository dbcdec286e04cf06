"""Tables and JSON for predictions, calibrations and predicted-versus-measured comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table
from rich.text import Text

from nnperf.ir import Network
from nnperf.predict import NetworkPrediction, SystemModel
from nnperf.report.measurements import ms
from nnperf.report.tables import layer_type

PREDICTION_FORMAT = ("nnperf-prediction", 2)


def calibration_table(model: SystemModel) -> Table:
    """One row per layer-type model: samples, fit quality and the response range it saw."""
    table = Table(title=Text(f"calibration of {model.system_label}: latency models (standardised Ridge, lambda = 1)"),
                  title_justify="left")
    for column, justify in (("layer type", "left"), ("samples", "right"), ("R^2", "right"),
                            ("fastest ms", "right"), ("slowest ms", "right"), ("energy model", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for key, m in sorted(model.latency.items()):
        table.add_row(key, str(m.n_samples), f"{m.r2:.3f}", ms(m.y_min), ms(m.y_max),
                      "yes" if key in model.energy else "-")
    return table


def prediction_table(network: Network, prediction: NetworkPrediction,
                     measured_s: Mapping[str, float] | None = None) -> Table:
    """Per-layer predicted latency (and energy), with the measured time and error when verifying."""
    total = prediction.layer_sum_s
    has_energy = any(p.energy_j is not None for p in prediction.layers)
    title = f"{network.name} on {prediction.system}: predicted per-layer latency"
    table = Table(title=Text(title + (" vs measured (isolated)" if measured_s else "")), title_justify="left",
                  show_footer=True)
    table.add_column("#", justify="right")
    table.add_column("layer", footer="sum of layers")
    table.add_column("type")
    table.add_column("predicted ms", justify="right", footer=ms(total))
    table.add_column("share", justify="right")
    if measured_s is not None:
        measured_total = sum(measured_s.values())
        table.add_column("measured ms", justify="right", footer=ms(measured_total))
        table.add_column("error", justify="right", footer=_error(total, measured_total))
    if has_energy:
        table.add_column("energy mJ", justify="right")
    for i, p in enumerate(prediction.layers, start=1):
        row = [str(i), p.layer, layer_type(network, p.layer), ms(p.latency_s),
               f"{p.latency_s / total:.1%}" if total > 0 else ""]
        if measured_s is not None:
            m = measured_s.get(p.layer)
            row += [ms(m) if m is not None else "-", _error(p.latency_s, m) if m is not None else ""]
        if has_energy:
            row.append(f"{p.energy_j * 1e3:.4g}" if p.energy_j is not None else "-")
        table.add_row(*row)
    return table


def _error(predicted: float, measured: float) -> str:
    return f"{(predicted - measured) / measured:+.1%}" if measured > 0 else "-"


def prediction_summary(prediction: NetworkPrediction, count: int = 5) -> list[str]:
    previous = (f"PreVIous: c = {prediction.coefficient_c:.3f} x {ms(prediction.layer_sum_s)} ms summed over "
                f"layers = {ms(prediction.previous_latency_s)} ms, Eq. 6")
    if prediction.composed_latency_s is None:
        lines = [f"predicted network latency: {ms(prediction.latency_s)} ms ({previous})"]
    else:
        fused = len(prediction.fused_layers)
        lines = [(f"predicted network latency: {ms(prediction.latency_s)} ms (composed: {fused} layer(s) expected "
                  f"fused into the layer before; {previous})")]
    if prediction.energy_j is not None:
        lines.append(f"predicted network energy: {prediction.energy_j * 1e3:.4g} mJ")
    hot = ", ".join(f"{p.layer} {share:.0%}" for p, share in prediction.hotspots(count))
    lines.append(f"hotspots: {hot}")
    return lines


def prediction_document(network: Network, prediction: NetworkPrediction,
                        verify: Mapping[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": PREDICTION_FORMAT[0], "version": PREDICTION_FORMAT[1], "network": network.name,
        "system": prediction.system, "coefficient_c": prediction.coefficient_c,
        "layer_sum_s": prediction.layer_sum_s, "latency_s": prediction.latency_s, "method": prediction.method,
        "previous_latency_s": prediction.previous_latency_s, "composed_latency_s": prediction.composed_latency_s,
        "energy_j": prediction.energy_j,
        "layers": [{"layer": p.layer, "op": p.op, "model": p.key, "latency_s": p.latency_s, "energy_j": p.energy_j,
                    "fused": p.layer in prediction.fused_layers} for p in prediction.layers],
        "hotspots": [{"layer": p.layer, "share": share} for p, share in prediction.hotspots()],
    }
    if verify is not None:
        doc["verify"] = dict(verify)
    return doc
