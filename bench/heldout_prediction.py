"""Held-out prediction: fit only on calibration data, then predict networks that were
never used to choose or fit anything, and judge every error against the noise of the measurement itself.

Run: .venv/bin/python bench/heldout_prediction.py [--systems torch:1 onnxruntime:1]
         [--networks densenet121 googlenet] [--rounds 5] [--layers] [--db bench/results/prediction/heldout.db]
         [--json out.json] [--quick]
     (per system: calibration 2 to 4 min the first time, the rounds 9 networks x 5 rounds x a few s,
     --layers about 10 min more the first time; every layer and calibration measurement is stored as it is
     taken, so an interrupted run resumes; the whole-network rounds are measured again)

For each system (backend, threads), default torch and onnxruntime at 1 and 2 threads:

1. calibrate into --db (`nnperf.api.calibrate(..., if_needed=True)`): the calibration wall time is the one
   recorded when the model was fitted (`SystemModel.calibration['wall_s']`);
2. predict every held-out network (`nnperf.api.predict`), timing the call (store opened, model loaded,
   network predicted);
3. measure every network whole in --rounds interleaved rounds: each round times each network once with the
   harness `nnperf.api.verify` uses (`measure(backend.network_timer(network), HarnessConfig())`), in an order
   shuffled per round (seeded), so slow drifts of the machine spread over all networks alike. The reference is
   the median of the round medians; the spread is their min..max, and (max - min) / median the noise floor. A
   prediction between the round minimum and maximum is "inside the spread": no single measurement could tell
   it from the truth. The drift sentinel is also read before each round and after the last, and a second
   table scales every round median to the speed of the calibration (the sentinel's time around the
   calibration networks over its time then, interpolated): a diagnostic, since on a shared 2-vCPU VM the
   sentinel's jumps do not follow the networks'. Each table gives per predictor the MAPE and the shares of
   networks within +/-5% and +/-10%; a line under the second says which of the two to read;
4. with --layers, every layer of every network measured alone (`profile_network`, isolated, the calibration
   harness; stored and reused) against the per-layer predictions: MdRAE (median |pred - meas| / meas) per
   kernel kind (`nnperf.prediction.kernel.kernel_kind`: conv standard/pointwise/depthwise/grouped, other
   layers by PreVIous layer type).

Held-out networks: the exports of bench/architectures.py (written from the papers, random weights, read back
through nnperf's ONNX importer as a user's file would be) and zoo networks that no part of nnperf was chosen or
fitted on (checked against the calibration networks). Every network predictor the model holds is judged: the
keys of `NetworkPrediction.network_latency_s`, whatever they are.

Progress goes to stderr; stdout gets Markdown tables (printed after each system); --json the raw figures.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _shared import commit, log, pct, progress_logger, write_result
from architectures import ARCHITECTURES, exported

from nnperf import api, zoo
from nnperf.campaign import CALIBRATION_HARNESS, ProfileConfig, measure_sentinel, profile_network, sentinel_reference_s
from nnperf.errors import NnperfError
from nnperf.ir import Network
from nnperf.measure import HarnessConfig, measure
from nnperf.measure.backends import Backend
from nnperf.prediction import NetworkPrediction
from nnperf.prediction.evaluation import SHARE_TOLERANCES, error_to_read, mape, reading_advice, share_key, share_within
from nnperf.prediction.kernel import kernel_kind
from nnperf.store import Store
from nnperf.zoo import zoo_network

ZOO_HELDOUT = ("shufflenet_v2_x1_0", "mobilenet_v3_large", "convnext_tiny", "googlenet")
"""Zoo networks no part of nnperf was chosen or fitted on."""

NETWORKS = (*ARCHITECTURES, *ZOO_HELDOUT)
SYSTEMS = ("torch:1", "onnxruntime:1", "torch:2", "onnxruntime:2")
WITHIN = 0.10
"""The issue's bound on a network's relative error."""
WORST_LAYERS = 8
"""Layers listed with the largest absolute error (seconds) per system."""
WHOLE_HARNESS = HarnessConfig()
"""What `nnperf verify` measures a whole network with: 2% CI of the median or 3 s."""


# ------------------------------------------------------------------------------------------------ inputs
@dataclass(frozen=True)
class System:
    backend: str
    threads: int

    @classmethod
    def parse(cls, text: str) -> System:
        backend, _, threads = text.partition(":")
        return cls(backend, int(threads or 1))

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.threads}"

    @property
    def settings(self) -> api.System:
        """The settings that make this system here."""
        return api.System(self.backend, threads=self.threads)


def heldout_network(name: str, onnx_dir: Path) -> Network:
    """An architecture of bench/architectures.py through its ONNX export, else a held-out zoo network."""
    if name in zoo.calibration_names():
        raise SystemExit(f"{name} is a calibration network, not a held-out one")
    return api.load_model(exported(name, onnx_dir)) if name in ARCHITECTURES else zoo_network(name)


# ------------------------------------------------------------------------------------------------ measuring
def measure_whole_s(backend: Backend, network: Network) -> float:
    """The whole network's harness median (s), measured as `nnperf verify` measures it."""
    return measure(backend.network_timer(network), WHOLE_HARNESS).stats.median_s


