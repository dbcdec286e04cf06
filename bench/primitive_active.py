"""Configurations chosen where the cost model is unsure against configurations drawn at random: the two learning
curves of the primitive cost model on the same axes (error against training configurations and against profiling
hours), for the primitives and the layout transformations.

Run: .venv/bin/python bench/primitive_active.py --dataset bench/results/primitives/datasets/grid-amd-epyc-1thread.json.gz
     [--seeds 0] [--sizes 0.125 0.25 0.5 0.75 1] [--network small|paper] [--cost-from bench/results/primitives/primitive_cost.json]
     [--json PATH] [--plot PATH]

Pool-based, on a profiled dataset (a dataset file, ``nnperf primitives export``): each seed splits it 80/10/10 as
``bench/primitive_models.py`` does; the training part is the pool whose labels are revealed only when a
configuration is "profiled". Both curves start from the same random rows (the first of --sizes). At every size, the random
curve draws the next configurations at random; the chosen curve fits the ensemble on relative targets
(``ens/relative``) on what it has and takes the next ones by committee spread
(``nnperf.prediction.primitives.config_spread``, ``most_uncertain`` with crowding), activations likewise by
``shape_spread``. Every model is scored on the same test part; the validation part only stops the networks.
The last size, the whole pool, is the same for both and fitted once.

Profiling hours: a configuration's profiling time is estimated as ``a + b * (its timed calls' summed seconds)``,
``a`` and ``b`` fitted by least squares on the configurations whose profiling was timed by
``bench/primitive_cost.py`` (its result file; the new code's wall seconds). That is an estimate of what the chosen
configurations would cost to profile, not a measurement; it matters because a model may prefer large, slow
configurations.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from _shared import pct, print_table, read_values, write_result
from primitive_models import NETWORKS, fit_variant, reference_of

from nnperf.api import import_primitive_dataset
from nnperf.campaign import load_primitive_dataset, primitive_systems
from nnperf.measure import host_info
from nnperf.prediction.primitives import (
    config_spread,
    conv_features,
    most_uncertain,
    shape_spread,
    split_dataset,
    transform_features,
)
from nnperf.primitives import PrimitiveDataset, config_label
from nnperf.report import pyplot, write_png
from nnperf.store import Store

SIZES = (0.125, 0.25, 0.5, 0.75, 1.0)
"""The pool fractions each curve is scored at, by default."""
VARIANT = "ens/relative"
"""The model fitted at every size (the committee whose spread chooses)."""


@dataclass(frozen=True)
class Point:
    """One model of one curve: its training configurations and activations, their estimated profiling hours, and
    its test MdRAE of the primitives' times and ratios and of the transformations' ratios."""

    curve: str
    seed: int
    n_configs: int
    n_activations: int
    hours: float
    time_mdrae: float | None
    ratio_mdrae: float | None
    transform_ratio_mdrae: float | None


def load_file(path: Path) -> PrimitiveDataset:
    """The dataset of a dataset file, through a store of its own (the importer's checks included)."""
    with tempfile.TemporaryDirectory() as work:
        db = Path(work) / "dataset.db"
        import_primitive_dataset(path, db)
        with Store(db, create=False) as store:
            system = next(iter(primitive_systems(store)))
            return load_primitive_dataset(store, system.id, False)


def cost_model(result: Path, dataset: PrimitiveDataset) -> tuple[float, float, int]:
    """(a, b, n): profiling seconds ~ a + b * summed timed seconds, fitted on the configurations of
    ``result`` (bench/primitive_cost.py) that ``dataset`` holds."""
    per_config = read_values(result)["per_config"]
    summed = {config_label(s.config): sum(s.times_s.values()) for s in dataset.conv}
    pairs = [(summed[label], row["new"]["wall_s"]) for label, row in per_config.items() if label in summed]
    if len(pairs) < 3:
        raise SystemExit(f"{result} times only {len(pairs)} configurations of this dataset; the cost estimate "
                         "needs 3")
    x, y = np.array(pairs).T
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b), len(pairs)


def chosen_next(model: Any, pool: PrimitiveDataset, have: tuple[list[int], list[int]],
                want: tuple[int, int]) -> tuple[list[int], list[int]]:
    """The indices ``have`` grown to ``want`` rows by committee spread (configurations, then activations)."""
    out = []
    for rows, n, spread, features, layout in ((have[0], want[0], config_spread, conv_features, False),
                                              (have[1], want[1], shape_spread, transform_features, True)):
        taken = set(rows)
        left = [i for i in range(len(pool.layout if layout else pool.conv)) if i not in taken]
        keys = [(pool.layout[i].batch, pool.layout[i].c, pool.layout[i].im) if layout else pool.conv[i].config
                for i in left]
        fitted = model.transform_model_ if layout else model.conv_model_
        if n <= len(rows) or fitted is None or not left:
            out.append(rows)
            continue
        scaled = fitted.features.transform(features(keys, fitted.feature_set))
        picked = most_uncertain(spread(model, keys), n - len(rows), features=scaled)
        out.append(rows + [left[i] for i in picked])
    return out[0], out[1]


