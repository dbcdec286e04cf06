"""The cost graph of a network (Mulder et al. 2.1, 4.3): its nodes, options and edge matrices from hand-made cost
tables, the baselines, the three solvers agreeing on a mixed-layout optimum, and the two cost constructors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness_presets import SHORT_HARNESS
from networks import asymmetric_residual_network, relu_network, tiny_network
from nnperf.ir import Network
from nnperf.optimize.select import (
    DEFAULT_PRIMITIVE,
    DEFAULT_STAND_IN,
    CostGraph,
    CostGraphError,
    MissingCostError,
    NoConvolutionError,
    PrimitiveCosts,
    SelectionError,
    default_selection,
    needed_transforms,
    network_cost_graph,
    predicted_costs,
    profiled_costs,
    selection_from_labels,
    solve,
    uniform_selections,
)
from nnperf.prediction.primitives import PrimitiveCostModel
from nnperf.primitives import (
    CHW,
    HCW,
    HWC,
    ConvConfig,
    ConvSample,
    PrimitiveDataset,
    TransformSample,
    all_primitives,
    all_transforms,
    conv_configs,
    conv_layer_configs,
    get_primitive,
    layer_key,
    layer_layouts,
    sample_configs,
)

BLOCKED = str(get_primitive("ort-nchwc").input_layout)  # chw16c with AVX-512, chw8c with AVX2
NCHWC = get_primitive("ort-nchwc").availability().ok


# seconds per element of each transformation: every direction its own number, so a matrix entry names its move
RATE = {"chw->hwc": 1e-9, "hwc->chw": 2e-9, f"chw->{BLOCKED}": 3e-9, f"{BLOCKED}->chw": 4e-9,
        f"hwc->{BLOCKED}": 5e-9, f"{BLOCKED}->hwc": 6e-9}
CONV_S = {"direct": 6e-5, "im2col-hwf": 5e-5, "onednn-chw": 4e-5, "onednn-hwc": 3e-5, "ort-nchwc": 2e-5,
          "winograd-2x3": 1e-5}


def transform_table(network: Network, rates: dict[str, float]) -> dict[tuple[int, int, tuple[int, int]],
                                                                      dict[str, float]]:
    shapes = [spec.shape for spec in network.inputs] + [layer.output_shape for layer in network.layers]
    return {(n, c, (h, w)): {name: rate * n * c * h * w for name, rate in rates.items()}
            for n, c, h, w in (s for s in shapes if len(s) == 4)}


def residual_costs() -> PrimitiveCosts:
    network = asymmetric_residual_network()
    configs = set(conv_layer_configs(network).values())
    return PrimitiveCosts({config: CONV_S for config in configs}, transform_table(network, RATE))


def here(names: list[str]) -> list[str]:
    """``names`` less ort-nchwc where ONNX Runtime has no NCHWc kernels."""
    return [n for n in names if n != "ort-nchwc" or NCHWC]


def matrix(graph: CostGraph, source: str, target: str) -> np.ndarray:
    edge = next(e for e in graph.edges if (e.source, e.target) == (source, target))
    return np.array(edge.costs_s)


def node(graph: CostGraph, name: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
    found = graph.nodes[graph.index(name)]
    return found.options, found.costs_s


# ----------------------------------------------------------------------------------------------- graph shape


def test_residual_graph_has_a_node_per_layer_and_input_and_an_edge_per_dependency() -> None:
    graph = network_cost_graph(asymmetric_residual_network(), residual_costs())
    assert graph.names == ("x", "c1", "r1", "c2", "add", "r2", "c3")
    assert {(e.source, e.target) for e in graph.edges} == {
        ("x", "c1"), ("c1", "r1"), ("r1", "c2"), ("c2", "add"), ("x", "add"), ("add", "r2"), ("r2", "c3")}
    assert sum(e.target == "add" for e in graph.edges) == 2  # the residual join


def test_conv_options_are_the_applicable_primitives_with_a_cost() -> None:
    graph = network_cost_graph(asymmetric_residual_network(), residual_costs())
    assert node(graph, "x") == (("chw",), (0.0,))
    assert node(graph, "r1") == (("chw", "hwc"), (0.0, 0.0))
    options, costs = node(graph, "c1")
    assert list(options) == here(["direct", "im2col-hwf", "onednn-chw", "onednn-hwc", "ort-nchwc", "winograd-2x3"])
    assert costs == tuple(CONV_S[o] for o in options)
    # a 1x1 convolution: no Winograd
    assert list(node(graph, "c2")[0]) == here(["direct", "im2col-hwf", "onednn-chw", "onednn-hwc", "ort-nchwc"])
    # stride 2 and asymmetric padding: neither Winograd nor oneDNN (torch's has one padding pair)
    assert list(node(graph, "c3")[0]) == here(["direct", "im2col-hwf", "ort-nchwc"])


def test_edge_matrices_are_the_transformation_times_between_the_options_layouts() -> None:
    graph = network_cost_graph(asymmetric_residual_network(), residual_costs())
    n = 16 * 8 * 8  # every edge here moves a 1x16x8x8 activation
    b_in, b_out = RATE[f"chw->{BLOCKED}"] * n, RATE[f"{BLOCKED}->chw"] * n
    to_hwc, to_chw = RATE["chw->hwc"] * n, RATE["hwc->chw"] * n
    # x (chw) -> c1: direct, im2col-hwf, onednn-chw read chw; onednn-hwc reads hwc; ort-nchwc blocked; winograd chw
    x_c1 = [0.0, 0.0, 0.0, to_hwc] + ([b_in] if NCHWC else []) + [0.0]
    assert np.allclose(matrix(graph, "x", "c1"), [x_c1], rtol=1e-12, atol=0)
    # c1 -> r1 (chw, hwc): the rows are what each primitive writes
    c1_r1 = [[0.0, to_hwc], [to_chw, 0.0], [0.0, to_hwc], [to_chw, 0.0]]
    c1_r1 += [[b_out, RATE[f"{BLOCKED}->hwc"] * n]] if NCHWC else []
    c1_r1 += [[0.0, to_hwc]]
    assert np.allclose(matrix(graph, "c1", "r1"), c1_r1, rtol=1e-12, atol=0)
    assert np.allclose(matrix(graph, "x", "add"), [[0.0, to_hwc]], rtol=1e-12, atol=0)
    assert np.allclose(matrix(graph, "add", "r2"), [[0.0, to_hwc], [to_chw, 0.0]], rtol=1e-12, atol=0)
    # r2 -> c3 (direct, im2col-hwf read chw; ort-nchwc blocked)
    r2_c3 = [[0.0, 0.0] + ([b_in] if NCHWC else []),
             [to_chw, to_chw] + ([RATE[f"hwc->{BLOCKED}"] * n] if NCHWC else [])]
    assert np.allclose(matrix(graph, "r2", "c3"), r2_c3, rtol=1e-12, atol=0)


def test_the_output_pays_its_move_to_chw() -> None:
    graph = network_cost_graph(asymmetric_residual_network(), residual_costs())
    n = 32 * 4 * 4
    expected = [CONV_S["direct"], CONV_S["im2col-hwf"] + RATE["hwc->chw"] * n]
    expected += [CONV_S["ort-nchwc"] + RATE[f"{BLOCKED}->chw"] * n] if NCHWC else []
    assert np.allclose(node(graph, "c3")[1], expected, rtol=1e-12, atol=0)


def test_tiny_network_graph() -> None:
    network = tiny_network()
    configs = set(conv_layer_configs(network).values())
    costs = PrimitiveCosts({c: {"onednn-chw": 1e-3, "winograd-2x3": 2e-3, "conv1x1-fhw": 1e-4} for c in configs},
                           transform_table(network, {"chw->hwc": 1e-9, "hwc->chw": 1e-9}))
    graph = network_cost_graph(network, costs)
    assert graph.names == ("x", *(layer.name for layer in network.layers))
    assert node(graph, "conv1")[0] == ("onednn-chw", "winograd-2x3")  # conv1x1 does not apply to a 3x3 kernel
    assert node(graph, "flatten")[0] == ("chw", "hwc")  # it reads a 4-D tensor
    assert node(graph, "fc")[0] == ("chw",)  # 2-D in and out: one layout
    assert {(e.source, e.target) for e in graph.edges if e.target in ("add", "cat")} == {
        ("conv2", "add"), ("relu1", "add"), ("pool", "cat"), ("dw", "cat")}
    # gap's 1x16x1x1 output has the same bytes in chw and hwc: moving it is free
    assert np.array_equal(matrix(graph, "gap", "flatten"), np.zeros((2, 2)))
    assert np.allclose(matrix(graph, "cat", "gap"), [[0.0, 1024e-9], [1024e-9, 0.0]], rtol=1e-12, atol=0)


def test_a_primitive_without_a_finite_cost_is_not_an_option() -> None:
    network = asymmetric_residual_network()
    configs = set(conv_layer_configs(network).values())
    costs = PrimitiveCosts({c: {"direct": 1e-4, "im2col-hwf": math.nan, "onednn-chw": math.inf} for c in configs},
                           transform_table(network, RATE))
    assert costs.primitive_times(next(iter(configs))) == {"direct": 1e-4}
    assert node(network_cost_graph(network, costs), "c1")[0] == ("direct",)


# ------------------------------------------------------------------------ solving: a mixed-layout optimum

U = 1e-6  # s per element of chw->hwc; hwc->chw costs twice as much
TINY_CONV_S = {  # (ms) conv1, conv2, dw
    "onednn-chw": (10, 10, 2), "onednn-hwc": (10, 4, 6), "im2col-hwf": (3, 10, 6), "im2row-fhw": (10, 10, 6)}


def tiny_costs() -> PrimitiveCosts:
    network = tiny_network()
    layers = conv_layer_configs(network)
    conv_s = {layers[name]: {p: ms[i] * 1e-3 for p, ms in TINY_CONV_S.items()}
              for i, name in enumerate(("conv1", "conv2", "dw"))}
    return PrimitiveCosts(conv_s, transform_table(network, {"chw->hwc": U, "hwc->chw": 2 * U}))


def test_exhaustive_pbqp_and_ilp_find_the_hand_computed_mixed_optimum() -> None:
    graph = network_cost_graph(tiny_network(), tiny_costs())
    # conv1 im2col-hwf reads the chw input and writes hwc (3 ms); bn1, relu1, conv2 (onednn-hwc, 4 ms), add, pool
    # stay hwc; dw is cheapest in chw (2 ms) even after moving pool's 8x8x8 output hwc->chw (2 U * 512); cat runs
    # hwc, paying dw's chw->hwc (U * 512) rather than pool's hwc->chw (2 U * 512); gap stays hwc and its 1x1
    # output is the same in both layouts
    optimum = (3 + 4 + 2) * 1e-3 + 2 * U * 512 + U * 512
    expected = {"x": "chw", "conv1": "im2col-hwf", "bn1": "hwc", "relu1": "hwc", "conv2": "onednn-hwc",
                "add": "hwc", "pool": "hwc", "dw": "onednn-chw", "cat": "hwc", "gap": "hwc", "fc": "chw",
                "softmax": "chw"}
    for solver in ("exhaustive", "pbqp", "ilp"):
        selection = solve(graph, solver)
        assert selection.cost_s == pytest.approx(optimum, rel=1e-9), solver
        chosen = selection.chosen
        assert chosen.pop("flatten") in ("chw", "hwc")  # a tie: flatten reads gap's 1x1 output for free
        assert chosen == expected, solver
        assert selection.optimal, solver


def test_default_and_uniform_selections_cost_what_hand_arithmetic_says() -> None:
    graph = network_cost_graph(tiny_network(), tiny_costs())
    default = default_selection(graph)  # tiny_costs has no torch-conv2d time: oneDNN on chw stands in
    assert default.cost_s == pytest.approx((10 + 10 + 2) * 1e-3, rel=1e-12)
    assert set(default.chosen.values()) == {"chw", "onednn-chw"}
    uniform = uniform_selections(graph)
    assert list(uniform) == sorted(TINY_CONV_S)
    # onednn-hwc everywhere, the layers between in hwc: only the input moves, chw->hwc on 3x16x16
    hwc = uniform["onednn-hwc"]
    assert hwc.cost_s == pytest.approx((10 + 4 + 6) * 1e-3 + U * 768, rel=1e-12)
    assert hwc.chosen["relu1"] == "hwc" and hwc.solver == "uniform:onednn-hwc"
    # the same with every layer kept in chw: conv1 -> bn1, conv2 -> add and dw -> cat move hwc->chw, relu1 -> conv2
    # and pool -> dw chw->hwc
    kept = uniform_selections(graph, layouts="default")["onednn-hwc"]
    moves = 2 * U * (2048 + 2048 + 512) + U * (768 + 2048 + 512)
    assert kept.cost_s == pytest.approx((10 + 4 + 6) * 1e-3 + moves, rel=1e-12)
    assert min(s.cost_s for s in uniform.values()) >= solve(graph, "exhaustive").cost_s


def test_the_default_is_torch_conv2d_on_every_convolution_asymmetric_padding_included() -> None:
    network = asymmetric_residual_network()
    configs = set(conv_layer_configs(network).values())
    costs = PrimitiveCosts({c: {**CONV_S, "torch-conv2d": 7e-5} for c in configs}, transform_table(network, RATE))
    assert DEFAULT_PRIMITIVE == "torch-conv2d"
    default = default_selection(network_cost_graph(network, costs))
    assert {default.chosen[name] for name in ("c1", "c2", "c3")} == {"torch-conv2d"}
    assert {default.chosen[name] for name in ("x", "r1", "add", "r2")} == {"chw"}
    assert default.cost_s == pytest.approx(3 * 7e-5, rel=1e-12)  # everything chw: no move is paid


def test_without_a_torch_conv2d_time_the_default_is_onednn_else_the_fastest_option() -> None:
    # costs made before torch-conv2d was a primitive: oneDNN on chw stands in for it where it applies
    assert DEFAULT_STAND_IN == "onednn-chw"
    graph = network_cost_graph(asymmetric_residual_network(), residual_costs())
    chosen = default_selection(graph).chosen
    assert chosen["c1"] == chosen["c2"] == "onednn-chw"
    assert chosen["c3"] == ("ort-nchwc" if NCHWC else "im2col-hwf")  # the cheapest c3 option by its node cost
    assert selection_from_labels(graph, {"c1": "direct"}).chosen["c1"] == "direct"


HCW_RATE = {"chw->hcw": 7e-9, "hcw->chw": 8e-9, "hwc->hcw": 9e-9, "hcw->hwc": 10e-9}
"""Seconds per element of the moves to and from hcw, each its own number."""


def test_mec_row_partition_reads_and_writes_hcw_in_the_graph() -> None:
    network = asymmetric_residual_network()
    configs = set(conv_layer_configs(network).values())
    prims = {"direct": 6e-5, "mec-col": 5e-5, "mec-row-partition": 4e-5}
    needed = needed_transforms(network, {name: list(prims) for name in conv_layer_configs(network)})
    assert {name for _, name in needed} == {"chw->hwc", "hwc->chw", *HCW_RATE}
    costs = PrimitiveCosts({c: prims for c in configs}, transform_table(network, {**RATE, **HCW_RATE}))
    graph = network_cost_graph(network, costs)
    n = 16 * 8 * 8
    assert node(graph, "c1")[0] == ("direct", "mec-col", "mec-row-partition")
    # x (chw) -> c1: direct reads chw, mec-col hwc, mec-row-partition hcw
    assert np.allclose(matrix(graph, "x", "c1"), [[0.0, RATE["chw->hwc"] * n, HCW_RATE["chw->hcw"] * n]],
                       rtol=1e-12, atol=0)
    # c1 -> r1 (chw, hwc): each row is what the c1 option writes
    assert np.allclose(matrix(graph, "c1", "r1"), [[0.0, RATE["chw->hwc"] * n], [RATE["hwc->chw"] * n, 0.0],
                                                   [HCW_RATE["hcw->chw"] * n, HCW_RATE["hcw->hwc"] * n]],
                       rtol=1e-12, atol=0)
    # the output c3 (1x32x4x4) hands hcw back in chw
    assert np.allclose(node(graph, "c3")[1], [6e-5, 5e-5 + RATE["hwc->chw"] * 512, 4e-5 + HCW_RATE["hcw->chw"] * 512],
                       rtol=1e-12, atol=0)


def test_moves_between_plain_layouts_with_the_same_bytes_cost_nothing() -> None:
    costs = PrimitiveCosts({})  # no transformation times at all: only a free move can be asked for
    assert costs.transform_time((1, 1, (5, 7)), CHW, HCW) == 0.0  # one channel: all three are (h, w)
    assert costs.transform_time((1, 1, (5, 7)), HCW, HWC) == 0.0
    assert costs.transform_time((2, 4, (1, 7)), HCW, CHW) == 0.0  # one row: chw and hcw are (c, w)
    assert costs.transform_time((2, 4, (5, 1)), HWC, HCW) == 0.0  # one column: hwc and hcw are (h, c)
    assert costs.transform_time((2, 4, (1, 1)), HCW, HWC) == 0.0  # one pixel
    for shape, src, dst in [((2, 4, (1, 7)), CHW, HWC), ((2, 4, (5, 1)), CHW, HCW), ((2, 4, (5, 7)), HCW, HWC)]:
        with pytest.raises(MissingCostError, match=f"no {src}->{dst} transformation"):
            costs.transform_time(shape, src, dst)


# ----------------------------------------------------------------------------- the other layers' layout costs


def tiny_layer_times(hwc_ms: dict[str, float]) -> dict[str, dict[str, float]]:
    """1 ms in chw for every layout layer of tiny_network; in hwc ``hwc_ms[name]`` ms, else 1 ms."""
    network = tiny_network()
    return {layer_key(layer): {"chw": 1e-3, "hwc": hwc_ms.get(layer.name, 1.0) * 1e-3}
            for layer in network.layers if len(layer_layouts(layer)) > 1 and layer.name not in ("conv1", "conv2", "dw")}


def test_a_layer_costs_its_time_in_each_layout_and_the_optimum_follows() -> None:
    network = tiny_network()
    # pool is 5 ms faster in hwc, cat 20 ms slower: the mixed optimum keeps everything but cat as before
    costs = tiny_costs().with_layers(tiny_layer_times({"pool": 0.2, "cat": 21.0}))
    graph = network_cost_graph(network, costs)
    assert node(graph, "pool") == (("chw", "hwc"), (1e-3, 0.2e-3))
    assert node(graph, "fc") == (("chw",), (0.0,))  # one layout: nothing to choose, nothing charged
    layers = sum(1 for layer in network.layers if len(layer_layouts(layer)) > 1) - 3  # less the convolutions
    selection = solve(graph, "exhaustive")
    # the optimum of test_exhaustive_pbqp_and_ilp_find_the_hand_computed_mixed_optimum but cat in chw: dw's output
    # stays chw, pool's output moves hwc->chw (2 U * 512) on both edges, to dw and to cat (the graph charges every
    # edge its own move); every layer 1 ms but pool 0.2 ms
    expected = (3 + 4 + 2) * 1e-3 + 2 * 2 * U * 512 + (layers - 1) * 1e-3 + 0.2e-3
    assert selection.chosen["cat"] == "chw" and selection.chosen["pool"] == "hwc"
    assert selection.cost_s == pytest.approx(expected, rel=1e-9)
    assert solve(graph, "pbqp").cost_s == pytest.approx(expected, rel=1e-9)
    # the default runs every layer in chw and pays for each
    assert default_selection(graph).cost_s == pytest.approx((10 + 10 + 2) * 1e-3 + layers * 1e-3, rel=1e-12)


def test_costs_without_layer_times_charge_nothing_and_with_some_name_a_missing_layer() -> None:
    network = tiny_network()
    layers = {layer.name: layer for layer in network.layers}
    assert tiny_costs().layer_times(layers["pool"]) == {"chw": 0.0, "hwc": 0.0}
    times = tiny_layer_times({})
    partial = tiny_costs().with_layers({k: v for k, v in times.items() if k != layer_key(layers["cat"])})
    with pytest.raises(MissingCostError, match=r"no time of layer 'cat' \(concat\) in chw or hwc"):
        network_cost_graph(network, partial)
    # a layout without a time is not an option for its layer
    only_chw = tiny_costs().with_layers({**times, layer_key(layers["cat"]): {"chw": 1e-3}})
    assert node(network_cost_graph(network, only_chw), "cat") == (("chw", "hwc"), (1e-3, math.inf))
    with pytest.raises(CostGraphError, match="negative"):
        tiny_costs().with_layers({layer_key(layers["cat"]): {"chw": -1.0}})


# --------------------------------------------------------------------------------------------------- errors


def test_a_network_without_convolutions_is_refused() -> None:
    with pytest.raises(NoConvolutionError, match="no 2-D convolution"):
        network_cost_graph(relu_network(), PrimitiveCosts({}))
    with pytest.raises(NoConvolutionError):
        profiled_costs(PrimitiveDataset("sys", (), (), (), ()), relu_network())


def test_costs_missing_a_configuration_or_transformation_name_it() -> None:
    network = asymmetric_residual_network()
    layers = conv_layer_configs(network)
    partial = PrimitiveCosts({layers["c1"]: CONV_S, layers["c2"]: CONV_S}, transform_table(network, RATE))
    with pytest.raises(MissingCostError, match=r"c16 f32 8x8 k3x3 s2 p0,0,1,1 \(layer 'c3'\)"):
        network_cost_graph(network, partial)
    no_moves = PrimitiveCosts({c: CONV_S for c in layers.values()}, {})
    with pytest.raises(MissingCostError, match=r"no hwc->chw transformation of a 1x32x4x4 activation \(the output of 'c3'\)"):
        network_cost_graph(network, no_moves)
    with pytest.raises(CostGraphError, match="negative"):
        PrimitiveCosts({layers["c1"]: {"direct": -1.0}})


def tiny_dataset(drop_config: str = "", drop_shape: tuple[int, int, tuple[int, int]] | None = None
                 ) -> PrimitiveDataset:
    network = tiny_network()
    layers = conv_layer_configs(network)
    conv = tuple(ConvSample(config, {"onednn-chw": 1e-3 * (i + 1), "direct": 2e-3, "conv1x1-fhw": 1e-5})
                 for i, (name, config) in enumerate(layers.items()) if name != drop_config)
    table = transform_table(network, {"chw->hwc": 1e-9, "hwc->chw": 2e-9})
    layout = tuple(TransformSample(n, c, im, times) for (n, c, im), times in table.items() if (n, c, im) != drop_shape)
    return PrimitiveDataset("sys", ("conv1x1-fhw", "direct", "onednn-chw"), ("chw->hwc", "hwc->chw"), conv, layout)


def test_profiled_costs_look_up_the_stored_medians() -> None:
    network = tiny_network()
    layers = conv_layer_configs(network)
    costs = profiled_costs(tiny_dataset(), network)
    # conv1x1-fhw does not apply to these 3x3 layers: dropped
    assert costs.primitive_times(layers["conv2"]) == {"onednn-chw": 2e-3, "direct": 2e-3}
    assert costs.transform_time((1, 8, 16, 16), HWC, CHW) == 2e-9 * 2048
    assert costs.transform_time((1, 8, 16, 16), HWC, HWC) == 0.0
    graph = network_cost_graph(network, costs)
    assert node(graph, "dw") == (("direct", "onednn-chw"), (2e-3, 3e-3))


def test_profiled_costs_refuse_or_measure_what_the_dataset_lacks() -> None:
    network = tiny_network()
    with pytest.raises(MissingCostError, match=r"no convolution c8 f8 8x8 k3x3 s1 p1 g8 \(layer 'dw' of 'tiny'\)"):
        profiled_costs(tiny_dataset(drop_config="dw"), network)
    # cat's 1x16x8x8 output is read by no convolution: a profiled dataset does not hold its moves
    with pytest.raises(MissingCostError, match=r"hwc transformation of a 1x16x8x8 activation \(the output of 'cat'"):
        profiled_costs(tiny_dataset(drop_shape=(1, 16, (8, 8))), network)
    costs = profiled_costs(tiny_dataset(drop_shape=(1, 16, (8, 8))), network, measure_missing=True,
                           harness=SHORT_HARNESS)
    measured = costs.transforms_s[(1, 16, (8, 8))]
    assert set(measured) == {"chw->hwc", "hwc->chw"} and all(0 < t < 0.01 for t in measured.values())
    assert costs.transforms_s[(1, 8, (8, 8))] == {"chw->hwc": 512e-9, "hwc->chw": 1024e-9}
    # a missing configuration: every primitive that applies to the depthwise layer is timed here
    dw = conv_layer_configs(network)["dw"]
    costs = profiled_costs(tiny_dataset(drop_config="dw"), network, measure_missing=True, harness=SHORT_HARNESS)
    timed = costs.primitive_times(dw)
    assert set(timed) == {p.name for p in all_primitives() if p.availability().ok and p.applies(dw)}
    assert "winograd-2x3" in timed and "aten-im2col" not in timed  # aten-im2col has no groups
    assert all(0 < t < 0.05 for t in timed.values())


# ---------------------------------------------------------------------------------------- predicted costs


def synthetic_dataset() -> PrimitiveDataset:
    """Configurations around tiny's, each primitive at a time proportional to the MACs (2x per name step), and
    transformations proportional to the elements moved."""
    seeds = conv_configs(tiny_network())
    configs = [*seeds, *sample_configs(seeds, 30, seed=1)]
    prims = [p for p in all_primitives() if p.name in ("direct", "onednn-chw", "onednn-hwc", "winograd-2x3")]
    conv = tuple(ConvSample(c, {p.name: c.macs * 1e-10 * (j + 1) for j, p in enumerate(prims) if p.applies(c)})
                 for c in configs)
    names = [t.name for t in all_transforms() if t.src != t.dst]
    layout = tuple(TransformSample(c.batch, c.c, c.im, {n: (k + 1) * 1e-9 * c.c * c.im[0] * c.im[1]
                                                         for k, n in enumerate(names)})
                   for c in dict.fromkeys(configs))
    return PrimitiveDataset("synthetic", tuple(p.name for p in prims), tuple(names), conv, layout)


def test_predicted_costs_are_the_models_batched_predictions(monkeypatch: pytest.MonkeyPatch) -> None:
    model = PrimitiveCostModel(kind="lin").fit(synthetic_dataset())
    network = tiny_network()
    calls = []
    predict = model.predict
    monkeypatch.setattr(model, "predict", lambda *a, **k: calls.append(a) or predict(*a, **k))
    costs = predicted_costs(model, network)
    assert len(calls) == 1  # one batched pass over the three distinct configurations
    configs: list[ConvConfig] = list(conv_layer_configs(network).values())
    table = predict(configs, list(model.primitives_))
    for config, row in zip(configs, table, strict=True):
        expected = {p: float(t) for p, t in zip(model.primitives_, row, strict=True) if np.isfinite(t)}
        assert costs.primitive_times(config) == expected
    assert "winograd-2x3" in costs.primitive_times(configs[0])
    moves = model.predict_transforms([(1, 8, (8, 8))], ["chw->hwc", "hwc->chw"])[0]
    assert costs.transforms_s[(1, 8, (8, 8))] == {"chw->hwc": moves[0], "hwc->chw": moves[1]}
    assert solve(network_cost_graph(network, costs), "pbqp").cost_s > 0


def test_a_margin_makes_every_choice_but_the_default_dearer_and_keeps_the_default_where_savings_are_small() -> None:
    model = PrimitiveCostModel(kind="lin").fit(synthetic_dataset())
    network = tiny_network()
    plain, careful = predicted_costs(model, network), predicted_costs(model, network, margin=0.25)
    assert "margin" not in plain.source and "+25%" in careful.source
    for config in conv_layer_configs(network).values():
        # the model lacks torch-conv2d, so its stand-in (oneDNN on chw) is the default that keeps its prediction
        for name, seconds in plain.primitive_times(config).items():
            factor = 1.0 if name == DEFAULT_STAND_IN else 1.25
            assert careful.primitive_times(config)[name] == pytest.approx(seconds * factor)
    for shape, row in plain.transforms_s.items():
        assert careful.transforms_s[shape] == pytest.approx({n: t * 1.25 for n, t in row.items()})
    # a margin larger than any saving the model predicts leaves every layer on the default, in chw
    default = default_selection(network_cost_graph(network, plain)).chosen
    assert solve(network_cost_graph(network, plain), "pbqp").chosen != default  # without it, some layer leaves it
    cautious = solve(network_cost_graph(network, predicted_costs(model, network, margin=100.0)), "pbqp")
    assert cautious.chosen == default
    for bad in (-0.1, float("nan")):
        with pytest.raises(SelectionError, match="margin must be a fraction >= 0"):
            predicted_costs(model, network, margin=bad)