def measure_rounds(backend: Backend, networks: dict[str, Network], rounds: int, seed: int = 0
                   ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Every network's whole-network median (s) in each of ``rounds`` rounds, the order shuffled per round; and
    the drift sentinel's time (s) when each was measured, interpolated between readings before every round and
    after the last."""
    medians: dict[str, list[float]] = {name: [] for name in networks}
    positions: dict[str, list[float]] = {name: [] for name in networks}
    readings = []
    for r in range(rounds):
        readings.append(measure_sentinel(backend, CALIBRATION_HARNESS, warm=r > 0))
        log(f"  round {r + 1}/{rounds} sentinel: {readings[-1] * 1e3:.3f} ms")
        order = list(networks)
        random.Random(seed + r).shuffle(order)
        for k, name in enumerate(order):
            medians[name].append(measure_whole_s(backend, networks[name]))
            positions[name].append(r + (k + 0.5) / len(order))
            log(f"  round {r + 1}/{rounds} {name}: {medians[name][-1] * 1e3:.2f} ms")
    readings.append(measure_sentinel(backend, CALIBRATION_HARNESS, warm=True))
    sentinels = {name: [float(np.interp(x, np.arange(rounds + 1), readings)) for x in positions[name]]
                 for name in networks}
    return medians, sentinels


def calibration_sentinel_s(backend: Backend, db: Path) -> float | None:
    """The drift sentinel's median time around the system's calibration networks (their isolated runs), the
    speed the models were fitted at; None when the DB holds no reading."""
    names = set(zoo.calibration_names())
    with Store(db) as store:
        record = store.find_system(backend.system().key)
        if record is None:
            return None
        return sentinel_reference_s(m.extra for r in store.runs(system_id=record.id)
                                    if r.model in names and r.method == "isolated"
                                    for m in store.network_measurements(run_id=r.id))


def timed_prediction(network: Network, system: System, db: Path) -> tuple[NetworkPrediction, float]:
    started = time.perf_counter()
    prediction = api.predict(network, system.settings, db)
    return prediction, time.perf_counter() - started


def layer_errors(network: Network, name: str, prediction: NetworkPrediction, backend: Backend, db: Path
                 ) -> list[dict[str, Any]]:
    """Each layer's predicted and isolated-measured latency (s), its kind and relative error."""
    config = ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS)
    with Store(db) as store:
        report = profile_network(network, backend, store, config, progress=progress_logger(f"  layers {name}"),
                                 model=f"heldout/{name}", reuse=True)
    for warning in report.warnings:
        log(f"  layers {name}: {warning}")
    measured = {m.layer: m.timing.stats.median_s for m in report.layers}
    rows = []
    for p in prediction.layers:
        meas = measured.get(p.layer)
        if meas is None or meas <= 0:
            continue
        rows.append({"network": name, "layer": p.layer, "kind": kernel_kind(network.layer(p.layer)),
                     "predicted_s": p.latency_s, "measured_s": meas, "rel_error": p.latency_s / meas - 1})
    return rows


