"""Primitive selection on whole networks from predicted against profiled costs (Mulder et al. 4.3, 5.2, Fig. 7,
Table 4).

Run: .venv/bin/python bench/select_networks.py [--networks alexnet vgg11 googlenet resnet18
     resnet34 mobilenet_v2 densenet121 ...] [--protocol interleaved] [--rounds-budget 20] [--max-rounds 60]
     [--budget 1.0] [--ilp] [--margin 0.12] [--refine 6] [--no-layer-costs] [--threads 1] [--system ID]
     [--db bench/results/primitives/primitives.db] [--model-db DB] [--json bench/results/selection/select_networks.json]

The paper's six networks, with VGG-19 swapped for MobileNet v2 to keep a run within minutes (--networks takes
zoo names, .onnx files and the held-out architectures of bench/architectures.py, exported to ONNX and imported).
Every layer other than a convolution is timed in chw and hwc into --db once (both cost graphs charge it the layout
it runs in; --no-layer-costs charges nothing). For every network the cost graph is built twice, from the costs the
stored NN2 model predicts and from the profiled dataset's medians (what the dataset lacks, typically the transformations of
activations no convolution reads, is timed now), and each graph is solved with PBQP (and with the ILP too under
--ilp, to compare solve time and optimality). Four selections are compared:

- (a) PBQP on the predicted costs (the paper's approach);
- (b) PBQP on the profiled costs (the optimum of Anderson & Gregg, the paper's reference);
- (c) the framework default: torch's own ``conv2d`` dispatch on NCHW for every convolution (``torch-conv2d``);
- (d) the best uniform choice: one primitive for every convolution it applies to, layouts solved, the one of
  least profiled cost.

With --margin, (e) is (a) with every option but the default that fraction dearer; with --refine N, (f) and (g) are
(a) and (b) refined in the program (``nnperf.optimize.select.refine_in_program``: the convolutions timed inside
the running selection, solved again, for at most N steps, the fastest against the default kept).

(a) and (b) are verified against the reference network; then all four run end to end in torch and are timed
against each other (``nnperf.optimize.select.compare_selections``). This VM's speed drifts by 6-50% within an
hour, so under ``--protocol interleaved`` (the default) every program runs one block of at least 20 ms per round,
in a fresh random order each round, for 10 to --max-rounds rounds (until every ratio to (a) is known within 1%,
or --rounds-budget seconds of rounds), and each comparison is the median per-round ratio with its 95% bootstrap
interval. ``--protocol sequential`` is the unpaired way: each program measured to the harness's stopping rule
(at most --budget seconds), one after the other, and a comparison the ratio of the two medians (interval from
resampling each side on its own). A time is the program's median over its rounds (or blocks), with their
[min, max].

Stdout gets Markdown tables: (i) the measured times and speed-ups, Fig. 7's increase of (a) over (b) and how many
layers (a) and (b) choose differently; (ii) the same comparison on the profiled cost graph (no measurement noise);
(iii) where (a) loses to (d) on the profiled graph or end to end, the layers that carry the difference: each node's
cost under (a)'s and (d)'s choice on the profiled and on the predicted graph (a node's cost is its option's time
plus half of every edge it touches), so a layer the model got wrong reads as predicted cheaper but profiled dearer;
(iv) Table 4: the optimisation time with the model (cost-model call, graph, PBQP) against profiling (the stored
run time of the network's configurations, plus what was timed now, plus graph and PBQP); with --ilp (v) PBQP
against the ILP on both graphs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _shared import write_result
from architectures import ARCHITECTURES, exported

from nnperf.api import find_primitive_system, load_model, stored_primitive_model
from nnperf.campaign import LAYER_CAMPAIGN, load_primitive_dataset, profile_layer_layouts, profiling_durations
from nnperf.ir import Network
from nnperf.measure import HarnessConfig, PairedRatio, RoundsConfig, host_info
from nnperf.optimize.select import (
    SELECTION_ROUNDS,
    CostGraph,
    CostGraphError,
    PrimitiveCosts,
    Refinement,
    Selection,
    SelectionComparison,
    check_protocol,
    compare_selections,
    default_selection,
    network_cost_graph,
    predicted_costs,
    profiled_costs,
    refine_in_program,
    selection_from_labels,
    solve,
    uniform_selections,
    verify_selected,
)
from nnperf.prediction.primitives import PrimitiveCostModel
from nnperf.primitives import PrimitiveDataset, config_key, conv_layer_configs
from nnperf.store import Store

NETWORKS = ("alexnet", "vgg11", "googlenet", "resnet18", "resnet34", "mobilenet_v2")
SELECTIONS = {"a": "predicted", "b": "profiled", "c": "default", "d": "best uniform",
              "e": "predicted, every option but the default dearer by --margin",
              "f": "predicted, refined in the program (--refine)", "g": "profiled, refined in the program (--refine)"}


@dataclass(frozen=True)
class Solved:
    """A cost graph solved by PBQP: the costs, the graph, the selection and how long each step took (s)."""

    costs: PrimitiveCosts
    graph: CostGraph
    selection: Selection
    costs_s: float
    graph_s: float

    @property
    def optimise_s(self) -> float:
        return self.costs_s + self.graph_s + self.selection.solve_s


def solved(network: Network, make_costs: Callable[[], PrimitiveCosts]) -> Solved:
    """Builds the costs with ``make_costs``, then the graph, and solves it with PBQP, timing each step."""
    start = time.perf_counter()
    costs = make_costs()
    costs_s = time.perf_counter() - start
    start = time.perf_counter()
    graph = network_cost_graph(network, costs)
    graph_s = time.perf_counter() - start
    return Solved(costs, graph, solve(graph, "pbqp"), costs_s, graph_s)


def predicted_solution(network: Network, model: PrimitiveCostModel, repeats: int,
                       layers_s: dict[str, dict[str, float]], margin: float = 0.0) -> Solved:
    """The predicted graph (with the other layers' times ``layers_s``, every option but the default ``margin``
    dearer) solved ``repeats`` times; the run of median optimisation time (the first call pays NumPy's and ONNX
    Runtime's warm-up)."""
    runs = sorted((solved(network, lambda: predicted_costs(model, network, margin).with_layers(layers_s))
                   for _ in range(repeats)),
                  key=lambda s: s.optimise_s)
    return runs[len(runs) // 2]


def missing_transforms(dataset: PrimitiveDataset, costs: PrimitiveCosts) -> int:
    """How many of the transformation times in ``costs`` the dataset does not hold (they were timed now)."""
    stored = {(s.batch, s.c, (int(s.im[0]), int(s.im[1]))): s.times_s for s in dataset.layout}
    return sum(name not in stored.get(shape, {}) for shape, row in costs.transforms_s.items() for name in row)


def stored_profiling_s(network: Network, durations: dict[str, float | None]) -> tuple[float, int, int]:
    """The stored profiling time (s) of the network's distinct convolution configurations, how many there are
    and how many of them have no finished run (not in the dataset, or interrupted)."""
    configs = list(dict.fromkeys(conv_layer_configs(network).values()))
    found = [durations.get(config_key(c)) for c in configs]
    return sum(d for d in found if d is not None), len(configs), sum(d is None for d in found)


def differing(network: Network, one: Selection, other: Selection) -> tuple[int, int, int, int]:
    """Convolutions and other layers on which two selections of the same network differ, and how many of each
    there are."""
    convs = set(conv_layer_configs(network))
    a, b = one.chosen, other.chosen
    conv_diff = sum(a[n] != b[n] for n in convs)
    other_names = [n for n in a if n not in convs]
    return conv_diff, len(convs), sum(a[n] != b[n] for n in other_names), len(other_names)


def primitive_counts(network: Network, selection: Selection) -> dict[str, int]:
    """How many convolutions of ``network`` run each primitive in ``selection``."""
    return dict(Counter(selection.chosen[n] for n in conv_layer_configs(network)).most_common())


def cost_on(graph: CostGraph, selection: Selection) -> float | None:
    """The cost of ``selection``'s labels on another graph of the same network; None when an option it chose is
    not one of that graph's."""
    try:
        return selection_from_labels(graph, selection.chosen).cost_s
    except CostGraphError:
        return None


def node_costs(graph: CostGraph, chosen: dict[str, str]) -> dict[str, float]:
    """Each node's share of the total cost of the labels ``chosen`` on ``graph``: its option's time plus half of
    every edge it touches (s); a label the graph does not offer costs nan."""
    index = {node.name: node.options.index(chosen[node.name]) if chosen[node.name] in node.options else -1
             for node in graph.nodes}
    share = {node.name: node.costs_s[index[node.name]] if index[node.name] >= 0 else float("nan")
             for node in graph.nodes}
    for edge in graph.edges:
        i, j = index[edge.source], index[edge.target]
        half = edge.costs_s[i][j] / 2 if i >= 0 and j >= 0 else float("nan")
        share[edge.source] += half
        share[edge.target] += half
    return share


def loss_breakdown(profiled: CostGraph, predicted: CostGraph, a: Selection, d: Selection,
                   top: int = 6) -> list[dict[str, Any]]:
    """The nodes where (a) and (d) choose differently, the largest profiled differences first: each with both
    choices and their shares on the profiled and on the predicted graph (ms)."""
    pa, pd = node_costs(profiled, a.chosen), node_costs(profiled, d.chosen)
    qa, qd = node_costs(predicted, a.chosen), node_costs(predicted, d.chosen)
    rows = [{"node": n, "a": a.chosen[n], "d": d.chosen[n], "profiled_a_ms": pa[n] * 1e3, "profiled_d_ms": pd[n] * 1e3,
             "predicted_a_ms": qa[n] * 1e3, "predicted_d_ms": qd[n] * 1e3}
            for n in pa if a.chosen[n] != d.chosen[n] or abs(pa[n] - pd[n]) > 1e-9]
    rows.sort(key=lambda r: -(r["profiled_a_ms"] - r["profiled_d_ms"]))
    return rows[:top]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def interval(ratio: PairedRatio) -> dict[str, Any]:
    """A comparison's median and its 95% interval (``min``/``max`` hold the interval's ends), with how it was
    judged."""
    return {"median": ratio.median, "min": ratio.ci_low, "max": ratio.ci_high, **ratio.to_dict()}


def fmt(s: dict[str, float], scale: float = 1e3, digits: int = 2, suffix: str = "") -> str:
    """``median [min, max]``, each times ``scale``."""
    m, lo, hi = (s[k] * scale for k in ("median", "min", "max"))
    return f"{m:.{digits}f}{suffix} [{lo:.{digits}f}, {hi:.{digits}f}]"


def fmt_increase(s: dict[str, float]) -> str:
    """A ratio's median and interval as a relative increase in %."""
    return fmt({k: s[k] - 1 for k in ("median", "min", "max")}, 100, 1, "%")


def comparisons(compared: SelectionComparison) -> dict[str, Any]:
    """The ratios the tables report, each a median with its 95% interval: (a), (b) and (d) over the default (c),
    (a) over the best uniform choice (d), and the increase of (a) over the profiled optimum (b)."""
    return {"speedup_over_default": {k: interval(compared.speedup(k, "c")) for k in ("a", "b", "d")},
            "a_over_d": interval(compared.speedup("a", "d")),
            "a_over_b": interval(compared.ratio("a", "b"))}


def ilp_row(graph: CostGraph, pbqp: Selection, time_limit_s: float) -> dict[str, Any]:
    ilp = solve(graph, "ilp", time_limit_s=time_limit_s)
    return {"pbqp_ms": pbqp.solve_s * 1e3, "pbqp_optimal": pbqp.optimal, "pbqp_rn": pbqp.heuristic_used,
            "ilp_ms": ilp.solve_s * 1e3, "ilp_status": ilp.status, "ilp_optimal": ilp.optimal,
            "pbqp_over_ilp": (pbqp.cost_s - ilp.cost_s) / ilp.cost_s}


def network_of(name: str) -> Network:
    """A zoo name, an .onnx file, or an architecture of bench/architectures.py (exported to ONNX, then imported)."""
    return load_model(exported(name) if name in ARCHITECTURES else name)


def layer_times(network: Network, args: argparse.Namespace) -> tuple[dict[str, dict[str, float]], float]:
    """The other layers' times in each layout (timed into --db the first time) and how long timing them took, now
    or in the stored runs (s); none and 0 under --no-layer-costs."""
    if not args.layer_costs:
        return {}, 0.0
    with Store(args.db) as store:
        report = profile_layer_layouts(store, [network], args.threads)
        keys = {LAYER_CAMPAIGN + key for key in report.times_s}
        stored_s = sum(r.finished_at - r.started_at for r in store.runs(system_id=report.system_id)
                       if r.campaign in keys and r.finished_at)
    return report.times_s, stored_s


def run_network(name: str, model: PrimitiveCostModel, dataset: PrimitiveDataset,
                durations: dict[str, float | None], args: argparse.Namespace) -> dict[str, Any]:
    network = network_of(name)
    layers_s, layers_timed_s = layer_times(network, args)
    predicted = predicted_solution(network, model, args.optimise_repeats, layers_s)
    profiled = solved(network, lambda: profiled_costs(dataset, network, measure_missing=True,
                                                      threads=args.threads).with_layers(layers_s))
    uniform = uniform_selections(profiled.graph)
    best_uniform = min(uniform, key=lambda p: uniform[p].cost_s)
    selections = {"a": predicted.selection, "b": profiled.selection, "c": default_selection(profiled.graph),
                  "d": uniform[best_uniform]}
    if args.margin:
        selections["e"] = predicted_solution(network, model, 1, layers_s, args.margin).selection
    refined = refinements(network, {"f": predicted, "g": profiled}, args) if args.refine else {}
    selections.update({k: r.selection for k, r in refined.items()})
    errors = {k: verify_selected(network, selections[k], threads=args.threads) for k in ("a", "b")}
    harness = HarnessConfig(budget_s=args.budget)
    rounds = RoundsConfig(min_rounds=min(SELECTION_ROUNDS.min_rounds, args.max_rounds), max_rounds=args.max_rounds,
                          min_block_s=SELECTION_ROUNDS.min_block_s, warmup_s=SELECTION_ROUNDS.warmup_s,
                          target_ci=SELECTION_ROUNDS.target_ci, budget_s=args.rounds_budget)
    compared = compare_selections(network, selections, args.protocol, rounds=rounds, harness=harness,
                                  threads=args.threads)
    measured = {k: list(compared.rounds.times(k)) for k in selections}
    stored_s, n_configs, unprofiled = stored_profiling_s(network, durations)
    conv_diff, n_convs, other_diff, n_other = differing(network, predicted.selection, profiled.selection)
    result: dict[str, Any] = {
        "network": network.name, "convolutions": n_convs, "configurations": n_configs, "best_uniform": best_uniform,
        "measured_s": measured,
        "measured": {k: summary(v) for k, v in measured.items()},
        "comparison": compared.to_dict(),
        **comparisons(compared),
        "max_error": errors,
        "differ": {"convolutions": conv_diff, "other_layers": other_diff, "other_layer_count": n_other},
        "profiled_cost_s": {"a": cost_on(profiled.graph, predicted.selection),
                            **{k: selections[k].cost_s for k in ("b", "c", "d")}},
        "predicted_cost_s": predicted.selection.cost_s,
        "layers_timed_s": layers_timed_s, "layer_costs": args.layer_costs,
        "model_optimise": {"costs_s": predicted.costs_s, "graph_s": predicted.graph_s,
                           "pbqp_s": predicted.selection.solve_s, "total_s": predicted.optimise_s,
                           "pbqp_optimal": predicted.selection.optimal,
                           "pbqp_rn": predicted.selection.heuristic_used},
        "profiling": {"stored_s": stored_s, "unprofiled_configurations": unprofiled,
                      "timed_now_s": profiled.costs_s, "missing_transforms": missing_transforms(dataset, profiled.costs),
                      "graph_s": profiled.graph_s, "pbqp_s": profiled.selection.solve_s,
                      "total_s": stored_s + profiled.optimise_s, "pbqp_optimal": profiled.selection.optimal,
                      "pbqp_rn": profiled.selection.heuristic_used},
    }
    if args.margin:
        result["margin"] = {"margin": args.margin, "e_over_c": interval(compared.speedup("e", "c")),
                            "e_over_d": interval(compared.speedup("e", "d")),
                            "e_over_b": interval(compared.ratio("e", "b")),
                            "e_over_a": interval(compared.speedup("e", "a")),
                            "profiled_cost_s": cost_on(profiled.graph, selections["e"]),
                            "differ_from_default": differing(network, selections["e"], selections["c"])[0]}
    if refined:
        result["refine"] = {k: {**refine_row(compared, k, r, differing(network, r.selection, selections["c"])[0]),
                                "primitives": primitive_counts(network, r.selection)} for k, r in refined.items()}
    result["a_vs_d_layers"] = loss_breakdown(profiled.graph, predicted.graph, predicted.selection, selections["d"])
    if args.ilp:
        result["ilp"] = {"predicted": ilp_row(predicted.graph, predicted.selection, args.ilp_time_limit),
                         "profiled": ilp_row(profiled.graph, profiled.selection, args.ilp_time_limit)}
    return result


def refinements(network: Network, solved_by: dict[str, Solved], args: argparse.Namespace
                ) -> dict[str, Refinement]:
    """(f) and (g): the predicted and profiled selections refined in the program (at most --refine steps), each
    with the seconds it took in ``refine_s``."""
    found = {}
    for key, solution in solved_by.items():
        start = time.perf_counter()
        found[key] = refine_in_program(network, solution.costs, args.refine, threads=args.threads)
        print(f"  ({key}) refined in {time.perf_counter() - start:.1f} s: {found[key].steps} steps, over the "
              f"default {', '.join(f'{r:.3f}' for r in found[key].over_default)}", file=sys.stderr, flush=True)
    return found


def refine_row(compared: SelectionComparison, key: str, refinement: Refinement, off_default: int) -> dict[str, Any]:
    return {"steps": refinement.steps, "over_default": list(refinement.over_default),
            "run": [selection.solver for selection in refinement.history], "kept": refinement.kept,
            "confirmed": None if refinement.confirmed is None else interval(refinement.confirmed),
            "converged": refinement.converged, "pairs_run": len(refinement.measured_s),
            "moves_run": len(refinement.moves_s),
            "off_default": off_default, "over_c": interval(compared.speedup(key, "c")),
            "over_d": interval(compared.speedup(key, "d")), "over_b": interval(compared.ratio(key, "b"))}


def print_refined(results: list[dict[str, Any]]) -> None:
    """(vii): (f) and (g), the selections refined in the program, in the same rounds as (a)-(d)."""
    print("\n(vii) (f) and (g): the predicted and profiled selections refined in the program, timed in the same "
          "rounds: median per-round ratio [95% bootstrap interval]; each selection run (s: solved, c: its "
          "challenger, u: the best uniform choice) over the default in its step's rounds\n")
    print("| network | refined | steps | selections run (time over the default) | (configuration, primitive) pairs "
          "run | kept | convolutions off the default | speed-up over (c) | speed-up over (d) | increase over (b) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for key, row in r["refine"].items():
            runs = ", ".join(f"{'c' if run == 'challenger' else 'u' if run.startswith('uniform') else 's'} {x:.3f}"
                             for run, x in zip(row["run"], row["over_default"], strict=True))
            kept = "default" if row["kept"] is None else f"{row['kept'] + 1} ({fmt(row['confirmed'], 1, 3)})"
            print(f"| {r['network']} | ({key}) | {row['steps']} | {runs} | {row['pairs_run']} | {kept} "
                  f"| {row['off_default']}/{r['convolutions']} "
                  f"| {fmt(row['over_c'], 1, suffix='x')} | {fmt(row['over_d'], 1, suffix='x')} "
                  f"| {fmt_increase(row['over_b'])} |")


def print_measured(results: list[dict[str, Any]], protocol: str) -> None:
    how = ("median per-round ratio [95% bootstrap interval]" if protocol == "interleaved" else
           "ratio of the medians [95% interval, each side resampled on its own]")
    print(f"(i) measured end to end ({protocol}), ms: median [min, max] over the rounds (or blocks); speed-ups and "
          f"the increase: {how}\n")
    print("| network | rounds | (a) predicted | (b) profiled | (c) default | (d) best uniform | (a) speed-up over (c) "
          "| (b) speed-up over (c) | (a) speed-up over (d) | increase of (a) over (b) "
          "| layers where (a) and (b) differ |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        m, up, d = r["measured"], r["speedup_over_default"], r["differ"]
        print(f"| {r['network']} | {r['comparison']['rounds']} | {fmt(m['a'])} | {fmt(m['b'])} | {fmt(m['c'])} "
              f"| {fmt(m['d'])} [{r['best_uniform']}] | {fmt(up['a'], 1, suffix='x')} "
              f"| {fmt(up['b'], 1, suffix='x')} | {fmt(r['a_over_d'], 1, suffix='x')} "
              f"| {fmt_increase(r['a_over_b'])} | {d['convolutions']}/{r['convolutions']} convolutions, "
              f"{d['other_layers']}/{d['other_layer_count']} other layouts |")


def print_costs(results: list[dict[str, Any]]) -> None:
    what = "convolutions, transformations and other layers" if results and results[0]["layer_costs"] else \
        "convolutions and transformations"
    print(f"\n(ii) the profiled cost graph's totals, ms ({what}; no measurement noise)\n")
    print("| network | (a) predicted total | (a) | (b) | (c) | (d) | increase of (a) over (b) | max error (a), (b) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        c = r["profiled_cost_s"]
        a = "-" if c["a"] is None else f"{c['a'] * 1e3:.2f}"
        increase = "-" if c["a"] is None else f"{(c['a'] / c['b'] - 1) * 100:.2f}%"
        print(f"| {r['network']} | {r['predicted_cost_s'] * 1e3:.2f} | {a} | {c['b'] * 1e3:.2f} | {c['c'] * 1e3:.2f} "
              f"| {c['d'] * 1e3:.2f} | {increase} | {r['max_error']['a']:.1e}, {r['max_error']['b']:.1e} |")


def _solver_note(optimal: bool, rn: bool) -> str:
    return "optimal" if optimal else ("RN heuristic" if rn else "not proved")


def print_losses(results: list[dict[str, Any]]) -> None:
    losing = [r for r in results if r["a_over_d"]["median"] < 1.0
              or (r["profiled_cost_s"]["a"] or 0.0) > r["profiled_cost_s"]["d"]]
    if not losing:
        return
    print("\n(iii) where (a) loses to (d): the layers that differ most on the profiled graph, ms (a node's option "
          "plus half of its edges)\n")
    print("| network | layer | (a) chose | (d) chose | profiled (a) | profiled (d) | predicted (a) | predicted (d) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in losing:
        for row in r["a_vs_d_layers"]:
            print(f"| {r['network']} | {row['node']} | {row['a']} | {row['d']} | {row['profiled_a_ms']:.3f} "
                  f"| {row['profiled_d_ms']:.3f} | {row['predicted_a_ms']:.3f} | {row['predicted_d_ms']:.3f} |")


def print_table4(results: list[dict[str, Any]]) -> None:
    print("\n(iv) Table 4: time to optimise each network; PBQP included on both sides. The other layers are timed "
          "in each layout once (stored runs), which both sides need: the model's total is shown without and with it\n")
    print("| network | convolutions (distinct) | with the model, ms | of it PBQP, ms | other layers timed, s "
          "| profiling: stored runs, s | timed now, s | profiling total, s | profiling / model | (profiling + layers) "
          "/ (model + layers) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        model, prof, layers = r["model_optimise"], r["profiling"], r["layers_timed_s"]
        now = f"{prof['timed_now_s']:.1f} ({prof['missing_transforms']} transforms"
        if prof["unprofiled_configurations"]:
            now += f", {prof['unprofiled_configurations']} configurations unprofiled or interrupted"
        print(f"| {r['network']} | {r['convolutions']} ({r['configurations']}) | {model['total_s'] * 1e3:.1f} "
              f"| {model['pbqp_s'] * 1e3:.1f} ({_solver_note(model['pbqp_optimal'], model['pbqp_rn'])}) "
              f"| {layers:.1f} | {prof['stored_s']:.0f} | {now}) | {prof['total_s']:.0f} "
              f"| {prof['total_s'] / model['total_s']:,.0f}x "
              f"| {(prof['total_s'] + layers) / (model['total_s'] + layers):,.1f}x |")


def print_ilp(results: list[dict[str, Any]]) -> None:
    print("\n(v) PBQP against the ILP (HiGHS)\n")
    print("| network | costs | PBQP ms | PBQP | ILP ms | ILP status | (PBQP - ILP) / ILP |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        for source, row in r["ilp"].items():
            print(f"| {r['network']} | {source} | {row['pbqp_ms']:.1f} | {_solver_note(row['pbqp_optimal'], row['pbqp_rn'])} "
                  f"| {row['ilp_ms']:.1f} | {row['ilp_status']} | {row['pbqp_over_ilp'] * 100:.3f}% |")


def print_margin(results: list[dict[str, Any]]) -> None:
    """(vi): (e), the predicted selection with every option but the default dearer by the margin, in the same
    rounds as (a)-(d)."""
    margin = results[0]["margin"]["margin"]
    print(f"\n(vi) (e): the predicted selection with every option but the default {margin:.0%} dearer, timed in "
          "the same rounds: median per-round ratio [95% bootstrap interval]\n")
    print("| network | convolutions off the default (e) | (e) speed-up over (c) | (e) speed-up over (d) "
          "| (e) speed-up over (a) | increase of (e) over (b) | profiled graph: (e) over (b) |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        e = r["margin"]
        graph = "-" if e["profiled_cost_s"] is None else f"{(e['profiled_cost_s'] / r['profiled_cost_s']['b'] - 1):.2%}"
        print(f"| {r['network']} | {e['differ_from_default']}/{r['convolutions']} | {fmt(e['e_over_c'], 1, suffix='x')} "
              f"| {fmt(e['e_over_d'], 1, suffix='x')} | {fmt(e['e_over_a'], 1, suffix='x')} "
              f"| {fmt_increase(e['e_over_b'])} | {graph} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS),
                        help=f"zoo names, .onnx files, or architectures exported now: {', '.join(ARCHITECTURES)}")
    parser.add_argument("--no-layer-costs", dest="layer_costs", action="store_false",
                        help="charge the other layers nothing in either layout (the default times them in each)")
    parser.add_argument("--db", type=Path, default=Path("bench/results/primitives/primitives.db"))
    parser.add_argument("--model-db", type=Path, default=None,
                        help="the store whose newest cost model of this system predicts (a) (default --db): a model "
                             "trained on another dataset, e.g. the paper's grid, judged on these networks' profiles")
    parser.add_argument("--system", default=None, help="the primitive system id or key (default: this CPU's)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--protocol", default="interleaved", choices=("interleaved", "sequential"),
                        help="how the four programs are timed against each other (default interleaved)")
    parser.add_argument("--rounds-budget", type=float, default=SELECTION_ROUNDS.budget_s,
                        help=f"interleaved: seconds of rounds per network at most (default {SELECTION_ROUNDS.budget_s:g})")
    parser.add_argument("--max-rounds", type=int, default=SELECTION_ROUNDS.max_rounds,
                        help=f"interleaved: rounds at most (default {SELECTION_ROUNDS.max_rounds})")
    parser.add_argument("--budget", type=float, default=1.0,
                        help="sequential: harness budget per program, s (default 1)")
    parser.add_argument("--optimise-repeats", type=int, default=3,
                        help="times the model's optimisation is timed; the median is reported (default 3)")
    parser.add_argument("--ilp", action="store_true", help="also solve both graphs with the ILP")
    parser.add_argument("--margin", type=float, default=0.0,
                        help="also time (e): (a) with every option but the default this fraction dearer")
    parser.add_argument("--refine", type=int, default=0, metavar="STEPS",
                        help="also time (f) and (g): (a) and (b) refined in the program for at most STEPS steps")
    parser.add_argument("--ilp-time-limit", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--json", type=Path, default=None, help="also write the result file here "
                        "(bench/results/selection/select_networks.json)")
    args = parser.parse_args()
    if args.max_rounds < 2 or args.optimise_repeats < 1:
        raise SystemExit("--max-rounds must be at least 2 and --optimise-repeats at least 1")
    check_protocol(args.protocol)
    system = int(args.system) if args.system is not None and args.system.isdigit() else args.system
    with Store(args.db, create=False) as store:
        record = find_primitive_system(store, system, args.threads)
        dataset = load_primitive_dataset(store, record.id)
        durations = profiling_durations(store, record.id)
    model, _ = stored_primitive_model(record.key if args.model_db else record.id, args.model_db or args.db)
    host = host_info()
    print(f"{host.cpu_model}, {host.logical_cores} logical cores, {args.threads} thread(s); system {record.id}; "
          f"cost model {model.kind}; dataset {len(dataset.conv)} configurations; protocol {args.protocol} ("
          + (f"at most {args.max_rounds} rounds or {args.rounds_budget:g} s per network" if args.protocol == "interleaved"
             else f"harness budget {args.budget:g} s per program") + ")\n")
    results = []
    for name in args.networks:
        start = time.perf_counter()
        results.append(run_network(name, model, dataset, durations, args))
        results[-1]["wall_s"] = time.perf_counter() - start
        print(f"{name}: {results[-1]['wall_s']:.0f} s", file=sys.stderr, flush=True)
    print_measured(results, args.protocol)
    print_costs(results)
    print_losses(results)
    print_table4(results)
    if args.ilp:
        print_ilp(results)
    if args.margin:
        print_margin(results)
    if args.refine:
        print_refined(results)
    if args.json:
        write_result(args.json, method="selection", concern="primitive selection on whole networks", values={
            "threads": args.threads, "system_id": record.id, "model": model.kind, "protocol": args.protocol,
            "max_rounds": args.max_rounds, "rounds_budget_s": args.rounds_budget, "budget_s": args.budget,
            "selections": SELECTIONS, "networks": results})


if __name__ == "__main__":
    main()
