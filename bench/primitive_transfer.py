"""Transfer a primitive cost model to another platform from a few samples (Mulder et al. 4.4, 5.3, Fig. 8-10).

Run: .venv/bin/python bench/primitive_transfer.py --db SOURCE_STORE --target-db TARGET_STORE
     [--source ID] [--target ID] [--source-model nn2/relative] [--network paper|small] [--repeats 25]
     [--fractions 0.001 0.01 0.025 0.05 0.1 0.25 0.5 1.0] [--methods direct factor residual frozen scratch]
     [--test-fraction 0.3] [--seed 0] [--select NETWORK ...] [--graphs-db PATH] [--target-threads 1] [--table5]
     [--target-as-timed] [--json PATH]

The target platform is a second profiled dataset, e.g. this CPU capped to AVX2 or SSE4.1:

    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 .venv/bin/python -m nnperf primitives profile \\
        --grid paper --budget 30m --db bench/results/primitives/primitives-avx2.db

Source: the primitive system of --db with the most configurations (or --source); a --source-model
(``kind/targets``, default NN2 on targets relative to the dataset's reference primitive; ``--network`` paper
is Table 3's width, small 32-64-64-32) is fitted on its dataset split 80/10/10. Target: the largest primitive
system of --target-db (or --target; another than the source when both stores are one; its times levelled by the
machine-speed reference where its rounds timed it, as timed with --target-as-timed), split (seeded) into a
held-out test part (--test-fraction of its configurations and activations) and a pool. For every fraction of
the pool (the paper's 0.1 to 25%, and more), --repeats random subsets are drawn and each method moves the
source model with that subset:

- direct: the source model as it is (the same for every subset);
- factor: one factor per primitive and transformation, the median measured / predicted (Mulder et al. 4.4);
- residual: ``residual_corrected``, the rows' level and each column's part against it, each a median bias and a
  ridge on the features, no change or the regularisation chosen by leave-one-out error;
- frozen: ``fine_tuned_frozen``, the last layer tuned in closed form toward the subset, hidden layers frozen;
- scratch: a model of the source's kind and targets trained on the subset alone (``from_scratch``; its networks
  are the small ones, at most 150 steps, patience 50: the baseline, not the best a subset can give);
- fine-tune (not by default): the paper's fine-tuning of every layer at a tenth of the learning rate.

Every figure is scored on the target's test part with ``evaluate``: the median over primitives of each
primitive's MdRAE of its time (and of its ratio to the reference), over the transformations, and per family;
each cell is the median over the subsets with the interquartile range [q1, q3]. At fraction 1 every subset is
the whole pool: the deterministic methods are computed once there.

--select NETWORK ...: each network's cost graph on the target is built from the target's profiled medians and
solved. The configurations the target dataset lacks are profiled on this process's platform (run the script under
the target's ISA caps, and give --target-threads) into --graphs-db (default: the target store's name with
``-graphs``), in the dataset's interleaved rounds, once: a later run reads them from there, so a network's graph
is the same in every run, and they never join the target's pool or test part. The other layers' layout times are
profiled into --target-db. Every model
then solves the network from its predictions, and a table gives how much more that selection costs on the
target's graph than the target's optimum. --table5: the source model tuned (frozen) on one primitive family of
the whole pool at a time, scored per family (Table 5).

Cost, measured on one idle core of this VM (AMD EPYC) with the default 25 subsets x 8 fractions x 5 methods and
an NN2 source of Table 3's width, no --select: a synthetic target of 1,400 configurations (a pool of 980; 25
primitives, 12 transformations) took 107 s for the source model and 132 s for the sweep, 4.0 min in all; the
from-scratch networks are most of the sweep (0.15-0.8 s a fit), the other methods 0.04-0.3 s a subset. Each
--select network adds a PBQP solve per model; --methods ... fine-tune adds the paper's fine-tuning (Table 3's
network, early stopping), much the slowest.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from _shared import log, markdown_table, pct, write_result
from primitive_models import NETWORKS, family, load, reference_of, transform_reference_of, variant_model

from nnperf.api import load_model
from nnperf.campaign import profile_layer_layouts, profile_primitives
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
    Evaluation,
    NoSharedColumnsError,
    PrimitiveCostModel,
    evaluate,
    factor_corrected,
    family_subset,
    fine_tuned,
    fine_tuned_frozen,
    from_scratch,
    residual_corrected,
    split_dataset,
    subsample,
)
from nnperf.primitives import PrimitiveDataset, config_key, conv_configs
from nnperf.store import Store

FRACTIONS = (0.001, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
METHODS = ("direct", "factor", "residual", "frozen", "scratch")
ALL_METHODS = (*METHODS, "fine-tune")
DETERMINISTIC = {"direct", "factor", "residual", "frozen"}
"""Methods whose model depends on the subset alone (not on a seed)."""
SCRATCH = {"hidden": (32, 64, 64, 32), "learning_rate": 3e-3, "max_iterations": 150, "patience": 50}
"""The from-scratch networks: small and short (the baseline's cost dominates the bench otherwise)."""


@dataclass(frozen=True)
class Score:
    """One model on the target's test part: medians over primitives (time, ratio), over transformations (time),
    per family (time), the selection increases, and the seconds the method took."""

    primitives: float | None
    ratio: float | None
    transforms: float | None
    families: dict[str, float]
    select: dict[str, float | None]
    method_s: float

    @classmethod
    def of(cls, result: Evaluation, select: dict[str, float | None], method_s: float) -> Score:
        groups: dict[str, list[float]] = {}
        for name in result.primitives:
            groups.setdefault(family(name), []).append(result.columns[name].absolute)
        return cls(result.median(result.primitives), result.median(result.primitives, ratio=True),
                   result.median(result.transforms), {f: statistics.median(v) for f, v in groups.items()},
                   select, method_s)


@dataclass(frozen=True)
class TargetGraph:
    """A network on the target platform: its profiled cost graph, that graph's optimum, and the other layers'
    layout times (on the target) that a predicted graph is given too."""

    network: Network
    graph: CostGraph
    optimum_s: float
    layers_s: dict[str, dict[str, float]]


def with_networks(data: PrimitiveDataset, names: Sequence[str], db: Path, threads: int) -> PrimitiveDataset:
    """``data`` with the convolution configurations of the networks ``names`` that it lacks, profiled into the store
    ``db`` on this process's platform with ``threads`` threads (what ``db`` holds already is not measured again)."""
    held = {sample.config for sample in data.conv}
    missing = sorted({config for name in names for config in conv_configs(load_model(name))} - held, key=config_key)
    if not missing:
        return data
    log(f"the {len(missing)} configurations of {', '.join(names)} the target dataset lacks: from {db}, profiled there "
        f"where it lacks them")
    with Store(db) as store:
        profile_primitives(store, missing, threads)
    _, extra = load(db)
    activations = {(t.batch, t.c, t.im) for t in data.layout}
    return replace(data, primitives=tuple(dict.fromkeys((*data.primitives, *extra.primitives))),
                   transforms=tuple(dict.fromkeys((*data.transforms, *extra.transforms))),
                   conv=data.conv + tuple(s for s in extra.conv if s.config in missing),
                   layout=data.layout + tuple(t for t in extra.layout if (t.batch, t.c, t.im) not in activations))


def target_graph(name: str, data: PrimitiveDataset, db: Path, threads: int) -> TargetGraph:
    """``name``'s cost graph from the target's profiled medians (``data``, :func:`with_networks`); a transformation
    it still lacks is timed now, on this process's platform with ``threads`` threads; the other layers' layout
    times are profiled into the target store ``db``."""
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
        return selection_from_labels(target.graph, solve(graph, "pbqp").chosen).cost_s / target.optimum_s - 1
    except (CostGraphError, SelectionError):
        return None


@dataclass(frozen=True)
class Setup:
    """What every method reads: the source model, its kind and targets, the target's test part and graphs."""

    source: PrimitiveCostModel
    variant: str
    network: dict[str, Any]
    reference: str | None
    layout_reference: str | None
    test: PrimitiveDataset
    graphs: dict[str, TargetGraph]

    def makers(self, sample: PrimitiveDataset, seed: int) -> dict[str, Callable[[], PrimitiveCostModel]]:
        kind = self.variant.split("/")[0]
        scratch = {**variant_model(self.variant, seed, self.network, self.reference).get_params(), **SCRATCH}
        scratch.pop("kind"), scratch.pop("seed")
        return {"direct": lambda: self.source,
                "factor": lambda: factor_corrected(self.source, sample),
                "residual": lambda: residual_corrected(self.source, sample),
                "frozen": lambda: fine_tuned_frozen(self.source, sample),
                "scratch": lambda: from_scratch(kind, sample, seed=seed, **scratch),
                "fine-tune": lambda: fine_tuned(self.source, sample, seed=seed)}

    def score(self, make: Callable[[], PrimitiveCostModel]) -> Score:
        start = time.perf_counter()
        model = make()
        method_s = time.perf_counter() - start
        select = {name: selection_increase(model, graph) for name, graph in self.graphs.items()}
        return Score.of(evaluate(model, self.test, self.reference, self.layout_reference), select, method_s)


def run_fractions(setup: Setup, pool: PrimitiveDataset, fractions: Sequence[float], methods: Sequence[str],
                  repeats: int, begin: float) -> tuple[dict[str, dict[float, list[Score]]], dict[float, int]]:
    """Every method on --repeats random subsets of every fraction of the pool; a deterministic method's score is
    reused for a subset seen before (fraction 1: the whole pool every time)."""
    runs: dict[str, dict[float, list[Score]]] = {m: {f: [] for f in fractions} for m in methods}
    sizes: dict[float, int] = {}
    seen: dict[tuple[str, tuple[str, ...]], Score] = {}
    for fraction in fractions:
        for repeat in range(repeats):
            sample = subsample(pool, fraction, seed=repeat)
            sizes[fraction] = len(sample.conv)
            identity = tuple(config_key(s.config) for s in sample.conv) + tuple(str(s.im) + str(s.c)
                                                                                 for s in sample.layout)
            makers = setup.makers(sample, repeat)
            for method in methods:
                key = (method, () if method == "direct" else identity)
                if method in DETERMINISTIC and key in seen:
                    runs[method][fraction].append(seen[key])
                    continue
                scored = setup.score(makers[method])
                seen[key] = scored
                runs[method][fraction].append(scored)
        log(f"fraction {fraction:g} ({sizes[fraction]} configurations) x {repeats} done "
            f"({time.perf_counter() - begin:.0f} s)")
    return runs, sizes


def quartiles(values: Sequence[float | None]) -> str:
    """median [q1, q3] in percent; the median alone for one value."""
    present = [v for v in values if v is not None]
    if not present:
        return "-"
    if len(set(present)) == 1:
        return pct(present[0])
    q1, q3 = np.percentile(present, [25, 75])
    return f"{pct(statistics.median(present))} [{pct(float(q1))}, {pct(float(q3))}]"


def print_fractions(runs: dict[str, dict[float, list[Score]]], sizes: dict[float, int], fractions: Sequence[float],
                    methods: Sequence[str], what: str, get: Callable[[Score], float | None]) -> None:
    print(f"\n### {what}: median [q1, q3] over the subsets\n")
    print(markdown_table(["fraction", "configurations", *methods],
                         [[f"{fraction * 100:g}%", sizes[fraction], *(quartiles([get(s) for s in runs[m][fraction]])
                                                                      for m in methods)] for fraction in fractions]))


def print_verdict(runs: dict[str, dict[float, list[Score]]], fractions: Sequence[float], methods: Sequence[str]) -> None:
    """Whether each method's median beats the source model used directly at every fraction from 1%."""
    if "direct" not in runs:
        return
    direct = runs["direct"][fractions[0]][0].primitives
    print(f"\nThe source model used directly: {pct(direct)} (median over primitives).")
    for method in methods:
        if method == "direct" or direct is None:
            continue
        worse = [f for f in fractions if f >= 0.01 and
                 statistics.median([s.primitives for s in runs[method][f] if s.primitives is not None]) >= direct]
        print(f"- {method}: " + ("better than direct use at every fraction from 1%" if not worse else
                                 "not better than direct use at " + ", ".join(f"{f * 100:g}%" for f in worse)))


def print_families(runs: dict[str, dict[float, list[Score]]], fractions: Sequence[float],
                   methods: Sequence[str]) -> None:
    families = sorted({f for m in methods for s in runs[m][fractions[0]] for f in s.families})
    print("\n### Per family (time MdRAE, median over the family's primitives, then over the subsets)\n")
    rows = []
    for fraction in fractions:
        for method in methods:
            scored = runs[method][fraction]
            cells = [pct(statistics.median(v)) if (v := [s.families[f] for s in scored if f in s.families]) else "-"
                     for f in families]
            rows.append([f"{fraction * 100:g}%", method, f"{statistics.median(s.method_s for s in scored):.2f}",
                         *cells])
    print(markdown_table(["fraction", "method", "method s", *families], rows))


def print_selection(graphs: dict[str, TargetGraph], runs: dict[str, dict[float, list[Score]]],
                    sizes: dict[float, int], fractions: Sequence[float], methods: Sequence[str]) -> None:
    print("\n### Selection on the target: how much more each model's PBQP selection costs on the target's profiled "
          "graph than its optimum; median [q1, q3] over the subsets\n")
    print(markdown_table(["network", "optimum, ms", *(f"{f * 100:g}% ({sizes[f]}): {m}" for f in fractions
                                                      for m in methods)],
                         [[name, f"{graph.optimum_s * 1e3:.2f}",
                           *(quartiles([s.select.get(name) for s in runs[m][f]]) for f in fractions for m in methods)]
                          for name, graph in graphs.items()]))


def table5(setup: Setup, pool: PrimitiveDataset) -> dict[str, Score]:
    out = {}
    for trained_on in sorted({family(p) for p in pool.primitives}):
        try:
            out[trained_on] = setup.score(lambda f=trained_on: fine_tuned_frozen(setup.source, family_subset(pool, f)))
        except (NoSharedColumnsError, DatasetTooSmallError) as exc:
            log(f"Table 5: nothing tuned on {trained_on}: {exc}")
    families = sorted({f for s in out.values() for f in s.families})
    print("\n### Table 5: tuned (frozen) on one family of the whole pool (rows), time MdRAE per family (columns)\n")
    print(markdown_table(["tuned on", *families], [[trained_on, *(pct(scored.families.get(f)) for f in families)]
                                                   for trained_on, scored in out.items()]))
    return out


def graphs_db_of(target_db: Path) -> Path:
    """The default --graphs-db: beside the target store, its name with ``-graphs``."""
    return target_db.with_name(f"{target_db.stem}-graphs{target_db.suffix}")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", "--source-db", dest="db", type=Path, required=True, help="the source platform's store")
    parser.add_argument("--source", default=None, help="source system id or key prefix (default: the largest)")
    parser.add_argument("--target-db", type=Path, required=True, help="the target platform's store")
    parser.add_argument("--target", default=None, help="target system id or key prefix (default: the largest, "
                                                       "another than the source when the stores are the same)")
    parser.add_argument("--source-model", default="nn2/relative", metavar="KIND/TARGETS")
    parser.add_argument("--network", choices=tuple(NETWORKS), default="paper")
    parser.add_argument("--test-fraction", type=float, default=0.3)
    parser.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=ALL_METHODS)
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0, help="seed of the source split and model, the target split")
    parser.add_argument("--select", nargs="*", default=[], metavar="NETWORK",
                        help="also score each model's selection on these networks against the target's optimum")
    parser.add_argument("--graphs-db", type=Path, default=None,
                        help="where the --select networks' configurations the target lacks are profiled, once "
                             "(default: the target store's name with -graphs)")
    parser.add_argument("--target-threads", type=int, default=1,
                        help="threads of the target platform, for timing what its dataset lacks (default 1)")
    parser.add_argument("--table5", action="store_true", help="also tune on one family at a time (Table 5)")
    parser.add_argument("--target-as-timed", action="store_true",
                        help="read the target's times as timed, not levelled by its machine-speed readings")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    if args.repeats < 1 or not 0 < args.test_fraction < 1 or not all(0 < f <= 1 for f in args.fractions):
        parser.error("--repeats must be at least 1, --test-fraction in (0, 1) and every fraction in (0, 1]")
    return args


