"""PreVIousNet calibration networks: layer counts from PreVIous section V, coverage of the zoo's op types."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from nnperf import zoo
from nnperf.ir import ConvAttrs, ConvKind, Network, OpType, UpsampleAttrs
from nnperf.ir.metrics import network_metrics
from nnperf.prediction import model_key
from nnperf.zoo import zoo_network

CONFIGS = ["56x56x32", "28x28x64", "14x14x64", "7x7x64"]
NET01 = [f"previousnet01_{c}" for c in CONFIGS]
NET03 = [f"previousnet03_{c}" for c in CONFIGS]
NET04 = [f"previousnet04_{c}" for c in CONFIGS]  # activations and data movement
NET05 = [f"previousnet05_{c}" for c in CONFIGS]  # resizing, normalisation and attention
CALIBRATION = [*NET01, "previousnet02", *NET03, *NET04, *NET05]

POOLS = {OpType.MAX_POOL, OpType.AVG_POOL, OpType.GLOBAL_AVG_POOL, OpType.GLOBAL_MAX_POOL}
ELTWISE = {OpType.ADD, OpType.MUL, OpType.MAX}
ACTIVATIONS = [OpType.RELU6, OpType.LEAKY_RELU, OpType.SIGMOID, OpType.TANH, OpType.HARDSWISH, OpType.SILU]


@pytest.fixture(scope="module")
def networks() -> dict[str, Network]:
    return {name: zoo_network(name) for name in CALIBRATION}


def _counts(net: Network) -> Counter[OpType]:
    return Counter(layer.op for layer in net.layers)


def _dead_layers(net: Network) -> list[str]:
    read = {name for layer in net.layers for name in layer.inputs}
    return [layer.name for layer in net.layers if layer.name not in read and layer.name not in net.outputs]


def test_registry_keeps_reference_names_and_lists_calibration_apart():
    assert zoo.calibration_names() == CALIBRATION
    # 14, + shufflenet and mobilenet v3, + unet, convnext and vit, + yolov8n
    assert len(zoo.names()) == 14 + 2 + 3 + 1 and not set(zoo.names()) & set(CALIBRATION)
    assert all(e.calibration for e in zoo.calibration_entries())
    assert not any(e.calibration for e in zoo.entries())
    assert zoo.get("PreVIousNet01-7x7x64").name == "previousnet01_7x7x64"
    assert zoo.get("previousnet02").input_shape == (1, 256)
    assert [zoo.get(n).input_shape for n in NET03] == [(1, 32, 56, 56), (1, 64, 28, 28), (1, 64, 14, 14),
                                                       (1, 64, 7, 7)]


@pytest.mark.parametrize("name", NET01)
def test_previousnet01_has_the_papers_52_layers(networks, name):
    counts = _counts(networks[name])
    assert len(networks[name].layers) == 52
    assert counts[OpType.CONV] == 15
    assert counts[OpType.BATCH_NORM] == 7
    assert counts[OpType.SCALE] == 7
    assert counts[OpType.RELU] == 7
    assert sum(counts[op] for op in POOLS) == 6
    assert sum(counts[op] for op in ELTWISE) == 5
    assert counts[OpType.CONCAT] == 5
    # Varied configurations: 3 max, 2 average, 1 global average pool; add, mul and max eltwise.
    assert (counts[OpType.MAX_POOL], counts[OpType.AVG_POOL], counts[OpType.GLOBAL_AVG_POOL]) == (3, 2, 1)
    assert (counts[OpType.ADD], counts[OpType.MUL], counts[OpType.MAX]) == (3, 1, 1)


@pytest.mark.parametrize("name", NET01)
def test_previousnet01_conv_kinds(networks, name):
    convs = [layer for layer in networks[name].layers if layer.op is OpType.CONV]
    kinds = Counter(layer.conv_kind for layer in convs)
    assert kinds == {ConvKind.STANDARD: 6, ConvKind.POINTWISE: 6, ConvKind.DEPTHWISE: 3}
    pointwise = [layer for layer in convs if layer.conv_kind is ConvKind.POINTWISE]
    assert sum(layer.output_shape[1] > layer.input_shape[1] for layer in pointwise) == 3  # general
    assert sum(layer.output_shape[1] < layer.input_shape[1] for layer in pointwise) == 3  # bottleneck
    attrs = [layer.attrs for layer in convs]
    assert all(isinstance(a, ConvAttrs) for a in attrs)
    assert sum(a.stride == (2, 2) for a in attrs) == 2  # type: ignore[union-attr]
    assert {a.kernel for a in attrs} == {(1, 1), (3, 3), (5, 5)}  # type: ignore[union-attr]
    assert convs[0].input_shape == zoo.get(name).input_shape


@pytest.mark.parametrize(("name", "outputs"), [
    # level 3 global pool (8C), level 4 concat (8C + 4C), level 4 pointwise (16C); levels H, H/2, H/4, H/8 (ceil)
    ("previousnet01_56x56x32", [(1, 256, 1, 1), (1, 384, 7, 7), (1, 512, 7, 7)]),
    ("previousnet01_28x28x64", [(1, 512, 1, 1), (1, 768, 4, 4), (1, 1024, 4, 4)]),
    ("previousnet01_14x14x64", [(1, 512, 1, 1), (1, 768, 2, 2), (1, 1024, 2, 2)]),
    ("previousnet01_7x7x64", [(1, 512, 1, 1), (1, 768, 1, 1), (1, 1024, 1, 1)]),
])
def test_previousnet01_output_shapes(networks, name, outputs):
    net = networks[name]
    shape_of = {layer.name: layer.output_shape for layer in net.layers}
    assert [shape_of[o] for o in net.outputs] == outputs
    # The global pool still averages a 2x2 map in the smallest configuration.
    gap = next(layer for layer in net.layers if layer.op is OpType.GLOBAL_AVG_POOL)
    assert min(gap.input_shape[2:]) >= 2


@pytest.mark.parametrize(("channels", "name"), [(32, NET01[0]), (64, NET01[3])])
def test_previousnet01_parameters(networks, channels, name):
    # In c = C: conv weights 1243 c^2 (L1 9+2, L2 36+8+2+50, L3 8+72, L4 576+64+288+128) plus per-channel
    # terms 256 c (conv biases, depthwise weights 9c/9*4c/25*4c, and 2 per channel for the 7 Scale layers).
    assert network_metrics(networks[name]).params == 1243 * channels**2 + 256 * channels
    assert network_metrics(networks[NET01[0]]).params == 1_281_024


def test_previousnet02_has_32_fc_and_12_softmax(networks):
    net = networks["previousnet02"]
    assert dict(_counts(net)) == {OpType.LINEAR: 32, OpType.SOFTMAX: 12}
    fcs = [layer for layer in net.layers if layer.op is OpType.LINEAR]
    assert {layer.input_shape[1] for layer in fcs} == {10, 256, 512, 1000, 1024, 2048, 4096}
    assert {layer.output_shape[1] for layer in fcs} == {10, 256, 512, 1000, 1024, 2048, 4096}
    softmax_lengths = Counter(layer.output_shape[1] for layer in net.layers if layer.op is OpType.SOFTMAX)
    assert softmax_lengths == {10: 4, 1000: 3, 256: 1, 512: 1, 1024: 1, 2048: 1, 4096: 1}
    # (in + 1) * out per FC, by cluster: on 256: 720,114; on 512: 2,225,394; on 1024: 7,847,400;
    # on 2048: 15,232,266 (2048->4096 alone 8,392,704); on 4096: 15,675,122; custom/second pass: 3,916,090.
    assert network_metrics(net).params == 45_616_386  # under the 60 M budget


@pytest.mark.parametrize("name", NET03)
def test_previousnet03_repeats_each_activation_on_four_shapes(networks, name):
    net = networks[name]
    counts = _counts(net)
    assert len(net.layers) == 55
    for op in [*ACTIVATIONS, OpType.MUL, OpType.MAX]:
        shapes = {layer.input_shape for layer in net.layers if layer.op is op}
        assert counts[op] == 4 and len(shapes) == 4, op
    assert (counts[OpType.LRN], counts[OpType.PAD], counts[OpType.GLOBAL_MAX_POOL]) == (2, 2, 2)
    assert (counts[OpType.FLATTEN], counts[OpType.RESHAPE]) == (1, 1)
    modes = Counter(layer.attrs.mode for layer in net.layers if isinstance(layer.attrs, UpsampleAttrs))
    assert modes == {"nearest": 2, "linear": 2}
    kinds = Counter(layer.conv_kind for layer in net.layers if layer.op is OpType.CONV)
    assert kinds == {ConvKind.DEPTHWISE: 2, ConvKind.GROUPED: 2}
    ceil_pools = [layer for layer in net.layers if layer.op in POOLS and getattr(layer.attrs, "ceil_mode", False)]
    assert len(ceil_pools) == 2


@pytest.mark.parametrize("name", CALIBRATION)
def test_every_layer_reaches_an_output(networks, name):
    assert _dead_layers(networks[name]) == []


def test_calibration_networks_cover_every_reference_op_type(networks):
    covered = set().union(*(_counts(net) for net in networks.values()))
    for name in zoo.names():
        missing = set(_counts(zoo_network(name))) - covered - {OpType.IDENTITY, OpType.DROPOUT}
        assert not missing, f"{name}: {sorted(op.value for op in missing)}"


@pytest.mark.parametrize("name", ["previousnet01_7x7x64", "previousnet02", "previousnet03_7x7x64"])
def test_runs_for_real_and_matches_the_imported_shapes(networks, name):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        entry = zoo.get(name)
        with torch.no_grad():
            outputs = entry.build()(entry.example_input())
    finally:
        torch.set_num_threads(threads)
    net = networks[name]
    shape_of = {layer.name: layer.output_shape for layer in net.layers}
    assert [tuple(y.shape) for y in outputs] == [shape_of[o] for o in net.outputs]
    assert all(torch.isfinite(y).all() for y in outputs)


# activations and data movement
OPS_04 = [OpType.HARD_SIGMOID, OpType.CLIP, OpType.PRELU, OpType.GELU, OpType.SOFTPLUS, OpType.MISH, OpType.EXP,
          OpType.LOG, OpType.TRANSPOSE, OpType.CHANNEL_SHUFFLE, OpType.GATHER, OpType.EXPAND]


@pytest.mark.parametrize("name", NET04)
def test_previousnet04_runs_each_of_its_ops_on_three_shapes(networks, name):
    net = networks[name]
    counts = _counts(net)
    assert len(net.layers) == 62 and not _dead_layers(net)
    for op in OPS_04:
        assert counts[op] == 3, op
        assert len({layer.input_shapes for layer in net.layers if layer.op is op}) == 3, op
    assert counts[OpType.SLICE] == 9  # two halves of a chunk and a strided slice per level
    assert len({layer.attrs for layer in net.layers if layer.op is OpType.CLIP}) == 3


def test_previousnet04_runs_for_real_and_matches_the_imported_shapes(networks):
    entry, net = zoo.get("previousnet04_7x7x64"), networks["previousnet04_7x7x64"]
    with torch.no_grad():
        outputs = entry.build()(entry.example_input())
    shape_of = {layer.name: layer.output_shape for layer in net.layers}
    assert [tuple(y.shape) for y in outputs] == [shape_of[o] for o in net.outputs]
    assert all(torch.isfinite(y).all() for y in outputs)
# resizing, normalisation and attention
OPS_05 = {OpType.CONV_TRANSPOSE, OpType.LAYER_NORM, OpType.GROUP_NORM, OpType.REDUCE_MEAN, OpType.REDUCE_MAX,
          OpType.MATMUL, OpType.SUB, OpType.DIV, OpType.POW, OpType.GELU, OpType.CONSTANT}


@pytest.mark.parametrize("name", NET05)
def test_previousnet05_holds_each_of_its_ops_in_several_configurations(networks, name):
    net = networks[name]
    counts = _counts(net)
    assert OPS_05 <= set(counts)
    # two levels, each: 2 transposed convs, 2 layer norms (channels, last axis), a group and an instance norm,
    # 4 matrix products (3-D with a transposed operand and plain, 4-D likewise), 2 constants
    assert {op: counts[op] for op in OPS_05} == {
        OpType.CONV_TRANSPOSE: 4, OpType.LAYER_NORM: 4, OpType.GROUP_NORM: 4, OpType.REDUCE_MEAN: 2,
        OpType.REDUCE_MAX: 2, OpType.MATMUL: 8, OpType.SUB: 2, OpType.DIV: 2, OpType.POW: 2, OpType.GELU: 2,
        OpType.CONSTANT: 4}
    dilated = [layer for layer in net.layers if layer.op is OpType.CONV and layer.attrs.dilation == (2, 2)]
    assert len(dilated) == 2
    shapes = {layer.input_shape for layer in net.layers if layer.op is OpType.MATMUL}
    assert {len(s) for s in shapes} == {3, 4}
    # per level, the map made tokens (the innermost axis moved), and three rearrangements that copy rows: heads,
    # windows and a grid (3-D, 4-D and twice 6-D)
    transposes = [layer for layer in net.layers if layer.op is OpType.TRANSPOSE]
    assert sorted(model_key(layer) for layer in transposes) == ["transpose"] * 2 + ["transpose:rows"] * 6
    assert sorted(len(layer.input_shape) for layer in transposes) == [3, 3, 4, 4, 6, 6, 6, 6]


def test_previousnet05_runs_for_real_and_matches_the_imported_shapes(networks):
    entry = zoo.get("previousnet05_7x7x64")
    with torch.no_grad():
        outputs = entry.build()(entry.example_input())
    net = networks[entry.name]
    shape_of = {layer.name: layer.output_shape for layer in net.layers}
    assert [tuple(y.shape) for y in outputs] == [shape_of[o] for o in net.outputs]


NET06 = [f"previousnet06_{c}" for c in CONFIGS]


def test_previousnet06_is_registered_apart_from_the_default_calibration() -> None:
    assert zoo.block_calibration_names() == NET06 and not set(NET06) & set(zoo.calibration_names())
    assert zoo.get("PreVIousNet06-14x14x64").input_shape == (1, 64, 14, 14)


@pytest.mark.parametrize("name", NET06)
def test_previousnet06_chains_its_convolutions(name: str) -> None:
    net = zoo_network(name)
    counts = _counts(net)
    assert len(net.layers) == 77 and not _dead_layers(net)
    assert (counts[OpType.CONV], counts[OpType.BATCH_NORM], counts[OpType.RELU], counts[OpType.RELU6]) == (23, 23, 17, 4)
    assert (counts[OpType.ADD], counts[OpType.CONCAT], counts[OpType.LINEAR]) == (5, 2, 1)
    convs = [layer for layer in net.layers if layer.op is OpType.CONV]
    assert Counter(layer.conv_kind for layer in convs) == {ConvKind.STANDARD: 9, ConvKind.POINTWISE: 11,
                                                           ConvKind.DEPTHWISE: 3}
    # what the network is for: 15 of its 23 convolutions read another's output through BN and activations only
    # (the other 8 read the input, an add or a concat)
    by_name = {layer.name: layer for layer in net.layers}

    def reads_a_conv(layer) -> bool:
        source = by_name.get(layer.inputs[0])
        while source is not None and source.op in {OpType.BATCH_NORM, OpType.RELU, OpType.RELU6}:
            source = by_name.get(source.inputs[0])
        return source is not None and source.op is OpType.CONV

    assert sum(reads_a_conv(layer) for layer in convs) == 15


def test_previousnet06_weights_match_the_hand_count() -> None:
    module = zoo.get("previousnet06_56x56x32").build(0)
    conv_weights = sum(m.weight.numel() for m in module.modules() if isinstance(m, torch.nn.Conv2d))
    # C = 32: stem 9,216; basic 18,432; bottleneck 512 + 2,304 + 512; inverted 4,096 + 1,152 + 4,096;
    # fire 256 + 128 + 1,152; strided 18,432; basic at 2C 73,728; inverted 16,384 + 2,304 + 16,384;
    # fire 1,024 + 512 + 4,608; depthwise 576; 1x1 4,096
    assert conv_weights == 179_904
