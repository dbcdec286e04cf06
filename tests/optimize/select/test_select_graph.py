"""The cost graph of primitive selection: validation, merging of parallel edges, total_cost, Selection."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nnperf.errors import NnperfError
from nnperf.optimize.select import CostEdge, CostGraph, CostGraphError, CostNode, Selection, solve_pbqp, total_cost

INF = math.inf


def two_nodes(matrix: object = ((0.0, 2.0), (3.0, 0.0))) -> CostGraph:
    return CostGraph((CostNode("a", ("chw", "hwc"), (1.0, 2.0)), CostNode("b", ("chw", "hwc"), (4.0, 1.0))),
                     (CostEdge("a", "b", matrix),))  # type: ignore[arg-type]


def test_total_cost_adds_node_and_edge_entries() -> None:
    graph = two_nodes()
    assert total_cost(graph, {"a": 0, "b": 0}) == 1.0 + 4.0 + 0.0
    assert total_cost(graph, {"a": 0, "b": 1}) == 1.0 + 1.0 + 2.0
    assert total_cost(graph, {"a": 1, "b": 0}) == 2.0 + 4.0 + 3.0
    assert total_cost(graph, {"b": 1, "a": 1}) == 2.0 + 1.0 + 0.0


def test_inf_is_allowed_and_makes_the_total_inf() -> None:
    graph = two_nodes(((0.0, INF), (3.0, 0.0)))
    assert total_cost(graph, {"a": 0, "b": 1}) == INF
    assert total_cost(graph, {"a": 0, "b": 0}) == 5.0


def test_parallel_edges_are_summed_and_reverse_ones_transposed() -> None:
    nodes = (CostNode("a", ("x", "y", "z")), CostNode("b", ("x", "y")))
    forward = np.arange(6.0).reshape(3, 2)
    backward = np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])  # b x a
    graph = CostGraph(nodes, (CostEdge("a", "b", forward), CostEdge("b", "a", backward), CostEdge("a", "b", forward)))
    assert len(graph.edges) == 1
    edge = graph.edges[0]
    assert (edge.source, edge.target) == ("a", "b")
    assert np.array_equal(np.array(edge.costs_s), 2 * forward + backward.T)
    # a=2 (z), b=1 (y): forward[2, 1] twice plus backward[1, 2]
    assert total_cost(graph, {"a": 2, "b": 1}) == 2 * 5.0 + 60.0


def test_stored_edges_run_from_the_earlier_node() -> None:
    nodes = (CostNode("first", ("p",), (1.0,)), CostNode("second", ("p", "q"), (1.0, 2.0)))
    graph = CostGraph(nodes, (CostEdge("second", "first", ((7.0,), (8.0,))),))
    assert (graph.edges[0].source, graph.edges[0].target) == ("first", "second")
    assert graph.edges[0].costs_s == ((7.0, 8.0),)


def test_from_costs_labels_and_n_states() -> None:
    graph = CostGraph.from_costs({"a": [1.0, INF, 2.0], "b": np.array([0.5, 0.25])},
                                 [("a", "b", np.zeros((3, 2)))], options={"b": ["direct", "winograd"]})
    assert graph.names == ("a", "b")
    assert graph.nodes[0].options == ("0", "1", "2")
    assert graph.nodes[1].options == ("direct", "winograd")
    assert graph.n_states() == 2 * 2  # the inf option of a does not count
    assert graph.index("b") == 1


def test_default_costs_are_zero() -> None:
    assert CostNode("a", ("x", "y")).costs_s == (0.0, 0.0)


def test_graph_is_frozen_and_hashable() -> None:
    graph = two_nodes()
    assert hash(graph) == hash(two_nodes())
    assert graph == two_nodes()
    with pytest.raises(AttributeError):
        graph.nodes = ()  # type: ignore[misc]


GOOD_A = CostNode("a", ("x", "y"), (1.0, 2.0))
GOOD_B = CostNode("b", ("x",), (1.0,))


@pytest.mark.parametrize(("build", "message"), [
    (lambda: CostGraph(()), "at least one node"),
    (lambda: CostGraph((GOOD_A, CostNode("a", ("x",), (1.0,)))), "'a' appears twice"),
    (lambda: CostGraph((GOOD_A,), (CostEdge("a", "c", ((0.0,), (0.0,))),)), "unknown node 'c'"),
    (lambda: CostGraph((GOOD_A, GOOD_B), (CostEdge("a", "b", ((0.0, 0.0), (0.0, 0.0))),)),
     r"shape \(2, 2\), expected \(2, 1\)"),
    (lambda: CostGraph((GOOD_A, GOOD_B), (CostEdge("b", "a", ((0.0,), (0.0,))),)), r"expected \(1, 2\)"),
    (lambda: CostEdge("a", "a", ((0.0,),)), "self-loop"),
    (lambda: CostEdge("a", "b", ((0.0, -1.0),)), "negative cost"),
    (lambda: CostEdge("a", "b", ((0.0, math.nan),)), "NaN"),
    (lambda: CostEdge("a", "b", (0.0, 1.0)), "must be a matrix"),
    (lambda: CostEdge("a", "b", (("x", 1.0),)), "not an array of numbers"),
    (lambda: CostNode("a", ("x", "y"), (1.0, math.nan)), "NaN"),
    (lambda: CostNode("a", ("x", "y"), (1.0, -2.0)), "negative cost"),
    (lambda: CostNode("a", ("x", "y"), (-INF, 1.0)), "negative cost"),
    (lambda: CostNode("a", ("x", "y"), (INF, INF)), "every option costs inf"),
    (lambda: CostNode("a", ("x", "y"), (1.0,)), "2 options but 1 costs"),
    (lambda: CostNode("a", (), ()), "has no options"),
    (lambda: CostNode("a", ("x", "x"), (1.0, 2.0)), "x appear more than once"),
    (lambda: CostNode("a", "xy", (1.0, 2.0)), "not one string"),
    (lambda: CostNode("", ("x",), (1.0,)), "non-empty name"),
    (lambda: CostGraph(("a",)), "not a CostNode"),  # type: ignore[arg-type]
    (lambda: CostGraph.from_costs({"a": [1.0]}, options={"b": ["x"]}), "options: for unknown node.s. b"),
])
def test_bad_graphs_are_refused(build: object, message: str) -> None:
    with pytest.raises(CostGraphError, match=message) as caught:
        build()  # type: ignore[operator]
    assert isinstance(caught.value, NnperfError)


@pytest.mark.parametrize(("choice", "message"), [
    ({"a": 0}, "no option for node"),
    ({"a": 0, "b": 0, "c": 0}, "unknown node 'c'"),
    ({"a": 2, "b": 0}, r"not an option index in \[0, 2\)"),
    ({"a": -1, "b": 0}, "not an option index"),
    ({"a": True, "b": 0}, "not an option index"),
])
def test_total_cost_refuses_bad_choices(choice: dict[str, int], message: str) -> None:
    with pytest.raises(CostGraphError, match=message):
        total_cost(two_nodes(), choice)


def test_selection_maps_names_to_indices_and_labels() -> None:
    selection = solve_pbqp(two_nodes())
    assert isinstance(selection, Selection)
    # (chw, chw) 1 + 4 + 0 = 5, (chw, hwc) 1 + 1 + 2 = 4, (hwc, chw) 2 + 4 + 3 = 9, (hwc, hwc) 2 + 1 + 0 = 3
    assert selection.choice == {"a": 1, "b": 1}
    assert selection.chosen == {"a": "hwc", "b": "hwc"}
    assert selection.cost_s == 2.0 + 1.0 + 0.0