def main() -> None:
    args = parse()
    begin = time.perf_counter()
    source_record, source_data = load(args.db, args.source)
    same = args.target_db.resolve() == args.db.resolve()
    target_record, target_data = load(args.target_db, args.target, source_record if same else None,
                                      level=not args.target_as_timed)
    reference = reference_of(source_data)
    network = NETWORKS[args.network]
    log(f"fitting {args.source_model} on system {source_record.id} ({len(source_data.conv)} configurations)")
    train, validation, source_test = split_dataset(source_data, seed=args.seed)
    start = time.perf_counter()
    source = variant_model(args.source_model, args.seed, network, reference).fit(train, validation)
    source_s = time.perf_counter() - start
    source_score = Score.of(evaluate(source, source_test, reference), {}, source_s)
    pool, _, test = split_dataset(target_data, (1 - args.test_fraction, 0.0, args.test_fraction), seed=args.seed)
    graphs = {}
    graph_data = with_networks(target_data, args.select, args.graphs_db or graphs_db_of(args.target_db),
                               args.target_threads) if args.select else target_data
    for name in args.select:
        log(f"the target's cost graph of {name}")
        graphs[name] = target_graph(name, graph_data, args.target_db, args.target_threads)
    print(f"{host_info().cpu_model}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print(f"source: {args.db} system {source_record.id}: {len(source_data.conv)} configurations; {args.source_model} "
          f"({args.network} networks; ratios to {reference or 'the most timed primitive'}) fitted on {len(train.conv)} in "
          f"{source_s:.1f} s; on its own test part: time {pct(source_score.primitives)}, ratio "
          f"{pct(source_score.ratio)}, transformations {pct(source_score.transforms)}")
    print(f"target: {args.target_db} system {target_record.id}: {len(target_data.conv)} configurations, "
          f"{len(target_data.layout)} activations; pool {len(pool.conv)} / {len(pool.layout)}, test part "
          f"{len(test.conv)} / {len(test.layout)}")
    if target_record.key == source_record.key:
        print("\n**source and target are the same system: a check of the methods, not a transfer**")
    setup = Setup(source, args.source_model, network, reference, transform_reference_of(target_data), test, graphs)
    runs, sizes = run_fractions(setup, pool, args.fractions, args.methods, args.repeats, begin)
    print_fractions(runs, sizes, args.fractions, args.methods, "Time MdRAE, median over the primitives",
                    lambda s: s.primitives)
    print_verdict(runs, args.fractions, args.methods)
    print_fractions(runs, sizes, args.fractions, args.methods, "Ratio-to-reference MdRAE, median over the primitives",
                    lambda s: s.ratio)
    print_fractions(runs, sizes, args.fractions, args.methods, "Time MdRAE, median over the transformations",
                    lambda s: s.transforms)
    print_families(runs, args.fractions, args.methods)
    if graphs:
        print_selection(graphs, runs, sizes, args.fractions, args.methods)
    families = table5(setup, pool) if args.table5 else {}
    elapsed = time.perf_counter() - begin
    print(f"\nran in {elapsed / 60:.1f} min")
    if args.json:
        write_result(args.json, method="primitives", concern="the cost model transferred to another platform", values={
            "seed": args.seed, "repeats": args.repeats, "model": args.source_model,
            "network": args.network, "reference": reference,
            "source": {"db": str(args.db), "system_id": source_record.id, "configurations": len(source_data.conv),
                       "train_s": source_s, "test": source_score.__dict__},
            "target": {"db": str(args.target_db), "system_id": target_record.id,
                       "configurations": len(target_data.conv), "pool": len(pool.conv), "test": len(test.conv)},
            "fractions": {m: {f"{f:g}": {"configurations": sizes[f], "runs": [s.__dict__ for s in runs[m][f]]}
                              for f in args.fractions} for m in args.methods},
            "table5": {f: s.__dict__ for f, s in families.items()},
            "select_optimum_s": {n: g.optimum_s for n, g in graphs.items()}, "elapsed_s": elapsed})


if __name__ == "__main__":
    main()
