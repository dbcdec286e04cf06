"""How in-program timing judges a selection against the default, next to plain rounds: the best uniform choice (d)
over torch's default (c), each way, back to back.

Run: .venv/bin/python bench/in_program_bias.py mobilenet_v2 [--db networks.db] [--repeats 6]
     [--rounds 40]

The network's profiled graph is built as bench/select_networks.py builds it (the store's primitive dataset and the
other layers' times in each layout, from --db); (d) is its cheapest uniform choice. Each repeat times (d) and (c)
twice, one right after the other: in the program as the refinement times its selections
(``nnperf.optimize.select.time_in_program``: one pass of each per round, every convolution's primitive call and
layout move timed inside the forward pass, --rounds rounds) and as a user runs them
(``compare_selections``: whole programs in interleaved blocks of at least 20 ms). Stdout: each repeat's two median
per-round ratios (d) / (c) with their 95% intervals and the difference, then the median difference and how many
repeats put (d) dearer in the program.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from select_networks import layer_times, network_of, solved

from nnperf.api import find_primitive_system
from nnperf.campaign import load_primitive_dataset
from nnperf.measure import host_info
from nnperf.optimize.select import (
    compare_selections,
    default_selection,
    profiled_costs,
    time_in_program,
    uniform_selections,
)
from nnperf.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("network", help="a zoo name, an .onnx file or an architecture of bench/architectures.py")
    parser.add_argument("--db", type=Path, default=Path("networks.db"), help="the store of the networks' profile")
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=40, help="in-program rounds per repeat")
    args = parser.parse_args()
    args.threads, args.layer_costs = 1, True
    network = network_of(args.network)
    with Store(args.db, create=False) as store:
        dataset = load_primitive_dataset(store, find_primitive_system(store, None, 1).id)
    layers_s, _ = layer_times(network, args)
    graph = solved(network, lambda: profiled_costs(dataset, network, measure_missing=True).with_layers(layers_s)).graph
    uniform = uniform_selections(graph)
    best = min(uniform, key=lambda p: uniform[p].cost_s)
    programs = {"d": uniform[best].chosen, "c": default_selection(graph).chosen}
    print(f"{host_info().cpu_model}, 1 thread, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {network.name}, "
          f"(d) = {best} everywhere\n")
    print("| repeat | (d) / (c) in the program | (d) / (c) in plain rounds | difference |")
    print("|---|---|---|---|")
    differences = []
    for repeat in range(args.repeats):
        timed = time_in_program(network, programs, rounds=args.rounds, seed=repeat)
        inside = timed["d"].ratio(timed["c"])
        plain = compare_selections(network, programs, seed=repeat).ratio("d", "c")
        differences.append(inside.median - plain.median)
        print(f"| {repeat} | {inside.median:.4f} [{inside.ci_low:.4f}, {inside.ci_high:.4f}] | {plain.median:.4f} "
              f"[{plain.ci_low:.4f}, {plain.ci_high:.4f}] | {differences[-1]:+.4f} |", flush=True)
    print(f"\nmedian difference {statistics.median(differences):+.4f}; (d) dearer in the program in "
          f"{sum(d > 0 for d in differences)} of {len(differences)} repeats")


if __name__ == "__main__":
    main()
