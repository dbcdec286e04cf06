"""Held-out prediction on every torchvision classification definition that exports here, judged with the paired
protocol: each network timed beside the machine-speed reference, raw and speed-adjusted errors, and a noise floor
per network.

Run (after bench/export_model_families.py has written the corpus; the exporters' environment is outside the
repository, see that script):

    .venv/bin/python bench/heldout_corpus.py --corpus /work/onnx-corpus /work/tv-corpus \\
        --db bench/results/prediction/heldout_corpus.db [--systems torch:1 onnxruntime:1] [--max-gmacs 12] [--sets 2] \\
        [--json bench/results/prediction/heldout_corpus.json]

**What is judged.** Every ``torchvision-classification`` export of the corpus manifests (the TorchScript exporter's,
random weights) whose file is here, read through nnperf's ONNX importer as a user's file would be, except:
the networks of nnperf's reference zoo (the calibration's sampling prior draws from their layers, and nnperf's
design was chosen on them), and networks above ``--max-gmacs`` (only to bound the run's time on one thread).

**Calibration.** Per system, ``nnperf.api.calibrate`` with its defaults (calibration networks and 60 s of layers
sampled from the zoo's configurations) and every judged file held out, so sampling never measures a
configuration of a judged network; the calibration records which networks it held out, and a stored one that
held out others is refused.

**Measurement.** ``--sets`` sets of paired rounds: in each set every network, in an order shuffled per set, is
timed beside the machine-speed reference (``nnperf.campaign.time_with_reference``, interleaved rounds, stored as a
run of its own as it is taken). Per network:

- raw: the median of its round times over all sets, at the machine's speed while it was measured;
- speed-adjusted: its median per-round ratio to the reference times the reference's time at calibration (the
  mean over the sets), the time the prediction, made at the calibration's speed, is judged against;
- drift: the reference's time during the network's rounds over its time at calibration, minus one;
- noise floor (of the adjusted verdict): the larger of the per-round ratios' IQR over their median (all sets
  pooled) and the difference between the sets' adjusted times over their mean;
- goal: |adjusted error| at most 10%, or at most the noise floor where that is higher.

Per predictor, MAPE and the shares of networks within +/-5% and +/-10%, each raw and speed-adjusted side by side,
and one line saying which of the two to read (``nnperf.prediction.evaluation.reading_advice``).

**Tracing** (``--trace``, or ``--trace-from JSON`` after a finished run): the networks that miss the goal (at most
``--trace-max``, the largest misses first) are then measured layer by layer, each layer alone
(``nnperf.api.evaluate``, a per-layer budget of ``--trace-budget`` seconds, stored), and each error split by
``nnperf.prediction.evaluation.trace_error`` into each kernel kind's summed layer error and the composition's part
(what putting the layers together adds: in-network context, fusion, per-call costs), against the whole network
measured alone in that same evaluation.

Progress goes to stderr; stdout gets the Markdown tables; --json the result file (``bench/_shared.py``'s schema;
``--rejudge`` and ``--trace-from`` also read a run's JSON from before it).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _shared import log, pct, read_values, write_result

from nnperf import api, zoo
from nnperf.campaign import store_referenced, time_with_reference
from nnperf.errors import NnperfError
from nnperf.ir import Network
from nnperf.ir.metrics import network_metrics
from nnperf.measure import ComparisonProtocol, RoundsConfig
from nnperf.prediction.evaluation import SHARE_TOLERANCES, error_to_read, mape, reading_advice, share_key, share_within
from nnperf.store import Store

FAMILY = "torchvision-classification"
EXPORTER = "torchscript"
ROUNDS = RoundsConfig(min_rounds=10, max_rounds=30, target_ci=0.01, budget_s=12.0)
"""Each network's paired rounds in one set: 10 to 30, until its ratio to the reference is known within 1%, for
at most 12 s."""
WITHIN = 0.10
CONCERN = "torchvision classifiers held out of calibration"


def judged_files(corpora: list[Path], max_gmacs: float) -> tuple[dict[str, Path], dict[str, str]]:
    """The judged exports by model name, and the models left out with why."""
    zoo_names = set(zoo.names())
    files: dict[str, Path] = {}
    left_out: dict[str, str] = {}
    for corpus in corpora:
        for record in json.loads((corpus / "manifest.json").read_text()):
            if record["family"] != FAMILY or record["exporter"] != EXPORTER or record["status"] != "exported":
                continue
            name, path = record["model"], Path(record["path"])
            if name in zoo_names:
                left_out[name] = "a reference zoo network (the sampling prior's source)"
            elif not path.is_file():
                left_out.setdefault(name, "export not on disk")
            else:
                files[name] = path
                left_out.pop(name, None)
    for name, path in list(files.items()):
        try:
            gmacs = network_metrics(api.load_model(path)).macs / 1e9
        except NnperfError as exc:
            left_out[name] = f"does not import: {str(exc)[-120:]}"
            del files[name]
            continue
        if gmacs > max_gmacs:
            left_out[name] = f"{gmacs:.1f} GMACs, above --max-gmacs {max_gmacs:g}"
            del files[name]
    return dict(sorted(files.items())), left_out


@dataclass
class Judged:
    name: str
    gmacs: float
    predicted_s: dict[str, float]
    primary: str
    raw_s: list[float] = field(default_factory=list)
    """Every round time of the network, all sets."""
    ratios: list[float] = field(default_factory=list)
    """Every per-round ratio to the reference, all sets."""
    adjusted_s: list[float] = field(default_factory=list)
    """The speed-adjusted time of each set."""
    drift: list[float] = field(default_factory=list)
    """The reference's time over its calibration time, minus one, in each set."""

    @property
    def raw_median_s(self) -> float:
        return statistics.median(self.raw_s)

    @property
    def adjusted_median_s(self) -> float:
        return statistics.fmean(self.adjusted_s)

    @property
    def noise_floor(self) -> float:
        q1, q3 = np.percentile(self.ratios, [25, 75])
        iqr = float(q3 - q1) / statistics.median(self.ratios)
        sets = (max(self.adjusted_s) - min(self.adjusted_s)) / self.adjusted_median_s
        return max(iqr, sets)

    def raw_error(self, predictor: str) -> float:
        return self.predicted_s[predictor] / self.raw_median_s - 1

    def adjusted_error(self, predictor: str) -> float:
        return self.predicted_s[predictor] / self.adjusted_median_s - 1

    def meets_goal(self, predictor: str) -> bool:
        return abs(self.adjusted_error(predictor)) <= max(WITHIN, self.noise_floor)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "raw_median_s": self.raw_median_s, "adjusted_median_s": self.adjusted_median_s,
                "noise_floor": self.noise_floor,
                "raw_error": {p: self.raw_error(p) for p in self.predicted_s},
                "adjusted_error": {p: self.adjusted_error(p) for p in self.predicted_s}}


