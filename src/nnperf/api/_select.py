"""Selecting a primitive and layout per layer of a network from Python (Mulder et al. 4.3).

::

    import nnperf
    import nnperf.api as api

    result = api.select("resnet18", nnperf.System("primitives", threads=1), costs="predicted", verify=True)
    print(result.predicted_s, result.default_predicted_s, result.measured_s, result.default_measured_s)
    print(result.speedup_over_default.median, result.speedup_over_default.ci_low, result.speedup_over_default.ci_high)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._primitives import PRIMITIVES, find_primitive_system, primitive_threads, stored_primitive_model
from nnperf.api._session import StoredId, StoreLike, opened_store, stored_id
from nnperf.errors import NnperfError
from nnperf.measure import System

if TYPE_CHECKING:
    from nnperf.ir import Network
    from nnperf.measure import ComparisonProtocol, HarnessConfig, PairedRatio, RoundsConfig
    from nnperf.optimize.select import CostGraph, PrimitiveCosts, Refinement, Selection, SelectionComparison

COST_SOURCES = ("predicted", "profiled")


@dataclass(frozen=True)
class NetworkSelection:
    """A solved selection for a network, its framework-default and best uniform counterparts, and (with
    ``verify``) the three measured against each other.

    ``predicted_s``/``default_predicted_s`` are the cost graph's totals (convolutions and transformations, from
    the cost source); ``optimise_s`` is the time from the costs to the solution (cost-model call or dataset
    lookup, graph, solver); ``best_uniform`` is the cheapest on the same graph of the selections that run one
    primitive wherever it applies (layouts solved; Mulder et al.'s baseline (d)). With ``verify``:
    ``comparison`` holds the selected, default and best uniform networks timed end to end in torch under its
    protocol (the selected one first); ``measured_s``/``default_measured_s`` are their medians (seconds) in it,
    :attr:`speedup_over_default` and :attr:`speedup_over_best_uniform` its ratios with their intervals, and
    ``max_error`` the selected outputs' largest relative error against the reference network (all None
    without ``verify``). ``layer_profile_s`` is the time spent timing the other layers in each layout (0 when
    the store held them all, or without ``layer_costs``).
    """

    network: str
    system_id: int
    costs: str
    solver: str
    selection: Selection
    default: Selection
    convolutions: tuple[str, ...]
    optimise_s: float
    measured_s: float | None = None
    default_measured_s: float | None = None
    max_error: float | None = None
    layer_profile_s: float = 0.0
    best_uniform: Selection | None = None
    comparison: SelectionComparison | None = None
    refinement: Refinement | None = None
    """With ``refine``: the refinement in the program that chose ``selection`` (the selections it ran, their times
    against the default, the in-program costs)."""

    @property
    def predicted_s(self) -> float:
        return self.selection.cost_s

    @property
    def default_predicted_s(self) -> float:
        return self.default.cost_s

    @property
    def best_uniform_primitive(self) -> str | None:
        """The primitive the best uniform selection runs (its solver is ``uniform:<primitive>``)."""
        return None if self.best_uniform is None else self.best_uniform.solver.split(":", 1)[1]

    @property
    def best_uniform_measured_s(self) -> float | None:
        """The best uniform network's median time per inference (seconds) in the comparison."""
        from nnperf.optimize.select import BEST_UNIFORM

        return None if self.comparison is None else self.comparison.median_s(BEST_UNIFORM)

    @property
    def speedup_over_default(self) -> PairedRatio | None:
        """How many times faster the selected network ran than the default (the default's time over the
        selected one's: under the interleaved protocol the median per-round ratio with its 95% interval)."""
        from nnperf.optimize.select import DEFAULT, SELECTED

        return None if self.comparison is None else self.comparison.speedup(SELECTED, over=DEFAULT)

    @property
    def speedup_over_best_uniform(self) -> PairedRatio | None:
        """How many times faster the selected network ran than the best uniform one (as
        :attr:`speedup_over_default`)."""
        from nnperf.optimize.select import BEST_UNIFORM, SELECTED

        return None if self.comparison is None else self.comparison.speedup(SELECTED, over=BEST_UNIFORM)