# ------------------------------------------------------------------------------------------------ judging
@dataclass
class NetworkResult:
    name: str
    round_medians_s: list[float]
    predicted_s: dict[str, float]
    prediction_s: float
    round_sentinels_s: list[float] = field(default_factory=list)
    reference_sentinel_s: float | None = None

    def at_reference_speed(self) -> NetworkResult | None:
        """The same rounds with each median scaled to the calibration's speed (times the reference sentinel over
        the sentinel when it was measured); None without sentinel readings."""
        if not self.reference_sentinel_s or not self.round_sentinels_s:
            return None
        scaled = [m * self.reference_sentinel_s / s for m, s in zip(self.round_medians_s, self.round_sentinels_s,
                                                                     strict=True)]
        return NetworkResult(self.name, scaled, self.predicted_s, self.prediction_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.round_medians_s)

    @property
    def noise_floor(self) -> float:
        return (max(self.round_medians_s) - min(self.round_medians_s)) / self.median_s

    def error(self, predictor: str) -> float:
        return self.predicted_s[predictor] / self.median_s - 1

    def inside(self, predictor: str) -> bool:
        return min(self.round_medians_s) <= self.predicted_s[predictor] <= max(self.round_medians_s)

    def as_dict(self) -> dict[str, Any]:
        return {"network": self.name, "round_medians_s": self.round_medians_s, "median_s": self.median_s,
                "noise_floor": self.noise_floor, "prediction_s": self.prediction_s,
                "predicted_s": self.predicted_s,
                "error": {k: self.error(k) for k in self.predicted_s},
                "inside_spread": {k: self.inside(k) for k in self.predicted_s},
                "round_sentinels_s": self.round_sentinels_s, "reference_sentinel_s": self.reference_sentinel_s}


@dataclass
class SystemResult:
    system: str
    calibration_wall_s: float | None
    calibrate_call_s: float
    networks: list[NetworkResult] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    layers: list[dict[str, Any]] = field(default_factory=list)
    in_network: list[dict[str, Any]] = field(default_factory=list)

    def predictors(self) -> list[str]:
        names: dict[str, None] = {}
        for n in self.networks:
            names.update(dict.fromkeys(n.predicted_s))
        return list(names)

    def at_reference_speed(self) -> SystemResult | None:
        """The same result with every network's rounds scaled to the calibration's speed (None without readings)."""
        scaled = [n.at_reference_speed() for n in self.networks]
        if not scaled or any(n is None for n in scaled):
            return None
        return SystemResult(self.system, self.calibration_wall_s, self.calibrate_call_s,
                            [n for n in scaled if n is not None], dict(self.failed))

    def summary(self, predictor: str) -> dict[str, float | int]:
        judged = [n for n in self.networks if predictor in n.predicted_s]
        errors = [n.error(predictor) for n in judged]
        return {"networks": len(judged), "mape": mape(errors),
                "within_10": sum(abs(e) <= WITHIN for e in errors),
                **{share_key(t): share_within(errors, t) for t in SHARE_TOLERANCES},
                "inside_spread": sum(n.inside(predictor) for n in judged)}

    def speed_drifts(self) -> list[float]:
        """Each network's measured time over its time scaled to the calibration's speed, less 1 (none without
        sentinel readings)."""
        scaled = self.at_reference_speed()
        return [] if scaled is None else [n.median_s / s.median_s - 1
                                          for n, s in zip(self.networks, scaled.networks, strict=True)]

    def kind_mdrae(self, rows: list[dict[str, Any]] | None = None) -> dict[str, dict[str, float | int]]:
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for row in self.layers if rows is None else rows:
            by_kind.setdefault(row["kind"], []).append(row)
        out = {}
        for kind, kind_rows in sorted(by_kind.items()):
            rae = [abs(r["rel_error"]) for r in kind_rows]
            out[kind] = {"layers": len(kind_rows), "mdrae": statistics.median(rae),
                         "median_signed": statistics.median(r["rel_error"] for r in kind_rows),
                         "measured_share": sum(r["measured_s"] for r in kind_rows)}
        total = sum(float(v["measured_share"]) for v in out.values()) or 1.0
        for v in out.values():
            v["measured_share"] = float(v["measured_share"]) / total
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"system": self.system, "calibration_wall_s": self.calibration_wall_s,
                "calibrate_call_s": self.calibrate_call_s,
                "prediction_s_median": statistics.median(n.prediction_s for n in self.networks)
                if self.networks else None,
                "networks": [n.as_dict() for n in self.networks], "failed": self.failed,
                "summary": {p: self.summary(p) for p in self.predictors()},
                "summary_at_reference_speed": {p: scaled.summary(p) for p in self.predictors()}
                if (scaled := self.at_reference_speed()) is not None else None,
                "error_to_read": error_to_read(self.speed_drifts()),
                "error_to_read_reason": reading_advice(self.speed_drifts()),
                "layer_mdrae": self.kind_mdrae(), "layers": self.layers,
                "kernel_in_network_mdrae": self.kind_mdrae(self.in_network), "in_network_layers": self.in_network}