def calibrated(system: api.System, db: Path, files: dict[str, Path], refit: bool) -> Any:
    """The system's calibration with every judged file held out (made if the DB has none; with ``refit``, made
    again: the calibration networks' stored measurements are reused, the sampling runs anew where its prior
    changed)."""
    model = api.calibrate(system, db, if_needed=not refit, held_out=list(files.values()),
                          progress=lambda what, done, total: None)
    held = set(model.calibration.get("prior", {}).get("held_out", ()))
    wanted = {api.load_model(p).name for p in files.values()}
    if held != wanted:
        raise SystemExit(f"{db} holds a calibration of {model.system_label} that held out other networks "
                         f"({len(held)} against {len(wanted)} judged); use another --db")
    return model


def run_system(text: str, db: Path, files: dict[str, Path], sets: int, refit: bool = False
               ) -> tuple[dict[str, Any], list[Judged]]:
    backend, _, threads = text.partition(":")
    system = api.System(backend, threads=int(threads or 1))
    log(f"{text}: calibrating into {db} (if needed), {len(files)} networks held out")
    model = calibrated(system, db, files, refit)
    networks: dict[str, Network] = {}
    predictions: dict[str, Any] = {}
    failed: dict[str, str] = {}
    with system.open() as runner:
        for name, path in files.items():
            try:
                networks[name] = api.load_model(path)
                predictions[name] = model.predict(networks[name])  # an uncovered layer is refused before measuring
                runner.network_timer(networks[name])  # and a network the backend cannot run
            except NnperfError as exc:
                failed[name] = f"{type(exc).__name__}: {exc}"
                networks.pop(name, None)
                predictions.pop(name, None)
                log(f"{text} {name}: {failed[name]}")
    started = time.perf_counter()
    api.predict_many(list(networks.values()), system, db)  # the oracle's time: store opened, latencies only
    predict_s = time.perf_counter() - started
    first = next(iter(predictions.values()), None)
    primary = next((k for k, v in first.network_latency_s.items() if v == first.latency_s),
                   "composed") if first is not None else "composed"  # the method latency_s comes from
    judged = {name: Judged(name, network_metrics(net).macs / 1e9, dict(predictions[name].network_latency_s), primary)
              for name, net in networks.items()}
    calibration_reference_s = model.reference_s[1]
    with system.open() as runner, Store(db) as store:
        for s in range(sets):
            order = list(networks)
            random.Random(s).shuffle(order)
            for k, name in enumerate(order):
                timing = time_with_reference(networks[name], runner, ComparisonProtocol.INTERLEAVED, ROUNDS,
                                             model.reference_s[0])
                store_referenced(store, runner, networks[name], f"heldout/{name}", timing)
                j = judged[name]
                j.raw_s += timing.round_times_s
                j.ratios += timing.ratio.ratios
                j.adjusted_s.append(timing.at_reference_speed_s(calibration_reference_s))
                j.drift.append(timing.reference_s / calibration_reference_s - 1)
                log(f"{text} set {s + 1}/{sets} {k + 1}/{len(order)} {name}: {timing.latency_s * 1e3:.2f} ms "
                    f"raw, {j.adjusted_s[-1] * 1e3:.2f} ms adjusted, drift {j.drift[-1]:+.1%}")
    meta = {"system": text, "label": model.system_label, "calibration_wall_s": model.calibration.get("wall_s"),
            "reference_s": calibration_reference_s,
            "sample_budget_s": model.calibration.get("sample_budget_s"), "prior": model.calibration.get("prior"),
            "predict_many_s": predict_s, "networks": len(networks), "failed": failed, "primary": primary}
    return meta, list(judged.values())


