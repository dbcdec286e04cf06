"""The solvers by name: ``"pbqp"`` (Mulder et al.'s choice), ``"ilp"`` (exact, HiGHS) and ``"exhaustive"``.

Third parties add theirs through the ``nnperf.selection_solvers`` entry-point
group, each entry naming a function ``(graph, **options) -> Selection``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from nnperf.optimize.select._exhaustive import solve_exhaustive
from nnperf.optimize.select._graph import CostGraph, Selection, SolverOptionError
from nnperf.optimize.select._ilp import solve_ilp
from nnperf.optimize.select._pbqp import solve_pbqp
from nnperf.registry import Registry

__all__ = ["SOLVERS", "Solver", "solve", "solver_names"]


Solver = Callable[..., Selection]
"""A selection solver: a function of the graph and then its own keyword options, returning a Selection."""


SOLVERS: Registry[Solver] = Registry("selection solver", "nnperf.selection_solvers")
"""Every solver function by name; read it through :func:`solve`."""

SOLVERS.register("pbqp", lambda: solve_pbqp)
SOLVERS.register("ilp", lambda: solve_ilp)
SOLVERS.register("exhaustive", lambda: solve_exhaustive)


def solver_names() -> list[str]:
    """The registered solver names, sorted."""
    return SOLVERS.names()


def solve(graph: CostGraph, solver: str = "pbqp", **options: Any) -> Selection:
    """The selection of ``graph`` by the solver called ``solver`` with its ``options``
    (``time_limit_s`` for "ilp", ``max_states`` for "exhaustive").

    An unknown name raises :class:`nnperf.registry.UnknownPluginError` listing
    the known ones; an option the solver does not take raises
    :class:`SolverOptionError` listing those it does.
    """
    function = SOLVERS.create(solver)
    signature = inspect.signature(function)
    try:
        signature.bind(graph, **options)
    except TypeError as exc:
        taken = list(signature.parameters)[1:]
        unknown = sorted(set(options) - set(taken))
        if not unknown:
            raise SolverOptionError(f"solver {solver!r}: {exc}") from None
        raise SolverOptionError(f"solver {solver!r} does not take option(s) {', '.join(unknown)}; it takes: "
                                f"{', '.join(taken) or 'none'}") from None
    return function(graph, **options)
