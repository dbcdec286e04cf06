"""Exhaustive search: every combination of finite node options, the reference the other solvers are tested
against.

The combinations are built node by node in the graph's order as one flat
array of partial costs: adding node ``n`` with ``a`` allowed options turns
``s`` partial selections into ``s * a``, each adding ``n``'s cost and the
entries of its edges to earlier nodes (stored edges run from the earlier node,
so all of them are known by then). Memory is a few arrays of ``max_states``
floats.
"""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt

from nnperf.optimize.select._graph import (
    CostGraph,
    InfeasibleSelectionError,
    SearchSpaceTooLargeError,
    Selection,
    SolverOptionError,
    dense,
    make_selection,
)

__all__ = ["DEFAULT_MAX_STATES", "solve_exhaustive"]

DEFAULT_MAX_STATES = 1_000_000
"""Exhaustive search refuses graphs with more combinations than this (about 10 MB per working array)."""


def solve_exhaustive(graph: CostGraph, max_states: int = DEFAULT_MAX_STATES) -> Selection:
    """The optimal selection by trying every combination of finite options.

    Refuses (:class:`SearchSpaceTooLargeError`) a graph with more than
    ``max_states`` combinations (default 1,000,000). Ties go to the first
    combination in the graph's node and option order. Raises
    :class:`InfeasibleSelectionError` when every combination costs ``inf``.
    """
    if isinstance(max_states, bool) or not isinstance(max_states, (int, np.integer)) or max_states < 1:
        raise SolverOptionError(f"max_states: must be a positive integer, got {max_states!r}")
    states = graph.n_states()
    if states > max_states:
        raise SearchSpaceTooLargeError(f"exhaustive search over {states:,} combinations refused: more than "
                                       f"max_states={max_states:,}; use solver='pbqp' or 'ilp'")
    start = time.perf_counter()
    arrays = dense(graph)
    allowed = [np.flatnonzero(np.isfinite(v)) for v in arrays.vectors]
    incoming: list[list[tuple[int, npt.NDArray[np.float64]]]] = [[] for _ in allowed]
    for u, v, matrix in arrays.matrices:
        incoming[v].append((u, matrix[np.ix_(allowed[u], allowed[v])]))
    partial = np.zeros(1)
    for n, options in enumerate(allowed):
        # In a flat index over nodes 0..n-1 (row-major), node m's position is (index // stride[m]) % size[m].
        strides = _strides([len(a) for a in allowed[:n]])
        expanded = partial[:, None] + arrays.vectors[n][options][None, :]
        if incoming[n]:
            flat = np.arange(len(partial))
            for u, matrix in incoming[n]:
                expanded += matrix[(flat // strides[u]) % len(allowed[u])]
        partial = expanded.reshape(-1)
    best = int(np.argmin(partial))
    if not np.isfinite(partial[best]):
        raise InfeasibleSelectionError("no selection has a finite cost: every combination of options meets a "
                                       "forbidden (inf) transformation")
    positions = np.unravel_index(best, [len(a) for a in allowed])
    choice = [int(options[p]) for options, p in zip(allowed, positions, strict=True)]
    return make_selection(graph, choice, solver="exhaustive", optimal=True, solve_s=time.perf_counter() - start,
                          status="optimal")


def _strides(sizes: list[int]) -> list[int]:
    """Row-major strides of a flat index over dimensions of ``sizes``."""
    strides = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        strides[k] = strides[k + 1] * sizes[k + 1]
    return strides
