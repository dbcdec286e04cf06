"""Primitive selection: one option per node of a cost graph at least total cost (Mulder et al. 2.1, 4.3).

Build a :class:`CostGraph` (option costs per convolution, layout
transformation costs per edge, ``inf`` for what is forbidden) and call
:func:`solve` with a solver name, or a solver directly:

- :func:`solve_pbqp`: PBQP reductions R0, RI, RII (exact) and the RN
  heuristic where they stall (Hames & Scholz 2006, the solver Mulder et al. use);
- :func:`solve_ilp`: an integer linear programme solved to proved optimality
  by HiGHS, within a time limit;
- :func:`solve_exhaustive`: every combination, for small graphs and tests.

Each returns a :class:`Selection` that says whether it is proved optimal.
"""

from nnperf.optimize.select._exhaustive import DEFAULT_MAX_STATES, solve_exhaustive
from nnperf.optimize.select._graph import (
    CostEdge,
    CostGraph,
    CostGraphError,
    CostNode,
    InfeasibleSelectionError,
    SearchSpaceTooLargeError,
    Selection,
    SelectionError,
    SolverLimitError,
    SolverOptionError,
    total_cost,
)
from nnperf.optimize.select._ilp import ilp_size, solve_ilp
from nnperf.optimize.select._pbqp import solve_pbqp
from nnperf.optimize.select._solvers import SOLVERS, Solver, solve, solver_names

__all__ = [
    "DEFAULT_MAX_STATES",
    "SOLVERS",
    "CostEdge",
    "CostGraph",
    "CostGraphError",
    "CostNode",
    "InfeasibleSelectionError",
    "SearchSpaceTooLargeError",
    "Selection",
    "SelectionError",
    "Solver",
    "SolverLimitError",
    "SolverOptionError",
    "ilp_size",
    "solve",
    "solve_exhaustive",
    "solve_ilp",
    "solve_pbqp",
    "solver_names",
    "total_cost",
]
