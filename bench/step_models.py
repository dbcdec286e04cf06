"""Step-model accuracy: d and r detected on full sweeps, 4-point characterisation on held-out sweeps,
and the composed model on random configurations. Reads the store written by bench/step_sweeps.py.

Run: .venv/bin/python bench/step_models.py --db bench/results/steps/steps.db --json bench/results/steps/step_models.json
     --figures bench/results/steps/figures

Per system (backend) in the store:
1. the full channel and filter sweeps fitted (`steps fit`): model, d, r, confidence, evidence, fit MAPE;
2. held-out sweeps (the paper's 3.4.3 design): the global d and r come from the full sweep of the same
   parameter; each held-out sweep's lines are fitted on the four points `characterisation_points` picks
   from its own grid (their measured medians, as `steps predict --characterise` would measure them), and
   the MAPE is taken over the other points of the sweep. Beside it: the same four points fitted by a line
   (no steps); the global shape's lines fitted on all points of the sweep (the floor the shape and the
   measurement noise leave to any characterisation); the round-to-round spread of the points (the median
   over points of (slowest - fastest round) / median); and the d and r detected on each held-out sweep alone
   (the paper's claim that they are global);
3. the composed model (fitted on the full and dimension sweeps only) on the random configurations:
   MAPE, share within +/-10%, inside and outside the swept ranges, against the smooth composition
   (every effective size proportional to its work).
Progress goes to stderr; stdout gets a Markdown summary for RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from _shared import markdown_table, pct, write_result

from nnperf.measure.sweep import Sweep
from nnperf.prediction.steps import (
    StepShape,
    characterisation_points,
    compose,
    fit_lines,
    fit_sweep,
    load_sweep,
    mape,
    sweep_runs,
)
from nnperf.report.steps import plot_sweep
from nnperf.store import Store

HELD_OUT_RANGE = (120, 219, 3)


def role(sweep: Sweep) -> str:
    values = sweep.spec.values
    if len(values) == 1:
        return "random"
    if sweep.spec.parameter in ("size", "kernel"):
        return "dimension"
    if (values[0], values[-1]) == HELD_OUT_RANGE[:2] and values[1] - values[0] == HELD_OUT_RANGE[2]:
        return "held-out"
    return "full"


def round_spread(sweep: Sweep) -> float:
    """The median over points of (slowest round - fastest round) / the point's median; 0 with one round."""
    spreads = [(max(t.stats.median_s for t in r) - min(t.stats.median_s for t in r)) / m
               for r, m in zip(sweep.repeats, sweep.latency_s) if len(r) > 1]
    return float(np.median(spreads)) if spreads else 0.0


def shape_text(shape: StepShape) -> dict[str, Any]:
    return {"kind": shape.kind, "d": shape.depth, "r": shape.period, "form": shape.form, "selector": shape.selector,
            "text": shape.describe()}


def evaluate_system(store: Store, system_id: int, figures: Path | None) -> dict[str, Any]:
    system = store.system(system_id)
    sweeps = [load_sweep(store, r.id) for r in sweep_runs(store, system_id)]
    sweeps = [s for s in sweeps if s.complete and s.spec.base.kind == "conv2d"]
    by_role: dict[str, list[Sweep]] = {}
    for sweep in sweeps:
        by_role.setdefault(role(sweep), []).append(sweep)
    result: dict[str, Any] = {"system": system.label, "device": system.device_name, "full": {}, "held_out": {},
                              "composition": {}}
    fits = {}
    for sweep in by_role.get("full", []):
        began = time.perf_counter()
        fit = fit_sweep(sweep)
        det = fit.detection
        assert det is not None
        fits[sweep.spec.parameter] = fit
        result["full"][sweep.spec.parameter] = {
            "run_id": sweep.run_id, "range": [sweep.spec.values[0], sweep.spec.values[-1]],
            "step": sweep.spec.values[1] - sweep.spec.values[0], "points": len(sweep.timings),
            "fixed": dict(sweep.spec.fixed), "shape": shape_text(fit.model.shape), "confidence": det.confidence,
            "evidence": det.evidence, "rss_share": det.rss_share, "outliers": len(det.outliers), "fit_mape": fit.mape,
            "converged_share": float(np.mean([t.converged for t in sweep.timings])),
            "fit_time_s": time.perf_counter() - began}
        if figures is not None:
            plot_sweep(sweep, fit.model, figures / f"{system.backend}-{sweep.spec.parameter}-sweep.png")
    for parameter in ("channels", "filters"):
        if parameter not in fits:
            continue
        shape = fits[parameter].model.shape
        rows = []
        for sweep in by_role.get("held-out", []):
            if sweep.spec.parameter != parameter:
                continue
            x, y = sweep.x, sweep.latency_s
            points = characterisation_points(shape, int(x[0]), int(x[-1]), int(x[1] - x[0]))
            at = np.isin(x, points)
            local = fit_lines(shape, x[at], y[at], parameter)
            line = fit_lines(StepShape("linear"), x[at], y[at], parameter)
            best = fit_lines(shape, x, y, parameter)
            own = fit_sweep(sweep).detection
            rows.append({"run_id": sweep.run_id, "fixed": dict(sweep.spec.fixed), "points": list(points),
                         "mape_held_out": mape(local.predict(x[~at]), y[~at]),
                         "mape_all": mape(local.predict(x), y),
                         "line_mape_held_out": mape(line.predict(x[~at]), y[~at]),
                         "floor_mape_held_out": mape(best.predict(x[~at]), y[~at]),
                         "round_spread": round_spread(sweep),
                         "own_shape": None if own is None else shape_text(own.shape),
                         "own_confidence": None if own is None else own.confidence})
            if figures is not None and len(rows) == 1:
                plot_sweep(sweep, local, figures / f"{system.backend}-{parameter}-held-out.png",
                           title=f"{parameter} {x[0]}..{x[-1]} at {dict(sweep.spec.fixed)}: characterised from "
                                 f"{list(points)} with {shape.describe()} (Fig. 3.5 style)")
        if rows:
            result["held_out"][parameter] = {
                "global_shape": shape_text(shape), "sweeps": rows,
                "mape_held_out": float(np.mean([r["mape_held_out"] for r in rows])),
                "mape_all": float(np.mean([r["mape_all"] for r in rows])),
                "line_mape_held_out": float(np.mean([r["line_mape_held_out"] for r in rows])),
                "floor_mape_held_out": float(np.mean([r["floor_mape_held_out"] for r in rows])),
                "round_spread": float(np.median([r["round_spread"] for r in rows]))}
    scale_points = [(s.spec.config_at(int(v)), float(t)) for s in by_role.get("full", []) + by_role.get("dimension", [])
                    for v, t in zip(s.x, s.latency_s)]
    random_tests = [(s.spec.config_at(int(s.x[0])), float(s.latency_s[0])) for s in by_role.get("random", [])]
    held_out_tests = [(s.spec.config_at(int(v)), float(t)) for s in by_role.get("held-out", [])
                      for v, t in zip(s.x, s.latency_s)]
    if fits and len(scale_points) >= 2:
        models = {p: f.model for p, f in fits.items()}
        composed = compose("conv2d", models, scale_points)
        smooth = compose("conv2d", {}, scale_points)
        for name, subset in (("random configurations", random_tests), ("held-out sweep points", held_out_tests)):
            if not subset:
                continue
            truth = np.array([t for _, t in subset])
            pred = np.array([composed.predict(c) for c, _ in subset])
            base = np.array([smooth.predict(c) for c, _ in subset])
            inside = np.array([not composed.extrapolated(c) for c, _ in subset])
            kernels = np.array([c["kernel"] for c, _ in subset])
            rel = np.abs(pred - truth) / truth
            result["composition"][name] = {
                "configs": len(subset), "mape": float(rel.mean()), "within_10pct": float(np.mean(rel <= 0.10)),
                "smooth_mape": mape(base, truth),
                "inside_ranges": int(inside.sum()),
                "mape_inside": float(rel[inside].mean()) if inside.any() else None,
                "mape_outside": float(rel[~inside].mean()) if (~inside).any() else None,
                "mape_by_kernel": {int(k): float(rel[kernels == k].mean()) for k in np.unique(kernels)},
                "smooth_mape_by_kernel": {int(k): mape(base[kernels == k], truth[kernels == k])
                                          for k in np.unique(kernels)}}
    return result