def select(model: ModelLike, system: System = PRIMITIVES, store: StoreLike = None, *,
           calibration: StoredId | None = None, costs: str = "predicted", solver: str = "pbqp", verify: bool = False,
           layer_costs: bool = True, harness: HarnessConfig | None = None, input_shape: InputShape | None = None,
           protocol: str | ComparisonProtocol = "auto", rounds: RoundsConfig | None = None,
           margin: float = 0.0, refine: int = 0) -> NetworkSelection:
    """Chooses a primitive for every convolution of ``model`` and a layout for every other layer, minimising the
    convolutions' times plus the layout transformations between them (Mulder et al. 4.3).

    ``system`` is the primitive system it selects for, this CPU with a thread count
    (``nnperf.System("primitives", threads=N)``, default one thread): its stored costs are used, else those of
    ``calibration`` (a stored primitive system's id or key prefix), else those of the only primitive system the
    store holds. ``costs`` is ``predicted`` (the system's newest cost model, ``nnperf primitives train``) or
    ``profiled`` (the stored dataset's medians; what it lacks is timed now). With ``layer_costs`` (default) every
    other layer costs its time in the layout it runs in, timed into the store the first time
    (:func:`~nnperf.campaign.profile_layer_layouts`); without, those layers cost nothing in either layout.
    ``margin`` (predicted costs only) makes every option but the default that fraction dearer, so a layer leaves
    the default only for a predicted saving larger than the model's error (:func:`~nnperf.optimize.select.predicted_costs`).
    ``solver`` is ``pbqp``, ``ilp`` or ``exhaustive``. With ``refine`` = N > 0 the convolutions' costs are then
    measured inside the running program for at most N steps and the selection kept is the one that ran fastest
    against the default (:func:`~nnperf.optimize.select.refine_in_program`; ``selection`` is costed on the
    isolated costs, ``refinement`` holds the rest). With ``verify`` the selected network runs end to end in
    torch, is checked against the reference network and is timed against the default selection (every
    convolution through torch's own conv2d, NCHW) and the best uniform one, under ``protocol``: ``"auto"``
    (default) is what a quick machine check recommends (interleaved, for in-process programs); ``"interleaved"``
    times the three in the same rounds, in random order (``rounds``, default
    :data:`~nnperf.optimize.select.SELECTION_ROUNDS`: up to 20 s), and each speed-up is the median per-round
    ratio with its 95% bootstrap interval; ``"sequential"`` measures each in turn with ``harness`` (default
    :class:`~nnperf.measure.HarnessConfig`'s, up to 3 s each) and each speed-up is a ratio of medians, which
    drifts with the machine's speed. A bad ``protocol`` is refused before any work.
    """
    import time

    from nnperf.optimize.select import check_protocol, default_selection, network_cost_graph, uniform_selections
    from nnperf.primitives import conv_configs, conv_layer_configs

    chosen_protocol = check_protocol(protocol)  # before minutes of work, not after
    threads = primitive_threads(system, "select")
    stored = stored_id(calibration, "select")
    if costs not in COST_SOURCES:
        raise NnperfError(f"unknown cost source {costs!r}; use one of {', '.join(COST_SOURCES)}")
    if refine < 0:
        raise NnperfError(f"refine is the most steps measured in the program (0: none), got {refine}")
    network = load_model(model, input_shape)
    conv_configs(network)  # refuses a network without a convolution
    start = time.perf_counter()
    table, system_id = _cost_table(network, costs, stored, threads, store, margin)
    layer_profile_s = 0.0
    if layer_costs:
        table, layer_profile_s = _with_layer_costs(table, network, threads, store)
    graph = network_cost_graph(network, table)
    selection, refinement = _refined(network, table, graph, solver, refine, threads)
    optimise_s = time.perf_counter() - start - layer_profile_s
    default = default_selection(graph)
    best_uniform = min(uniform_selections(graph).values(), key=lambda s: s.cost_s)  # a convolution has an option
    result = NetworkSelection(network.name, system_id, costs, solver, selection, default,
                              tuple(conv_layer_configs(network)), optimise_s, layer_profile_s=layer_profile_s,
                              best_uniform=best_uniform, refinement=refinement)
    if not verify:
        return result
    return _verified(result, network, threads, chosen_protocol, rounds, harness)


