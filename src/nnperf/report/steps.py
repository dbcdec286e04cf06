"""Tables, JSON documents and figures of sweeps, step models and their predictions (Osterwind Fig. 3.2 and 3.5)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.table import Table

from nnperf.report._format import pyplot, write_png

if TYPE_CHECKING:
    from nnperf.measure.sweep import Sweep
    from nnperf.prediction.steps import StepModel, StepsPrediction, SweepFit


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g}"


def sweep_document(sweep: Sweep) -> dict[str, Any]:
    spec = sweep.spec
    return {"format": "nnperf-sweep-result", "version": 1, "run_id": sweep.run_id, "system": sweep.system_label,
            "kind": spec.base.kind, "parameter": spec.parameter, "fixed": dict(spec.fixed),
            "surround": spec.surround, "rounds": spec.rounds, "reused": sweep.reused, "complete": sweep.complete,
            "points": [{"value": int(v), "median_s": t.stats.median_s, "ci_low_s": t.stats.ci_low_s,
                        "ci_high_s": t.stats.ci_high_s, "n": t.stats.n, "stop_reason": t.stop_reason,
                        **({"round_medians_s": [r.stats.median_s for r in rounds]} if spec.rounds > 1 else {})}
                       for v, t, rounds in zip(sweep.x, sweep.timings, sweep.repeats or [()] * len(sweep.timings))]}


def sweep_summary(sweep: Sweep, store_path: Path) -> list[str]:
    spec = sweep.spec
    y = sweep.latency_s
    converged = sum(t.converged for t in sweep.timings)
    fixed = ", ".join(f"{k}={v}" for k, v in spec.fixed)
    how = "reused from the store" if sweep.reused else ("resumed and finished" if sweep.resumed else "measured")
    short = "" if converged == len(y) else f" (the rest stopped at the {spec.harness.budget_s:g} s budget)"
    return [
        (f"sweep {sweep.run_id} on {sweep.system_label}: {spec.base.kind} {spec.parameter} "
         f"{spec.values[0]}..{spec.values[-1]} ({len(sweep.timings)} points"
         f"{f' x {spec.rounds} rounds' if spec.rounds > 1 else ''}; {fixed}; surround {spec.surround}) {how}"),
        (f"latency {_ms(float(y.min()))}-{_ms(float(y.max()))} ms; {converged} of {len(y)} points reached the "
         f"{spec.harness.target_ci:.0%} confidence target{short}"),
        f"stored in {store_path}; fit it with: nnperf steps fit {sweep.run_id}",
    ]


def fit_table(fits: Sequence[SweepFit]) -> Table:
    table = Table(title="step models (Osterwind Eq. 3.1-3.3; d and r detected automatically)")
    for name, justify in (("run", "right"), ("sweep", "left"), ("points", "right"), ("model", "left"),
                          ("d", "right"), ("r", "right"), ("confidence", "right"), ("evidence", "right"),
                          ("RSS vs line", "right"), ("fit MAPE", "right"), ("outliers", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for fit in fits:
        det, shape = fit.detection, fit.model.shape
        table.add_row(str(fit.sweep.run_id), fit.sweep.spec.label, str(len(fit.sweep.timings)), shape.kind,
                      "-" if shape.depth is None else str(shape.depth),
                      "-" if shape.period is None else str(shape.period) + ("a" if shape.selector == "aligned" else ""),
                      "-" if det is None else f"{det.confidence:.0%}",
                      "-" if det is None else f"{det.evidence:.1f}",
                      "-" if det is None else f"{det.rss_share:.1%}",
                      f"{fit.mape:.2%}", "-" if det is None else str(len(det.outliers)))
    return table


def fit_lines_text(fit: SweepFit) -> str:
    names = fit.model.shape.branches
    return "; ".join(f"{name}: T = {line.slope_s * 1e6:.4g} us x q + {line.intercept_s * 1e3:.4g} ms"
                     for name, line in zip(names, fit.model.lines_))


def plot_sweep(sweep: Sweep, model: StepModel | None, path: str | Path, work: np.ndarray | None = None,
               title: str = "") -> Path:
    """The measured sweep (median and 95% CI per point) with the fitted model over it (Fig. 3.2 / 3.5 style).

    ``work`` gives the model's variable at each point when it differs from the parameter value (size, kernel).
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 4.5))
    x = sweep.x
    y = sweep.latency_s * 1e3
    low = np.array([t.stats.ci_low_s for t in sweep.timings]) * 1e3
    high = np.array([t.stats.ci_high_s for t in sweep.timings]) * 1e3
    ax.errorbar(x, y, yerr=[y - low, high - y], fmt=".", ms=3, lw=0.6, color="tab:blue", label="measured (median, 95% CI)")
    if model is not None:
        w = x if work is None else work
        predicted = model.predict(w) * 1e3
        if model.shape.kind == "fluctuating":
            from nnperf.prediction.steps import branch_of

            branch = branch_of(model.shape, np.asarray(w))
            for index, (name, color) in enumerate((("upper", "tab:red"), ("lower", "tab:green"))):
                sel = branch == index
                ax.plot(x[sel], predicted[sel], "_", ms=7, color=color, label=f"model, {name} step function")
        else:
            ax.step(x, predicted, where="mid", color="tab:red", lw=1.2, label=f"model: {model.shape.describe()}")
    spec = sweep.spec
    ax.set_xlabel(spec.parameter)
    ax.set_ylabel("latency of the layer under test (ms)")
    fixed = ", ".join(f"{k}={v}" for k, v in spec.fixed)
    ax.set_title(title or f"{spec.base.kind} {spec.parameter} sweep ({fixed}) on {sweep.system_label}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return write_png(fig, Path(path))


def prediction_report(prediction: StepsPrediction) -> list[str | Table]:
    """What ``nnperf steps predict`` prints: the composition, the prediction (a line, or a table along the
    range with the characterised and measured times in ms) and what was extrapolated."""
    composed = prediction.composed
    modelled = composed.modelled
    header = (f"{prediction.system}: composition of {len(modelled)} fitted parameter model(s) "
              f"({', '.join(modelled)}; others proportional to their work), scaled on {composed.fitted_points_} "
              "measured points")
    out: list[str | Table] = [header]
    if prediction.latency_s is not None:
        config = ", ".join(f"{k}={v}" for k, v in prediction.config.params)
        out.append(f"{prediction.kind}({config}): predicted {_ms(prediction.latency_s)} ms")
    else:
        out += _range_report(prediction)
    if prediction.extrapolated:
        out.append("extrapolated beyond the measured data: " + "; ".join(prediction.extrapolated))
    return out


def _range_report(prediction: StepsPrediction) -> list[str | Table]:
    """The table along the range, the characterisation points and the MAPE against the measured range."""
    columns = {"composed (ms)": prediction.composed_s}
    if prediction.characterised_s is not None:
        columns["characterised (ms)"] = prediction.characterised_s
    verification = prediction.verification
    if verification is not None:
        columns["measured (ms)"] = tuple(verification.measured_s.tolist())
    table = Table()
    table.add_column(str(prediction.parameter), justify="right")
    for name in columns:
        table.add_column(name, justify="right")
    for i, value in enumerate(prediction.values):
        table.add_row(str(value), *(_ms(times[i]) for times in columns.values()))
    out: list[str | Table] = [table]
    found = prediction.characterisation
    if found is not None:
        out.append(f"characterised from {len(found.points)} measurements at {prediction.parameter} = "
                   f"{', '.join(map(str, found.points))} with the stored {found.shape.describe()}")
    if verification is not None:
        out.append("MAPE against the measured range: "
                   + ", ".join(f"{k.replace('_', ' ')} {v:.2%}" for k, v in verification.mape.items())
                   + f" (run {verification.sweep.run_id})")
    return out


def plot_prediction(prediction: StepsPrediction, path: str | Path) -> Path:
    """The prediction along its range: a characterised and verified one as :func:`plot_sweep` (Fig. 3.5 style),
    otherwise the composed prediction with the characterised and measured times where there are."""
    found, verification = prediction.characterisation, prediction.verification
    if found is not None and verification is not None:
        return plot_sweep(verification.sweep, found.model, path,
                          title=f"{prediction.kind} {prediction.parameter}: characterised from "
                                f"{len(found.points)} measurements (Fig. 3.5 style)")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.plot(prediction.values, np.asarray(prediction.composed_s) * 1e3, "-", label="composed prediction")
    if verification is not None:
        ax.plot(verification.sweep.x, verification.measured_s * 1e3, ".", ms=3, label="measured")
    if prediction.characterised_s is not None:
        ax.plot(prediction.values, np.asarray(prediction.characterised_s) * 1e3, "_", label="characterised")
    ax.set_xlabel(str(prediction.parameter))
    ax.set_ylabel("latency (ms)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return write_png(fig, Path(path))
