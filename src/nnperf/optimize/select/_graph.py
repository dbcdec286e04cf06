"""The cost graph of primitive selection, its result and its errors (Mulder et al. 2.1, Fig. 1).

Every node (a convolution) has options (primitives) with a cost vector
$\\lambda^N$ (s); every edge carries a matrix $\\lambda^E$ (s) of the layout
transformation between an option of one end and an option of the other. A
selection picks one option per node; its cost is the sum of the chosen node
costs and of the chosen edge entries. ``math.inf`` marks what is forbidden (an
option a primitive cannot run, a transformation that does not exist).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from nnperf.errors import NnperfError

FloatArray = npt.NDArray[np.float64]


class SelectionError(NnperfError):
    """Base class of what primitive selection raises."""


class CostGraphError(SelectionError):
    """A cost graph that breaks a rule (unknown node, wrong matrix shape, NaN or negative cost, ...)."""


class InfeasibleSelectionError(SelectionError):
    """No combination of options has a finite cost.

    ``proved`` is False when a heuristic (PBQP's RN step) found none: a finite
    combination may still exist, and an exact solver (``"ilp"``) can tell.
    """

    def __init__(self, message: str, proved: bool = True) -> None:
        super().__init__(message)
        self.proved = proved


class SearchSpaceTooLargeError(SelectionError):
    """Exhaustive search refused: more combinations than its ``max_states``."""


class SolverLimitError(SelectionError):
    """A solver stopped at its limit (time) before it found any finite selection."""


class SolverOptionError(SelectionError):
    """An option a solver does not take, or a bad value for one (a time limit <= 0)."""


def _cost_array(what: str, values: Any, ndim: int) -> FloatArray:
    """``values`` as a float array of ``ndim`` dimensions whose entries are >= 0 (``inf`` allowed)."""
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CostGraphError(f"{what}: not an array of numbers ({exc})") from None
    if array.ndim != ndim:
        shape = "a vector" if ndim == 1 else "a matrix"
        raise CostGraphError(f"{what}: must be {shape}, got an array of shape {array.shape}")
    if np.isnan(array).any():
        raise CostGraphError(f"{what}: contains NaN")
    if (array < 0).any():
        raise CostGraphError(f"{what}: contains a negative cost ({array.min()!r} s); costs are >= 0 (inf forbids)")
    return array


@dataclass(frozen=True)
class CostNode:
    """A node (a convolution): its option labels and their costs (s, ``inf`` = forbidden).

    ``costs_s`` defaults to zeros. Stored as tuples; at least one option must be finite.
    """

    name: str
    options: tuple[str, ...]
    costs_s: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise CostGraphError(f"a node needs a non-empty name, got {self.name!r}")
        if isinstance(self.options, str):
            raise CostGraphError(f"node {self.name!r}: options must be a sequence of labels, not one string")
        options = tuple(self.options)
        if not options:
            raise CostGraphError(f"node {self.name!r}: has no options")
        for label in options:
            if not isinstance(label, str):
                raise CostGraphError(f"node {self.name!r}: option label {label!r} is not a string")
        if len(set(options)) != len(options):
            twice = sorted({o for o in options if options.count(o) > 1})
            raise CostGraphError(f"node {self.name!r}: option label(s) {', '.join(twice)} appear more than once")
        raw = np.zeros(len(options)) if len(self.costs_s) == 0 else self.costs_s
        costs = _cost_array(f"costs_s of node {self.name!r}", raw, 1)
        if costs.size != len(options):
            raise CostGraphError(f"node {self.name!r}: {len(options)} options but {costs.size} costs")
        if not np.isfinite(costs).any():
            raise CostGraphError(f"node {self.name!r}: every option costs inf; at least one must be finite")
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "costs_s", tuple(costs.tolist()))


@dataclass(frozen=True)
class CostEdge:
    """The transformation costs between two nodes (s, ``inf`` = forbidden).

    ``costs_s[i][j]`` is paid when ``source`` takes its option ``i`` and
    ``target`` its option ``j``. Direction only orders the matrix: the cost is
    the same whichever way the data flows.
    """

    source: str
    target: str
    costs_s: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        if self.source == self.target:
            raise CostGraphError(f"edge {self.source!r} -> {self.target!r}: a self-loop")
        costs = _cost_array(f"costs_s of edge {self.source!r} -> {self.target!r}", self.costs_s, 2)
        object.__setattr__(self, "costs_s", tuple(tuple(row) for row in costs.tolist()))

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.costs_s), len(self.costs_s[0]) if self.costs_s else 0


@dataclass(frozen=True, eq=False)
class _Dense:
    """The graph as arrays: node cost vectors and edge matrices keyed by node indices (u < v)."""

    vectors: tuple[FloatArray, ...]
    matrices: tuple[tuple[int, int, FloatArray], ...]


@dataclass(frozen=True)
class CostGraph:
    """Nodes with option costs and edges with transformation costs; the input of every solver.

    ``nodes`` keep the caller's order (a topological order of the network is
    natural); it breaks ties between equally good selections and orients the
    stored edges. Branches and joins are fine: any undirected simple graph
    (after merging) is. The graph is normalised on construction: one edge per
    pair of nodes, its ``source`` the earlier node, parallel edges (either
    direction, the reverse one transposed) summed. An edge naming an unknown
    node, a matrix whose shape is not (options of source, options of target), a
    repeated node name and what :class:`CostNode` and :class:`CostEdge` refuse
    raise :class:`CostGraphError`.
    """

    nodes: tuple[CostNode, ...]
    edges: tuple[CostEdge, ...] = ()

    def __post_init__(self) -> None:
        nodes = tuple(self.nodes)
        if not nodes:
            raise CostGraphError("a cost graph needs at least one node")
        index: dict[str, int] = {}
        for i, node in enumerate(nodes):
            if not isinstance(node, CostNode):
                raise CostGraphError(f"nodes: item {i} is not a CostNode, got {type(node).__name__}")
            if node.name in index:
                raise CostGraphError(f"node name {node.name!r} appears twice")
            index[node.name] = i
        merged: dict[tuple[int, int], FloatArray] = {}
        for k, edge in enumerate(self.edges):
            if not isinstance(edge, CostEdge):
                raise CostGraphError(f"edges: item {k} is not a CostEdge, got {type(edge).__name__}")
            for end in (edge.source, edge.target):
                if end not in index:
                    raise CostGraphError(f"edge {edge.source!r} -> {edge.target!r}: unknown node {end!r}")
            u, v = index[edge.source], index[edge.target]
            want = (len(nodes[u].options), len(nodes[v].options))
            if edge.shape != want:
                raise CostGraphError(f"edge {edge.source!r} -> {edge.target!r}: matrix of shape {edge.shape}, "
                                     f"expected {want} (options of {edge.source!r} x options of {edge.target!r})")
            matrix = np.array(edge.costs_s, dtype=np.float64)
            if u > v:
                u, v, matrix = v, u, matrix.T
            merged[(u, v)] = merged[(u, v)] + matrix if (u, v) in merged else matrix
        edges = tuple(CostEdge(nodes[u].name, nodes[v].name, m.tolist()) for (u, v), m in sorted(merged.items()))
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "edges", edges)

    @classmethod
    def from_costs(cls, costs_s: Mapping[str, Sequence[float] | FloatArray],
                   edges: Iterable[tuple[str, str, Any]] = (),
                   options: Mapping[str, Sequence[str]] | None = None) -> CostGraph:
        """A graph from plain numbers: ``costs_s`` maps node name -> cost vector (s), in node order;
        ``edges`` are ``(source, target, matrix)``; ``options`` the labels per node (default "0", "1", ...)."""
        if options is not None and set(options) - set(costs_s):
            raise CostGraphError(f"options: for unknown node(s) {', '.join(sorted(set(options) - set(costs_s)))}")
        nodes = []
        for name, vector in costs_s.items():
            n = len(vector)
            labels = tuple(options[name]) if options is not None and name in options else tuple(map(str, range(n)))
            nodes.append(CostNode(name, labels, tuple(np.asarray(vector, dtype=np.float64).tolist())))
        return cls(tuple(nodes), tuple(CostEdge(s, t, m) for s, t, m in edges))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(node.name for node in self.nodes)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {node.name: i for i, node in enumerate(self.nodes)}

    def index(self, name: str) -> int:
        """The position of node ``name``; an unknown name raises :class:`CostGraphError`."""
        try:
            return self._index[name]
        except KeyError:
            raise CostGraphError(f"unknown node {name!r}") from None

    @cached_property
    def _dense(self) -> _Dense:
        vectors = []
        for node in self.nodes:
            vector = np.array(node.costs_s, dtype=np.float64)
            vector.flags.writeable = False
            vectors.append(vector)
        matrices = []
        for edge in self.edges:
            matrix = np.array(edge.costs_s, dtype=np.float64)
            matrix.flags.writeable = False
            matrices.append((self.index(edge.source), self.index(edge.target), matrix))
        return _Dense(tuple(vectors), tuple(matrices))

    def n_states(self) -> int:
        """How many combinations of finite node options there are (exact, a Python int)."""
        return math.prod(int(np.isfinite(v).sum()) for v in dense(self).vectors)


def dense(graph: CostGraph) -> _Dense:
    """Read-only arrays of the graph's costs, for the solvers (computed once per graph)."""
    return graph._dense