def fitted_point(curve: str, seed: int, pool: PrimitiveDataset, rows: tuple[list[int], list[int]],
                 parts: tuple[PrimitiveDataset, PrimitiveDataset], network: dict[str, Any], hours: float,
                 log_start: float) -> tuple[Point, Any]:
    """The model of one curve fitted on ``rows`` of the pool, and its point."""
    part = pool.of_rows([pool.conv[i] for i in rows[0]], [pool.layout[i] for i in rows[1]])
    model, fitted = fit_variant(VARIANT, (part, *parts), seed, network, reference_of(pool), 1)
    evaluation = fitted.evaluation
    primitives = [n for n in evaluation.columns if "->" not in n]
    transforms = [n for n in evaluation.columns if "->" in n]
    point = Point(curve, seed, len(part.conv), len(part.layout), hours, evaluation.median(primitives),
                  evaluation.median(primitives, ratio=True),
                  evaluation.median(transforms, ratio=True) if transforms else None)
    print(f"# seed {seed} {curve} {point.n_configs} configurations, {point.n_activations} activations, "
          f"{point.hours:.2f} h: ratios {pct(point.ratio_mdrae)}, times {pct(point.time_mdrae)}, transformations "
          f"{pct(point.transform_ratio_mdrae)} ({time.perf_counter() - log_start:.0f} s)", flush=True)
    return point, model


def run_seed(dataset: PrimitiveDataset, seed: int, sizes: list[float], network: dict[str, Any],
             cost: tuple[float, float], log_start: float) -> list[Point]:
    """Both curves of one seed (see the module docstring)."""
    pool, validation, test = split_dataset(dataset, seed=seed)
    rng = np.random.default_rng(seed)
    order_conv, order_layout = rng.permutation(len(pool.conv)).tolist(), rng.permutation(len(pool.layout)).tolist()
    target = [(round(f * len(pool.conv)), round(f * len(pool.layout))) for f in sizes]
    config_hours = [(cost[0] + cost[1] * sum(s.times_s.values())) / 3600 for s in pool.conv]
    points: list[Point] = []
    chosen = (order_conv[:target[0][0]], order_layout[:target[0][1]])
    for k, (n_conv, n_layout) in enumerate(target):
        drawn = (order_conv[:n_conv], order_layout[:n_layout])
        point, model = fitted_point("random", seed, pool, drawn, (validation, test), network,
                                    sum(config_hours[i] for i in drawn[0]), log_start)
        points.append(point)
        if sorted(chosen[0]) == sorted(drawn[0]) and sorted(chosen[1]) == sorted(drawn[1]):
            points.append(replace(point, curve="chosen"))  # the same rows: the start, and the whole pool
        else:
            point, model = fitted_point("chosen", seed, pool, chosen, (validation, test), network,
                                        sum(config_hours[i] for i in chosen[0]), log_start)
            points.append(point)
        if k + 1 < len(target):
            chosen = chosen_next(model, pool, chosen, target[k + 1])
    return points


def medians(points: list[Point], curve: str) -> list[dict[str, float | None]]:
    """Per size of one curve, the medians over seeds of every field of its points."""
    out = []
    for n in sorted({p.n_configs for p in points if p.curve == curve}):
        at = [p for p in points if p.curve == curve and p.n_configs == n]
        row: dict[str, float | None] = {}
        for field in ("n_configs", "n_activations", "hours", "time_mdrae", "ratio_mdrae", "transform_ratio_mdrae"):
            values = [getattr(p, field) for p in at if getattr(p, field) is not None]
            row[field] = statistics.median(values) if values else None
        out.append(row)
    return out


def print_curves(points: list[Point]) -> dict[str, list[dict[str, float | None]]]:
    curves = {curve: medians(points, curve) for curve in ("random", "chosen")}
    rows = []
    for r, c in zip(curves["random"], curves["chosen"], strict=True):
        rows.append([f"{r['n_configs']:.0f} / {r['n_activations']:.0f}", f"{r['hours']:.2f} / {c['hours']:.2f}",
                     f"{pct(r['ratio_mdrae'])} / {pct(c['ratio_mdrae'])}",
                     f"{pct(r['time_mdrae'])} / {pct(c['time_mdrae'])}",
                     f"{pct(r['transform_ratio_mdrae'])} / {pct(c['transform_ratio_mdrae'])}"])
    print_table(["configurations / activations", "profiling hours (est.): random / chosen",
                 "primitive ratios: random / chosen", "primitive times: random / chosen",
                 "transformation ratios: random / chosen"], rows)
    return curves