def markdown(results: list[dict[str, Any]]) -> str:
    full = []
    for res in results:
        for parameter, f in res["full"].items():
            s = f["shape"]
            full.append([res["system"], f"{parameter} {f['range'][0]}:{f['range'][1]}:{f['step']}", f["points"],
                         s["kind"], s["d"] or "-",
                         (str(s["r"]) + (" aligned" if s["selector"] == "aligned" else "")) if s["r"] else "-",
                         pct(f["confidence"], 0), f"{f['evidence']:.1f}", pct(f["rss_share"]), pct(f["fit_mape"], 2)])
    held_out = []
    for res in results:
        for parameter, h in res["held_out"].items():
            own = ", ".join(f"{text} ({n})" for text, n in sorted(
                Counter(r["own_shape"]["text"] for r in h["sweeps"] if r["own_shape"]).items()))
            held_out.append([res["system"], f"{len(h['sweeps'])} x {parameter} 120:219:3", h["global_shape"]["text"],
                             pct(h["mape_held_out"], 2), pct(h["mape_all"], 2), pct(h["line_mape_held_out"], 2),
                             pct(h["floor_mape_held_out"], 2), pct(h["round_spread"]), own])
    composed = []
    for res in results:
        for name, c in res["composition"].items():
            composed.append([res["system"], name, c["configs"], pct(c["mape"]), pct(c["within_10pct"], 0),
                             pct(c["smooth_mape"]),
                             f"{pct(c['mape_inside'])} ({c['inside_ranges']}) / {pct(c['mape_outside'])}",
                             ", ".join(f"{k}x{k}: {pct(m, 0)} ({pct(c['smooth_mape_by_kernel'][k], 0)})"
                                       for k, m in c["mape_by_kernel"].items())])
    return "\n\n".join([
        markdown_table(["system", "sweep", "points", "detected model", "d", "r", "confidence", "evidence",
                        "RSS vs line", "fit MAPE"], full),
        markdown_table(["system", "held-out sweeps", "global shape", "4-point MAPE (held-out points)", "all points",
                        "4-point line, no steps", "shape fitted on all points", "round spread", "own d/r per sweep"],
                       held_out),
        markdown_table(["system", "composed model on", "configs", "MAPE", "within 10%", "smooth composition MAPE",
                        "MAPE inside / outside the covered ranges", "MAPE by kernel (smooth)"], composed)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=Path("bench/results/steps/steps.db"))
    parser.add_argument("--json", type=Path, help="write the result file here (bench/results/steps/step_models.json)")
    parser.add_argument("--figures", type=Path, help="draw the sweeps' figures into this folder")
    args = parser.parse_args()
    if not args.db.exists():
        print(f"{args.db} does not exist; run bench/step_sweeps.py first", file=sys.stderr)
        return 1
    with Store(args.db) as store:
        results = [evaluate_system(store, s.id, args.figures) for s in store.systems()]
    results = [r for r in results if r["full"]]
    if args.json:
        write_result(args.json, method="steps", concern="step-function latency models", values={"systems": results})
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
