"""How a primitive cost model's error falls with the configurations it is fitted on (Mulder et al. Fig. 9, top:
models trained on fractions of the training set), and how many a goal would need if the fall went on.

Run: .venv/bin/python bench/primitive_learning_curve.py --db STORE [--system ID]
     [--variants ens/relative nn2/absolute] [--fractions 0.125 0.25 0.5 1] [--seeds 0 1 2] [--goal 0.03]
     [--network paper|small] [--threads 1] [--json PATH] [--plot PATH]

Each seed splits the dataset 80/10/10 as ``bench/primitive_models.py`` does; every fraction then fits each
variant on that fraction of the training part (a random subset, seeded, of its configurations and activations),
with the whole validation part, and scores it on the whole test part. So the test part and the validation
part are the same at every fraction, and only the training rows change. Each cell is the median over seeds of
the MdRAE of all primitives' times and of their ratios to the reference (``evaluate``).

The last columns fit a power law, MdRAE = a * n^-b, by least squares on log MdRAE against log n over the
fractions' medians, and say at how many training configurations it would reach ``--goal``. That is an
extrapolation of a trend, not a measurement: a model's error stops falling where the labels' own noise is
(the stored ratio's standard error), which a power law without a floor does not know.

Cost: every fit of a variant as in ``bench/primitive_models.py``; on 1,700 training configurations the
ensemble on relative targets took about 100 s on one core of this VM.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _shared import pct, print_table, write_result
from primitive_models import NETWORKS, fit_variant, load, reference_of

from nnperf.measure import host_info
from nnperf.prediction.primitives import split_dataset
from nnperf.primitives import PrimitiveDataset
from nnperf.report import pyplot, write_png

FRACTIONS = (0.125, 0.25, 0.5, 1.0)
"""The fractions of the training part each variant is fitted on, by default."""


@dataclass(frozen=True)
class Point:
    """One variant fitted on ``n_train`` configurations of one seed's training part: its test MdRAE of the
    primitives' times and ratios (None where the model gives none)."""

    variant: str
    seed: int
    fraction: float
    n_train: int
    time_mdrae: float | None
    ratio_mdrae: float | None


@dataclass(frozen=True)
class PowerLaw:
    """MdRAE = ``scale`` * n^-``exponent``, fitted on (n, MdRAE) pairs."""

    scale: float
    exponent: float

    @classmethod
    def fit(cls, n: Sequence[float], mdrae: Sequence[float]) -> PowerLaw | None:
        """The least-squares line of log MdRAE on log n; None with fewer than two distinct n."""
        if len(set(n)) < 2:
            return None
        slope, intercept = np.polyfit(np.log(n), np.log(mdrae), 1)
        return cls(float(math.exp(intercept)), float(-slope))

    def at(self, n: float) -> float:
        return self.scale * n ** -self.exponent

    def needed(self, goal: float) -> float | None:
        """The configurations at which the law reaches ``goal``; None when it does not fall."""
        return (self.scale / goal) ** (1 / self.exponent) if self.exponent > 0 else None


def curve(dataset: PrimitiveDataset, variants: Sequence[str], fractions: Sequence[float], seeds: Sequence[int],
          network: dict[str, Any], reference: str | None, threads: int) -> list[Point]:
    """Every variant fitted on every fraction of every seed's training part (see the module docstring)."""
    points = []
    begin = time.perf_counter()
    for seed in seeds:
        train, validation, test = split_dataset(dataset, seed=seed)
        for fraction in fractions:
            part = train if fraction >= 1 else split_dataset(train, (fraction, 1 - fraction, 0.0), seed=seed)[0]
            for variant in variants:
                _, fitted = fit_variant(variant, (part, validation, test), seed, network, reference, threads)
                evaluation = fitted.evaluation
                primitives = [n for n in evaluation.columns if "->" not in n]
                point = Point(variant, seed, fraction, len(part.conv), evaluation.median(primitives),
                              evaluation.median(primitives, ratio=True))
                points.append(point)
                print(f"# seed {seed} {variant} on {point.n_train}: time {pct(point.time_mdrae)}, ratio "
                      f"{pct(point.ratio_mdrae)} ({time.perf_counter() - begin:.0f} s)", flush=True)
    return points


def medians(points: Sequence[Point], variant: str, attribute: str) -> list[tuple[float, float]]:
    """(median n_train, median MdRAE over seeds) per fraction, for one variant's ``time_mdrae`` or
    ``ratio_mdrae``."""
    out = []
    for fraction in sorted({p.fraction for p in points}):
        chosen = [p for p in points if p.variant == variant and p.fraction == fraction
                  and getattr(p, attribute) is not None]
        if chosen:
            out.append((statistics.median(p.n_train for p in chosen),
                        statistics.median(getattr(p, attribute) for p in chosen)))
    return out