# ------------------------------------------------------------------------------------------------ running
def run_system(system: System, names: Sequence[str], rounds: int, db: Path, onnx_dir: Path,
               with_layers: bool, refit: bool = False, sample_budget_s: float = 0.0) -> SystemResult:
    log(f"{system.label}: calibrating into {db} ({'refitting on what it holds' if refit else 'if needed'}"
        f"{f', sampling {sample_budget_s:g} s' if sample_budget_s else ''})")
    started = time.perf_counter()
    model = api.calibrate(system.settings, db, if_needed=not refit,
                          sample_budget_s=sample_budget_s, progress=progress_logger(f"{system.label} calibrate"))
    result = SystemResult(system.label, model.calibration.get("wall_s"), time.perf_counter() - started)
    networks: dict[str, Network] = {}
    predictions: dict[str, tuple[NetworkPrediction, float]] = {}
    for name in names:
        try:
            networks[name] = heldout_network(name, onnx_dir)
            predictions[name] = timed_prediction(networks[name], system, db)
        except NnperfError as exc:
            log(f"{system.label} {name}: {type(exc).__name__}: {exc}")
            result.failed[name] = f"{type(exc).__name__}: {exc}"
            networks.pop(name, None)
    with system.settings.open() as backend:
        reference_s = calibration_sentinel_s(backend, db)
        log(f"{system.label}: {rounds} interleaved rounds of {len(networks)} networks; the sentinel took "
            f"{reference_s * 1e3 if reference_s else float('nan'):.3f} ms around the calibration networks")
        medians, sentinels = measure_rounds(backend, networks, rounds)
        for name in networks:
            prediction, elapsed = predictions[name]
            result.networks.append(NetworkResult(name, medians[name], dict(prediction.network_latency_s), elapsed,
                                                 sentinels[name], reference_s))
        if with_layers:
            for name, network in networks.items():
                result.layers += layer_errors(network, name, predictions[name][0], backend, db)
                if "kernel" in model.predictors:
                    result.in_network += in_network_errors(network, name, predictions[name][0], model, backend, db)
    return result


