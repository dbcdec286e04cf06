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

For a network (Mulder et al. 4.3): :class:`PrimitiveCosts` holds primitive and layout transformation times,
from a cost model (:func:`predicted_costs`) or a profiled dataset (:func:`profiled_costs`);
:func:`network_cost_graph` makes the network's graph of them (a node per layer and input, an edge per data
dependency); :func:`default_selection` and :func:`uniform_selections` are the baselines a solved selection is
compared with. :func:`build_selected` runs a selection in torch, :func:`verify_selected` checks it against
``build_torch`` within :data:`NETWORK_TOLERANCE` and :func:`measure_selected` times it.
:func:`refine_in_program` measures the convolutions' costs inside the running program and solves again until
the selection stops changing, keeping the one that ran fastest against the default (:func:`time_in_program`,
:func:`in_program_costs`).
:func:`compare_selections` times several selections of a network against each other, by default in the same
interleaved rounds, and gives each comparison as a median per-round ratio with its bootstrap interval
(:class:`SelectionComparison`).
"""

from nnperf.optimize.select._compare import (
    BEST_UNIFORM,
    DEFAULT,
    PROFILED,
    SELECTED,
    SELECTION_PROTOCOLS,
    SELECTION_ROUNDS,
    SelectionComparison,
    SelectionProtocolError,
    check_protocol,
    compare_selections,
    compare_timers,
)
from nnperf.optimize.select._costs import (
    DEFAULT_PRIMITIVE,
    DEFAULT_STAND_IN,
    MissingCostError,
    NoConvolutionError,
    PrimitiveCosts,
    needed_transforms,
    predicted_costs,
    profiled_costs,
)
from nnperf.optimize.select._execute import (
    NETWORK_TOLERANCE,
    InvalidSelectionError,
    SelectionAccuracyError,
    build_selected,
    measure_selected,
    selection_labels,
    verify_selected,
)
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
from nnperf.optimize.select._in_program import (
    IN_PROGRAM_ROUNDS,
    InProgramTimes,
    Refinement,
    challenger,
    in_program_costs,
    refine_in_program,
    time_in_program,
)
from nnperf.optimize.select._network import (
    default_selection,
    network_cost_graph,
    selection_from_labels,
    uniform_selections,
)
from nnperf.optimize.select._pbqp import solve_pbqp
from nnperf.optimize.select._solvers import SOLVERS, Solver, solve, solver_names
from nnperf.primitives import LAYER_LAYOUTS

__all__ = [
    "BEST_UNIFORM",
    "DEFAULT",
    "DEFAULT_MAX_STATES",
    "DEFAULT_PRIMITIVE",
    "DEFAULT_STAND_IN",
    "IN_PROGRAM_ROUNDS",
    "LAYER_LAYOUTS",
    "NETWORK_TOLERANCE",
    "PROFILED",
    "SELECTED",
    "SELECTION_PROTOCOLS",
    "SELECTION_ROUNDS",
    "SOLVERS",
    "CostEdge",
    "CostGraph",
    "CostGraphError",
    "CostNode",
    "InProgramTimes",
    "InfeasibleSelectionError",
    "InvalidSelectionError",
    "MissingCostError",
    "NoConvolutionError",
    "PrimitiveCosts",
    "Refinement",
    "SearchSpaceTooLargeError",
    "Selection",
    "SelectionAccuracyError",
    "SelectionComparison",
    "SelectionError",
    "SelectionProtocolError",
    "Solver",
    "SolverLimitError",
    "SolverOptionError",
    "build_selected",
    "challenger",
    "check_protocol",
    "compare_selections",
    "compare_timers",
    "default_selection",
    "ilp_size",
    "in_program_costs",
    "measure_selected",
    "needed_transforms",
    "network_cost_graph",
    "predicted_costs",
    "profiled_costs",
    "refine_in_program",
    "selection_from_labels",
    "selection_labels",
    "solve",
    "solve_exhaustive",
    "solve_ilp",
    "solve_pbqp",
    "solver_names",
    "time_in_program",
    "total_cost",
    "uniform_selections",
    "verify_selected",
]