def _refined(network: Network, table: PrimitiveCosts, graph: CostGraph, solver: str, refine: int, threads: int
             ) -> tuple[Selection, Refinement | None]:
    """The selection of ``graph``; with ``refine`` > 0 the one refined in the program for at most that many steps,
    costed on ``graph``, and the refinement."""
    from nnperf.optimize.select import refine_in_program, selection_from_labels, solve

    if not refine:
        return solve(graph, solver), None
    refinement = refine_in_program(network, table, refine, solver=solver, threads=threads)
    return selection_from_labels(graph, refinement.selection.chosen, "in program"), refinement


def _cost_table(network: Network, costs: str, stored: StoredId | None, threads: int,
                store: StoreLike, margin: float = 0.0) -> tuple[PrimitiveCosts, int]:
    """The network's convolution costs from the cost model or the profiled dataset, and the system they are of."""
    from nnperf.campaign import load_primitive_dataset
    from nnperf.optimize.select import predicted_costs, profiled_costs

    if costs == "predicted":
        cost_model, system_id = stored_primitive_model(System("primitives", threads=threads) if stored is None
                                                       else stored, store)
        return predicted_costs(cost_model, network, margin), system_id
    if margin:
        raise NnperfError("a margin applies to predicted costs only: profiled costs are measured, not predicted")
    with opened_store(store, create=False) as opened:
        record = find_primitive_system(opened, stored, threads)
        dataset = load_primitive_dataset(opened, record.id)
    return profiled_costs(dataset, network, measure_missing=True, threads=threads), record.id


def _with_layer_costs(table: PrimitiveCosts, network: Network, threads: int, store: StoreLike) -> tuple[PrimitiveCosts, float]:
    """``table`` with the other layers' times in each layout (timed into the store the first time), and the time
    spent timing them (0 when the store held them all: a lookup alone counts as optimising)."""
    from nnperf.campaign import profile_layer_layouts

    with opened_store(store, create=False) as opened:
        layers = profile_layer_layouts(opened, [network], threads)
    return table.with_layers(layers.times_s), layers.elapsed_s if layers.measured else 0.0


def _verified(result: NetworkSelection, network: Network, threads: int, protocol: ComparisonProtocol,
              rounds: RoundsConfig | None, harness: HarnessConfig | None) -> NetworkSelection:
    """``result`` with the selected, default and best uniform networks run, checked and timed against each other."""
    from nnperf.measure import HarnessConfig
    from nnperf.optimize.select import (
        BEST_UNIFORM,
        DEFAULT,
        SELECTED,
        SELECTION_ROUNDS,
        compare_selections,
        selection_labels,
        verify_selected,
    )

    assert result.best_uniform is not None
    selection_labels(network, result.selection)
    max_error = verify_selected(network, result.selection, threads=threads)
    comparison = compare_selections(network, {SELECTED: result.selection, DEFAULT: result.default,
                                              BEST_UNIFORM: result.best_uniform},
                                    protocol, rounds=rounds or SELECTION_ROUNDS,
                                    harness=harness or HarnessConfig(), threads=threads)
    return dataclasses.replace(result, measured_s=comparison.median_s(SELECTED),
                               default_measured_s=comparison.median_s(DEFAULT), max_error=max_error,
                               comparison=comparison)