def print_laws(points: Sequence[Point], variants: Sequence[str], goal: float, full_n: int) -> dict:
    """Prints the table of the medians and each variant's power laws; returns them for the result file."""
    fractions = sorted({p.fraction for p in points})
    laws, rows = {}, []
    for variant in variants:
        time_m, ratio_m = medians(points, variant, "time_mdrae"), medians(points, variant, "ratio_mdrae")
        ratios = dict(ratio_m)
        cells = [f"{n:.0f}: {pct(t)} / {pct(ratios.get(n))}" for n, t in time_m]
        law = PowerLaw.fit([n for n, _ in ratio_m], [m for _, m in ratio_m])
        needed = law.needed(goal) if law else None
        laws[variant] = None if law is None else {"scale": law.scale, "exponent": law.exponent,
                                                  "at_full": law.at(full_n), "needed": needed}
        law_cells = ["-", "-", "-"] if law is None else [
            f"{law.scale:.3g} n^-{law.exponent:.2f}", pct(law.at(full_n)),
            "never" if needed is None else f"{needed:,.0f}"]
        rows.append([variant, *cells, *law_cells])
    print_table(["model", *(f"{f:g} of training" for f in fractions), "power law (ratios)", f"at {full_n}",
                 f"ratios at {pct(goal)} needs"], rows)
    return laws


def plot(points: Sequence[Point], variants: Sequence[str], goal: float, full: int, path: Path) -> Path:
    """Ratio and time MdRAE against training configurations, log-log, one line per variant and target, each
    ratio power law extrapolated (dotted) to where it reaches the goal (at most 10^5 configurations), and a mark
    at ``full`` training configurations."""
    from matplotlib.ticker import NullFormatter, PercentFormatter

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for variant in variants:
        for attribute, style in (("ratio_mdrae", "-o"), ("time_mdrae", "--s")):
            line = medians(points, variant, attribute)
            if not line:
                continue
            drawn = ax.plot(*zip(*line), style, label=f"{variant}, {attribute.split('_')[0]}s")
            law = PowerLaw.fit(*zip(*line)) if attribute == "ratio_mdrae" else None
            if law is not None and law.exponent > 0:
                n = np.geomspace(line[-1][0], min(law.needed(goal) or 1e5, 1e5), 50)
                ax.plot(n, law.at(n), ":", color=drawn[0].get_color(), linewidth=1)
    ax.axhline(goal, color="grey", linewidth=1, linestyle=":", label=f"goal {pct(goal)}")
    ax.axvline(full, color="grey", linewidth=1, linestyle="--", label=f"{full:,} (--full)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks([0.02, 0.03, 0.05, 0.1, 0.2])
    ax.set_xlabel("training configurations (dotted: the ratios' power law, extrapolated)")
    ax.set_ylabel("test MdRAE, all primitives")
    ax.set_title("Primitive cost models: error against training data")
    ax.legend(fontsize=8)
    return write_png(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, required=True, help="the store holding the profiled dataset")
    parser.add_argument("--system", default=None, help="primitive system id or key prefix (default: the largest)")
    parser.add_argument("--variants", nargs="+", default=["ens/relative", "nn2/absolute"], metavar="KIND/TARGETS")
    parser.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--goal", type=float, default=0.03, help="the MdRAE the extrapolation aims at")
    parser.add_argument("--full", type=int, default=3317 * 8 // 10,
                        help="training configurations to extrapolate to (default: 80%% of the paper's grid within "
                             "2 GMACs, the most a split of it trains on)")
    parser.add_argument("--network", choices=tuple(NETWORKS), default="paper")
    parser.add_argument("--threads", type=int, default=1, help="torch threads while training (default 1)")
    parser.add_argument("--json", type=Path, default=None, help="also write the result file here "
                        "(bench/results/primitives/primitive_learning_curve_grid.json)")
    parser.add_argument("--plot", type=Path, default=None, help="also draw the curves into this PNG")
    args = parser.parse_args()
    if not args.fractions or not all(0 < f <= 1 for f in args.fractions):
        parser.error(f"--fractions must lie in (0, 1], got {args.fractions}")
    system, dataset = load(args.db, args.system)
    reference = reference_of(dataset)
    host = host_info()
    print(f"{host.cpu_model}, {host.logical_cores} logical cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f"; {args.db} system {system.id}: {len(dataset.conv)} configurations; ratios to {reference}; seeds "
          f"{args.seeds}\n")
    points = curve(dataset, args.variants, args.fractions, args.seeds, NETWORKS[args.network], reference,
                   args.threads)
    print("\nTest MdRAE of all primitives, time / ratio (median over seeds), by training configurations:\n")
    laws = print_laws(points, args.variants, args.goal, args.full)
    if args.plot:
        print(f"\nfigure: {plot(points, args.variants, args.goal, args.full, args.plot)}")
    if args.json:
        write_result(args.json, method="primitives", concern="the cost model's learning curve", values={
            "db": str(args.db), "configurations": len(dataset.conv), "reference": reference, "goal": args.goal,
            "full": args.full, "points": [vars(p) for p in points], "power_laws": laws})


if __name__ == "__main__":
    main()
