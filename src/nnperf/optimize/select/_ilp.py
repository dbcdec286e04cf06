"""Primitive selection as an integer linear programme, solved exactly by HiGHS (``scipy.optimize.milp``).

Binary ``x[n, i]``: node ``n`` takes option ``i``, one per node
(``sum_i x[n, i] = 1``). The quadratic edge term ``x[u, i] x[v, j] C[i, j]``
is linearised with pair variables ``y[e, g, h] >= 0`` and the tight (local
marginal) constraints ``sum_h y[e, g, h] = X[u, g]``, ``sum_g y[e, g, h] =
X[v, h]``: with one-hot ``x`` the only solution is ``y[e, g, h] = X[u, g]
X[v, h]``, so ``y`` may stay continuous.

To keep the model small, each edge matrix is compressed first: options of
``u`` whose rows are equal form one group ``g`` (``X[u, g]`` sums their
``x``), likewise columns of ``v``. A layout transformation depends only on the
layouts, so an edge between nodes with 15 primitives over 3 layouts needs 9
pair variables instead of 225. An edge whose rows (or columns) are all equal
does not couple its ends: it is added to the other node's costs and needs no
``y`` at all. Forbidden options get ``x`` fixed to 0, forbidden pairs no
``y``.

Optimality: HiGHS stops when its relative gap is 0 (``mip_rel_gap``) and, by
default, when its absolute gap is under 1e-6; costs in seconds are far smaller
than that, so the objective is scaled to a largest coefficient of 1 and the
absolute gap is set to 0 as well.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import numpy.typing as npt
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from nnperf.optimize.select._graph import (
    CostGraph,
    FloatArray,
    InfeasibleSelectionError,
    Selection,
    SelectionError,
    SolverLimitError,
    SolverOptionError,
    dense,
    make_selection,
)

__all__ = ["solve_ilp"]

_TIME_LIMIT = 1
_INFEASIBLE = 2


class _Model:
    """Columns (objective, upper bound, integrality) and equality rows (sparse triplets, right-hand side)."""

    def __init__(self) -> None:
        self.objective: list[float] = []
        self.upper: list[float] = []
        self.integer: list[int] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.values: list[float] = []
        self.rhs: list[float] = []

    def add_columns(self, objective: FloatArray, upper: FloatArray, integer: bool) -> int:
        """Appends columns; returns the index of the first."""
        first = len(self.objective)
        self.objective.extend(objective.tolist())
        self.upper.extend(upper.tolist())
        self.integer.extend([int(integer)] * len(objective))
        return first

    def add_row(self, plus: list[int], minus: list[int], rhs: float) -> None:
        """Appends ``sum(plus columns) - sum(minus columns) = rhs``."""
        row = len(self.rhs)
        self.rows.extend([row] * (len(plus) + len(minus)))
        self.cols.extend(plus + minus)
        self.values.extend([1.0] * len(plus) + [-1.0] * len(minus))
        self.rhs.append(rhs)


def _groups(matrix: FloatArray, axis: int, allowed: npt.NDArray[np.intp]) -> tuple[FloatArray, list[list[int]]]:
    """The distinct rows (axis 0) or columns (axis 1) of ``matrix`` over the ``allowed`` option indices: the
    matrix compressed on that axis, and the option indices in each group."""
    lines = np.take(matrix, allowed, axis=axis)
    unique, inverse = np.unique(lines if axis == 0 else lines.T, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    members = [allowed[inverse == g].tolist() for g in range(len(unique))]
    return (unique if axis == 0 else unique.T), members


def _build(graph: CostGraph) -> tuple[_Model, list[int], int]:
    """The model, the column of each node's first ``x`` and the number of pair variables."""
    arrays = dense(graph)
    costs = [v.copy() for v in arrays.vectors]
    allowed = [np.flatnonzero(np.isfinite(v)) for v in arrays.vectors]
    coupled = []
    for u, v, matrix in arrays.matrices:
        rows, row_groups = _groups(matrix, 0, allowed[u])
        both, col_groups = _groups(rows, 1, allowed[v])
        if len(row_groups) == 1:  # the edge's cost depends on v's option only
            costs[v] += matrix[allowed[u][0]]
        elif len(col_groups) == 1:
            costs[u] += matrix[:, allowed[v][0]]
        else:
            coupled.append((u, v, both, row_groups, col_groups))
    model = _Model()
    first = []
    for vector in costs:
        finite = np.isfinite(vector)
        if not finite.any():
            raise InfeasibleSelectionError("no selection has a finite cost: every option of a node meets a "
                                           "forbidden (inf) transformation")
        first.append(model.add_columns(np.where(finite, vector, 0.0), finite.astype(np.float64), integer=True))
        model.add_row(list(range(first[-1], first[-1] + len(vector))), [], 1.0)
    n_pairs = 0
    for u, v, both, row_groups, col_groups in coupled:
        g_index, h_index = np.nonzero(np.isfinite(both))
        start = model.add_columns(both[g_index, h_index], np.ones(len(g_index)), integer=False)
        pairs = np.arange(start, start + len(g_index))
        n_pairs += len(g_index)
        for g, members in enumerate(row_groups):
            model.add_row(pairs[g_index == g].tolist(), [first[u] + i for i in members], 0.0)
        for h, members in enumerate(col_groups):
            model.add_row(pairs[h_index == h].tolist(), [first[v] + j for j in members], 0.0)
    return model, first, n_pairs