def _choice_indices(graph: CostGraph, choice: Mapping[str, int]) -> list[int]:
    indices = [-1] * len(graph.nodes)
    for name, option in choice.items():
        i = graph.index(name)
        n = len(graph.nodes[i].options)
        if isinstance(option, bool) or not isinstance(option, (int, np.integer)) or not 0 <= option < n:
            raise CostGraphError(f"choice for node {name!r}: {option!r} is not an option index in [0, {n})")
        indices[i] = int(option)
    missing = [graph.nodes[i].name for i, option in enumerate(indices) if option < 0]
    if missing:
        raise CostGraphError(f"choice: no option for node(s) {', '.join(missing)}")
    return indices


def total_cost(graph: CostGraph, choice: Mapping[str, int]) -> float:
    """The cost (s) of picking option ``choice[name]`` (an index) at every node: the node costs plus the
    edge entries; ``inf`` if any is forbidden. A missing or unknown node raises :class:`CostGraphError`."""
    return _total(graph, _choice_indices(graph, choice))


def _total(graph: CostGraph, indices: Sequence[int]) -> float:
    arrays = dense(graph)
    return math.fsum([float(arrays.vectors[i][o]) for i, o in enumerate(indices)]
                     + [float(m[indices[u], indices[v]]) for u, v, m in arrays.matrices])


