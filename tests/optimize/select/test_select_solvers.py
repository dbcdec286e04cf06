"""The selection solvers: PBQP (R0/RI/RII exact, RN heuristic), ILP (HiGHS) and exhaustive search, checked on
hand-computed graphs and against each other on random ones; every registered solver passes the shared cases."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest

from nnperf.errors import NnperfError
from nnperf.optimize.select import (
    SOLVERS,
    CostGraph,
    InfeasibleSelectionError,
    SearchSpaceTooLargeError,
    Selection,
    SolverLimitError,
    SolverOptionError,
    ilp_size,
    solve,
    solve_exhaustive,
    solve_ilp,
    solve_pbqp,
    solver_names,
    total_cost,
)
from nnperf.registry import UnknownPluginError

INF = math.inf
ALL = ("pbqp", "ilp", "exhaustive")


def chain() -> CostGraph:
    return CostGraph.from_costs({"a": [1.0, 3.5], "b": [2.0, 1.0], "c": [4.0, 1.0]},
                                [("a", "b", [[0.0, 2.0], [2.0, 0.0]]), ("b", "c", [[0.0, 3.0], [3.0, 0.0]])])


def diamond() -> CostGraph:
    """s branches to l and r, which join at t; a layout change costs 2 on any edge."""
    change = [[0.0, 2.0], [2.0, 0.0]]
    return CostGraph.from_costs({"s": [1.0, 1.5], "l": [1.0, 2.0], "r": [1.0, 2.0], "t": [5.0, 1.0]},
                                [("s", "l", change), ("s", "r", change), ("l", "t", change), ("r", "t", change)],
                                options={n: ["A", "B"] for n in "slrt"})


def random_graph(seed: int, kind: str, n: int, k: int, p_inf: float = 0.0) -> CostGraph:
    rng = np.random.default_rng(seed)
    costs = {}
    for i in range(n):
        vector = rng.uniform(0.0, 1e-3, k)
        vector[rng.uniform(size=k) < p_inf] = INF
        if not np.isfinite(vector).any():
            vector[0] = 1e-3
        costs[f"n{i}"] = vector
    if kind == "chain":
        pairs = [(i, i + 1) for i in range(n - 1)]
    elif kind == "tree":
        pairs = [(int(rng.integers(0, i)), i) for i in range(1, n)]
    elif kind == "diamonds":  # a chain of branch-join blocks: 0 -> (1, 2) -> 3 -> (4, 5) -> 6 ...
        pairs = []
        for top in range(0, n - 3, 3):
            pairs += [(top, top + 1), (top, top + 2), (top + 1, top + 3), (top + 2, top + 3)]
    elif kind == "dense":
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.uniform() < 0.7]
    else:
        raise AssertionError(kind)
    edges = []
    for i, j in pairs:
        matrix = rng.uniform(0.0, 1e-3, (k, k))
        matrix[rng.uniform(size=(k, k)) < p_inf] = INF
        edges.append((f"n{i}", f"n{j}", matrix))
    return CostGraph.from_costs(costs, edges)


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


# -- every registered solver -------------------------------------------------------------------------------


def test_the_registry_knows_the_three_solvers() -> None:
    assert solver_names() == ["exhaustive", "ilp", "pbqp"]
    assert list(SOLVERS) == ["exhaustive", "ilp", "pbqp"]


@pytest.mark.parametrize("solver", ALL)
def test_chain_optimum_by_hand(solver: str) -> None:
    selection = solve(chain(), solver)
    # a=0, b=1, c=1: nodes 1 + 1 + 1, a-b changes layout (2), b-c keeps it (0); every other choice costs >= 5.5
    assert selection.choice == {"a": 0, "b": 1, "c": 1}
    assert selection.cost_s == 1.0 + 1.0 + 1.0 + 2.0 + 0.0
    assert selection.optimal
    assert selection.solver == solver
    assert selection.solve_s > 0


@pytest.mark.parametrize("solver", ALL)
def test_diamond_beats_the_greedy_choice(solver: str) -> None:
    graph = diamond()
    greedy = {name: int(np.argmin(node.costs_s)) for name, node in zip(graph.names, graph.nodes, strict=True)}
    assert greedy == {"s": 0, "l": 0, "r": 0, "t": 1}
    assert total_cost(graph, greedy) == 1.0 + 1.0 + 1.0 + 1.0 + 2.0 + 2.0  # l-t and r-t change layout
    selection = solve(graph, solver)
    assert selection.chosen == {"s": "B", "l": "B", "r": "B", "t": "B"}
    assert selection.cost_s == 1.5 + 2.0 + 2.0 + 1.0
    assert selection.optimal


@pytest.mark.parametrize("solver", ALL)
def test_forbidden_options_are_never_chosen(solver: str) -> None:
    # b's option 0 would be cheapest by far, and free with a's option 0, but it is forbidden
    graph = CostGraph.from_costs({"a": [1.0, 1.0], "b": [INF, 5.0, 6.0]},
                                 [("a", "b", [[0.0, 1.0, 0.5], [0.0, 2.0, 2.0]])])
    selection = solve(graph, solver)
    assert selection.choice == {"a": 0, "b": 1}
    assert selection.cost_s == 1.0 + 5.0 + 1.0


def forced(kind: str) -> tuple[CostGraph, dict[str, int]]:
    """Only one combination of finite cost (every edge inf but for its pair), on a chain or a K4."""
    rng = np.random.default_rng(7)
    target = {f"n{i}": int(o) for i, o in enumerate((2, 0, 1, 2))}
    pairs = [(0, 1), (1, 2), (2, 3)] if kind == "chain" else [(i, j) for i in range(4) for j in range(i + 1, 4)]
    edges = []
    for i, j in pairs:
        matrix = np.full((3, 3), INF)
        matrix[target[f"n{i}"], target[f"n{j}"]] = rng.uniform(1.0, 2.0)
        edges.append((f"n{i}", f"n{j}", matrix))
    return CostGraph.from_costs({name: rng.uniform(0.0, 1.0, 3) for name in target}, edges), target


@pytest.mark.parametrize("solver", ALL)
@pytest.mark.parametrize("kind", ["chain", "complete"])
def test_the_only_finite_combination_is_found(solver: str, kind: str) -> None:
    graph, target = forced(kind)
    selection = solve(graph, solver)
    assert selection.choice == target
    assert selection.cost_s == total_cost(graph, target) < INF


def triangle_two_colours() -> CostGraph:
    """Neighbours must differ, two options, three mutual neighbours: no finite combination."""
    differ = [[INF, 0.0], [0.0, INF]]
    return CostGraph.from_costs({"a": [1.0, 1.0], "b": [1.0, 1.0], "c": [1.0, 1.0]},
                                [("a", "b", differ), ("b", "c", differ), ("a", "c", differ)])


def k4_three_colours() -> CostGraph:
    differ = np.where(np.eye(3) == 1, INF, 0.0)
    return CostGraph.from_costs({f"n{i}": [0.0, 0.0, 0.0] for i in range(4)},
                                [(f"n{i}", f"n{j}", differ) for i in range(4) for j in range(i + 1, 4)])


@pytest.mark.parametrize("solver", ALL)
@pytest.mark.parametrize("graph", [triangle_two_colours(), k4_three_colours(),
                                   CostGraph.from_costs({"a": [1.0], "b": [1.0, 2.0]}, [("a", "b", [[INF, INF]])])],
                         ids=["triangle", "k4", "edge-forbids-all"])
def test_infeasible_graphs_raise(solver: str, graph: CostGraph) -> None:
    with pytest.raises(InfeasibleSelectionError, match="finite") as caught:
        solve(graph, solver)
    assert isinstance(caught.value, NnperfError)


def test_pbqp_proves_infeasibility_without_rn_and_says_when_it_cannot() -> None:
    with pytest.raises(InfeasibleSelectionError) as caught:
        solve_pbqp(triangle_two_colours())  # RII reduces a triangle exactly
    assert caught.value.proved
    with pytest.raises(InfeasibleSelectionError, match="solver='ilp'") as caught:
        solve_pbqp(k4_three_colours())  # every degree is 3: RN
    assert not caught.value.proved


@pytest.mark.parametrize("solver", ALL)
def test_one_node_without_edges(solver: str) -> None:
    graph = CostGraph.from_costs({"only": [3.0, INF, 2.0, 2.5]})
    selection = solve(graph, solver)
    assert selection.choice == {"only": 2}
    assert selection.cost_s == 2.0


@pytest.mark.parametrize("solver", ALL)
def test_ties_go_to_the_first_option(solver: str) -> None:
    graph = CostGraph.from_costs({"a": [1.0, 1.0], "b": [2.0, 2.0]}, [("a", "b", [[0.0, 0.0], [0.0, 0.0]])])
    assert solve(graph, solver).choice == {"a": 0, "b": 0}


# -- against each other on random graphs ----------------------------------------------------------------------

CASES = [(seed, kind, p_inf) for seed in range(30) for kind in ("chain", "tree", "diamonds", "dense")
         for p_inf in (0.0, 0.25)]


@pytest.mark.parametrize(("seed", "kind", "p_inf"), CASES)
def test_random_graphs_ilp_is_exact_and_pbqp_exact_without_rn(seed: int, kind: str, p_inf: float) -> None:
    rng = np.random.default_rng(1000 + seed)
    graph = random_graph(seed, kind, n=int(rng.integers(2, 8)), k=int(rng.integers(1, 5)), p_inf=p_inf)
    try:
        best = solve_exhaustive(graph)
    except InfeasibleSelectionError:
        for solver in (solve_ilp, solve_pbqp):
            with pytest.raises(InfeasibleSelectionError):
                solver(graph)
        return
    ilp = solve_ilp(graph)
    assert ilp.optimal and ilp.status == "optimal" and ilp.mip_gap is not None and ilp.mip_gap < 1e-9
    assert close(ilp.cost_s, best.cost_s)
    assert close(total_cost(graph, ilp.choice), ilp.cost_s)
    try:
        pbqp = solve_pbqp(graph)
    except InfeasibleSelectionError as error:  # RN went to a dead end; it must say it proved nothing
        assert not error.proved
        return
    assert pbqp.cost_s >= best.cost_s * (1 - 1e-12)
    assert pbqp.optimal is not pbqp.heuristic_used
    if not pbqp.heuristic_used:
        assert close(pbqp.cost_s, best.cost_s)
    if kind in ("chain", "tree", "diamonds"):  # degree-2 reducible: RN is never needed
        assert not pbqp.heuristic_used


def test_random_dense_graphs_need_rn_and_pbqp_stays_close() -> None:
    ratios = []
    for seed in range(20):
        graph = random_graph(seed, "dense", n=7, k=3)
        pbqp, best = solve_pbqp(graph), solve_exhaustive(graph)
        ratios.append(pbqp.cost_s / best.cost_s)
    assert min(ratios) >= 1 - 1e-12
    assert max(ratios) < 1.5  # RN is a heuristic, but a sensible one


def test_k5_needs_rn() -> None:
    rng = np.random.default_rng(5)
    graph = CostGraph.from_costs({f"n{i}": rng.uniform(0, 1, 3) for i in range(5)},
                                 [(f"n{i}", f"n{j}", rng.uniform(0, 1, (3, 3))) for i in range(5)
                                  for j in range(i + 1, 5)])
    pbqp = solve_pbqp(graph)
    assert pbqp.heuristic_used and not pbqp.optimal and pbqp.status == "heuristic"
    assert pbqp.cost_s >= solve_exhaustive(graph).cost_s * (1 - 1e-12)


def test_constant_edges_do_not_force_rn() -> None:
    # K4 whose edges are all constant: they decouple the nodes, so PBQP is exact
    graph = CostGraph.from_costs({f"n{i}": [float(i), 1.0] for i in range(4)},
                                 [(f"n{i}", f"n{j}", [[0.5, 0.5], [0.5, 0.5]]) for i in range(4)
                                  for j in range(i + 1, 4)])
    pbqp = solve_pbqp(graph)
    assert not pbqp.heuristic_used
    assert pbqp.choice == {"n0": 0, "n1": 0, "n2": 1, "n3": 1}
    assert pbqp.cost_s == 0.0 + 1.0 + 1.0 + 1.0 + 6 * 0.5


# -- sizes and speed ----------------------------------------------------------------------------------------


def resnet_like(n: int = 155, k: int = 15, layouts: int = 5, seed: int = 0) -> CostGraph:
    """A chain with a skip edge every 3 nodes; edges are layout transformations (0 where layouts match)."""
    rng = np.random.default_rng(seed)
    out_layout = rng.integers(0, layouts, (n, k))
    in_layout = rng.integers(0, layouts, (n, k))
    pairs = [(i, i + 1) for i in range(n - 1)] + [(i, i + 3) for i in range(0, n - 3, 3)]
    edges = []
    for u, v in pairs:
        transform = rng.uniform(1e-5, 1e-4, (layouts, layouts))
        np.fill_diagonal(transform, 0.0)
        edges.append((f"c{u}", f"c{v}", transform[np.ix_(out_layout[u], in_layout[v])]))
    return CostGraph.from_costs({f"c{i}": rng.uniform(1e-4, 1e-3, k) for i in range(n)}, edges)


def test_resnet152_sized_graph_pbqp_is_exact_and_fast() -> None:
    graph = resnet_like()
    assert len(graph.nodes) == 155 and len(graph.edges) == 154 + 51
    times = []
    for _ in range(3):
        start = time.perf_counter()
        pbqp = solve_pbqp(graph)
        times.append(time.perf_counter() - start)
    assert min(times) < 1.0  # a few ms on an idle machine; generous for a loaded one
    assert not pbqp.heuristic_used and pbqp.optimal
    ilp = solve_ilp(graph)
    assert ilp.optimal
    assert close(pbqp.cost_s, ilp.cost_s)


def test_ilp_compresses_layout_edges() -> None:
    graph = resnet_like(n=10, k=15, layouts=3)
    binaries, pairs, _ = ilp_size(graph)
    assert binaries == 10 * 15
    assert pairs <= len(graph.edges) * 3 * 3  # layouts x layouts, not 15 x 15, per edge


def test_ilp_time_limit_is_flagged_or_raises() -> None:
    rng = np.random.default_rng(0)
    n, k = 20, 5  # K20: 190 edges, about 4750 pair variables; no way to prove optimality in a millisecond
    graph = CostGraph.from_costs({f"n{i}": rng.uniform(0, 1, k) for i in range(n)},
                                 [(f"n{i}", f"n{j}", rng.uniform(0, 1, (k, k))) for i in range(n)
                                  for j in range(i + 1, n)])
    try:
        selection = solve_ilp(graph, time_limit_s=1e-3)
    except SolverLimitError as error:
        assert "time limit of 0.001 s" in str(error)
    else:
        assert not selection.optimal and selection.status == "time limit"
        assert selection.mip_gap is not None and selection.mip_gap > 0


def test_ilp_time_limit_with_a_solution_returns_it_unproved(monkeypatch: pytest.MonkeyPatch) -> None:
    from nnperf.optimize.select import _ilp

    real = _ilp.milp

    def stopped(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        result.status, result.mip_gap = 1, 0.25  # as HiGHS reports a time limit with an incumbent
        return result

    monkeypatch.setattr(_ilp, "milp", stopped)
    selection = solve_ilp(chain())
    assert (selection.optimal, selection.status, selection.mip_gap) == (False, "time limit", 0.25)
    assert selection.cost_s == 5.0


# -- errors --------------------------------------------------------------------------------------------------


def test_exhaustive_refuses_beyond_max_states() -> None:
    graph = CostGraph.from_costs({name: np.ones(10) for name in "abc"})
    assert solve_exhaustive(graph, max_states=1000).cost_s == 3.0
    with pytest.raises(SearchSpaceTooLargeError, match="1,000 combinations refused: more than max_states=999"):
        solve_exhaustive(graph, max_states=999)
    with pytest.raises(SearchSpaceTooLargeError):
        solve(CostGraph.from_costs({f"n{i}": np.ones(10) for i in range(7)}), "exhaustive")


def test_unknown_solver_lists_the_known_ones() -> None:
    with pytest.raises(UnknownPluginError, match="unknown selection solver 'greedy'; known: exhaustive, ilp, pbqp"):
        solve(chain(), "greedy")


@pytest.mark.parametrize(("solver", "options", "message"), [
    ("pbqp", {"time_limit_s": 1.0}, "'pbqp' does not take option.s. time_limit_s; it takes: none"),
    ("exhaustive", {"limit": 3}, "it takes: max_states"),
    ("ilp", {"time_limit_s": 0.0}, "time_limit_s: must be a positive number"),
    ("ilp", {"time_limit_s": INF}, "time_limit_s: must be a positive number"),
    ("ilp", {"time_limit_s": "5"}, "time_limit_s: must be a positive number"),
    ("exhaustive", {"max_states": 0}, "max_states: must be a positive integer"),
    ("exhaustive", {"max_states": 1.5}, "max_states: must be a positive integer"),
])
def test_bad_solver_options(solver: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(SolverOptionError, match=message):
        solve(chain(), solver, **options)


def test_options_reach_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    from nnperf.optimize.select import _ilp

    real, time_limits = _ilp.milp, []

    def spied(*args: Any, **kwargs: Any) -> Any:
        time_limits.append(kwargs["options"]["time_limit"])
        return real(*args, **kwargs)

    monkeypatch.setattr(_ilp, "milp", spied)
    selection = solve(chain(), "ilp", time_limit_s=7.5)
    assert isinstance(selection, Selection) and selection.optimal
    assert time_limits == [7.5]  # HiGHS got the option, not solve_ilp's default of 60 s
    # the chain has 2 x 2 x 2 = 8 combinations: max_states decides whether exhaustive search may run them
    assert solve(chain(), "exhaustive", max_states=8).cost_s == 5.0
    with pytest.raises(SearchSpaceTooLargeError, match="8 combinations refused: more than max_states=7"):
        solve(chain(), "exhaustive", max_states=7)