def in_network_errors(network: Network, name: str, prediction: NetworkPrediction, model: Any, backend: Backend,
                      db: Path) -> list[dict[str, Any]]:
    """The kernel-aware model's per-layer predictions (times inside the network) against the profiler's in-network
    times of the layers that ran alone (not fused with another; 10 profiled runs, stored in the DB)."""
    config = ProfileConfig(per_layer="profiler", profiler_runs=10, harness=CALIBRATION_HARNESS)
    with Store(db) as store:
        report = profile_network(network, backend, store, config, model=f"heldout-profiled/{name}", reuse=True)
    predicted = model.predictors["kernel"].layer_latency_s(network, {p.layer: p.latency_s for p in prediction.layers})
    rows = []
    for m in report.layers:
        seconds = m.timing.stats.median_s
        if m.group_size > 1 or seconds <= 0 or m.layer not in predicted:
            continue
        rows.append({"network": name, "layer": m.layer, "kind": kernel_kind(network.layer(m.layer)),
                     "predicted_s": predicted[m.layer], "measured_s": seconds,
                     "rel_error": predicted[m.layer] / seconds - 1})
    return rows


# ------------------------------------------------------------------------------------------------ output
def markdown(result: SystemResult, rounds: int) -> str:
    text = network_tables(result, rounds)
    scaled = result.at_reference_speed()
    if scaled is not None:
        reference = result.networks[0].reference_sentinel_s or 0.0
        sentinels = [s for n in result.networks for s in n.round_sentinels_s]
        text += (f"\n#### {result.system} at the calibration's speed\n\nThe drift sentinel (a 3x3 convolution of "
                 f"7.2 M MACs) took {reference * 1e3:.3f} ms around the calibration networks and "
                 f"{min(sentinels) * 1e3:.3f}..{max(sentinels) * 1e3:.3f} ms during these rounds (read before "
                 "each round and after the last, interpolated). Each round median below is scaled by the "
                 "calibration's sentinel time over the sentinel's time when it was measured:\n\n")
        text += network_tables(scaled, rounds, heading=False)
        text += f"\n{reading_advice(result.speed_drifts())}\n"
    return text