@dataclass(frozen=True)
class Selection:
    """One option per node, chosen by a solver.

    ``indices[k]`` is the option index of ``nodes[k]`` and ``options[k]`` its
    label; ``cost_s`` the total (s, :func:`total_cost`). ``optimal`` is True
    only when the solver proved no selection costs less (PBQP without its
    heuristic step, HiGHS to zero gap, exhaustive search). ``heuristic_used``:
    PBQP applied RN at least once. ``solve_s``: the solver's wall time (s).
    ``status``: a word or two on how it ended ("optimal", "heuristic", "time
    limit"); ``mip_gap``: HiGHS's relative gap for the ILP (None elsewhere).
    """

    nodes: tuple[str, ...]
    indices: tuple[int, ...]
    options: tuple[str, ...]
    cost_s: float
    solver: str
    optimal: bool
    heuristic_used: bool = False
    solve_s: float = 0.0
    status: str = ""
    mip_gap: float | None = None

    @property
    def choice(self) -> dict[str, int]:
        """Node name -> chosen option index."""
        return dict(zip(self.nodes, self.indices, strict=True))

    @property
    def chosen(self) -> dict[str, str]:
        """Node name -> chosen option label."""
        return dict(zip(self.nodes, self.options, strict=True))


def make_selection(graph: CostGraph, indices: Sequence[int], *, solver: str, optimal: bool, solve_s: float,
                   heuristic_used: bool = False, status: str = "", mip_gap: float | None = None) -> Selection:
    """The :class:`Selection` of ``indices`` (node order) with its cost recomputed from the graph."""
    indices = tuple(int(i) for i in indices)
    return Selection(graph.names, indices, tuple(n.options[i] for n, i in zip(graph.nodes, indices, strict=True)),
                     _total(graph, indices), solver, optimal, heuristic_used, solve_s, status, mip_gap)