def traced(text: str, db: Path, files: dict[str, Path], names: list[str], budget_s: float) -> dict[str, Any]:
    """Each of ``names`` measured layer by layer and its primary error split into parts (see the docstring)."""
    from nnperf.prediction.evaluation import trace_error

    backend, _, threads = text.partition(":")
    system = api.System(backend, threads=int(threads or 1))
    log(f"{text}: tracing {len(names)} networks layer by layer")
    report = api.evaluate([files[n] for n in names], system, db, budget_s=budget_s, protocol="none",
                          progress=lambda what, done, total: None)
    evaluation = report.evaluation
    method = evaluation.primary_method
    out = {}
    for network, name in zip(evaluation.networks, names, strict=True):
        parts = trace_error(network, method)
        out[name] = {"measured_s": network.measured_s, "predicted_s": network.predicted_s[method],
                     "error": network.error(method),
                     "parts": [{"part": p.part, "error_s": p.error_s, "share": p.share, "layers": p.layers}
                               for p in parts]}
    return out


def trace_markdown(traces: dict[str, Any]) -> str:
    lines = ["", ("Where the misses come from (each layer measured alone; error against the network measured alone "
                 "in the same evaluation; the three largest parts, signed ms and share of the error):"), "",
             "| network | error | part 1 | part 2 | part 3 |", "|---|---:|---|---|---|"]
    for name, t in traces.items():
        parts = [f"{p['part']} {p['error_s'] * 1e3:+.2f} ms ({p['share']:.0%})" for p in t["parts"][:3]]
        lines.append(f"| {name} | {pct(t['error'], signed=True)} | "
                     + " | ".join(parts + [""] * (3 - len(parts))) + " |")
    return "\n".join(lines) + "\n"