def network_tables(result: SystemResult, rounds: int, heading: bool = True) -> str:
    predictors = result.predictors()
    lines = [f"### {result.system}", ""] if heading else []
    cal = f"{result.calibration_wall_s:.0f} s" if result.calibration_wall_s is not None else "not recorded"
    pred_s = [n.prediction_s for n in result.networks]
    if heading:
        lines.append(f"Calibration: {cal} (when fitted; this call {result.calibrate_call_s:.1f} s). Prediction: "
                     f"median {statistics.median(pred_s) * 1e3:.0f} ms, max {max(pred_s) * 1e3:.0f} ms per network "
                     f"(store opened, model loaded, predicted)." if pred_s else f"Calibration: {cal}.")
        lines.append("")
    lines += [(f"Measured: median of {rounds} interleaved round medians; spread = min..max of the round "
                   "medians; noise = (max - min) / median. Error = predicted / measured - 1; * = inside the spread."),
              ""]
    lines.append("| network | measured ms | spread ms | noise | " + " | ".join(predictors) + " |")
    lines.append("|---|---:|---:|---:|" + "---:|" * len(predictors))
    for n in result.networks:
        cells = [f"{pct(n.error(p), signed=True)}{'*' if n.inside(p) else ''}" if p in n.predicted_s else "-" for p in predictors]
        lines.append(f"| {n.name} | {n.median_s * 1e3:.2f} | {min(n.round_medians_s) * 1e3:.2f}.."
                     f"{max(n.round_medians_s) * 1e3:.2f} | {n.noise_floor:.1%} | " + " | ".join(cells) + " |")
    for name, why in result.failed.items():
        lines.append(f"| {name} | failed: {why} |")
    lines += ["", "| predictor | networks | MAPE | within +/-5% | within +/-10% | inside spread |",
              "|---|---:|---:|---:|---:|---:|"]
    for p in predictors:
        s = result.summary(p)
        lines.append(f"| {p} | {s['networks']} | {s['mape']:.1%} | {round(s['within_5pct'] * s['networks'])}/"
                     f"{s['networks']} | {s['within_10']}/{s['networks']} | {s['inside_spread']}/{s['networks']} |")
    if result.networks:
        floors = [n.noise_floor for n in result.networks]
        lines.append(f"\nNoise floor over networks: median {statistics.median(floors):.1%}, max {max(floors):.1%}.")
    if result.layers:
        lines += ["", "Per-layer, each layer measured alone (calibration harness) against its prediction:", "",
                  "| kind | layers | MdRAE | median signed | share of measured layer time |",
                  "|---|---:|---:|---:|---:|"]
        for kind, s in result.kind_mdrae().items():
            lines.append(f"| {kind} | {s['layers']} | {s['mdrae']:.1%} | {pct(float(s['median_signed']), signed=True)} | "
                         f"{s['measured_share']:.1%} |")
        lines += ["", "Largest absolute layer errors:", "",
                  "| network | layer | kind | measured ms | predicted ms | error |", "|---|---|---|---:|---:|---:|"]
        for row in sorted(result.layers, key=lambda r: -abs(r["predicted_s"] - r["measured_s"]))[:WORST_LAYERS]:
            lines.append(f"| {row['network']} | {row['layer']} | {row['kind']} | {row['measured_s'] * 1e3:.3f} | "
                         f"{row['predicted_s'] * 1e3:.3f} | {pct(row['rel_error'], signed=True)} |")
    if result.in_network:
        lines += ["", ("Kernel-aware model, per layer, against the profiler's in-network time of each layer that "
                       "ran alone (not fused):"), "",
                  "| kind | layers | MdRAE | median signed | share of measured layer time |",
                  "|---|---:|---:|---:|---:|"]
        for kind, s in result.kind_mdrae(result.in_network).items():
            lines.append(f"| {kind} | {s['layers']} | {s['mdrae']:.1%} | {pct(float(s['median_signed']), signed=True)} | "
                         f"{s['measured_share']:.1%} |")
    return "\n".join(lines) + "\n"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), metavar="BACKEND:THREADS",
                        help=f"default: {' '.join(SYSTEMS)}")
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), metavar="NAME",
                        help=f"default: {' '.join(NETWORKS)}")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved whole-network rounds (default 5)")
    parser.add_argument("--layers", action="store_true", help="also measure every layer alone (per-layer MdRAE)")
    parser.add_argument("--db", type=Path, default=Path("bench/results/prediction/heldout.db"))
    parser.add_argument("--onnx-dir", type=Path, default=Path("bench/results/onnx"))
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--quick", action="store_true", help="smoke test: the first network, 2 rounds")
    parser.add_argument("--refit", action="store_true",
                        help="fit the system's models again on the calibration the DB holds (nothing re-measured)")
    parser.add_argument("--sample-budget", type=float, default=0.0, metavar="SECONDS",
                        help="seconds of sampled convolutions measured alone for the kernel-aware models")
    args = parser.parse_args()
    if args.quick:
        args.networks, args.rounds = args.networks[:1], 2
    unknown = sorted(set(args.networks) - set(NETWORKS))
    if unknown:
        parser.error(f"unknown network {', '.join(unknown)}; held-out ones: {', '.join(NETWORKS)}")
    if args.rounds < 2:
        parser.error("--rounds must be at least 2 (the spread needs two)")
    return args


def main() -> None:
    args = arguments()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    meta = {"rounds": args.rounds, "networks": args.networks, "db": str(args.db),
            "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    source = commit()
    log(f"nnperf from commit {source['sha']}")
    print(f"## Held-out prediction\n\nnnperf source {(source['sha'] or 'not recorded')[:12]}"
          f"{' (modified)' if source['dirty'] else ''}; {args.rounds} rounds; "
          f"networks: {', '.join(args.networks)}\n", flush=True)
    results: list[SystemResult] = []
    for text in args.systems:
        results.append(run_system(System.parse(text), args.networks, args.rounds, args.db, args.onnx_dir,
                                  args.layers, args.refit, args.sample_budget))
        print(markdown(results[-1], args.rounds), flush=True)
        if args.json:
            write_result(args.json, method="prediction", concern="held-out architectures and zoo networks",
                         values={**meta, "systems": [r.as_dict() for r in results]})


if __name__ == "__main__":
    main()
