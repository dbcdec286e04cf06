"""Each layer's time inside the running program against its cost on the profiled cost graph, for the profiled
optimum (b) and torch's default (c): where the graph's isolated costs misjudge a whole network.

Run: .venv/bin/python bench/select_in_program.py mnasnet1_0 [--db networks.db] [--rounds 40]
     [--top 15]

The network's profiled graph is built as bench/select_networks.py builds it (the store's primitive dataset and the
other layers' times in each layout, from --db). (b) and (c) run in torch through ``build_selected``, one thread,
interleaved over --rounds rounds in random order. Each step of the executor (the layouts its inputs are moved to,
then the layer) is timed inside the forward pass. Stdout: the whole programs' medians and the sums of their steps
against the graph's totals; then the layers where (b) - (c) inside the program exceeds (b) - (c) on the graph the
most (a node's graph cost is its option's time plus half of its edges); then that excess summed by the kind of
option (b) chose.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from _shared import markdown_table
from select_networks import layer_times, network_of, node_costs, solved

from nnperf.api import find_primitive_system
from nnperf.campaign import load_primitive_dataset
from nnperf.optimize.select import build_selected, default_selection, profiled_costs
from nnperf.store import Store


def step_times(modules: dict[str, Any], example: Any, rounds: int) -> tuple[dict[str, float], dict[str, dict]]:
    """Each program's median whole time and each of its steps' median time (s), the programs interleaved in a
    fresh random order every round (each step timed by the module itself: its ``timed_steps``)."""
    whole: dict[str, list[float]] = defaultdict(list)
    steps: dict[str, dict[str, list[float]]] = {k: defaultdict(list) for k in modules}
    rng = np.random.default_rng(0)
    try:
        for _ in range(rounds):
            for key in rng.permutation(list(modules)):
                modules[key].timed_steps = current = []
                start = time.perf_counter()
                modules[key](example)
                whole[key].append(time.perf_counter() - start)
                per_layer: dict[str, float] = defaultdict(float)
                for name, seconds in current:
                    per_layer[name] += seconds
                for name, seconds in per_layer.items():
                    steps[key][name].append(seconds)
    finally:
        for module in modules.values():
            module.timed_steps = None
    return ({k: statistics.median(v) for k, v in whole.items()},
            {k: {n: statistics.median(v) for n, v in by.items()} for k, by in steps.items()})


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("network")
    parser.add_argument("--db", type=Path, default=Path("bench/results/primitives/primitives.db"))
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    network = network_of(args.network)
    layers_s, _ = layer_times(network, argparse.Namespace(layer_costs=True, db=args.db, threads=1))
    with Store(args.db, create=False) as store:
        dataset = load_primitive_dataset(store, find_primitive_system(store, None, 1).id)
    profiled = solved(network, lambda: profiled_costs(dataset, network, measure_missing=True).with_layers(layers_s))
    chosen = {"b": profiled.selection.chosen, "c": default_selection(profiled.graph).chosen}
    modules = {k: build_selected(network, labels, threads=1) for k, labels in chosen.items()}
    whole, steps = step_times(modules, torch.randn(*network.inputs[0].shape), args.rounds)
    graph = {k: node_costs(profiled.graph, labels) for k, labels in chosen.items()}
    print(f"{network.name}: whole program (b) {whole['b'] * 1e3:.2f} ms, (c) {whole['c'] * 1e3:.2f} ms; sum of "
          f"steps (b) {sum(steps['b'].values()) * 1e3:.2f}, (c) {sum(steps['c'].values()) * 1e3:.2f}; profiled graph "
          f"(b) {sum(graph['b'].values()) * 1e3:.2f}, (c) {sum(graph['c'].values()) * 1e3:.2f}\n")
    rows = sorted(((steps["b"][n] - steps["c"].get(n, 0.0)) - (graph["b"].get(n, 0.0) - graph["c"].get(n, 0.0)), n)
                  for n in steps["b"])[::-1]
    print(markdown_table(
        ["layer", "(b) chose", "in program (b), (c) ms", "graph (b), (c) ms", "excess of (b) - (c) in the program, ms"],
        [[n, chosen["b"].get(n), f"{steps['b'][n] * 1e3:.3f}, {steps['c'].get(n, 0.0) * 1e3:.3f}",
          f"{graph['b'].get(n, 0.0) * 1e3:.3f}, {graph['c'].get(n, 0.0) * 1e3:.3f}", f"{excess * 1e3:+.3f}"]
         for excess, n in rows[:args.top]]))
    by_kind: dict[str, float] = defaultdict(float)
    for excess, n in rows:
        label = chosen["b"].get(n) or "?"
        by_kind["convolutions" if label not in ("chw", "hwc") else f"other layers in {label}"] += excess
    print("\nexcess by what (b) chose, ms: " + ", ".join(f"{k} {v * 1e3:+.2f}" for k, v in by_kind.items()))


if __name__ == "__main__":
    sys.exit(main())
