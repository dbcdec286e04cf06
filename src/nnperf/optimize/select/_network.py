"""The cost graph of a network (Mulder et al. 2.1 and 4.3) and the baselines a selection is compared with.

:func:`network_cost_graph` turns an IR network and its :class:`PrimitiveCosts` into a :class:`CostGraph`:

- a node per network input, with the one option ``chw`` (the caller hands the network NCHW tensors);
- a node per 2-D convolution layer, whose options are the primitives with a cost that apply to it and are
  available here (label: the primitive's name), costing their time;
- a node per other layer, whose options are the layouts it can run in (:func:`layer_layouts`: ``chw`` and
  ``hwc``, or ``chw`` alone when no tensor it touches is 4-D), costing the layer's measured time in that layout
  (``costs.layers_s``; torch runs each op on either memory format, and some much faster on one: max pooling
  on hwc, batch norm on chw), or 0 in both when the costs hold no layer times;
- an edge per data dependency (producer -> consumer, as many as the network's branches and joins make) whose
  entry [i][j] is the time of moving the producer's output activation from the layout option ``i`` writes to
  the layout option ``j`` reads (0 when they are equal, or when the activation is not 4-D);
- every network output is handed back in chw: the time of moving it there is added to its node's options.

An activation read in one layout by two consumers is charged on both edges, though the selected network moves it
once (the costs of a PBQP are per edge, as in Mulder et al.): a graph's total can over-count such moves.

A primitive's layouts are its own (``im2col-hwf`` reads chw and writes hwc). Two layouts are read and written by
primitives only: the blocked ``chw16c`` (``ort-nchwc``) and ``hcw`` (``mec-row-partition``), so a layer reading
such an output pays ``chw16c->chw`` or ``hcw->hwc``, and a run of such convolutions keeps their layout between
them for free.

:func:`default_selection` is what a framework does by default (torch's own ``conv2d`` on chw, every layer chw)
and :func:`uniform_selections` one primitive for every convolution it applies to: Mulder et al.'s baselines
(c) and (d) against the solved selection.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import numpy as np

from nnperf.ir import Network
from nnperf.optimize.select._costs import (
    MissingCostError,
    PrimitiveCosts,
    activation_shapes,
    data_edges,
    default_primitive,
    network_convs,
    option_layouts,
    usable,
)
from nnperf.optimize.select._graph import (
    CostEdge,
    CostGraph,
    CostGraphError,
    CostNode,
    Selection,
    dense,
    make_selection,
)
from nnperf.optimize.select._solvers import solve
from nnperf.primitives import CHW, Layout, config_label


def network_cost_graph(network: Network, costs: PrimitiveCosts) -> CostGraph:
    """The cost graph of selecting a primitive for every convolution of ``network`` (see the module docstring).

    Nodes come in the order inputs, then layers (topological); a convolution's options are sorted by name.
    A convolution configuration or a transformation ``costs`` lacks, and a convolution left without a usable
    primitive, raise :class:`MissingCostError`; a network without convolutions :class:`NoConvolutionError`.
    """
    convs = network_convs(network)
    conv_times: dict[str, dict[str, float]] = {}
    for name, config in convs.items():
        times = costs.primitive_times(config, name)
        kept = {p: times[p] for p in sorted(times) if usable(p, config)}
        if not kept:
            raise MissingCostError(f"layer {name!r} ({config_label(config)}) has no primitive with a time in the "
                                   f"costs ({costs.source}) that applies to it and is available here "
                                   f"(times for: {', '.join(sorted(times)) or 'none'})")
        conv_times[name] = kept
    layouts = option_layouts(network, conv_times)
    shapes = activation_shapes(network)
    layers = {layer.name: layer for layer in network.layers if layer.name not in conv_times}

    def move_s(producer: str, src: Layout, dst: Layout) -> float:
        if len(shapes[producer]) != 4:
            return 0.0
        return costs.transform_time(shapes[producer], src, dst, producer)

    nodes = []
    outputs = set(network.outputs)
    for name in (*(spec.name for spec in network.inputs), *(layer.name for layer in network.layers)):
        if name in conv_times:
            options, node_s = tuple(conv_times[name]), list(conv_times[name].values())
        else:
            options = tuple(str(write) for _, write in layouts[name])
            times = costs.layer_times(layers[name]) if name in layers else {}
            node_s = [times.get(option, math.inf) if times else 0.0 for option in options]
        if name in outputs:
            node_s = [t + move_s(name, write, CHW) for t, (_, write) in zip(node_s, layouts[name], strict=True)]
        nodes.append(CostNode(name, options, tuple(node_s)))
    edges = [CostEdge(producer, consumer,
                      tuple(tuple(move_s(producer, write, read) for read, _ in layouts[consumer])
                            for _, write in layouts[producer]))
             for producer, consumer in data_edges(network)]
    return CostGraph(tuple(nodes), tuple(edges))


def _is_layout_node(node: CostNode) -> bool:
    """A network input or a layer other than a convolution: its options are layouts, chw among them."""
    return str(CHW) in node.options


def _default_index(node: CostNode) -> int:
    if _is_layout_node(node):
        return node.options.index(str(CHW))
    default = default_primitive(dict(zip(node.options, node.costs_s, strict=True)))
    return node.options.index(default) if default is not None else int(np.argmin(node.costs_s))


def default_selection(graph: CostGraph) -> Selection:
    """The framework's default on a graph of :func:`network_cost_graph`: every convolution runs
    :data:`DEFAULT_PRIMITIVE` (torch's ``conv2d`` on chw), or :data:`DEFAULT_STAND_IN` (oneDNN on chw) where the
    costs hold no time for it, or its fastest option where neither has one (oneDNN refuses asymmetric padding),
    and every other node chw (baseline (c) of Mulder et al. 4.3). A node is told to be a layer or an input by
    having a ``chw`` option; every other node is a convolution."""
    indices = [_default_index(node) for node in graph.nodes]
    return make_selection(graph, indices, solver="default", optimal=False, solve_s=0.0, status="framework default")


def uniform_selections(graph: CostGraph, layouts: str = "best", solver: str = "pbqp") -> dict[str, Selection]:
    """For every primitive that is an option of some convolution of ``graph``: that primitive on every
    convolution it applies to and :func:`default_selection`'s choice on the others (baseline (d) of Mulder et al.
    4.3 is the cheapest of them), by primitive name.

    ``layouts`` says what the other layers do: ``"best"`` (default) gives them the layouts of least total cost
    with the convolutions fixed, solved by ``solver`` (as a framework lets a layout flow through the ops between
    convolutions; "pbqp" is exact on the chains and trees such layers usually form); ``"default"`` keeps every one
    in chw. A ``Selection``'s ``solver`` is ``"uniform:<primitive>"``.
    """
    if layouts not in ("best", "default"):
        raise CostGraphError(f"layouts must be 'best' or 'default', got {layouts!r}")
    base = [_default_index(node) for node in graph.nodes]
    convs = [i for i, node in enumerate(graph.nodes) if not _is_layout_node(node)]
    names = sorted({label for i in convs for label, cost in zip(graph.nodes[i].options, graph.nodes[i].costs_s,
                                                                strict=True) if math.isfinite(cost)})
    found: dict[str, Selection] = {}
    for primitive in names:
        start = time.perf_counter()
        fixed = {}
        for i in convs:
            node = graph.nodes[i]
            k = node.options.index(primitive) if primitive in node.options else -1
            fixed[i] = k if k >= 0 and math.isfinite(node.costs_s[k]) else base[i]
        if layouts == "default":
            indices = [fixed.get(i, base[i]) for i in range(len(graph.nodes))]
            optimal = False
        else:
            indices, optimal = _best_with_fixed(graph, fixed, solver)
        found[primitive] = make_selection(graph, indices, solver=f"uniform:{primitive}", optimal=False,
                                          solve_s=time.perf_counter() - start,
                                          status=f"{primitive} fixed, layouts {'solved' if optimal else layouts}")
    return found


def _best_with_fixed(graph: CostGraph, fixed: Mapping[int, int], solver: str) -> tuple[list[int], bool]:
    """The option indices of least total cost with node ``i`` held at option ``fixed[i]``, and whether the solver
    proved it optimal."""
    keep = [[fixed[i]] if i in fixed else list(range(len(node.options))) for i, node in enumerate(graph.nodes)]
    nodes = tuple(CostNode(node.name, tuple(node.options[k] for k in keep[i]),
                           tuple(node.costs_s[k] for k in keep[i])) for i, node in enumerate(graph.nodes))
    edges = tuple(CostEdge(graph.nodes[u].name, graph.nodes[v].name, matrix[np.ix_(keep[u], keep[v])])
                  for u, v, matrix in dense(graph).matrices)
    chosen = solve(CostGraph(nodes, edges), solver)
    return [keep[i][k] for i, k in enumerate(chosen.indices)], chosen.optimal


def selection_from_labels(graph: CostGraph, chosen: Mapping[str, str], solver: str = "manual") -> Selection:
    """The :class:`Selection` of ``graph`` that takes option ``chosen[name]`` (a label) at every node, its cost
    from the graph; a node left out takes :func:`default_selection`'s option. An unknown node or label raises
    :class:`CostGraphError`."""
    indices = [_default_index(node) for node in graph.nodes]
    for name, label in chosen.items():
        node = graph.nodes[graph.index(name)]
        if label not in node.options:
            raise CostGraphError(f"node {name!r} has no option {label!r}; its options: {', '.join(node.options)}")
        indices[graph.index(name)] = node.options.index(label)
    return make_selection(graph, indices, solver=solver, optimal=False, solve_s=0.0, status="given")