def ilp_size(graph: CostGraph) -> tuple[int, int, int]:
    """The size of :func:`solve_ilp`'s model: (binary option variables, continuous pair variables,
    constraints), after compressing the edges."""
    model, _, n_pairs = _build(graph)
    return len(model.objective) - n_pairs, n_pairs, len(model.rhs)


def solve_ilp(graph: CostGraph, time_limit_s: float = 60.0) -> Selection:
    """The optimal selection by HiGHS, or the best found when ``time_limit_s`` (s, default 60) runs out.

    ``optimal`` only when HiGHS proves it (``status`` "optimal", ``mip_gap``
    0 up to rounding, ~1e-16); at the time limit with a solution in hand, ``optimal`` is False,
    ``status`` "time limit" and ``mip_gap`` HiGHS's relative gap (``inf``
    when it has no bound). Raises :class:`SolverLimitError` when the limit
    came before any solution, :class:`InfeasibleSelectionError` when no
    selection has a finite cost, :class:`SolverOptionError` for a time limit
    that is not a positive number.
    """
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float)) or not (
            math.isfinite(time_limit_s) and time_limit_s > 0):
        raise SolverOptionError(f"time_limit_s: must be a positive number of seconds, got {time_limit_s!r}")
    start = time.perf_counter()
    model, first, _ = _build(graph)
    objective = np.array(model.objective)
    scale = float(objective.max()) or 1.0
    n_rows = len(model.rhs)
    matrix = coo_matrix((model.values, (model.rows, model.cols)), shape=(n_rows, len(objective))).tocsr()
    rhs = np.array(model.rhs)
    with warnings.catch_warnings():
        # milp passes options it does not know to HiGHS verbatim, with a warning; mip_abs_gap is one.
        warnings.filterwarnings("ignore", message="Unrecognized options", category=RuntimeWarning)
        result = milp(objective / scale, integrality=np.array(model.integer),
                      bounds=Bounds(np.zeros(len(objective)), np.array(model.upper)),
                      constraints=LinearConstraint(matrix, rhs, rhs),
                      options={"time_limit": float(time_limit_s), "mip_rel_gap": 0.0, "mip_abs_gap": 0.0,
                               "presolve": True})
    solve_s = time.perf_counter() - start
    if result.status == _INFEASIBLE:
        raise InfeasibleSelectionError("no selection has a finite cost (HiGHS proved the model infeasible): "
                                       "every combination of options meets a forbidden (inf) option or "
                                       "transformation")
    if result.x is None:
        if result.status == _TIME_LIMIT:
            raise SolverLimitError(f"HiGHS reached the time limit of {time_limit_s!r} s before it found any "
                                   f"selection; raise time_limit_s or use solver='pbqp'")
        raise SelectionError(f"HiGHS found no selection: {result.message}")
    x = result.x
    choice = [int(np.argmax(x[f:f + len(node.options)])) for f, node in zip(first, graph.nodes, strict=True)]
    proved = result.status == 0
    gap = result.mip_gap
    mip_gap = float(gap) if gap is not None else (0.0 if proved else math.inf)
    selection = make_selection(graph, choice, solver="ilp", optimal=proved, solve_s=solve_s,
                               status="optimal" if proved else "time limit" if result.status == _TIME_LIMIT
                               else str(result.message), mip_gap=mip_gap)
    if not math.isfinite(selection.cost_s):
        raise SelectionError(f"HiGHS returned a selection of infinite cost ({result.message}); this is a bug")
    return selection