def plot(curves: dict[str, list[dict[str, float | None]]], goals: tuple[float, float], path: Path) -> Path:
    """Test MdRAE against training configurations (left) and estimated profiling hours (right), log-log: the
    primitives' ratios (solid) and the transformations' ratios (dashed), random and chosen."""
    from matplotlib.ticker import FuncFormatter, NullFormatter, PercentFormatter

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 4.0), sharey=True)
    for ax, x_field, x_label in ((axes[0], "n_configs", "training configurations"),
                                 (axes[1], "hours", "profiling hours (estimated)")):
        for curve, colour in (("random", "tab:blue"), ("chosen", "tab:orange")):
            for field, style, what in (("ratio_mdrae", "-o", "primitives"), ("transform_ratio_mdrae", "--s",
                                                                             "transformations")):
                line = [(row[x_field], row[field]) for row in curves[curve] if row[field] is not None]
                if line:
                    ax.plot(*zip(*line), style, color=colour, label=f"{curve}, {what}")
        for goal in goals:
            ax.axhline(goal, color="grey", linewidth=1, linestyle=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 10 else f"{v:.1f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks([row[x_field] for row in curves["random"]])
        ax.set_xlabel(x_label)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_yticks([0.01, 0.02, 0.03, 0.05, 0.1, 0.2])
    axes[0].set_ylabel("test MdRAE of the ratios (dotted: the goals)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Primitive cost model: configurations chosen by committee spread against random")
    return write_png(fig, path)


def headline(curves: dict[str, list[dict[str, float | None]]]) -> dict[str, Any]:
    """The sizes between the first and the last (where both curves share their rows), random beside chosen."""
    rows = []
    for r, c in list(zip(curves["random"], curves["chosen"], strict=True))[1:-1]:
        rows.append({"configurations": r["n_configs"], "hours": [r["hours"], c["hours"]],
                     "ratio_mdrae": [r["ratio_mdrae"], c["ratio_mdrae"]],
                     "transform_ratio_mdrae": [r["transform_ratio_mdrae"], c["transform_ratio_mdrae"]]})
    return {"between": rows, "full": curves["random"][-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, required=True, help="a primitive dataset file (.json or .json.gz)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=list(SIZES), help="pool fractions, ascending")
    parser.add_argument("--network", choices=tuple(NETWORKS), default="paper")
    parser.add_argument("--cost-from", type=Path, default=Path("bench/results/primitives/primitive_cost.json"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--replot", type=Path, default=None, metavar="JSON",
                        help="draw --plot from a finished run's result file instead of fitting")
    args = parser.parse_args()
    if args.replot:
        if not args.plot:
            parser.error("--replot needs --plot")
        print(f"figure: {plot(read_values(args.replot)['curves'], (0.03, 0.02), args.plot)}")
        return
    if not args.sizes or sorted(args.sizes) != args.sizes or not all(0 < f <= 1 for f in args.sizes):
        parser.error(f"--sizes must be ascending fractions in (0, 1], got {args.sizes}")
    dataset = load_file(args.dataset)
    a, b, n_timed = cost_model(args.cost_from, dataset)
    host = host_info()
    print(f"{host.cpu_model}, {host.logical_cores} logical cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f"; {args.dataset}: {len(dataset.conv)} configurations, {len(dataset.layout)} activations; {VARIANT}; "
          f"seeds {args.seeds}; profiling seconds ~ {a:.2f} + {b:.1f} x summed call seconds ({n_timed} timed)\n")
    start = time.perf_counter()
    points = [p for seed in args.seeds for p in run_seed(dataset, seed, args.sizes, NETWORKS[args.network], (a, b),
                                                         start)]
    print("\nTest MdRAE (median over seeds) by training set, random / chosen:\n")
    curves = print_curves(points)
    if args.plot:
        print(f"\nfigure: {plot(curves, (0.03, 0.02), args.plot)}")
    if args.json:
        write_result(args.json, method="primitives", concern="configurations chosen where the model is unsure",
                     values={"dataset": str(args.dataset), "configurations": len(dataset.conv),
                             "activations": len(dataset.layout), "variant": VARIANT, "seeds": args.seeds,
                             "sizes": args.sizes, "network": args.network,
                             "cost_estimate": {"a_s": a, "b": b, "timed": n_timed},
                             "points": [vars(p) for p in points], "curves": curves,
                             "elapsed_s": time.perf_counter() - start}, headline=headline(curves))


if __name__ == "__main__":
    main()
