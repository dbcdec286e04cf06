"""nnperf as the latency oracle of an architecture search: how fast it predicts, and whether it ranks networks
of a search space as the machine does.

Run: .venv/bin/python bench/oracle.py --db CALIBRATED.db [--networks 1000] [--measured 50]
     [--rounds 12] [--seed 0] [--backend torch] [--json bench/results/prediction/oracle.json]

1. Draws ``--networks`` networks from the MobileNetV3-like space (``nnperf.zoo.search_space``), each built as
   IR on PyTorch's meta device (this is the slow part, about 0.4 s a network here, and not the oracle's; the IR
   files are kept in ``--cache`` for the next run).
2. Loads the stored calibration once and predicts them all with ``SystemModel.predict_many`` (every network
   predictor in turn), best of three passes: predictions per second. The same numbers one network at a time
   with ``SystemModel.predict``, for the speed-up and to check they agree.
3. Measures ``--measured`` of them (an evenly spaced pick over the predicted latency range) on the backend,
   interleaved: every round times each network once, in a shuffled order, so that the machine's drift moves
   all of them alike; each network's time is the median of its rounds, its spread the IQR over the median.
4. Ranking fidelity (Kendall's tau between predicted and measured), MAPE and share within +/-10% per method;
   MAPE also after dividing out the median measured/predicted ratio (the machine's speed against the
   calibration's, which a ranking does not need). The measurement's own ranking noise: Kendall's tau of the
   even rounds against the odd ones.

Stdout gets Markdown tables.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _shared import pct, print_table, write_result
from scipy.stats import kendalltau

from nnperf.api import stored_calibration
from nnperf.ir import Network, load_network_json, save_network
from nnperf.measure.backends import create_backend
from nnperf.zoo.search_space import MobileNetV3Space, SpaceSample


def _measure(backend_name: str, networks: list, rounds: int, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Each network's median time over interleaved rounds (seconds), its IQR over median, and Kendall's tau
    between the medians of the even and the odd rounds: how well the measurement ranks against itself, the
    ceiling of any prediction's tau."""
    rng = np.random.default_rng(seed)
    with create_backend(backend_name) as backend:
        timers = [backend.network_timer(n) for n in networks]
        blocks = []
        for timer in timers:  # warm up; a block of about 20 ms
            timer.time_block(2)
            once = timer.time_block(1)
            blocks.append(max(1, int(0.02 / max(once, 1e-6))))
        times = np.zeros((rounds, len(networks)))
        for r in range(rounds):
            for i in rng.permutation(len(networks)):
                times[r, i] = timers[i].time_block(blocks[i]) / blocks[i]
    median = np.median(times, axis=0)
    q1, q3 = np.percentile(times, [25, 75], axis=0)
    halves = float(kendalltau(np.median(times[0::2], axis=0), np.median(times[1::2], axis=0)).statistic)
    return median, (q3 - q1) / median, halves


def _cached_network(space: MobileNetV3Space, sample: SpaceSample, cache: Path) -> Network:
    path = cache / f"{sample.name}.json"
    if path.exists():
        return load_network_json(path)
    network = space.network(sample)
    cache.mkdir(parents=True, exist_ok=True)
    save_network(network, path)
    return network


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--networks", type=int, default=1000)
    parser.add_argument("--measured", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/nnperf-oracle-ir"),
                        help="IR files of the drawn networks, reused by the next run")
    args = parser.parse_args()

    space = MobileNetV3Space()
    started = time.perf_counter()
    samples = space.samples(args.networks, args.seed)
    networks = [_cached_network(space, s, args.cache) for s in samples]
    build_s = time.perf_counter() - started
    model = stored_calibration(args.backend, args.db)
    if model is None:
        raise SystemExit(f"no {args.backend} calibration in {args.db}: run nnperf calibrate --backend "
                         f"{args.backend} --db {args.db}")
    methods = list(model.predictors)
    speed, predicted = {}, {}
    for method in methods:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            predicted[method] = model.predict_many(networks, method)
            best = min(best, time.perf_counter() - started)
        speed[method] = len(networks) / best
    started = time.perf_counter()
    one_by_one = [model.predict(n) for n in networks]
    single_s = time.perf_counter() - started
    agree = max(float(np.max(np.abs(np.array([p.network_latency_s[m] for p in one_by_one]) / predicted[m] - 1)))
                for m in methods)
    primary = one_by_one[0].method

    order = np.argsort(predicted[primary])
    pick = sorted({int(order[round(i)]) for i in np.linspace(0, len(networks) - 1, args.measured)})
    started = time.perf_counter()
    measured, spread, self_tau = _measure(args.backend, [networks[i] for i in pick], args.rounds, args.seed)
    measure_s = time.perf_counter() - started

    print(f"{len(networks)} networks from the MobileNetV3-like space (seed {args.seed}); IR built in "
          f"{build_s:.0f} s; {model.system_label}; primary method {primary}\n")
    results = {}
    for method in methods:
        p = predicted[method][pick]
        tau = float(kendalltau(p, measured).statistic)
        errors = p / measured - 1
        scale = float(np.median(measured / p))
        scaled = p * scale / measured - 1
        results[method] = {"predictions_per_s": speed[method], "kendall_tau": tau,
                           "mape": float(np.mean(np.abs(errors))), "within_10": float(np.mean(np.abs(errors) <= 0.1)),
                           "mape_scaled": float(np.mean(np.abs(scaled))), "speed_ratio": scale}
    print_table(["method", "predictions/s (predict_many, best of 3)", f"Kendall tau (measured {len(pick)})", "MAPE",
                 "within +/-10%", "MAPE after the median speed ratio"],
                [[method, f"{r['predictions_per_s']:,.0f}", f"{r['kendall_tau']:.3f}", pct(r["mape"]),
                  pct(r["within_10"], 0), f"{pct(r['mape_scaled'])} (ratio {r['speed_ratio']:.3f})"]
                 for method, r in results.items()])
    print(f"\none network at a time (SystemModel.predict, every method at once): {len(networks) / single_s:,.0f} "
          f"networks/s; largest relative difference from predict_many: {agree:.1e}")
    print(f"measured: {len(pick)} networks x {args.rounds} interleaved rounds in {measure_s:.0f} s; "
          f"median spread (IQR / median) {float(np.median(spread)):.1%}, largest {float(np.max(spread)):.1%}; "
          f"{float(np.min(measured)) * 1e3:.2f} to {float(np.max(measured)) * 1e3:.2f} ms; Kendall tau of the even "
          f"rounds' medians against the odd ones' (the measurement against itself): {self_tau:.3f}")
    if args.json is not None:
        write_result(args.json, method="prediction", concern="the latency oracle over a search space", values={
            "networks": len(networks), "seed": args.seed, "system": model.system_label, "primary": primary,
            "build_s": build_s, "single_per_s": len(networks) / single_s, "agreement": agree,
            "measurement_self_tau": self_tau,
            "measured": {samples[i].name: {"median_s": float(m), "spread": float(s)}
                         for i, m, s in zip(pick, measured, spread, strict=True)},
            "predicted": {m: {samples[i].name: float(predicted[m][i]) for i in pick} for m in methods},
            "results": results}, spread={samples[i].name: float(s) for i, s in zip(pick, spread, strict=True)})


if __name__ == "__main__":
    main()
