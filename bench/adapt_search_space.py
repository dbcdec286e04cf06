"""Calibration adapted to a search space (``nnperf calibrate --adapt``): prediction errors on networks of the space,
before and after the adaptation, judged against measurements beside the machine-speed reference.

Run (the calibration is made if the store has none that held out the same judged networks):

    PYTHONPATH=src nice -n 5 .venv/bin/python bench/adapt_search_space.py --db /tmp/adapt.db [--space regnet]
        [--backend torch] [--threads 1] [--judged 12] [--examples 20] [--budget 300] [--sets 2] [--seed 0]
        [--json bench/results/adapt/regnet_space_torch.json]

1. **The space** (``--space``):
   - ``mobilenet_v3``: ``nnperf.zoo.search_space.MobileNetV3Space`` (Once-for-All's space around
     MobileNetV3-Large: depthwise kernels 3/5/7, expansions 3/4/6, 2-4 blocks a stage, widths x0.75-1.25,
     160-224 px). Its first runs showed what the adaptation lacked (anchors to the calibration's speed, the
     whole networks' scale), so its figures are those of the space the method was developed on;
   - ``regnet``: a RegNetX-like design space (Radosavovic et al. 2020): depth 12-22, w0 24-64, slope wa 12-40,
     wm 2.0-3.0, the quantized linear rule's four stages (widths to a multiple of 8, then of the group width),
     group width 8, 16 or 24, bottleneck ratio 1, 160-224 px; built from bench/architectures.py's RegNetX.
     Never used before the method was settled.
2. **Judged**: ``--judged`` networks drawn from ``--seed``; held out of the calibration's sampling and of the
   adaptation: no layer configuration equal to one of theirs is ever measured.
3. **Calibration**: ``nnperf.api.calibrate`` with its defaults and the judged networks held out (reused when the
   store holds one; a stored adapted one is taken without its ``adapted`` predictor, as calibrated).
4. **Measurement**: ``--sets`` sets of paired rounds, the first before the adaptation and the others after it;
   in each set every judged network, in a shuffled order, is timed beside the machine-speed reference
   (``nnperf.campaign.time_with_reference``, interleaved rounds). Raw: the median of its round times; adjusted:
   its median per-round ratio to the reference times the reference's time at calibration, the mean over sets.
5. **Adaptation**: ``nnperf.api.adapt`` with the space's sampler (``--examples`` networks drawn from ``--seed`` +
   1 as the examples) and ``--budget`` seconds of sampled layers; its wall time is the call's.
6. **Errors**: per predictor, before and after, Kendall's tau against the adjusted times, MAPE and the shares
   within +/-5% and +/-10%, raw and adjusted side by side; the measurement's own tau (the first set's adjusted
   times against the last's) is the ceiling any prediction's tau can reach.

Progress goes to stderr; stdout gets Markdown; ``--json`` the figures (bench/_shared.write_result).
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from _shared import log, pct, read_values, result_path, write_result
from scipy.stats import kendalltau

from nnperf import api
from nnperf.campaign import time_with_reference
from nnperf.ir import Network
from nnperf.ir.metrics import network_metrics
from nnperf.measure import ComparisonProtocol, RoundsConfig
from nnperf.zoo.search_space import MobileNetV3Space

SPACES = ("mobilenet_v3", "regnet")

ROUNDS = RoundsConfig(min_rounds=10, max_rounds=30, target_ci=0.01, budget_s=12.0)
"""Each network's paired rounds in one set, as bench/heldout_corpus.py times them."""


@dataclass
class Judged:
    """One judged network: its measurements (raw round times, adjusted time per set) and predictions."""

    name: str
    gmacs: float
    raw_s: list[float] = field(default_factory=list)
    adjusted_s: list[float] = field(default_factory=list)
    predicted_s: dict[str, dict[str, float]] = field(default_factory=dict)
    """'before' / 'after' -> predictor -> seconds."""

    @property
    def raw_median_s(self) -> float:
        return float(np.median(self.raw_s))

    @property
    def adjusted_mean_s(self) -> float:
        return float(np.mean(self.adjusted_s))


@dataclass(frozen=True)
class RegNetSpace:
    """The RegNetX-like design space of the module docstring: :meth:`sample` draws one network's settings,
    :meth:`network` builds it as IR on PyTorch's meta device."""

    def sample(self, rng: np.random.Generator) -> tuple[int, tuple[int, ...], tuple[int, ...], int]:
        """(resolution, stage widths, stage depths, group width), drawn until the rule gives four stages."""
        while True:
            depth, w0 = int(rng.integers(12, 23)), int(rng.choice(np.arange(24, 65, 8)))
            wa, wm = float(rng.uniform(12.0, 40.0)), float(rng.uniform(2.0, 3.0))
            group = int(rng.choice([8, 16, 24]))
            steps = np.round(np.log((w0 + wa * np.arange(depth)) / w0) / np.log(wm))
            widths, depths = np.unique((np.round(w0 * wm ** steps / 8) * 8).astype(int), return_counts=True)
            if len(widths) == 4:
                grouped = tuple(int(max(group, round(w / group) * group)) for w in widths)
                return int(rng.choice([160, 176, 192, 208, 224])), grouped, tuple(int(d) for d in depths), group

    def network(self, sample: tuple[int, tuple[int, ...], tuple[int, ...], int]) -> Network:
        import torch
        from architectures import regnetx_400mf

        from nnperf.ir.importers import from_torch

        resolution, widths, depths, group = sample
        name = f"regnetx-r{resolution}-g{group}-" + "-".join(f"{w}x{d}" for w, d in zip(widths, depths, strict=True))
        with torch.device("meta"):
            module = regnetx_400mf(widths, depths, group_width=group)
        return from_torch(module, torch.empty((1, 3, resolution, resolution), device="meta"), name=name)


