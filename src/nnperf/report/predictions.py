"""Tables and JSON for predictions, calibrations and predicted-versus-measured comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table
from rich.text import Text

from nnperf.ir import GenericAttrs, Network
from nnperf.ir.metrics import network_metrics
from nnperf.prediction import NetworkPrediction, SystemModel, Verification, network_predictor_classes
from nnperf.report.measurements import ms
from nnperf.report.tables import layer_type


def calibration_table(model: SystemModel) -> Table:
    """One row per layer-type model: samples, fit quality and the response range it saw."""
    table = Table(title=Text(f"calibration of {model.system_label}: latency models (standardised Ridge, lambda = 1)"),
                  title_justify="left")
    for column, justify in (("layer type", "left"), ("samples", "right"), ("R^2", "right"),
                            ("fastest ms", "right"), ("slowest ms", "right"), ("energy model", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for key, m in sorted(model.latency.items()):
        table.add_row(key, str(m.n_samples_), f"{m.r2_:.3f}", ms(m.y_min_), ms(m.y_max_),
                      "yes" if key in model.energy else "-")
    return table


def calibration_summary(model: SystemModel, store_path: str) -> list[str]:
    """What the calibration measured and fitted: c, then each network predictor's own line in display order
    (the composition, the kernel-aware models, the roofline peaks, ...), and where it is stored."""
    info = model.calibration
    lines = [(f"network coefficient c = {model.coefficient_c:.3f} (Eq. 6, from {len(info['networks'])} "
             f"whole-network runs); {info['layers']} layers measured; {info['wall_s']:.0f} s "
             f"({info['reused_networks']} network(s) reused from earlier runs)")]
    for predictor in model.ordered_predictors:
        line = predictor.calibration_line(info)
        if line is not None:
            lines.append(line)
    reference = model.reference_s
    if reference is not None:
        lines.append(f"machine-speed reference ({reference[0]}): {reference[1] * 1e3:.4g} ms at calibration; "
                     "`predict --verify` scales its measurement to this speed")
    check = info.get("machine_check")
    if isinstance(check, dict) and check.get("verdict") not in (None, "ok"):
        named = [f["name"] for f in check.get("findings", []) if f.get("level") == check["verdict"]]
        lines.append(f"machine check before calibrating: {check['verdict']} ({', '.join(named)}); the figures "
                     "may carry that noise: see `nnperf check`, and calibrate again on a quieter machine")
    lines.append(f"stored for {model.system_label} (system {model.system_key[:8]}) in {store_path}")
    return lines


def calibration_header(backend: str, device: str, threads: int, store_path: str, sample_budget_s: float = 0.0,
                       blocks: bool = False) -> str:
    """The line ``nnperf calibrate`` starts with: what it will measure (with ``blocks``, PreVIousNet-06 too), where
    it goes, that it resumes."""
    from nnperf.campaign import networks_to_calibrate

    networks = networks_to_calibrate(blocks)
    layers = sum(len(n.layers) for n in networks)
    sampling = f", then {sample_budget_s:g} s of sampled layers" if sample_budget_s > 0 else ""
    return (f"calibrating {backend} on {device} ({threads} thread{'s' if threads != 1 else ''}) into {store_path}: "
            f"{len(networks)} calibration networks, {layers} layers timed alone and each network whole, then short "
            f"profiler passes and the roofline peaks{sampling}; every measurement is stored as it is taken, so an "
            "interrupted calibration resumes")


CALIBRATION_FORMAT = ("nnperf-calibration", 1)
"""The format and version of :func:`calibration_document`."""


def calibration_document(model: SystemModel, store_path: str) -> dict[str, Any]:
    """What ``nnperf calibrate --json`` prints: the fitted models' summary (times in seconds), with an entry for
    every registered network predictor that names a ``calibration_key`` (null where this system has none)."""
    info = model.calibration
    document = {
        "format": CALIBRATION_FORMAT[0], "version": CALIBRATION_FORMAT[1], "system": model.system_label,
        "system_key": model.system_key, "store": store_path, "coefficient_c": model.coefficient_c,
        "networks": list(info["networks"]), "layers_measured": info["layers"], "wall_s": info["wall_s"],
        "reused_networks": info["reused_networks"],
        "latency_models": [{"layer_type": key, "samples": m.n_samples_, "r2": m.r2_, "fastest_s": m.y_min_,
                            "slowest_s": m.y_max_, "energy_model": key in model.energy}
                           for key, m in sorted(model.latency.items())],
    }
    for klass in network_predictor_classes():
        if klass.calibration_key is not None:
            fitted = model.first_of(klass)
            document[klass.calibration_key] = None if fitted is None else fitted.calibration_entry()
    return {**document, "reference": info.get("reference"), "machine_check": info.get("machine_check")}


PREDICTION_CSV_COLUMNS = ("network", "system", "layer", "op", "model", "predicted_s", "predicted_energy_j", "fused",
                          "measured_s", "error")
"""The header of :func:`prediction_rows`: seconds, joules; ``measured_s`` (the layer alone) and ``error``
(predicted / measured - 1) are empty without a verification."""


def prediction_rows(prediction: NetworkPrediction, check: Verification | None = None) -> list[tuple[Any, ...]]:
    """One CSV row per layer of a prediction (:data:`PREDICTION_CSV_COLUMNS`), with the measured time when
    verified."""
    measured = dict(check.layer_measured_s) if check is not None else {}
    rows = []
    for p in prediction.layers:
        seconds = measured.get(p.layer)
        error = p.latency_s / seconds - 1 if seconds else None
        rows.append((prediction.network, prediction.system, p.layer, p.op, p.key, p.latency_s, p.energy_j,
                     p.layer in prediction.fused_layers, seconds, error))
    return rows


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


def generic_summary(network: Network, prediction: NetworkPrediction | None = None, count: int = 6) -> str | None:
    """One line naming the generic layers (ONNX operators kept as they are), by operator, and with a prediction
    the share of the summed layer time they carry; None without any."""
    generic = [layer for layer in network.layers if isinstance(layer.attrs, GenericAttrs)]
    if not generic:
        return None
    by_operator: dict[str, list[str]] = {}
    for layer in generic:
        assert isinstance(layer.attrs, GenericAttrs)
        by_operator.setdefault(layer.attrs.operator, []).append(layer.name)
    named = "; ".join(f"{op} ({', '.join(names[:2])}{', ...' if len(names) > 2 else ''})"
                      for op, names in list(by_operator.items())[:count])
    more = f"; and {len(by_operator) - count} more operator(s)" if len(by_operator) > count else ""
    share = ("" if prediction is None else
             f", carrying {prediction.generic_share:.1%} of the summed layer time (predicted by the memory-bound model)")
    return f"{len(generic)} generic layer(s), ONNX operators without a dedicated layer type{share}: {named}{more}"


def int8_summary(network: Network, count: int = 4) -> str | None:
    """One line naming the layers the model file runs in int8 and their weights' size in int8 against float32;
    None for a float network."""
    if not network.int8_layers:
        return None
    metrics = {m.name: m for m in network_metrics(network).layers}
    weights = sum(metrics[name].params for name in network.int8_layers)
    names = [layer.name for layer in network.layers if layer.name in network.int8_layers]
    shown = ", ".join(names[:count]) + (", ..." if len(names) > count else "")
    return (f"{len(names)} int8 layer(s), quantised in the file ({shown}): their weights take {weights / 1e6:.3g} MB "
            f"in int8 against {4 * weights / 1e6:.3g} MB in float32")


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


def verification_summary(check: Verification) -> list[str]:
    """The measured network latency against the prediction, and the per-layer errors."""
    prediction = check.prediction
    previous = check.previous_error
    lines = [f"measured network latency: {check.measured_latency_s * 1e3:.4g} ms; predicted "
             f"{prediction.latency_s * 1e3:.4g} ms; error {check.error:+.1%}"
             + (f" (PreVIous' c x sum: {previous:+.1%})"
                if prediction.method != prediction.layer_sum_method and previous is not None else "")]
    if check.spread is not None and check.noise is not None:
        low, high = check.spread
        verdict = ("inside the noise: the prediction lies within the spread" if check.within_noise
                   else "outside the noise")
        lines.append(f"noise floor: {len(check.round_medians_s)} rounds ({check.protocol}) measured "
                     f"{low * 1e3:.4g}-{high * 1e3:.4g} ms ({check.noise:.1%} spread); {verdict}")
    ratio, speed, adjusted = check.reference_ratio, check.speed, check.adjusted_latency_s
    if ratio is not None and speed is not None and adjusted is not None and check.adjusted_error is not None:
        lines.append(f"machine speed: the reference ({speed.reference}) took {speed.current_s * 1e3:.4g} ms, "
                     f"{speed.factor:.2f}x its {speed.calibration_s * 1e3:.4g} ms at calibration; at that speed the "
                     f"network takes {adjusted * 1e3:.4g} ms (ratio to the reference {ratio.median:.4g}, 95% "
                     f"interval {ratio.ci_low:.4g}-{ratio.ci_high:.4g}): speed-adjusted error "
                     f"{check.adjusted_error:+.1%} beside the raw {check.error:+.1%}")
        if check.reading_advice is not None:
            lines.append(check.reading_advice)
    elif ratio is not None:
        lines.append("machine speed: this calibration holds no reading of the reference workload (calibrate again "
                     "to get a speed-adjusted error)")
    errors = sorted(abs(e) for e in check.layer_errors.values())
    if errors:
        lines.append(f"per-layer error: mean |error| {sum(errors) / len(errors):.1%}, median "
                     f"{errors[len(errors) // 2]:.1%} over {len(errors)} layers (run {check.run_id} in "
                     f"{check.store_path})")
    return lines
