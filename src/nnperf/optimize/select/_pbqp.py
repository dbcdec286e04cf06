"""The PBQP solver of primitive selection (Mulder et al. 2.1 and 4.3, after Hames & Scholz 2006, their [9]).

Reductions, each removing one node ``u`` and remembering how to choose its
option once its neighbours are chosen:

- R0 (degree 0): nothing to fold; ``u`` later takes its cheapest option.
- RI (degree 1, neighbour ``v``): ``c_v[j] += min_i (c_u[i] + C_uv[i, j])``.
- RII (degree 2, neighbours ``v``, ``w``):
  ``C_vw[j, k] += min_i (c_u[i] + C_uv[i, j] + C_uw[i, k])``, the edge created if absent.

R0, RI and RII are exact. When none applies (every node has degree >= 3),
RN picks a node of highest degree, fixes the option minimising its own cost
plus the cheapest way to reach each neighbour,
``c_u[i] + sum_v min_j (C_uv[i, j] + c_v[j])``, folds row ``i`` of each edge
into the neighbour's vector and goes on: a heuristic, so the result is only
proved optimal when RN was never needed (``heuristic_used`` False). Last, the
reduced nodes are decided in reverse order of reduction, each taking the
option that is cheapest given its (already decided) neighbours of the time.

An edge whose matrix is one constant (the same cost whatever both ends
choose) is folded into a vector and dropped, at the start and whenever RII
makes one, so it does not raise degrees and call for RN.

Ties go to the lower node index (the graph's order) and the lower option
index, so a graph always gives the same selection. Costs are non-negative, so
``inf`` (forbidden) only ever adds and never meets ``-inf``.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from nnperf.optimize.select._graph import (
    CostGraph,
    FloatArray,
    InfeasibleSelectionError,
    Selection,
    dense,
    make_selection,
)

__all__ = ["solve_pbqp"]


class _Reducer:
    """The working copy of the graph: vectors, adjacency (each matrix stored once, its transpose for the
    other end) and two lazy heaps, smallest degree first and largest first."""

    def __init__(self, graph: CostGraph) -> None:
        arrays = dense(graph)
        self.cost: list[FloatArray] = [v.copy() for v in arrays.vectors]
        self.adj: list[dict[int, FloatArray]] = [{} for _ in arrays.vectors]
        for u, v, matrix in arrays.matrices:
            self._set_edge(u, v, matrix)
        self.alive = [True] * len(self.cost)
        self.low = [(len(a), u) for u, a in enumerate(self.adj)]
        self.high = [(-len(a), u) for u, a in enumerate(self.adj)]
        heapq.heapify(self.low)
        heapq.heapify(self.high)
        # (node, its vector when reduced, (neighbour, matrix node x neighbour) of the time)
        self.stack: list[tuple[int, FloatArray, tuple[tuple[int, FloatArray], ...]]] = []
        self.fixed: dict[int, int] = {}

    def _set_edge(self, u: int, v: int, matrix: FloatArray) -> None:
        """Stores ``matrix`` (u x v), or folds it into ``v``'s vector when it is one constant: a constant
        edge does not depend on the choice, and dropping it lowers both degrees."""
        first = matrix.flat[0]
        if np.isfinite(first) and (matrix == first).all():
            self.cost[v] = self.cost[v] + first
            self.adj[u].pop(v, None)
            self.adj[v].pop(u, None)
        else:
            self.adj[u][v] = matrix
            self.adj[v][u] = matrix.T

    def _touched(self, u: int) -> None:
        """Records ``u``'s new degree in both heaps (old entries are skipped when popped)."""
        degree = len(self.adj[u])
        if degree <= 2:
            heapq.heappush(self.low, (degree, u))
        heapq.heappush(self.high, (-degree, u))

    def _pop(self, heap: list[tuple[int, int]], sign: int, limit: int | None) -> int | None:
        while heap:
            key, u = heap[0]
            if not self.alive[u] or sign * key != len(self.adj[u]):
                heapq.heappop(heap)
                continue
            if limit is not None and key > limit:
                return None
            heapq.heappop(heap)
            return u
        return None

    def _remove(self, u: int) -> tuple[tuple[int, FloatArray], ...]:
        links = tuple(self.adj[u].items())
        for v, _ in links:
            del self.adj[v][u]
        self.adj[u] = {}
        self.alive[u] = False
        return links

    def reduce(self) -> bool:
        """Reduces every node; True if RN was needed."""
        heuristic = False
        for _ in range(len(self.cost)):
            u = self._pop(self.low, 1, 2)
            if u is None:
                u = self._pop(self.high, -1, None)
                assert u is not None
                self._rn(u)
                heuristic = True
                continue
            links = self._remove(u)
            c = self.cost[u]
            if len(links) == 1:
                (v, m), = links
                self.cost[v] = self.cost[v] + (c[:, None] + m).min(axis=0)
            elif len(links) == 2:
                (v, m_v), (w, m_w) = links
                delta = (c[:, None, None] + m_v[:, :, None] + m_w[:, None, :]).min(axis=0)
                existing = self.adj[v].get(w)
                self._set_edge(v, w, delta if existing is None else existing + delta)
            self.stack.append((u, c, links))
            for v, _ in links:
                self._touched(v)
        return heuristic

    def _rn(self, u: int) -> None:
        c = self.cost[u]
        reach = c.copy()
        for v, m in self.adj[u].items():
            reach += (m + self.cost[v][None, :]).min(axis=1)
        # Every option unreachable: no finite selection from here; take the cheapest, the total shows inf.
        option = int(np.argmin(reach)) if np.isfinite(reach).any() else int(np.argmin(c))
        links = self._remove(u)
        for v, m in links:
            self.cost[v] = self.cost[v] + m[option, :]
            self._touched(v)
        self.fixed[u] = option

    def back_propagate(self) -> list[int]:
        choice = [-1] * len(self.cost)
        for u, option in self.fixed.items():
            choice[u] = option
        for u, c, links in reversed(self.stack):
            total = c.copy()
            for v, m in links:
                total += m[:, choice[v]]
            choice[u] = int(np.argmin(total))
        return choice


def solve_pbqp(graph: CostGraph) -> Selection:
    """The selection found by PBQP reductions R0, RI, RII and, where they stall, the RN heuristic.

    ``optimal`` and not ``heuristic_used`` when RN was never applied (then the
    result is a proved optimum); ``status`` "optimal" or "heuristic". Raises
    :class:`InfeasibleSelectionError` when the selection found costs ``inf``
    (``proved`` False if RN was used: an exact solver may still find one).
    """
    start = time.perf_counter()
    reducer = _Reducer(graph)
    heuristic = reducer.reduce()
    choice = reducer.back_propagate()
    solve_s = time.perf_counter() - start
    selection = make_selection(graph, choice, solver="pbqp", optimal=not heuristic, solve_s=solve_s,
                               heuristic_used=heuristic, status="heuristic" if heuristic else "optimal")
    if not np.isfinite(selection.cost_s):
        if heuristic:
            raise InfeasibleSelectionError(
                "PBQP found no selection of finite cost; its heuristic step (RN) was used, so one may still "
                "exist: try solver='ilp'", proved=False)
        raise InfeasibleSelectionError("no selection has a finite cost: every combination of options meets a "
                                       "forbidden (inf) option or transformation")
    return selection
