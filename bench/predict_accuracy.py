"""Prediction accuracy: calibrate, then predict the zoo networks and measure them, per backend.

Run: .venv/bin/python bench/predict_accuracy.py [--backends torch,onnxruntime] [--json FILE]
     (about 10 minutes per backend here; --networks resnet18,mobilenet_v2 for a quick look)

For each backend, into a fresh temporary store (so nothing is reused and the calibration wall time is
real):
1. `calibrate` (isolated pass, fusion profiler pass, roofline probes, fits): its wall time;
2. every zoo network measured layer by layer in isolation and whole (`measure_networks`, the same
   settings `nnperf evaluate` uses), then `evaluate`: Table I/II, network errors of PreVIous' c, nnperf's
   composition and the two baselines, and the prediction time per network;
3. the noise floor: every network measured whole a second time (a separate campaign, minutes later);
   the MAPE of the second whole-network median against the first is the error a perfect predictor would
   show against one measurement;
4. the figures and the HTML report of `nnperf evaluate`, written to --out/<backend>/.

Outside load (other processes' CPU time and steal, from /proc/stat) is recorded for each phase, so a
disturbed run can be recognised; nothing is repeated automatically.

Progress goes to stderr; stdout gets a Markdown summary.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _shared import log, markdown_table, pct, progress_logger, write_result
from measure_backends import PassLoad

from nnperf import zoo
from nnperf.campaign import CALIBRATION_HARNESS, ProfileConfig, calibrate, measure_networks
from nnperf.measure import host_info
from nnperf.measure.backends import BackendOptions, create_backend
from nnperf.prediction.evaluation import evaluate
from nnperf.report.evaluation import write_report
from nnperf.store import Store
from nnperf.zoo import zoo_network


def run_backend(name: str, networks: list[str], out_dir: Path) -> dict[str, Any]:
    backend = create_backend(name, BackendOptions(device="cpu"))
    nets = [zoo_network(n) for n in networks]
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
        with PassLoad() as load_cal:
            started = time.perf_counter()
            model = calibrate(backend, store, progress=progress_logger(f"{name} calibrate"))
            calibration_s = time.perf_counter() - started
        log(f"{name}: calibrated in {calibration_s:.0f} s, c = {model.coefficient_c:.3f}")
        config = ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS)
        with PassLoad() as load_eval:
            started = time.perf_counter()
            measured = measure_networks(backend, store, nets, config, progress=progress_logger(f"{name} evaluate"))
            evaluation_measure_s = time.perf_counter() - started
        evaluation = evaluate(model, measured)
        with PassLoad() as load_noise:
            second = measure_networks(backend, store, nets, ProfileConfig(per_layer="none", harness=CALIBRATION_HARNESS),
                                      progress=progress_logger(f"{name} second pass"))
        pass_errors = [s.whole.median_s / m.whole.median_s - 1 for s, m in zip(second, measured)]
        paths = write_report(evaluation, out_dir / name)
    errors = evaluation.layer_errors
    return {
        "backend": name, "system": evaluation.system,
        "calibration_wall_s": calibration_s, "calibration_layers": model.calibration.get("layers"),
        "coefficient_c": model.coefficient_c,
        "composition": None if model.composition is None else model.composition.to_dict(),
        "roofline": None if model.roofline is None else model.roofline.to_dict(),
        "evaluation_measure_s": evaluation_measure_s,
        "mape": {m: evaluation.mape(m) for m in evaluation.methods},
        "within_10pct": {m: evaluation.within(m) for m in evaluation.methods},
        "table2": evaluation.table2_error,
        "layer_error_mean": float(errors.mean()), "layer_error_median": float(np.median(errors)),
        "noise_floor_mape": float(np.mean(np.abs(pass_errors))),
        "noise_pass_errors": dict(zip(networks, pass_errors)),
        "spread_median": evaluation.measurement_spread,
        "prediction_time_s": {n.network: n.prediction_time_s for n in evaluation.networks},
        "outside_load": {"calibrate": (load_cal.other_busy, load_cal.steal),
                         "evaluate": (load_eval.other_busy, load_eval.steal),
                         "second_pass": (load_noise.other_busy, load_noise.steal)},
        "files": [str(p) for p in paths],
        "evaluation": evaluation.to_dict(),
    }


def markdown(results: list[dict[str, Any]]) -> str:
    methods = ("previous", "composed", "macs", "roofline")
    lines = [markdown_table(
        ["backend", "calibration", "PreVIous c: MAPE / within 10%", "composed: MAPE / within 10%",
         "MACs: MAPE / within 10%", "roofline: MAPE / within 10%", "Table II", "per-layer mean / median",
         "noise floor (pass-to-pass MAPE)", "prediction time per network (median)"],
        [[r["system"], f"{r['calibration_wall_s']:.0f} s",
          *(f"{pct(r['mape'][m])} / {pct(r['within_10pct'][m], 0)}" for m in methods), pct(r["table2"]),
          f"{pct(r['layer_error_mean'])} / {pct(r['layer_error_median'])}", pct(r["noise_floor_mape"]),
          f"{np.median(list(r['prediction_time_s'].values())) * 1e3:.2f} ms"] for r in results])]
    for r in results:
        lines += ["", f"{r['system']}: network error per method (measured whole-network median in ms)", "",
                  markdown_table(["network", "measured ms", "PreVIous c", "composed", "MACs", "roofline",
                                  "Table I (layer sums)", "second pass"],
                                 [[n["network"], f"{n['measured_s'] * 1e3:.2f}",
                                   *(pct(n["error"][m], signed=True) for m in methods),
                                   pct(n["layer_sum_error"], signed=True),
                                   pct(r["noise_pass_errors"][n["network"]], signed=True)]
                                  for n in r["evaluation"]["networks"]])]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--backends", default="torch,onnxruntime")
    parser.add_argument("--networks", default=",".join(zoo.names()))
    parser.add_argument("--out", type=Path, default=Path("bench/results/prediction/predict_accuracy"),
                        help="figures and HTML reports per backend")
    parser.add_argument("--json", type=Path, help="write the result file here "
                        "(bench/results/prediction/predict_accuracy.json)")
    args = parser.parse_args()
    networks = args.networks.split(",")
    host = host_info()
    log(f"host: {host.cpu_model}, {host.logical_cores} logical CPUs")
    results = []
    for name in args.backends.split(","):
        results.append(run_backend(name, networks, args.out))
        if args.json:  # after each backend, so an interrupted run keeps what it measured
            write_result(args.json, method="prediction", concern="the reference zoo", values={"results": results})
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