def space_networks(space: str, count: int, seed: int) -> list[Network]:
    """``count`` distinct networks of ``space`` drawn from ``seed``."""
    if space == "mobilenet_v3":
        drawn = MobileNetV3Space()
        return [drawn.network(s) for s in drawn.samples(count, seed)]
    regnet, rng, found = RegNetSpace(), np.random.default_rng(seed), {}
    while len(found) < count:
        network = regnet.network(regnet.sample(rng))
        found.setdefault(network.name, network)
    return list(found.values())


def sampler(space: str) -> Any:
    """The space's sampler function, as ``nnperf.api.adapt`` takes it."""
    if space == "mobilenet_v3":
        drawn = MobileNetV3Space()
        return lambda rng: drawn.network(drawn.sample(rng))
    regnet = RegNetSpace()
    return lambda rng: regnet.network(regnet.sample(rng))


def measure_set(system: api.System, networks: dict[str, Network], judged: dict[str, Judged], reference: str,
                calibration_s: float, seed: int) -> None:
    """One set of paired rounds of every network, in an order shuffled by ``seed``."""
    order = list(networks)
    random.Random(seed).shuffle(order)
    with system.open() as runner:
        for k, name in enumerate(order):
            timing = time_with_reference(networks[name], runner, ComparisonProtocol.INTERLEAVED, ROUNDS, reference)
            judged[name].raw_s += timing.round_times_s
            judged[name].adjusted_s.append(timing.at_reference_speed_s(calibration_s))
            drift = timing.reference_s / calibration_s - 1
            log(f"set {seed + 1} {k + 1}/{len(order)} {name}: {timing.latency_s * 1e3:.2f} ms raw, "
                f"{judged[name].adjusted_s[-1] * 1e3:.2f} ms adjusted, drift {drift:+.1%}")


def scores(judged: list[Judged], phase: str, predictor: str) -> dict[str, float]:
    """Kendall's tau (against the adjusted and the raw times), MAPE and the shares within +/-5% and +/-10%, raw and
    adjusted, of ``predictor``'s predictions in ``phase``."""
    predicted = np.array([j.predicted_s[phase][predictor] for j in judged])
    out: dict[str, float] = {}
    for kind, measured in (("raw", np.array([j.raw_median_s for j in judged])),
                           ("adjusted", np.array([j.adjusted_mean_s for j in judged]))):
        errors = predicted / measured - 1
        out |= {f"{kind}_tau": float(kendalltau(predicted, measured).statistic),
                f"{kind}_mape": float(np.mean(np.abs(errors))),
                f"{kind}_within_5pct": float(np.mean(np.abs(errors) <= 0.05)),
                f"{kind}_within_10pct": float(np.mean(np.abs(errors) <= 0.10)),
                f"{kind}_mean_error": float(np.mean(errors))}
    return out


def markdown(judged: list[Judged], results: dict[str, dict[str, dict[str, float]]], meta: dict[str, Any]) -> str:
    """The per-network table and the per-predictor summary, before and after."""
    lines = [f"## {meta['space']} on {meta['system']}: {len(judged)} judged networks", "",
             (f"Calibration {meta['calibration_wall_s']:.0f} s (stored: {meta['calibration_reused']}); adaptation "
             f"{meta['adaptation_wall_s']:.0f} s (the call; sampling and fit {meta['adapted']['wall_s']:.0f} s): "
             f"{meta['adapted']['samples']} layers sampled near {len(meta['adapted']['sources'])} example networks "
             f"(budget {meta['budget_s']:g} s). Measurement against itself (first set's adjusted times against the "
             f"last's): Kendall tau {meta['measurement_tau']:.3f}."), "",
             f"Adapted predictor: {meta['adapted_summary']}", "",
             ("| network | GMACs | raw ms | adjusted ms | composed before: raw / adjusted | adapted after: raw / "
             "adjusted |"), "|---|---:|---:|---:|---:|---:|"]
    for j in judged:
        cells = [f"{pct(j.predicted_s[phase][p] / j.raw_median_s - 1, signed=True)} / "
                 f"{pct(j.predicted_s[phase][p] / j.adjusted_mean_s - 1, signed=True)}"
                 for phase, p in (("before", meta["primary_before"]), ("after", meta["primary_after"]))]
        lines.append(f"| {j.name} | {j.gmacs:.2f} | {j.raw_median_s * 1e3:.2f} | {j.adjusted_mean_s * 1e3:.2f} | "
                     f"{cells[0]} | {cells[1]} |")
    lines += ["", ("| phase | predictor | tau adjusted / raw | MAPE raw | within 5% / 10% raw | MAPE adjusted | "
              "within 5% / 10% adjusted | mean error adjusted |"), "|---|---|---:|---:|---:|---:|---:|---:|"]
    n = len(judged)
    for phase, by_predictor in results.items():
        for predictor, s in by_predictor.items():
            lines.append(f"| {phase} | {predictor} | {s['adjusted_tau']:.3f} / {s['raw_tau']:.3f} | "
                         f"{pct(s['raw_mape'])} | {round(s['raw_within_5pct'] * n)}/{n} / "
                         f"{round(s['raw_within_10pct'] * n)}/{n} | {pct(s['adjusted_mape'])} | "
                         f"{round(s['adjusted_within_5pct'] * n)}/{n} / {round(s['adjusted_within_10pct'] * n)}/{n} | "
                         f"{pct(s['adjusted_mean_error'], signed=True)} |")
    return "\n".join(lines)


