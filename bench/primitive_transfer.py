"""Transfer a primitive cost model to another platform (Mulder et al. 4.4, 5.3, Fig. 8-10, Table 5).

Run: PYTHONPATH=src .venv/bin/python bench/primitive_transfer.py --target-db bench/results/primitives-avx2.db
     [--source-db bench/results/primitives.db] [--source ID] [--target ID] [--retuned] [--repeats 5]
     [--fractions 0.01 0.05 0.1 0.25 0.5 1.0] [--factor-fraction 0.01] [--no-table5] [--seed 0]
     [--select resnet18 mobilenet_v2 ...] [--target-threads 1] [--json bench/results/primitive_transfer.json]

The target platform is a second profiled dataset, e.g. this CPU capped to AVX2:

    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 PYTHONPATH=src .venv/bin/python bench/primitive_dataset.py \\
        --db bench/results/primitives-avx2.db --max-configs 120

Source: the primitive system of --source-db with the most configurations (or --source); an NN2 (Table 3's
settings, or with --retuned the width retuned by bench/primitive_models.py --tune: hidden 32-64-64-32, learning
rate 3e-3) is fitted on its dataset split 80/10/10. Target: the largest primitive system of --target-db (or
--target), split (seeded) into a held-out test part (30 % of its configurations and activations) and a pool the
transfer methods draw their samples from. Every figure is the MdRAE on the target's test part: per primitive
and transformation, then the median over the primitives, over each family's primitives and over the layout
transformations (the "layout" family). Stdout gets Markdown tables:

- (i)-(ii) Fig. 8: the source model used directly; factor-corrected from --factor-fraction of the pool (at least
  one configuration; the paper's 1 %), repeated over --repeats random samples, with the factors; the native
  model (from scratch on the whole pool) when 1.0 is among the fractions;
- (iii) Fig. 9-10: fine-tuning the source model (learning rate lowered 10x), a model from scratch, and
  fine-tuning the factor-corrected model, on random --fractions of the pool, each over --repeats random subsets
  (and seeds): median [min, max] over the repeats;
- (iv) Table 5: the source model fine-tuned on one primitive family of the whole pool at a time, scored on every
  family; as MdRAE and with each row divided by its diagonal (the paper's normalisation);
- (v) with --select NETWORK ...: selection quality. Each network's cost graph on the target is built from the
  target's profiled medians (what the target dataset lacks is timed now, on this process's platform: run the
  script under the target's ISA caps, and give --target-threads; the other layers' layout times are profiled into
  --target-db) and solved; every model above also solves the network from its predictions, and the table gives
  how much more that selection costs on the target's graph than the target's optimum.

A source and target that are the same system run (the script's smoke check) but measure nothing of interest.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnperf.api import load_model
from nnperf.campaign import load_primitive_dataset, primitive_systems, profile_layer_layouts
from nnperf.ir import Network
from nnperf.measure import host_info
from nnperf.optimize.select import (
    CostGraph,
    CostGraphError,
    SelectionError,
    network_cost_graph,
    predicted_costs,
    profiled_costs,
    selection_from_labels,
    solve,
)
from nnperf.prediction.primitives import (
    DatasetTooSmallError,
    NoSharedColumnsError,
    PrimitiveCostModel,
    correction_factors,
    factor_corrected,
    family_subset,
    fine_tuned,
    from_scratch,
    mdrae,
    split_dataset,
    subsample,
)
from nnperf.primitives import PrimitiveDataset, get_primitive
from nnperf.store import Store, SystemRecord

FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
METHODS = ("fine-tune", "from-scratch", "factor+fine-tune")
RETUNED: dict[str, Any] = {"hidden": (32, 64, 64, 32), "learning_rate": 3e-3}
"""bench/primitive_models.py --tune's choice on this CPU's dataset (BENCHMARKS.md)."""

Scores = dict[str, Any]
"""One model's MdRAE on the target test part: ``columns`` (name -> MdRAE), ``primitives`` (median over the
primitives), ``families`` (family -> median over its primitives; ``layout`` for the transformations)."""


def family(name: str) -> str:
    return "layout" if "->" in name else get_primitive(name).family.value


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load(db: Path, chosen: str | None, avoid: SystemRecord | None = None) -> tuple[SystemRecord, PrimitiveDataset]:
    """The primitive system ``chosen`` (id or key prefix) of ``db``, else its one with the most configurations
    (another than ``avoid`` when there is one), and its dataset."""
    with Store(db, create=False) as store:
        if chosen is not None:
            record = store.system(chosen)
            return record, load_primitive_dataset(store, record.id)
        found = [(s, load_primitive_dataset(store, s.id)) for s in primitive_systems(store)]
        if not found:
            raise SystemExit(f"{db} holds no profiled primitives")
        others = [(s, d) for s, d in found if avoid is None or s.key != avoid.key] or found
        return max(others, key=lambda item: len(item[1].conv))


def score(model: PrimitiveCostModel, test: PrimitiveDataset) -> Scores:
    columns = mdrae(model, test)
    groups: dict[str, list[float]] = {}
    for name, value in columns.items():
        groups.setdefault(family(name), []).append(value)
    primitives = [v for name, v in columns.items() if "->" not in name]
    return {"columns": columns, "primitives": statistics.median(primitives) if primitives else None,
            "families": {f: statistics.median(v) for f, v in sorted(groups.items())}}


@dataclass(frozen=True)
class TargetGraph:
    """A network on the target platform: its profiled cost graph, the optimum of that graph, and the other layers'
    layout times (on the target) that a predicted graph is given too."""

    network: Network
    graph: CostGraph
    optimum_s: float
    layers_s: dict[str, dict[str, float]]


def target_graph(name: str, data: PrimitiveDataset, db: Path, threads: int) -> TargetGraph:
    """``name``'s cost graph from the target's profiled medians; what the dataset lacks is timed now, on this
    process's platform (run the script under the target's ISA caps) with ``threads`` threads; the other layers'
    layout times are profiled into the target store."""
    network = load_model(name)
    with Store(db) as store:
        layers_s = profile_layer_layouts(store, [network], threads).times_s
    costs = profiled_costs(data, network, measure_missing=True, threads=threads).with_layers(layers_s)
    graph = network_cost_graph(network, costs)
    return TargetGraph(network, graph, solve(graph, "pbqp").cost_s, layers_s)


def selection_increase(model: PrimitiveCostModel, target: TargetGraph) -> float | None:
    """How much more the selection solved on ``model``'s predicted graph costs on the target's profiled graph
    than the target's optimum (0.1 = 10%); None when the model cannot cost the network or chose an option the
    target graph lacks."""
    try:
        graph = network_cost_graph(target.network, predicted_costs(model, target.network).with_layers(target.layers_s))
        chosen = solve(graph, "pbqp")
        return selection_from_labels(target.graph, chosen.chosen).cost_s / target.optimum_s - 1
    except (CostGraphError, SelectionError):
        return None


def timed(make: Callable[[], PrimitiveCostModel], test: PrimitiveDataset,
          targets: dict[str, TargetGraph] | None = None) -> Scores:
    start = time.perf_counter()
    model = make()
    train_s = time.perf_counter() - start
    select = {name: selection_increase(model, t) for name, t in (targets or {}).items()}
    return {**score(model, test), "train_s": train_s, "select": select}


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def spread(values: list[float]) -> str:
    """median [min, max] in percent; the median alone for one value."""
    if not values:
        return "-"
    if len(values) == 1:
        return pct(values[0])
    return f"{pct(statistics.median(values))} [{pct(min(values))}, {pct(max(values))}]"


def increases(scored: list[Scores], network: str) -> str:
    values = [s["select"][network] for s in scored if s["select"].get(network) is not None]
    return spread(values) if values else "-"


def print_selection(targets: dict[str, TargetGraph], direct: Scores, factor_runs: list[Scores],
                    runs: dict[str, dict[float, list[Scores]]], sizes: dict[float, int], fractions: list[float],
                    repeats: int) -> None:
    print(f"\n## (v) selection quality on the target: how much more each model's PBQP selection costs on the "
          f"target's profiled graph than the target's optimum; median [min, max] over {repeats} random subsets\n")
    print("| network | target optimum, ms | source direct | factor-corrected | "
          + " | ".join(f"{f:g} ({sizes[f]}): {m}" for f in fractions for m in METHODS) + " |")
    print("|---|---|---|---|" + "---|" * (len(fractions) * len(METHODS)))
    for name, target in targets.items():
        cells = [increases([direct], name), increases(factor_runs, name)]
        cells += [increases(runs[m][f], name) for f in fractions for m in METHODS]
        print(f"| {name} | {target.optimum_s * 1e3:.2f} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source-db", type=Path, default=Path("bench/results/primitives.db"))
    parser.add_argument("--source", default=None, help="source system id or key prefix (default: the largest)")
    parser.add_argument("--target-db", type=Path, required=True)
    parser.add_argument("--target", default=None, help="target system id or key prefix (default: the largest, "
                                                       "another than the source when the databases are the same)")
    parser.add_argument("--retuned", action="store_true", help="NN2 hidden 32-64-64-32, learning rate 3e-3")
    parser.add_argument("--test-fraction", type=float, default=0.3)
    parser.add_argument("--factor-fraction", type=float, default=0.01)
    parser.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-table5", action="store_true", help="leave out the per-family fine-tuning")
    parser.add_argument("--seed", type=int, default=0, help="seed of the source split and model, the target split")
    parser.add_argument("--select", nargs="*", default=[], metavar="NETWORK",
                        help="also score each model's selection on these networks against the target's optimum")
    parser.add_argument("--target-threads", type=int, default=1,
                        help="threads of the target platform, for timing what its dataset lacks (default 1)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    if args.repeats < 1 or not 0 < args.test_fraction < 1 or not all(0 < f <= 1 for f in args.fractions):
        parser.error("--repeats must be at least 1, --test-fraction in (0, 1) and every fraction in (0, 1]")
    params: dict[str, Any] = dict(RETUNED) if args.retuned else {}
    begin = time.perf_counter()

    source, source_data = load(args.source_db, args.source)
    same_db = args.target_db.resolve() == args.source_db.resolve()
    target, target_data = load(args.target_db, args.target, source if same_db else None)
    log(f"fitting NN2 {params or '(Table 3)'} on system {source.id} ({len(source_data.conv)} configurations)")
    train, validation, source_test = split_dataset(source_data, seed=args.seed)
    start = time.perf_counter()
    model = PrimitiveCostModel("nn2", seed=args.seed, **params).fit(train, validation)
    source_train_s = time.perf_counter() - start
    source_scores = score(model, source_test)
    pool, _, test = split_dataset(target_data, (1 - args.test_fraction, 0.0, args.test_fraction), seed=args.seed)

    print(f"{host_info().cpu_model}\n")
    print(f"source: {args.source_db} system {source.id} `{source.key}`: {len(source_data.conv)} configurations; "
          f"NN2 {params or '(Table 3)'} fitted on {len(train.conv)} in {source_train_s:.1f} s, test MdRAE (median "
          f"over primitives) {pct(source_scores['primitives'])}")
    print(f"target: {args.target_db} system {target.id} `{target.key}`: {len(target_data.conv)} configurations, "
          f"{len(target_data.layout)} activations; pool {len(pool.conv)} configurations / {len(pool.layout)} "
          f"activations, test part {len(test.conv)} / {len(test.layout)}")
    if target.key == source.key:
        print("\n**source and target are the same system: a smoke check, not a transfer**")

    targets = {}
    for name in args.select:
        log(f"the target's cost graph of {name} (what the target dataset lacks is timed now)")
        targets[name] = target_graph(name, target_data, args.target_db, args.target_threads)

    # (i) and (ii): the source model directly and factor-corrected from a small sample
    direct = timed(lambda: model, test, targets)
    factor_runs: list[Scores] = []
    factors: list[dict[str, float]] = []
    factor_configs = 0
    for repeat in range(args.repeats):
        sample = subsample(pool, args.factor_fraction, seed=repeat)
        factor_configs = len(sample.conv)
        factors.append(correction_factors(model, sample))
        factor_runs.append(timed(lambda sample=sample: factor_corrected(model, sample), test, targets))
    log(f"direct and factor-corrected scored ({time.perf_counter() - begin:.0f} s)")

    # (iii) fine-tuning, from scratch and factor + fine-tuning on fractions of the pool
    runs: dict[str, dict[float, list[Scores]]] = {m: {f: [] for f in args.fractions} for m in METHODS}
    sizes: dict[float, int] = {}
    for fraction in args.fractions:
        for repeat in range(args.repeats):
            sample = subsample(pool, fraction, seed=repeat)
            sizes[fraction] = len(sample.conv)
            makers: dict[str, Callable[[], PrimitiveCostModel]] = {
                "fine-tune": lambda s=sample, r=repeat: fine_tuned(model, s, seed=r),
                "from-scratch": lambda s=sample, r=repeat: from_scratch("nn2", s, seed=r, **params),
                "factor+fine-tune": lambda s=sample, r=repeat: fine_tuned(factor_corrected(model, s), s, seed=r),
            }
            for method, make in makers.items():
                runs[method][fraction].append(timed(make, test, targets))
            log(f"fraction {fraction:g} repeat {repeat + 1}/{args.repeats} done "
                f"({time.perf_counter() - begin:.0f} s)")

    # (iv) Table 5: fine-tuning on one family of the whole pool
    table5: dict[str, Scores] = {}
    if not args.no_table5:
        for trained_on in sorted({family(p) for p in pool.primitives}):
            try:
                table5[trained_on] = timed(lambda f=trained_on: fine_tuned(model, family_subset(pool, f),
                                                                           seed=args.seed), test)
            except (NoSharedColumnsError, DatasetTooSmallError) as exc:
                log(f"Table 5: no fine-tuning on {trained_on}: {exc}")
            log(f"Table 5: {trained_on} done ({time.perf_counter() - begin:.0f} s)")

    families = sorted({family(n) for n in direct["columns"]}, key=lambda f: (f == "layout", f))
    native = runs["from-scratch"].get(1.0)

    print(f"\n## (i)-(ii) Fig. 8: MdRAE on the target test part\n\n"
          f"factor correction from {args.factor_fraction:g} of the pool ({factor_configs} configuration(s)), "
          f"median [min, max] over {args.repeats} random samples\n")
    print("| model | primitives | " + " | ".join(families) + " |\n|---|---|" + "---|" * len(families))
    rows: list[tuple[str, list[Scores]]] = [("source model, direct", [direct]), ("factor-corrected", factor_runs)]
    if native:
        rows.append((f"native: from scratch on the whole pool ({sizes[1.0]} configurations)", native))
    for label, scored in rows:
        cells = [spread([s["primitives"] for s in scored if s["primitives"] is not None])]
        cells += [spread([s["families"][f] for s in scored if f in s["families"]]) for f in families]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\n| primitive or transformation | family | factor (median over samples) | direct MdRAE | "
          "factor-corrected MdRAE |\n|---|---|---|---|---|")
    for name in (*model.primitives_, *model.transforms_):
        corrected = [s["columns"][name] for s in factor_runs if name in s["columns"]]
        print(f"| {name} | {family(name)} | {statistics.median(f[name] for f in factors):.3g} | "
              f"{pct(direct['columns'].get(name))} | {spread(corrected)} |")

    print(f"\n## (iii) Fig. 9-10: median MdRAE over the primitives on the target test part, by the fraction of "
          f"the pool trained on; median [min, max] over {args.repeats} random subsets\n")
    print("| fraction | configurations | " + " | ".join(METHODS) + " |\n|---|---|" + "---|" * len(METHODS))
    for fraction in args.fractions:
        cells = [spread([s["primitives"] for s in runs[m][fraction] if s["primitives"] is not None])
                 for m in METHODS]
        print(f"| {fraction:g} | {sizes[fraction]} | " + " | ".join(cells) + " |")
    print("\nPer family (median over the repeats):\n")
    print("| fraction | method | train s | " + " | ".join(families) + " |\n|---|---|---|" + "---|" * len(families))
    for fraction in args.fractions:
        for method in METHODS:
            scored = runs[method][fraction]
            cells = [pct(statistics.median(v)) if (v := [s["families"][f] for s in scored if f in s["families"]])
                     else "-" for f in families]
            print(f"| {fraction:g} | {method} | {statistics.median(s['train_s'] for s in scored):.1f} | "
                  + " | ".join(cells) + " |")

    if table5:
        print("\n## (iv) Table 5: fine-tuned on one family of the whole pool (rows), MdRAE per family (columns)\n")
        print("| trained on | " + " | ".join(families) + " |\n|---|" + "---|" * len(families))
        print("| (source model, direct) | " + " | ".join(pct(direct["families"].get(f)) for f in families) + " |")
        for trained_on, scored in table5.items():
            print(f"| {trained_on} | " + " | ".join(pct(scored["families"].get(f)) for f in families) + " |")
        print("\nEach row divided by its diagonal (the paper's normalisation):\n")
        print("| trained on | " + " | ".join(families) + " |\n|---|" + "---|" * len(families))
        for trained_on, scored in table5.items():
            diagonal = scored["families"].get(trained_on)
            cells = ["-" if not diagonal or f not in scored["families"] else f"{scored['families'][f] / diagonal:.2g}"
                     for f in families]
            print(f"| {trained_on} | " + " | ".join(cells) + " |")

    if targets:
        print_selection(targets, direct, factor_runs, runs, sizes, args.fractions, args.repeats)

    elapsed = time.perf_counter() - begin
    print(f"\nran in {elapsed / 60:.1f} min")
    if args.json:
        args.json.write_text(json.dumps({
            "host": host_info().cpu_model, "seed": args.seed, "repeats": args.repeats, "retuned": args.retuned,
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()},
            "source": {"db": str(args.source_db), "system_id": source.id, "key": source.key,
                       "configurations": len(source_data.conv), "train_s": source_train_s, "test": source_scores},
            "target": {"db": str(args.target_db), "system_id": target.id, "key": target.key,
                       "configurations": len(target_data.conv), "pool_configurations": len(pool.conv),
                       "test_configurations": len(test.conv)},
            "direct": direct,
            "factor": {"fraction": args.factor_fraction, "configurations": factor_configs, "factors": factors,
                       "runs": factor_runs},
            "fractions": {m: {f"{f:g}": {"configurations": sizes[f], "runs": runs[m][f]} for f in args.fractions}
                          for m in METHODS},
            "table5": table5, "select_optimum_s": {n: t.optimum_s for n, t in targets.items()},
            "elapsed_s": elapsed}, indent=1))


if __name__ == "__main__":
    main()
