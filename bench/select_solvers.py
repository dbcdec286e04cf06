"""PBQP against ILP on random cost graphs shaped like ResNet-152, DenseNet-121 and GoogLeNet (Mulder et al. 4.3).

Run: .venv/bin/python bench/select_solvers.py [--networks resnet152 densenet121 googlenet]
     [--seeds 0 1 2] [--time-limit 60] [--json bench/results/selection/select_solvers.json]

Each graph has one node per convolution and 10-20 options per node. Every
option (a primitive) reads one data layout and writes one (of 5); an edge's
matrix is the layout transformation from the producer's output layout to the
consumer's input layout: 0 where they match, else a cost that grows with the
tensor (random, a few percent of a convolution). The shapes:

- resnet152: a chain of 155 convolutions with a residual skip edge every 3
  nodes (i -> i + 3): series-parallel, so PBQP should never need RN;
- densenet121: 4 dense blocks of 6, 12, 24, 16 layers (1x1 then 3x3), each
  1x1 fed by every earlier 3x3 of its block and the block input, a 1x1
  transition after each block: 120 nodes, RN needed;
- googlenet: 3 stem convolutions, then 9 inception modules of 4 branches
  (1x1; 1x1 -> 3x3; 1x1 -> 5x5; pool -> 1x1) whose 4 outputs all feed the 4
  first convolutions of the next module (the concat): 57 nodes.

For each graph it prints the PBQP time and whether RN was used, the ILP time,
status and gap, the ILP size and the relative cost difference
(PBQP - ILP) / ILP. Stdout gets a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _shared import log, print_table, write_result

from nnperf.optimize.select import CostGraph, ilp_size, solve_ilp, solve_pbqp

LAYOUTS = 5
"""Data layouts the options read and write (CHW, HWC, CHWc4, CHWc8, HWCc4, say)."""

Pairs = list[tuple[int, int]]


def resnet152() -> tuple[int, Pairs]:
    n = 155
    return n, [(i, i + 1) for i in range(n - 1)] + [(i, i + 3) for i in range(0, n - 3, 3)]


def densenet121() -> tuple[int, Pairs]:
    pairs: Pairs = []
    block_input = 0  # the stem convolution
    count = 1
    for layers in (6, 12, 24, 16):
        outputs = [block_input]
        for _ in range(layers):
            one, three = count, count + 1
            count += 2
            pairs += [(o, one) for o in outputs] + [(one, three)]
            outputs.append(three)
        pairs += [(o, count) for o in outputs]  # the transition (after the last block: the classifier's input)
        block_input = count
        count += 1
    return count, pairs


def googlenet() -> tuple[int, Pairs]:
    pairs: Pairs = [(0, 1), (1, 2)]
    outputs = [2]
    count = 3
    for _ in range(9):
        b1, b2a, b2b, b3a, b3b, b4 = range(count, count + 6)
        count += 6
        pairs += [(o, i) for o in outputs for i in (b1, b2a, b3a, b4)] + [(b2a, b2b), (b3a, b3b)]
        outputs = [b1, b2b, b3b, b4]
    return count, pairs


NETWORKS: dict[str, Callable[[], tuple[int, Pairs]]] = {
    "resnet152": resnet152, "densenet121": densenet121, "googlenet": googlenet}


def random_graph(n: int, pairs: Pairs, seed: int) -> CostGraph:
    """Random primitive and transformation costs (s) on the network's convolution graph."""
    rng = np.random.default_rng(seed)
    scale_s = rng.lognormal(np.log(1e-3), 1.0, n)  # each convolution's typical time
    costs = {}
    layout_in, layout_out = [], []
    for i in range(n):
        k = int(rng.integers(10, 21))
        costs[f"conv{i}"] = scale_s[i] * rng.lognormal(0.0, 0.5, k)
        layout_in.append(rng.integers(0, LAYOUTS, k))
        layout_out.append(rng.integers(0, LAYOUTS, k))
    edges = []
    for u, v in pairs:
        # transformation between every pair of layouts for u's output tensor: 0 on the diagonal
        transform = rng.uniform(0.02, 0.2, (LAYOUTS, LAYOUTS)) * scale_s[u]
        np.fill_diagonal(transform, 0.0)
        edges.append((f"conv{u}", f"conv{v}", transform[np.ix_(layout_out[u], layout_in[v])]))
    return CostGraph.from_costs(costs, edges)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--time-limit", type=float, default=60.0, help="ILP time limit (s)")
    parser.add_argument("--json", type=Path, default=None, help="also write the result file here "
                        "(bench/results/selection/select_solvers.json)")
    args = parser.parse_args()
    rows = []
    for name in args.networks:
        n, pairs = NETWORKS[name]()
        for seed in args.seeds:
            graph = random_graph(n, pairs, seed)
            solve_pbqp(graph)  # the first call pays NumPy's warm-up
            pbqp = solve_pbqp(graph)
            ilp = solve_ilp(graph, time_limit_s=args.time_limit)
            binaries, pair_variables, _ = ilp_size(graph)
            relative = (pbqp.cost_s - ilp.cost_s) / ilp.cost_s
            rows.append({"network": name, "seed": seed, "nodes": len(graph.nodes), "edges": len(graph.edges),
                         "pbqp_s": pbqp.solve_s, "rn_used": pbqp.heuristic_used, "ilp_s": ilp.solve_s,
                         "ilp_status": ilp.status, "mip_gap": ilp.mip_gap, "ilp_binaries": binaries,
                         "ilp_pairs": pair_variables, "relative_difference": relative})
            log(f"{name} seed {seed}: PBQP {pbqp.solve_s * 1e3:.1f} ms, ILP {ilp.solve_s * 1e3:.0f} ms")
    print_table(["network", "seed", "nodes", "edges", "PBQP (ms)", "RN used", "ILP (ms)", "ILP status", "MIP gap",
                 "ILP binaries / pairs", "(PBQP - ILP) / ILP"],
                [[r["network"], r["seed"], r["nodes"], r["edges"], f"{r['pbqp_s'] * 1e3:.1f}",
                  "yes" if r["rn_used"] else "no", f"{r['ilp_s'] * 1e3:.0f}", r["ilp_status"], f"{r['mip_gap']:.2g}",
                  f"{r['ilp_binaries']} / {r['ilp_pairs']}", f"{r['relative_difference']:+.2e}"] for r in rows])
    print()
    print_table(["network", "median PBQP (ms)", "median ILP (ms)", "largest (PBQP - ILP) / ILP"],
                [[name, f"{statistics.median(r['pbqp_s'] for r in mine) * 1e3:.1f}",
                  f"{statistics.median(r['ilp_s'] for r in mine) * 1e3:.0f}",
                  f"{max(r['relative_difference'] for r in mine):+.2e}"]
                 for name in args.networks for mine in [[r for r in rows if r["network"] == name]]])
    if args.json:
        write_result(args.json, method="selection", concern="PBQP against the exact ILP", values={"rows": rows})


if __name__ == "__main__":
    main()