def markdown(meta: dict[str, Any], judged: list[Judged]) -> str:
    primary = meta["primary"]
    predictors = list(judged[0].predicted_s) if judged else []
    lines = [f"### {meta['label']}", "",
             (f"Calibration {meta['calibration_wall_s']:.0f} s with {meta['sample_budget_s']:g} s of sampling; "
             f"{len(judged)} networks predicted in {meta['predict_many_s']:.2f} s (`predict_many`). Errors of "
             f"`{primary}`, the primary predictor; * = beyond both +/-10% and the noise floor."), "",
             "| network | GMACs | raw ms | adjusted ms | drift | noise floor | raw error | adjusted error |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for j in sorted(judged, key=lambda j: j.gmacs):
        mark = "" if j.meets_goal(primary) else " *"
        lines.append(f"| {j.name} | {j.gmacs:.2f} | {j.raw_median_s * 1e3:.1f} | {j.adjusted_median_s * 1e3:.1f} | "
                     f"{pct(statistics.fmean(j.drift), signed=True)} | {j.noise_floor:.1%} | "
                     f"{pct(j.raw_error(primary), signed=True)} | "
                     f"{pct(j.adjusted_error(primary), signed=True)}{mark} |")
    for name, why in meta["failed"].items():
        lines.append(f"| {name} | failed: {why[:160]} |||||||")
    lines += ["", ("| predictor | networks | MAPE raw | within +/-5% / +/-10% raw | MAPE adjusted | "
                  "within +/-5% / +/-10% adjusted | within max(10%, floor) |"), "|---|---:|---:|---:|---:|---:|---:|"]
    figures, n = summary(judged), len(judged)
    for p in predictors:
        s = figures[p]
        lines.append(f"| {p} | {n} | {s['mape']:.1%} | {round(s['within_5pct'] * n)}/{n} / "
                     f"{round(s['within_10pct'] * n)}/{n} | {s['adjusted_mape']:.1%} | "
                     f"{round(s['adjusted_within_5pct'] * n)}/{n} / {round(s['adjusted_within_10pct'] * n)}/{n} | "
                     f"{s['within_goal']}/{n} |")
    if figures["error_to_read_reason"]:
        lines.append(f"\n{figures['error_to_read_reason']}")
    floors = [j.noise_floor for j in judged]
    if floors:
        lines.append(f"\nNoise floor over networks: median {statistics.median(floors):.1%}, max {max(floors):.1%}.")
    return "\n".join(lines) + "\n"


def summary(judged: list[Judged]) -> dict[str, Any]:
    """Per predictor: MAPE and the shares within +/-5% and +/-10%, raw and speed-adjusted, and how many networks
    meet the goal; and which of the two errors to read (by the networks' raw over adjusted times)."""
    drifts = [j.raw_median_s / j.adjusted_median_s - 1 for j in judged]
    out: dict[str, Any] = {"error_to_read": error_to_read(drifts), "error_to_read_reason": reading_advice(drifts)}
    for p in (judged[0].predicted_s if judged else ()):
        raw, adjusted = [j.raw_error(p) for j in judged], [j.adjusted_error(p) for j in judged]
        out[p] = {"mape": mape(raw), "adjusted_mape": mape(adjusted),
                  **{share_key(t): share_within(raw, t) for t in SHARE_TOLERANCES},
                  **{share_key(t, adjusted=True): share_within(adjusted, t) for t in SHARE_TOLERANCES},
                  "within_goal": sum(j.meets_goal(p) for j in judged)}
    return out


SYSTEM_NAMES = {"torch": "torch", "onnxruntime": "ONNX Runtime"}


def headline(systems: list[dict[str, Any]]) -> dict[str, Any]:
    """What RESULTS.md shows of a run: per backend (by its id) the primary predictor's adjusted MAPE, shares within
    +/-5% and +/-10%, the median noise floor; and one row per predictor, raw beside adjusted."""
    by = {s["system"].partition(":")[0]: s for s in systems}
    out: dict[str, Any] = {"primary": {}, "rows": []}
    for backend, system in by.items():
        figures, n = system["summary"][system["primary"]], len(system["networks"])
        out["primary"][backend] = {
            "networks": n, "mape": figures["mape"], "adjusted_mape": figures["adjusted_mape"],
            "adjusted_within_5pct": round(figures["adjusted_within_5pct"] * n),
            "adjusted_within_10pct": round(figures["adjusted_within_10pct"] * n),
            "noise_floor_median": statistics.median(j["noise_floor"] for j in system["networks"]),
            "error_to_read": system["summary"]["error_to_read"]}
    for predictor in (systems[0]["summary"] if systems else {}):
        if predictor.startswith("error_to_read"):
            continue
        row = {"predictor": predictor + (" (primary)" if predictor == systems[0]["primary"] else "")}
        for backend, system in by.items():
            name = SYSTEM_NAMES.get(backend, backend)
            f, n = system["summary"][predictor], len(system["networks"])
            row[f"{name}: MAPE raw / adjusted"] = f"{f['mape']:.1%} / {f['adjusted_mape']:.1%}"
            row[f"{name}: within +/-5% / +/-10% (adjusted)"] = (
                f"{round(f['adjusted_within_5pct'] * n)}/{n} / {round(f['adjusted_within_10pct'] * n)}/{n}")
        out["rows"].append(row)
    return out


def rejudge(args: argparse.Namespace) -> None:
    """Judges a finished run's measurements (its --json) again with the system's calibration as the DB holds it now
    (made again first with --refit): every prediction anew, every speed-adjusted time and drift moved to the new
    calibration's reference reading. Nothing is measured whole."""
    done = read_values(args.rejudge)
    files = {name: Path(path) for name, path in done["judged"].items()}
    for system in done["systems"]:
        backend, _, threads = system["system"].partition(":")
        settings = api.System(backend, threads=int(threads or 1))
        model = calibrated(settings, args.db, files, args.refit)
        factor = model.reference_s[1] / system["reference_s"]
        names = [n["name"] for n in system["networks"]]
        predictions = api.predict([api.load_model(files[n]) for n in names], settings, args.db)
        judged = [Judged(n["name"], n["gmacs"], dict(p.network_latency_s), system["primary"], n["raw_s"], n["ratios"],
                      [a * factor for a in n["adjusted_s"]], [(1 + d) / factor - 1 for d in n["drift"]])
                  for n, p in zip(system["networks"], predictions, strict=True)]
        system.update({"reference_s": model.reference_s[1], "rejudged": True,
                       "calibration_wall_s": model.calibration.get("wall_s"),
                       "networks": [j.as_dict() for j in judged], "summary": summary(judged)})
        print(markdown(system, judged), flush=True)
    if args.json:
        write_result(args.json, method="prediction", concern=CONCERN, values=done, rejudged_from=str(args.rejudge),
                     headline=headline(done["systems"]))


def trace_finished(args: argparse.Namespace) -> None:
    """Traces the misses of a finished run (its --json) on each of its systems, into the same JSON's traces."""
    done = read_values(args.trace_from)
    files = {name: Path(path) for name, path in done["judged"].items()}
    for system in done["systems"]:
        primary = system["primary"]
        misses = [n["name"] for n in sorted(system["networks"], key=lambda n: -abs(n["adjusted_error"][primary]))
                  if abs(n["adjusted_error"][primary]) > max(WITHIN, n["noise_floor"])][:args.trace_max]
        system["traces"] = traced(system["system"], args.db, files, misses, args.trace_budget) if misses else {}
        print(f"### {system['label']}\n" + trace_markdown(system["traces"]), flush=True)
        write_result(args.trace_from, method="prediction", concern=CONCERN, values=done,
                     traced="the misses traced by this run; the networks measured by the run that wrote the file")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="+", type=Path, required=True, help="corpus folders with a manifest.json")
    parser.add_argument("--systems", nargs="+", default=["torch:1", "onnxruntime:1"], metavar="BACKEND:THREADS")
    parser.add_argument("--db", type=Path, default=Path("bench/results/prediction/heldout_corpus.db"))
    parser.add_argument("--max-gmacs", type=float, default=12.0)
    parser.add_argument("--sets", type=int, default=2, help="sets of paired rounds per network (default 2)")
    parser.add_argument("--refit", action="store_true",
                        help="calibrate again (stored calibration networks reused; new sampling where it changed)")
    parser.add_argument("--trace", action="store_true", help="trace the misses to their layers (see above)")
    parser.add_argument("--rejudge", type=Path, metavar="JSON",
                        help="measure nothing whole: judge a finished run's --json again with the calibration the DB "
                             "holds now (with --refit, made again first); --json writes the new figures")
    parser.add_argument("--trace-from", type=Path, metavar="JSON",
                        help="measure nothing whole: trace the misses of a finished run's --json (same --db)")
    parser.add_argument("--trace-max", type=int, default=6, metavar="N",
                        help="trace at most the N misses with the largest errors (default 6)")
    parser.add_argument("--trace-budget", type=float, default=0.25, metavar="SECONDS",
                        help="per-layer measuring budget when tracing (default 0.25)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.sets < 1:
        parser.error("--sets must be at least 1")
    if args.rejudge:
        rejudge(args)
        return
    if args.trace_from:
        trace_finished(args)
        return
    files, left_out = judged_files(args.corpus, args.max_gmacs)
    print(f"## Held-out torchvision definitions\n\n{len(files)} judged: {', '.join(files)}.\n\nLeft out: "
          + "; ".join(f"{n} ({why})" for n, why in sorted(left_out.items())) + "\n", flush=True)
    out: dict[str, Any] = {"judged": {n: str(p) for n, p in files.items()},
                           "left_out": left_out, "systems": []}
    for text in args.systems:
        meta, judged = run_system(text, args.db, files, args.sets, args.refit)
        print(markdown(meta, judged), flush=True)
        misses = [j.name for j in sorted(judged, key=lambda j: -abs(j.adjusted_error(meta["primary"])))
                  if not j.meets_goal(meta["primary"])][:args.trace_max]
        traces = traced(text, args.db, files, misses, args.trace_budget) if args.trace and misses else {}
        if traces:
            print(trace_markdown(traces), flush=True)
        out["systems"].append({**meta, "networks": [j.as_dict() for j in judged], "summary": summary(judged),
                               "traces": traces})
        if args.json:
            write_result(args.json, method="prediction", concern=CONCERN, values=out, headline=headline(out["systems"]))


if __name__ == "__main__":
    main()
