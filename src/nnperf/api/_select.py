"""Selecting a primitive and layout per layer of a network from Python (Mulder et al. 4.3).

::

    import nnperf.api as api

    result = api.select_network_primitives("resnet18", costs="predicted", solver="pbqp", verify=True)
    print(result.predicted_s, result.default_predicted_s, result.measured_s, result.default_measured_s)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._primitives import find_primitive_system, stored_primitive_model
from nnperf.api._session import StoreLike, opened_store

if TYPE_CHECKING:
    from nnperf.measure import HarnessConfig
    from nnperf.optimize.select import Selection

COST_SOURCES = ("predicted", "profiled")


@dataclass(frozen=True)
class NetworkSelection:
    """A solved selection for a network, its framework-default counterpart, and (with ``verify``) both measured.

    ``predicted_s``/``default_predicted_s`` are the cost graph's totals (convolutions and transformations, from
    the cost source); ``optimise_s`` is the time from the costs to the solution (cost-model call or dataset
    lookup, graph, solver); ``measured_s``/``default_measured_s`` the harness medians of the selected and the
    default network run end to end in torch, and ``max_error`` the selected outputs' largest relative error
    against the reference network (None without ``verify``). ``layer_profile_s`` is the time spent timing the
    other layers in each layout (0 when the store held them all, or without ``layer_costs``).
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

    @property
    def predicted_s(self) -> float:
        return self.selection.cost_s

    @property
    def default_predicted_s(self) -> float:
        return self.default.cost_s


def select_network_primitives(model: ModelLike, *, costs: str = "predicted", solver: str = "pbqp",
                              verify: bool = False, layer_costs: bool = True, system: int | str | None = None,
                              threads: int = 1,
                              store: StoreLike = None, harness: HarnessConfig | None = None,
                              input_shape: InputShape | None = None) -> NetworkSelection:
    """Chooses a primitive for every convolution of ``model`` and a layout for every other layer, minimising the
    convolutions' times plus the layout transformations between them.

    ``costs`` is ``predicted`` (the system's newest cost model, ``nnperf primitives train``) or ``profiled``
    (the stored dataset's medians; what it lacks is timed now). With ``layer_costs`` (default) every other layer
    costs its time in the layout it runs in, timed into the store the first time
    (:func:`~nnperf.campaign.profile_layer_layouts`); without, those layers cost nothing in either layout.
    ``solver`` is ``pbqp``, ``ilp`` or ``exhaustive``. With ``verify`` the selected network runs end to end in torch, is checked against the
    reference network and is timed with the default selection (every convolution on oneDNN, NCHW).
    """
    from nnperf.campaign import load_primitive_dataset, profile_layer_layouts
    from nnperf.errors import NnperfError
    from nnperf.measure import HarnessConfig
    from nnperf.optimize.select import (
        default_selection,
        measure_selected,
        network_cost_graph,
        predicted_costs,
        profiled_costs,
        selection_labels,
        solve,
        verify_selected,
    )
    from nnperf.primitives import conv_configs, conv_layer_configs

    if costs not in COST_SOURCES:
        raise NnperfError(f"unknown cost source {costs!r}; use one of {', '.join(COST_SOURCES)}")
    network = load_model(model, input_shape)
    conv_configs(network)  # refuses a network without a convolution
    start = time.perf_counter()
    if costs == "predicted":
        cost_model, system_id = stored_primitive_model(system=system, threads=threads, store=store)
        table = predicted_costs(cost_model, network)
    else:
        with opened_store(store, create=False) as opened:
            record = find_primitive_system(opened, system, threads)
            dataset = load_primitive_dataset(opened, record.id)
        system_id = record.id
        table = profiled_costs(dataset, network, measure_missing=True, threads=threads)
    layer_profile_s = 0.0
    if layer_costs:
        with opened_store(store, create=False) as opened:
            layers = profile_layer_layouts(opened, [network], threads)
        table = table.with_layers(layers.times_s)
        layer_profile_s = layers.elapsed_s if layers.measured else 0.0  # a lookup alone counts as optimising
    graph = network_cost_graph(network, table)
    selection = solve(graph, solver)
    optimise_s = time.perf_counter() - start - layer_profile_s
    default = default_selection(graph)
    result = NetworkSelection(network.name, system_id, costs, solver, selection, default,
                              tuple(conv_layer_configs(network)), optimise_s, layer_profile_s=layer_profile_s)
    if not verify:
        return result
    selection_labels(network, selection)
    max_error = verify_selected(network, selection, threads=threads)
    timing_harness = harness or HarnessConfig()
    measured = measure_selected(network, selection, timing_harness, threads=threads).stats.median_s
    default_measured = measure_selected(network, default, timing_harness, threads=threads).stats.median_s
    return NetworkSelection(result.network, system_id, costs, solver, selection, default, result.convolutions,
                            optimise_s, measured, default_measured, max_error, layer_profile_s)