def rendered(values: dict[str, Any]) -> str:
    """:func:`markdown` of a result file's values; the "before" predictions without an ``adapted`` one (a run that
    read back an adapted calibration as its "before") and their primary the composition."""
    judged = [Judged(**{k: v for k, v in n.items() if k in ("name", "gmacs", "raw_s", "adjusted_s",
                                                               "predicted_s")}) for n in values["networks"]]
    for j in judged:
        j.predicted_s["before"] = {k: v for k, v in j.predicted_s["before"].items() if k != "adapted"}
    results = {"before": {k: v for k, v in values["results"]["before"].items() if k != "adapted"},
               "after": values["results"]["after"]}
    return markdown(judged, results, {**values, "primary_before": "composed"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--space", choices=SPACES, default="mobilenet_v3")
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--judged", type=int, default=12)
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--budget", type=float, default=api.DEFAULT_ADAPT_BUDGET_S)
    parser.add_argument("--sets", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--render", type=Path, default=None, help="print the tables of a finished run's JSON")
    args = parser.parse_args()
    if args.render is not None:
        print(rendered(read_values(args.render)))
        return

    system = api.System(args.backend, threads=args.threads)
    started = time.perf_counter()
    networks = {n.name: n for n in space_networks(args.space, args.judged, args.seed)}
    judged = {name: Judged(name, network_metrics(n).macs / 1e9) for name, n in networks.items()}
    log(f"{len(networks)} judged networks built in {time.perf_counter() - started:.0f} s")
    started = time.perf_counter()
    reused = api.stored_calibration(system, args.db, held_out=list(networks.values())) is not None
    stored = api.calibrate(system, args.db, if_needed=True, held_out=list(networks.values()))
    before = replace(stored, predictors={k: v for k, v in stored.predictors.items() if k != "adapted"})
    calibration_s = time.perf_counter() - started if not reused else float(before.calibration["wall_s"])
    log(f"calibration {'read back' if reused else 'made'}: {calibration_s:.0f} s")
    assert before.reference_s is not None
    reference, reference_s = before.reference_s
    measure_set(system, networks, judged, reference, reference_s, 0)
    started = time.perf_counter()
    after = api.adapt((), system, args.db, sampler=sampler(args.space), sampled=args.examples, seed=args.seed + 1,
                      budget_s=args.budget, held_out=list(networks.values()))
    adaptation_s = time.perf_counter() - started
    log(f"adaptation: {adaptation_s:.0f} s, {after.calibration['adapted']['samples']} samples")
    for s in range(1, args.sets):
        measure_set(system, networks, judged, reference, reference_s, s)
    for name, network in networks.items():
        judged[name].predicted_s = {"before": dict(before.predict(network).network_latency_s),
                                    "after": dict(after.predict(network).network_latency_s)}
    listed = list(judged.values())
    results = {phase: {p: scores(listed, phase, p) for p in listed[0].predicted_s[phase]} for phase in
               ("before", "after")}
    first, last = (np.array([j.adjusted_s[i] for j in listed]) for i in (0, -1))
    meta = {"space": args.space, "system": after.system_label, "seed": args.seed, "budget_s": args.budget,
            "examples": args.examples, "calibration_wall_s": calibration_s, "calibration_reused": reused,
            "adaptation_wall_s": adaptation_s, "adapted": after.calibration["adapted"],
            "adapted_summary": after.predictors["adapted"].summary(), "reference_s": reference_s,
            "measurement_tau": float(kendalltau(first, last).statistic),
            "primary_before": before.predict(networks[listed[0].name]).method,
            "primary_after": after.predict(networks[listed[0].name]).method}
    print(markdown(listed, results, meta))
    path = args.json or result_path("adapt", f"{args.space}_space_{args.backend}")
    write_result(path, method="adapt", concern="calibration adapted to a search space", values={
        **meta, "results": results, "networks": [vars(j) for j in listed]},
        spread={j.name: float(np.ptp(j.adjusted_s) / j.adjusted_mean_s) for j in listed})
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
