"""from_onnx on tiny hand-built ONNX graphs: op mapping, attributes, shapes, wiring, metrics, errors.

Every expected number is worked out by hand in a comment next to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnperf.errors import ModelFileError, NnperfError, ShapeInferenceError, UnsupportedOperatorError
from nnperf.ir import (
    AxisAttrs,
    BatchNormAttrs,
    ChannelShuffleAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvKind,
    GatherAttrs,
    HardSigmoidAttrs,
    LeakyReluAttrs,
    LinearAttrs,
    LrnAttrs,
    Network,
    NoAttrs,
    OpType,
    PadAttrs,
    PoolAttrs,
    PReluAttrs,
    ScaleAttrs,
    SliceAttrs,
    TransposeAttrs,
    UpsampleAttrs,
)
from nnperf.ir.importers import from_onnx
from nnperf.ir.metrics import layer_metrics, network_metrics

# ---- helpers -------------------------------------------------------------------------------------


def vi(name: str, shape: Sequence[int | str | None]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def out(name: str = "y", rank: int = 4) -> onnx.ValueInfoProto:
    """A graph output of known rank whose sizes shape inference fills in."""
    return vi(name, [None] * rank)


def f32(name: str, value: object) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def i64(name: str, value: object) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=np.int64), name)


def make_model(nodes, inputs, outputs, inits=(), opset: int = 17, extra_opsets=()) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), initializer=list(inits))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset), *extra_opsets], ir_version=8
    )


def save(tmp_path: Path, nodes, inputs, outputs, inits=(), opset: int = 17, extra_opsets=(),
         filename: str = "model.onnx") -> Path:
    path = tmp_path / filename
    onnx.save(make_model(nodes, inputs, outputs, inits, opset, extra_opsets), str(path))
    return path


def load(tmp_path: Path, nodes, inputs, outputs, inits=(), opset: int = 17, **kwargs) -> Network:
    return from_onnx(save(tmp_path, nodes, inputs, outputs, inits, opset), **kwargs)


def single(tmp_path: Path, node: onnx.NodeProto, x_shape, out_rank: int = 4, inits=(), opset: int = 17,
           **kwargs) -> Network:
    """A one-node graph x -> node -> y, the node reading 'x' and writing 'y'."""
    net = load(tmp_path, [node], [vi("x", x_shape)], [out("y", out_rank)], inits, opset, **kwargs)
    return net


def only_layer(net: Network):
    assert len(net.layers) == 1, [(layer.name, layer.op) for layer in net.layers]
    return net.layers[0]


def rng_array(shape, seed: int = 0) -> np.ndarray:
    # strictly positive values: never an all-zero bias by accident
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape).astype(np.float32)


# ---- convolution ---------------------------------------------------------------------------------


def test_conv_3x3_with_bias_and_pads(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv1", pads=[1, 1, 1, 1],
                            kernel_shape=[3, 3])
    net = single(tmp_path, node, [1, 3, 8, 8], inits=[f32("W", rng_array((4, 3, 3, 3))), f32("B", [1, 2, 3, 4])])
    layer = only_layer(net)
    assert layer.name == "conv1"
    assert layer.op is OpType.CONV
    assert layer.inputs == ("x",)
    assert layer.input_shapes == ((1, 3, 8, 8),)
    # (8 + 1 + 1 - 3) // 1 + 1 = 8
    assert layer.output_shape == (1, 4, 8, 8)
    assert layer.attrs == ConvAttrs(kernel=(3, 3), stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1),
                                    groups=1, bias=True)
    assert layer.conv_kind is ConvKind.STANDARD
    assert net.inputs[0].name == "x" and net.inputs[0].shape == (1, 3, 8, 8) and net.inputs[0].dtype == "float32"
    assert net.outputs == ("conv1",)
    m = layer_metrics(layer)
    # kh*kw*Cin/groups*Hout*Wout*Cout + Hout*Wout*Cout = 3*3*3*8*8*4 + 8*8*4 = 6912 + 256 = 7168
    assert m.macs == 7168
    assert m.ops == 7168
    # weights 4*3*3*3 = 108, bias 4 -> 112
    assert m.params == 112
    assert m.n_input == 3 * 8 * 8 == 192
    assert m.n_output == 4 * 8 * 8 == 256
    # 192 + 112 + 256 = 560
    assert m.mem_ops == 560
    # im2col input: kh*kw*Cin*Hout*Wout = 3*3*3*8*8 = 1728; 1728 + 112 + 256 = 2096
    assert m.mem_ops_im2col == 2096


def test_conv_kernel_taken_from_weight_when_attribute_missing(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="c")
    layer = only_layer(single(tmp_path, node, [1, 2, 6, 6], inits=[f32("W", rng_array((3, 2, 5, 3)))]))
    # H: 6 - 5 + 1 = 2, W: 6 - 3 + 1 = 4
    assert layer.output_shape == (1, 3, 2, 4)
    assert layer.attrs.kernel == (5, 3)


def test_conv_strided(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="c", strides=[2, 2])
    layer = only_layer(single(tmp_path, node, [1, 3, 9, 9],
                              inits=[f32("W", rng_array((2, 3, 3, 3))), f32("B", [0.5, -0.5])]))
    # (9 - 3) // 2 + 1 = 4
    assert layer.output_shape == (1, 2, 4, 4)
    assert layer.attrs == ConvAttrs(kernel=(3, 3), stride=(2, 2), padding=(0, 0, 0, 0), groups=1, bias=True)
    m = layer_metrics(layer)
    # 3*3*3 * (4*4*2) + 4*4*2 = 27*32 + 32 = 864 + 32 = 896
    assert m.macs == 896
    # 2*3*3*3 + 2 = 56
    assert m.params == 56


def test_conv_dilated_asymmetric_pads(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="c", dilations=[2, 2], pads=[0, 1, 2, 3])
    layer = only_layer(single(tmp_path, node, [1, 1, 7, 7], inits=[f32("W", rng_array((1, 1, 3, 3)))]))
    # H: (7 + 0 + 2 - 2*(3-1) - 1) // 1 + 1 = 5; W: (7 + 1 + 3 - 4 - 1) + 1 = 7
    assert layer.output_shape == (1, 1, 5, 7)
    # ONNX pads are (begin_h, begin_w, end_h, end_w) = (top, left, bottom, right)
    assert layer.attrs.padding == (0, 1, 2, 3)
    assert layer.attrs.dilation == (2, 2)


def test_conv_pointwise(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="pw")
    layer = only_layer(single(tmp_path, node, [1, 8, 4, 4],
                              inits=[f32("W", rng_array((16, 8, 1, 1))), f32("B", rng_array((16,)))]))
    assert layer.output_shape == (1, 16, 4, 4)
    assert layer.attrs.kernel == (1, 1)
    assert layer.conv_kind is ConvKind.POINTWISE
    m = layer_metrics(layer)
    # 1*1*8 * (4*4*16) + 4*4*16 = 8*256 + 256 = 2304
    assert m.macs == 2304
    # 16*8 + 16 = 144
    assert m.params == 144
    # im2col of a 1x1 conv reads each input once: 1*1*8*4*4 = 128 = n_input
    assert m.mem_ops_im2col == m.mem_ops == 128 + 144 + 256


def test_conv_depthwise(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="dw", group=4, pads=[1, 1, 1, 1])
    layer = only_layer(single(tmp_path, node, [1, 4, 6, 6], inits=[f32("W", rng_array((4, 1, 3, 3)))]))
    assert layer.output_shape == (1, 4, 6, 6)
    assert layer.attrs.groups == 4
    assert layer.attrs.bias is False
    assert layer.conv_kind is ConvKind.DEPTHWISE
    m = layer_metrics(layer)
    # 3*3*(4/4) * (6*6*4), no bias: 9 * 144 = 1296
    assert m.macs == 1296
    # 4*1*3*3 = 36
    assert m.params == 36


def test_conv_depthwise_with_channel_multiplier(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="dw", group=2)
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], inits=[f32("W", rng_array((4, 1, 1, 1)))]))
    # groups == Cin == 2 and Cout = 4 is a multiple of Cin
    assert layer.output_shape == (1, 4, 3, 3)
    assert layer.conv_kind is ConvKind.DEPTHWISE


def test_conv_grouped(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="gc", group=2)
    layer = only_layer(single(tmp_path, node, [1, 4, 5, 5],
                              inits=[f32("W", rng_array((6, 2, 3, 3))), f32("B", rng_array((6,)))]))
    # (5 - 3) + 1 = 3
    assert layer.output_shape == (1, 6, 3, 3)
    assert layer.attrs.groups == 2
    assert layer.conv_kind is ConvKind.GROUPED
    m = layer_metrics(layer)
    # 3*3*(4/2) * (3*3*6) + 3*3*6 = 18*54 + 54 = 972 + 54 = 1026
    assert m.macs == 1026
    # 6*2*3*3 + 6 = 108 + 6 = 114
    assert m.params == 114


@pytest.mark.parametrize(
    ("auto_pad", "padding"),
    [
        # H=6, stride 2, k 3: out ceil(6/2)=3, total pad (3-1)*2+3-6 = 1 -> upper (0, 1), lower (1, 0)
        # W=7, stride 2, k 3: out ceil(7/2)=4, total pad (4-1)*2+3-7 = 2 -> (1, 1) either way
        ("SAME_UPPER", (0, 1, 1, 1)),
        ("SAME_LOWER", (1, 1, 0, 1)),
    ],
)
def test_conv_auto_pad_same(tmp_path: Path, auto_pad: str, padding: tuple[int, int, int, int]) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="c", auto_pad=auto_pad, strides=[2, 2],
                            kernel_shape=[3, 3])
    layer = only_layer(single(tmp_path, node, [1, 2, 6, 7], inits=[f32("W", rng_array((5, 2, 3, 3)))]))
    assert layer.output_shape == (1, 5, 3, 4)
    assert layer.attrs.padding == padding
    assert layer.attrs.stride == (2, 2)


def test_conv_auto_pad_same_upper_stride1_even_kernel(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="c", auto_pad="SAME_UPPER")
    layer = only_layer(single(tmp_path, node, [1, 1, 5, 5], inits=[f32("W", rng_array((1, 1, 4, 4)))]))
    # out = 5, total pad = (5-1)*1 + 4 - 5 = 3 -> begin 1, end 2 (the extra pad at the end)
    assert layer.output_shape == (1, 1, 5, 5)
    assert layer.attrs.padding == (1, 1, 2, 2)


def test_conv_without_bias(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="c", pads=[1, 1, 1, 1])
    layer = only_layer(single(tmp_path, node, [1, 3, 8, 8], inits=[f32("W", rng_array((4, 3, 3, 3)))]))
    assert layer.attrs.bias is False
    m = layer_metrics(layer)
    # 3*3*3*8*8*4 = 6912, no bias term
    assert m.macs == 6912
    # 4*3*3*3 = 108
    assert m.params == 108


def test_conv_all_zero_bias_counts_as_no_bias(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="c", pads=[1, 1, 1, 1])
    layer = only_layer(single(tmp_path, node, [1, 3, 8, 8],
                              inits=[f32("W", rng_array((4, 3, 3, 3))), f32("B", np.zeros(4))]))
    assert layer.attrs.bias is False  # by design: an exporter's zero filler is not a bias
    # same as without a bias: 6912 MACs, 108 params
    assert layer_metrics(layer).macs == 6912
    assert layer_metrics(layer).params == 108


def test_conv_bias_with_a_single_nonzero_counts(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="c")
    layer = only_layer(single(tmp_path, node, [1, 1, 2, 2],
                              inits=[f32("W", rng_array((3, 1, 1, 1))), f32("B", [0.0, 0.0, 1e-3])]))
    assert layer.attrs.bias is True
    # 1*1*1 * (2*2*3) + 2*2*3 = 12 + 12 = 24
    assert layer_metrics(layer).macs == 24


# ---- fully connected -----------------------------------------------------------------------------


def test_gemm_trans_b_with_bias(tmp_path: Path) -> None:
    node = helper.make_node("Gemm", ["x", "W", "C"], ["y"], name="fc", transB=1)
    net = single(tmp_path, node, [1, 16], out_rank=2,
                 inits=[f32("W", rng_array((10, 16))), f32("C", rng_array((10,)))])
    layer = only_layer(net)
    assert layer.op is OpType.LINEAR
    assert layer.attrs == LinearAttrs(bias=True)
    assert layer.input_shapes == ((1, 16),)
    assert layer.output_shape == (1, 10)
    m = layer_metrics(layer)
    # Nin*Nout = 16*10 = 160 (the bias add is not a MAC)
    assert m.macs == 160
    assert m.ops == 160
    # 16*10 + 10 = 170
    assert m.params == 170
    # 16 + 170 + 10 = 196
    assert m.mem_ops == 196


def test_gemm_without_bias(tmp_path: Path) -> None:
    node = helper.make_node("Gemm", ["x", "W"], ["y"], name="fc")
    layer = only_layer(single(tmp_path, node, [1, 6], out_rank=2, inits=[f32("W", rng_array((6, 4)))]))
    assert layer.attrs == LinearAttrs(bias=False)
    assert layer.output_shape == (1, 4)
    # 6*4 = 24 MACs and params
    assert layer_metrics(layer).macs == 24
    assert layer_metrics(layer).params == 24


def test_matmul_plus_add_fuses_into_one_linear_with_bias(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"], name="fc_mm"),
        helper.make_node("Add", ["mm", "b"], ["y"], name="fc_add"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 16])], [out("y", 2)],
               [f32("W", rng_array((16, 10))), f32("b", rng_array((10,)))])
    layer = only_layer(net)
    assert layer.op is OpType.LINEAR
    assert layer.attrs == LinearAttrs(bias=True)
    assert layer.inputs == ("x",)
    assert layer.output_shape == (1, 10)
    assert net.outputs == (layer.name,)
    m = layer_metrics(layer)
    # 16*10 = 160 MACs; 160 + 10 = 170 params
    assert m.macs == 160
    assert m.params == 170


def test_matmul_add_with_bias_first_operand(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"], name="fc_mm"),
        helper.make_node("Add", ["b", "mm"], ["y"], name="fc_add"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 4])], [out("y", 2)],
               [f32("W", rng_array((4, 3))), f32("b", rng_array((3,)))])
    layer = only_layer(net)
    assert layer.op is OpType.LINEAR and layer.attrs.bias is True
    # 4*3 + 3 = 15
    assert layer_metrics(layer).params == 15


def test_matmul_alone_is_linear_without_bias(tmp_path: Path) -> None:
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="fc")
    layer = only_layer(single(tmp_path, node, [1, 16], out_rank=2, inits=[f32("W", rng_array((16, 10)))]))
    assert layer.op is OpType.LINEAR
    assert layer.attrs == LinearAttrs(bias=False)
    assert layer.output_shape == (1, 10)
    # 16*10 = 160 MACs and params
    assert layer_metrics(layer).macs == 160
    assert layer_metrics(layer).params == 160


def test_matmul_on_3d_activation_counts_every_row(tmp_path: Path) -> None:
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="fc")
    layer = only_layer(single(tmp_path, node, [1, 5, 16], out_rank=3, inits=[f32("W", rng_array((16, 10)))]))
    assert layer.output_shape == (1, 5, 10)
    # Nin*Nout per row, 1*5 rows: 16*10*5 = 800
    assert layer_metrics(layer).macs == 800
    assert layer_metrics(layer).params == 160


def test_matmul_then_add_of_two_activations_is_not_fused(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"], name="fc"),
        helper.make_node("Add", ["mm", "z"], ["y"], name="add"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 4]), vi("z", [1, 3])], [out("y", 2)], [f32("W", rng_array((4, 3)))])
    assert [(layer.name, layer.op) for layer in net.layers] == [("fc", OpType.LINEAR), ("add", OpType.ADD)]
    assert net.layer("fc").attrs.bias is False
    assert net.producers("add") == ("fc", "z")


# ---- pooling -------------------------------------------------------------------------------------


def test_max_pool(tmp_path: Path) -> None:
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2])
    layer = only_layer(single(tmp_path, node, [1, 3, 8, 8]))
    assert layer.op is OpType.MAX_POOL
    # (8 - 2) // 2 + 1 = 4
    assert layer.output_shape == (1, 3, 4, 4)
    assert layer.attrs == PoolAttrs(kernel=(2, 2), stride=(2, 2), padding=(0, 0, 0, 0), ceil_mode=False,
                                    count_include_pad=True)
    m = layer_metrics(layer)
    # kh*kw*Hout*Wout*C = 2*2*4*4*3 = 192
    assert m.ops == 192
    assert m.macs == 0
    assert m.params == 0
    # 192 + 0 + 48 = 240
    assert m.mem_ops == 240


def test_average_pool_with_pads(tmp_path: Path) -> None:
    node = helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1])
    layer = only_layer(single(tmp_path, node, [1, 2, 7, 7]))
    assert layer.op is OpType.AVG_POOL
    # (7 + 2 - 3) // 2 + 1 = 4
    assert layer.output_shape == (1, 2, 4, 4)
    # count_include_pad defaults to 0 in ONNX
    assert layer.attrs == PoolAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), ceil_mode=False,
                                    count_include_pad=False)
    # 3*3*4*4*2 = 288
    assert layer_metrics(layer).ops == 288


def test_average_pool_count_include_pad(tmp_path: Path) -> None:
    node = helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[2, 2], pads=[1, 1, 1, 1],
                            count_include_pad=1)
    layer = only_layer(single(tmp_path, node, [1, 1, 3, 3]))
    # (3 + 2 - 2) + 1 = 4
    assert layer.output_shape == (1, 1, 4, 4)
    assert layer.attrs.count_include_pad is True


def test_average_pool_ceil_mode(tmp_path: Path) -> None:
    node = helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[3, 3], strides=[2, 2],
                            ceil_mode=1)
    layer = only_layer(single(tmp_path, node, [1, 1, 8, 8]))
    # ceil((8 - 3) / 2) + 1 = ceil(2.5) + 1 = 4 (floor would give 3); the last window starts at 6 < 8
    assert layer.output_shape == (1, 1, 4, 4)
    assert layer.attrs.ceil_mode is True
    # 3*3*4*4*1 = 144
    assert layer_metrics(layer).ops == 144


def test_max_pool_ceil_mode_drops_window_starting_in_right_padding(tmp_path: Path) -> None:
    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2], strides=[2, 2],
                            pads=[1, 1, 1, 1], ceil_mode=1)
    layer = only_layer(single(tmp_path, node, [1, 1, 4, 4]))
    # span = 4 + 2 - 2 = 4, ceil(4/2) + 1 = 3; window 3 starts at 2*2 = 4 < 4 + 1 (inside) -> kept: 3
    assert layer.output_shape == (1, 1, 3, 3)


@pytest.mark.parametrize(("onnx_op", "op"), [("GlobalAveragePool", OpType.GLOBAL_AVG_POOL),
                                             ("GlobalMaxPool", OpType.GLOBAL_MAX_POOL)])
def test_global_pools(tmp_path: Path, onnx_op: str, op: OpType) -> None:
    layer = only_layer(single(tmp_path, helper.make_node(onnx_op, ["x"], ["y"], name="gp"), [1, 4, 3, 5]))
    assert layer.op is op
    assert layer.attrs == NoAttrs()
    assert layer.output_shape == (1, 4, 1, 1)
    m = layer_metrics(layer)
    # the window is the whole plane: 3*5*4 = 60 = n_input
    assert m.ops == 60
    # 60 + 0 + 4 = 64
    assert m.mem_ops == 64


def test_reduce_mean_over_hw_attribute_opset17(tmp_path: Path) -> None:
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="gap", axes=[2, 3], keepdims=1)
    layer = only_layer(single(tmp_path, node, [1, 4, 3, 5], opset=17))
    assert layer.op is OpType.GLOBAL_AVG_POOL
    assert layer.output_shape == (1, 4, 1, 1)
    # 4*3*5 = 60
    assert layer_metrics(layer).ops == 60


def test_reduce_mean_negative_axes(tmp_path: Path) -> None:
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="gap", axes=[-2, -1], keepdims=1)
    layer = only_layer(single(tmp_path, node, [1, 4, 3, 5], opset=17))
    assert layer.op is OpType.GLOBAL_AVG_POOL
    assert layer.output_shape == (1, 4, 1, 1)


def test_reduce_mean_over_hw_input_opset18(tmp_path: Path) -> None:
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="gap", keepdims=1)
    layer = only_layer(single(tmp_path, node, [1, 4, 3, 5], opset=18, inits=[i64("axes", [2, 3])]))
    assert layer.op is OpType.GLOBAL_AVG_POOL
    assert layer.inputs == ("x",)
    assert layer.output_shape == (1, 4, 1, 1)


def test_reduce_mean_without_keepdims(tmp_path: Path) -> None:
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="gap", axes=[2, 3], keepdims=0)
    layer = only_layer(single(tmp_path, node, [1, 4, 3, 5], out_rank=2, opset=17))
    assert layer.op is OpType.GLOBAL_AVG_POOL
    assert layer.output_shape == (1, 4)


def test_reduce_max_over_hw_is_global_max_pool(tmp_path: Path) -> None:
    node = helper.make_node("ReduceMax", ["x"], ["y"], name="gmp", axes=[2, 3], keepdims=1)
    layer = only_layer(single(tmp_path, node, [1, 4, 3, 5], opset=17))
    assert layer.op is OpType.GLOBAL_MAX_POOL


def test_reduce_mean_with_axes_not_stored_is_refused_when_strict(tmp_path: Path) -> None:
    # over the channels it is a REDUCE_MEAN layer; axes computed at run time are refused
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="rm_c", keepdims=1)
    with pytest.raises(UnsupportedOperatorError) as info:
        load(tmp_path, [node], [vi("x", [1, 4, 3, 5]), helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
             [out("y")], opset=18, input_shapes={"axes": (1,)}, strict=True)
    assert info.value.operators == {"ReduceMean (axes not stored in the file)": ["rm_c"]}
    assert "rm_c" in str(info.value)
    assert str(tmp_path / "model.onnx") in str(info.value)


# ---- normalisation and scale ---------------------------------------------------------------------


def test_batch_normalization(tmp_path: Path) -> None:
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], name="bn",
                            epsilon=1e-3)
    inits = [f32("s", [1, 2, 3]), f32("b", [0, 1, 0]), f32("mean", [0, 0, 0]), f32("var", [1, 1, 1])]
    layer = only_layer(single(tmp_path, node, [1, 3, 4, 4], inits=inits))
    assert layer.op is OpType.BATCH_NORM
    assert layer.inputs == ("x",)
    assert layer.output_shape == (1, 3, 4, 4)
    # 1e-3 stored as float32 reads back as the decimal it was written as
    assert layer.attrs == BatchNormAttrs(eps=0.001, affine=True)
    m = layer_metrics(layer)
    # 2 learnt parameters per channel: 2*3 = 6
    assert m.params == 6
    # 2 ops per element: 2 * 3*4*4 = 96
    assert m.ops == 96
    assert m.macs == 0
    # 48 + 6 + 48 = 102
    assert m.mem_ops == 102


def test_batch_normalization_default_epsilon(tmp_path: Path) -> None:
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], name="bn")
    inits = [f32("s", [1, 2]), f32("b", [0, 1]), f32("mean", [0, 0]), f32("var", [1, 1])]
    layer = only_layer(single(tmp_path, node, [1, 2, 2, 2], inits=inits))
    assert layer.attrs.eps == 1e-5


def test_mul_by_channel_constant_is_scale(tmp_path: Path) -> None:
    node = helper.make_node("Mul", ["x", "s"], ["y"], name="scale")
    layer = only_layer(single(tmp_path, node, [1, 3, 4, 4], inits=[f32("s", rng_array((3, 1, 1)))]))
    assert layer.op is OpType.SCALE
    assert layer.inputs == ("x",)
    assert layer.input_shapes == ((1, 3, 4, 4),)
    assert layer.attrs == ScaleAttrs(bias=False, per_channel=True)
    m = layer_metrics(layer)
    # one factor per channel: 3
    assert m.params == 3
    # one MAC per activation: 3*4*4 = 48
    assert m.macs == 48
    assert m.ops == 48


def test_mul_then_add_by_channel_constants_is_one_scale_with_bias(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Mul", ["x", "s"], ["m"], name="scale"),
        helper.make_node("Add", ["m", "b"], ["y"], name="shift"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")],
               [f32("s", rng_array((3, 1, 1))), f32("b", rng_array((3, 1, 1), seed=1))])
    layer = only_layer(net)
    assert layer.op is OpType.SCALE
    assert layer.name == "scale"
    assert layer.attrs == ScaleAttrs(bias=True, per_channel=True)
    assert net.outputs == ("scale",)
    m = layer_metrics(layer)
    # factor and bias per channel: 2*3 = 6
    assert m.params == 6
    # still one MAC per activation: 48
    assert m.macs == 48


def test_mul_by_scalar_constant_is_scalar_scale(tmp_path: Path) -> None:
    node = helper.make_node("Mul", ["x", "s"], ["y"], name="scale")
    layer = only_layer(single(tmp_path, node, [1, 3, 4, 4], inits=[f32("s", 0.5)]))
    assert layer.op is OpType.SCALE
    assert layer.attrs == ScaleAttrs(bias=False, per_channel=False)
    # a single factor
    assert layer_metrics(layer).params == 1


def test_mul_by_full_size_constant_is_not_a_per_channel_scale(tmp_path: Path) -> None:
    # a constant of the activation's full shape (1*3*4*4 = 48 factors) is neither a scalar
    # nor per-channel: it is rejected by name, not imported as a scale layer
    node = helper.make_node("Mul", ["x", "s"], ["y"], name="mul")
    with pytest.raises(UnsupportedOperatorError) as info:
        single(tmp_path, node, [1, 3, 4, 4], inits=[f32("s", rng_array((1, 3, 4, 4)))], strict=True)
    assert "Mul by a constant that is neither a scalar nor per-channel (mul)" in str(info.value)


# ---- activations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("onnx_op", "op", "opset"),
    [("Relu", OpType.RELU, 17), ("Sigmoid", OpType.SIGMOID, 17), ("Tanh", OpType.TANH, 17),
     ("HardSwish", OpType.HARDSWISH, 17)],
)
def test_simple_activations(tmp_path: Path, onnx_op: str, op: OpType, opset: int) -> None:
    layer = only_layer(single(tmp_path, helper.make_node(onnx_op, ["x"], ["y"], name="act"), [1, 2, 3, 3],
                              opset=opset))
    assert layer.op is op
    assert layer.attrs == NoAttrs()
    assert layer.output_shape == (1, 2, 3, 3)
    m = layer_metrics(layer)
    # one op per activation: 2*3*3 = 18
    assert m.ops == 18
    assert m.params == 0
    # 18 + 0 + 18 = 36
    assert m.mem_ops == 36


def test_clip_0_6_inputs_opset11_is_relu6(tmp_path: Path) -> None:
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], opset=11, inits=[f32("lo", 0.0), f32("hi", 6.0)]))
    assert layer.op is OpType.RELU6
    assert layer.inputs == ("x",)
    assert layer.input_shapes == ((1, 2, 3, 3),)
    # 2*3*3 = 18
    assert layer_metrics(layer).ops == 18


def test_clip_0_6_inputs_opset13_is_relu6(tmp_path: Path) -> None:
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], opset=13, inits=[f32("lo", 0.0), f32("hi", 6.0)]))
    assert layer.op is OpType.RELU6


def test_clip_bounds_from_constant_nodes_is_relu6(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Constant", [], ["lo"], value=numpy_helper.from_array(np.float32(0.0), "lo_v")),
        helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.float32(6.0), "hi_v")),
        helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip"),
    ]
    layer = only_layer(load(tmp_path, nodes, [vi("x", [1, 2, 3, 3])], [out("y")], opset=17))
    assert layer.op is OpType.RELU6


def test_clip_0_6_attributes_opset10_is_relu6(tmp_path: Path) -> None:
    node = helper.make_node("Clip", ["x"], ["y"], name="clip", min=0.0, max=6.0)
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], opset=10))
    assert layer.op is OpType.RELU6


def test_clip_min_only_attribute_opset10_is_relu(tmp_path: Path) -> None:
    node = helper.make_node("Clip", ["x"], ["y"], name="clip", min=0.0)
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], opset=10))
    assert layer.op is OpType.RELU


def test_clip_min_only_input_is_relu(tmp_path: Path) -> None:
    node = helper.make_node("Clip", ["x", "lo"], ["y"], name="clip")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], opset=13, inits=[f32("lo", 0.0)]))
    assert layer.op is OpType.RELU


def test_clip_min_with_empty_max_input_is_relu(tmp_path: Path) -> None:
    node = helper.make_node("Clip", ["x", "lo", ""], ["y"], name="clip")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], opset=13, inits=[f32("lo", 0.0)]))
    assert layer.op is OpType.RELU


def test_clip_minus1_1_is_a_clip_layer(tmp_path: Path) -> None:  # was unsupported
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="hardtanh")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], opset=13, inits=[f32("lo", -1.0), f32("hi", 1.0)]))
    assert (layer.op, layer.attrs) == (OpType.CLIP, ClipAttrs(low=-1.0, high=1.0))


def test_clip_minus1_1_attributes_opset10_is_a_clip_layer(tmp_path: Path) -> None:
    node = helper.make_node("Clip", ["x"], ["y"], name="hardtanh", min=-1.0, max=1.0)
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 3], opset=10))
    assert (layer.op, layer.attrs) == (OpType.CLIP, ClipAttrs(low=-1.0, high=1.0))


def test_leaky_relu_alpha(tmp_path: Path) -> None:
    layer = only_layer(single(tmp_path, helper.make_node("LeakyRelu", ["x"], ["y"], name="lr", alpha=0.2),
                              [1, 2, 3, 3]))
    assert layer.op is OpType.LEAKY_RELU
    # 0.2 as float32 is 0.200000003; read back as the written decimal
    assert layer.attrs == LeakyReluAttrs(negative_slope=0.2)
    assert layer_metrics(layer).ops == 18


def test_leaky_relu_default_alpha(tmp_path: Path) -> None:
    layer = only_layer(single(tmp_path, helper.make_node("LeakyRelu", ["x"], ["y"], name="lr"), [1, 2, 3, 3]))
    assert layer.attrs == LeakyReluAttrs(negative_slope=0.01)


@pytest.mark.parametrize("order", [("x", "s"), ("s", "x")])
def test_sigmoid_times_input_is_one_silu(tmp_path: Path, order: tuple[str, str]) -> None:
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["s"], name="swish"),
        helper.make_node("Mul", list(order), ["y"], name="swish_mul"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 2, 3, 3])], [out("y")])
    layer = only_layer(net)
    assert layer.op is OpType.SILU
    assert layer.inputs == ("x",)
    assert layer.output_shape == (1, 2, 3, 3)
    assert net.outputs == (layer.name,)
    # one op per activation: 18
    assert layer_metrics(layer).ops == 18


def test_sigmoid_used_twice_is_not_fused(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
        helper.make_node("Mul", ["x", "s"], ["m"], name="mul"),
        helper.make_node("Add", ["m", "s"], ["y"], name="add"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 2, 3, 3])], [out("y")])
    assert [layer.op for layer in net.layers] == [OpType.SIGMOID, OpType.MUL, OpType.ADD]
    assert net.producers("mul") == ("x", "sig")
    assert net.producers("add") == ("mul", "sig")


# ---- element-wise, concat, softmax, LRN ----------------------------------------------------------


@pytest.mark.parametrize(("onnx_op", "op"), [("Add", OpType.ADD), ("Mul", OpType.MUL), ("Max", OpType.MAX)])
def test_eltwise_of_two_activations(tmp_path: Path, onnx_op: str, op: OpType) -> None:
    node = helper.make_node(onnx_op, ["a", "b"], ["y"], name="ew")
    net = load(tmp_path, [node], [vi("a", [1, 2, 3, 3]), vi("b", [1, 2, 3, 3])], [out("y")])
    layer = only_layer(net)
    assert layer.op is op
    assert layer.inputs == ("a", "b")
    assert layer.input_shapes == ((1, 2, 3, 3), (1, 2, 3, 3))
    assert layer.output_shape == (1, 2, 3, 3)
    m = layer_metrics(layer)
    # (k-1)*n_out for k=2: 1*18 = 18
    assert m.ops == 18
    # n_input counts both operands: 18 + 18 = 36; mem_ops = 36 + 0 + 18 = 54
    assert m.n_input == 36
    assert m.mem_ops == 54


def test_sum_of_three(tmp_path: Path) -> None:
    node = helper.make_node("Sum", ["a", "b", "c"], ["y"], name="sum3")
    net = load(tmp_path, [node], [vi(n, [1, 2, 3, 3]) for n in "abc"], [out("y")])
    layer = only_layer(net)
    assert layer.op is OpType.ADD
    assert layer.inputs == ("a", "b", "c")
    m = layer_metrics(layer)
    # (3-1) * 18 = 36
    assert m.ops == 36
    # 3*18 + 0 + 18 = 72
    assert m.mem_ops == 72


def test_add_broadcasts_activation_shapes(tmp_path: Path) -> None:
    node = helper.make_node("Add", ["a", "b"], ["y"], name="add")
    layer = only_layer(load(tmp_path, [node], [vi("a", [1, 2, 3, 3]), vi("b", [1, 2, 1, 1])], [out("y")]))
    assert layer.input_shapes == ((1, 2, 3, 3), (1, 2, 1, 1))
    assert layer.output_shape == (1, 2, 3, 3)
    # 1 * 18 = 18 ops; n_input = 18 + 2 = 20
    assert layer_metrics(layer).ops == 18
    assert layer_metrics(layer).n_input == 20


@pytest.mark.parametrize("axis", [1, -3])
def test_concat_on_channels(tmp_path: Path, axis: int) -> None:
    node = helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=axis)
    net = load(tmp_path, [node], [vi("a", [1, 2, 3, 3]), vi("b", [1, 5, 3, 3])], [out("y")])
    layer = only_layer(net)
    assert layer.op is OpType.CONCAT
    assert layer.attrs == AxisAttrs(axis=1)  # -3 % 4 = 1
    assert layer.inputs == ("a", "b")
    # 2 + 5 = 7 channels
    assert layer.output_shape == (1, 7, 3, 3)
    m = layer_metrics(layer)
    assert m.ops == 0
    # (18 + 45) + 63 = 126
    assert m.mem_ops == 126


@pytest.mark.parametrize(("opset", "axis"), [(11, 1), (13, 2)])
def test_softmax_default_axis_depends_on_opset(tmp_path: Path, opset: int, axis: int) -> None:
    layer = only_layer(single(tmp_path, helper.make_node("Softmax", ["x"], ["y"], name="sm"), [1, 4, 5],
                              out_rank=3, opset=opset))
    assert layer.op is OpType.SOFTMAX
    # opset < 13: default axis 1; opset >= 13: default -1, i.e. 2 for a rank-3 tensor
    assert layer.attrs == AxisAttrs(axis=axis)
    assert layer.output_shape == (1, 4, 5)
    # 3 per element: 3 * 20 = 60
    assert layer_metrics(layer).ops == 60


def test_softmax_explicit_negative_axis(tmp_path: Path) -> None:
    layer = only_layer(single(tmp_path, helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=-1), [1, 10],
                              out_rank=2, opset=11))
    # -1 % 2 = 1
    assert layer.attrs == AxisAttrs(axis=1)


def test_lrn(tmp_path: Path) -> None:
    node = helper.make_node("LRN", ["x"], ["y"], name="lrn", size=5, alpha=2e-4, beta=0.5, bias=2.0)
    layer = only_layer(single(tmp_path, node, [1, 8, 3, 3]))
    assert layer.op is OpType.LRN
    assert layer.attrs == LrnAttrs(size=5, alpha=2e-4, beta=0.5, k=2.0)
    m = layer_metrics(layer)
    # (size + 3) * n_out = 8 * (8*3*3) = 8 * 72 = 576
    assert m.ops == 576
    assert m.params == 0


def test_lrn_defaults(tmp_path: Path) -> None:
    layer = only_layer(single(tmp_path, helper.make_node("LRN", ["x"], ["y"], name="lrn", size=3), [1, 4, 2, 2]))
    assert layer.attrs == LrnAttrs(size=3, alpha=1e-4, beta=0.75, k=1.0)
    # (3 + 3) * 16 = 96
    assert layer_metrics(layer).ops == 96


# ---- shape ops, resize, pad ----------------------------------------------------------------------


def test_flatten(tmp_path: Path) -> None:
    layer = only_layer(single(tmp_path, helper.make_node("Flatten", ["x"], ["y"], name="flat"), [1, 2, 3, 4],
                              out_rank=2))
    assert layer.op is OpType.FLATTEN
    assert layer.attrs == AxisAttrs(axis=1)
    # 2*3*4 = 24
    assert layer.output_shape == (1, 24)
    m = layer_metrics(layer)
    assert m.ops == 0
    # 24 + 0 + 24 = 48
    assert m.mem_ops == 48


def test_reshape_to_batch_by_rest_is_flatten(tmp_path: Path) -> None:
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="view")
    net = single(tmp_path, node, [1, 2, 3, 4], out_rank=2, inits=[i64("shape", [1, -1])])
    layer = only_layer(net)
    assert layer.op is OpType.FLATTEN
    assert layer.attrs == AxisAttrs(axis=1)
    assert layer.inputs == ("x",)
    assert layer.output_shape == (1, 24)


def test_reshape_to_other_shape_is_reshape(tmp_path: Path) -> None:
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 4], out_rank=3, inits=[i64("shape", [1, 4, 6])]))
    assert layer.op is OpType.RESHAPE
    assert layer.attrs == NoAttrs()
    assert layer.output_shape == (1, 4, 6)
    assert layer_metrics(layer).ops == 0


def test_reshape_of_2d_is_reshape_not_flatten(tmp_path: Path) -> None:
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")
    layer = only_layer(single(tmp_path, node, [1, 6], out_rank=2, inits=[i64("shape", [1, 6])]))
    # flatten needs more than two input dims
    assert layer.op is OpType.RESHAPE


def test_squeeze_after_global_pool_is_flatten(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["g"], name="gap"),
        helper.make_node("Squeeze", ["g", "axes"], ["y"], name="sq"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 4, 3, 3])], [out("y", 2)], [i64("axes", [2, 3])])
    assert [(layer.name, layer.op) for layer in net.layers] == [("gap", OpType.GLOBAL_AVG_POOL),
                                                                ("sq", OpType.FLATTEN)]
    assert net.layer("sq").output_shape == (1, 4)
    assert net.producers("sq") == ("gap",)


def test_resize_nearest_is_upsample_without_ops(tmp_path: Path) -> None:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="nearest")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 4], inits=[f32("scales", [1, 1, 2, 2])]))
    assert layer.op is OpType.UPSAMPLE
    assert layer.attrs == UpsampleAttrs(mode="nearest")
    assert layer.inputs == ("x",)
    # 3*2 = 6, 4*2 = 8
    assert layer.output_shape == (1, 2, 6, 8)
    m = layer_metrics(layer)
    assert m.ops == 0
    # 24 + 0 + 96 = 120
    assert m.mem_ops == 120


def test_resize_default_mode_is_nearest(tmp_path: Path) -> None:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 4], inits=[f32("scales", [1, 1, 2, 2])]))
    assert layer.attrs == UpsampleAttrs(mode="nearest")


def test_resize_linear_is_upsample_with_4_ops_per_output(tmp_path: Path) -> None:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="linear")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 4], inits=[f32("scales", [1, 1, 2, 2])]))
    assert layer.attrs == UpsampleAttrs(mode="linear")
    assert layer.output_shape == (1, 2, 6, 8)
    # 4 * (2*6*8) = 4 * 96 = 384
    assert layer_metrics(layer).ops == 384


def test_resize_with_sizes_input(tmp_path: Path) -> None:
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="up", mode="nearest")
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 4], inits=[i64("sizes", [1, 2, 9, 12])]))
    assert layer.output_shape == (1, 2, 9, 12)


def test_resize_cubic_is_refused_when_strict(tmp_path: Path) -> None:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="cubic")
    with pytest.raises(UnsupportedOperatorError) as info:
        single(tmp_path, node, [1, 2, 3, 4], inits=[f32("scales", [1, 1, 2, 2])], strict=True)
    assert info.value.operators == {"Resize": ["up"]}


def test_pad_constant(tmp_path: Path) -> None:
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")
    # pads = (begin N, C, H, W, end N, C, H, W)
    layer = only_layer(single(tmp_path, node, [1, 2, 3, 4], inits=[i64("pads", [0, 0, 1, 2, 0, 0, 1, 2])]))
    assert layer.op is OpType.PAD
    assert layer.attrs == PadAttrs(mode="constant", value=0.0)
    assert layer.inputs == ("x",)
    # H 3+1+1 = 5, W 4+2+2 = 8
    assert layer.output_shape == (1, 2, 5, 8)
    assert layer_metrics(layer).ops == 0


def test_pad_with_value_and_edge_mode(tmp_path: Path) -> None:
    nodes = [helper.make_node("Pad", ["x", "pads", "v"], ["p"], name="pad_c"),
             helper.make_node("Pad", ["p", "pads"], ["y"], name="pad_e", mode="edge")]
    net = load(tmp_path, nodes, [vi("x", [1, 1, 2, 2])], [out("y")],
               [i64("pads", [0, 0, 1, 1, 0, 0, 1, 1]), f32("v", 0.5)])
    assert net.layer("pad_c").attrs == PadAttrs(mode="constant", value=0.5)
    # 'edge' is the IR's 'replicate'
    assert net.layer("pad_e").attrs == PadAttrs(mode="replicate", value=0.0)
    # 2 -> 4 -> 6
    assert net.layer("pad_c").output_shape == (1, 1, 4, 4)
    assert net.layer("pad_e").output_shape == (1, 1, 6, 6)
    assert net.producers("pad_e") == ("pad_c",)


def test_flatten_on_axis_2_is_reshape(tmp_path: Path) -> None:
    layer = only_layer(single(tmp_path, helper.make_node("Flatten", ["x"], ["y"], name="flat", axis=2),
                              [1, 2, 3, 4], out_rank=2))
    # (1*2, 3*4) = (2, 12) does not keep the batch: a plain reshape
    assert layer.op is OpType.RESHAPE
    assert layer.output_shape == (2, 12)


def test_upsample_opset9_linear(tmp_path: Path) -> None:
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], name="up", mode="linear")
    layer = only_layer(single(tmp_path, node, [1, 3, 4, 4], opset=9, inits=[f32("scales", [1, 1, 2, 2])]))
    assert layer.op is OpType.UPSAMPLE
    assert layer.attrs == UpsampleAttrs(mode="linear")
    assert layer.output_shape == (1, 3, 8, 8)
    # 4 * (3*8*8) = 768
    assert layer_metrics(layer).ops == 768


def test_pad_opset10_attributes(tmp_path: Path) -> None:
    node = helper.make_node("Pad", ["x"], ["y"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect")
    layer = only_layer(single(tmp_path, node, [1, 3, 4, 4], opset=10))
    assert layer.attrs == PadAttrs(mode="reflect", value=0.0)
    # 4 + 1 + 1 = 6
    assert layer.output_shape == (1, 3, 6, 6)


def test_pad_opset10_constant_value_attribute(tmp_path: Path) -> None:
    node = helper.make_node("Pad", ["x"], ["y"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.5)
    layer = only_layer(single(tmp_path, node, [1, 3, 4, 4], opset=10))
    assert layer.attrs == PadAttrs(mode="constant", value=0.5)


def test_conv_1d_is_refused_when_strict(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv1d")
    with pytest.raises(UnsupportedOperatorError) as info:
        single(tmp_path, node, [1, 3, 8], out_rank=3, inits=[f32("W", rng_array((2, 3, 3)))], strict=True)
    assert info.value.operators == {"Conv (only 2-D)": ["conv1d"]}


def test_gemm_trans_a_is_refused_when_strict(tmp_path: Path) -> None:
    node = helper.make_node("Gemm", ["x", "W"], ["y"], name="fc_t", transA=1)
    with pytest.raises(UnsupportedOperatorError) as info:
        single(tmp_path, node, [4, 1], out_rank=2, inits=[f32("W", rng_array((4, 2)))], strict=True)
    assert info.value.operators == {"Gemm": ["fc_t"]}


# ---- no-ops --------------------------------------------------------------------------------------


def _noop_chain(tmp_path: Path, **kwargs) -> Network:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Identity", ["r"], ["i"], name="ident"),
        helper.make_node("Dropout", ["i"], ["d"], name="drop"),
        helper.make_node("Sigmoid", ["d"], ["y"], name="sig"),
    ]
    return load(tmp_path, nodes, [vi("x", [1, 2, 3, 3])], [out("y")], **kwargs)


def test_identity_and_dropout_are_dropped_by_default(tmp_path: Path) -> None:
    net = _noop_chain(tmp_path)
    assert [(layer.name, layer.op) for layer in net.layers] == [("relu", OpType.RELU), ("sig", OpType.SIGMOID)]
    # the sigmoid reads the relu directly
    assert net.producers("sig") == ("relu",)
    assert net.consumers("relu") == ("sig",)
    assert net.outputs == ("sig",)


def test_identity_and_dropout_kept_with_keep_noops(tmp_path: Path) -> None:
    net = _noop_chain(tmp_path, keep_noops=True)
    assert [(layer.name, layer.op) for layer in net.layers] == [
        ("relu", OpType.RELU), ("ident", OpType.IDENTITY), ("drop", OpType.DROPOUT), ("sig", OpType.SIGMOID)]
    assert net.producers("ident") == ("relu",)
    assert net.producers("drop") == ("ident",)
    assert net.producers("sig") == ("drop",)
    m = layer_metrics(net.layer("drop"))
    # data movement only: 0 ops, 18 + 18 memory operations
    assert m.ops == 0
    assert m.mem_ops == 36


def test_trailing_identity_rewires_the_network_output(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Identity", ["r"], ["y"], name="ident"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 2, 3, 3])], [out("y")])
    assert [layer.name for layer in net.layers] == ["relu"]
    assert net.outputs == ("relu",)


# ---- constant folding ----------------------------------------------------------------------------


def test_shape_arithmetic_reshape_is_one_flatten(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsq"),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], name="cat_shape", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="flatten"),
    ]
    inits = [i64("zero", 0), i64("axes0", [0]), i64("minus1", [-1])]
    net = load(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y", 2)], inits)
    layer = only_layer(net)
    assert layer.name == "flatten"
    assert layer.op is OpType.FLATTEN
    assert layer.inputs == ("x",)
    # 3*4*4 = 48
    assert layer.output_shape == (1, 48)


def test_constant_nodes_and_their_arithmetic_are_folded(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Constant", [], ["c"], name="const",
                         value=numpy_helper.from_array(np.full((2, 1, 1), 2.0, np.float32), "cv")),
        helper.make_node("Mul", ["c", "c"], ["c2"], name="const_mul"),
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "r"], ["y"], name="add"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 2, 3, 3])], [out("y")])
    assert [(layer.name, layer.op) for layer in net.layers] == [("relu", OpType.RELU), ("add", OpType.ADD)]
    # x + x reads the same producer twice
    assert net.producers("add") == ("relu", "relu")
    assert net.consumers("relu") == ("add",)


# ---- network structure ---------------------------------------------------------------------------


def test_branching_graph_producers_and_consumers(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["r1"], name="relu_a"),
        helper.make_node("Relu", ["c"], ["r2"], name="relu_b"),
        helper.make_node("Add", ["r1", "r2"], ["y"], name="add"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")], [f32("W", rng_array((2, 3, 1, 1)))])
    assert [layer.name for layer in net.layers] == ["conv", "relu_a", "relu_b", "add"]
    assert net.producers("conv") == ("x",)
    assert net.producers("relu_a") == ("conv",)
    assert net.producers("relu_b") == ("conv",)
    assert net.producers("add") == ("relu_a", "relu_b")
    assert net.consumers("x") == ("conv",)
    assert net.consumers("conv") == ("relu_a", "relu_b")
    assert net.consumers("relu_a") == ("add",)
    assert net.consumers("add") == ()
    assert net.outputs == ("add",)
    assert net.name == "model"  # the file's stem
    totals = network_metrics(net)
    # conv 1x1 3->2 on 4x4, no bias: 3 * (2*4*4) = 96 MACs, 6 params
    # relu: 32 ops each; add: 32 ops
    assert totals.macs == 96
    assert totals.ops == 96 + 32 + 32 + 32
    assert totals.params == 6
    # conv 48+6+32 = 86; relus 32+32 = 64 each; add 64+32 = 96 -> 86 + 128 + 96 = 310
    assert totals.mem_ops == 310


def test_network_name_can_be_given(tmp_path: Path) -> None:
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [1, 2])], [out("y", 2)],
                filename="some_net.onnx")
    assert from_onnx(path).name == "some_net"
    assert from_onnx(path, name="custom").name == "custom"


def test_unnamed_nodes_get_unique_names(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    net = load(tmp_path, nodes, [vi("x", [1, 2])], [out("y", 2)])
    names = [layer.name for layer in net.layers]
    assert len(set(names)) == 2
    assert all(name for name in names)
    assert net.producers(names[1]) == (names[0],)


def test_duplicate_node_names_are_made_unique(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="act"), helper.make_node("Sigmoid", ["a"], ["y"], name="act")]
    net = load(tmp_path, nodes, [vi("x", [1, 2])], [out("y", 2)])
    assert [layer.name for layer in net.layers] == ["act", "act_1"]
    assert net.producers("act_1") == ("act",)


def test_two_graph_inputs_and_two_outputs(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["a"], ["ra"], name="ra"),
             helper.make_node("Add", ["ra", "b"], ["y"], name="add")]
    net = load(tmp_path, nodes, [vi("a", [1, 4]), vi("b", [1, 4])], [out("ra", 2), out("y", 2)])
    assert [spec.name for spec in net.inputs] == ["a", "b"]
    assert net.outputs == ("ra", "add")
    assert net.consumers("b") == ("add",)


# ---- dynamic shapes ------------------------------------------------------------------------------


def test_symbolic_batch_is_fixed_to_one(tmp_path: Path) -> None:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="c")
    net = single(tmp_path, node, ["N", 3, 5, 5], inits=[f32("W", rng_array((2, 3, 3, 3)))])
    assert net.inputs[0].shape == (1, 3, 5, 5)
    layer = only_layer(net)
    # 5 - 3 + 1 = 3
    assert layer.output_shape == (1, 2, 3, 3)
    # batch 1: 27 * (2*3*3) = 486
    assert layer_metrics(layer).macs == 486


def test_symbolic_spatial_dim_needs_input_shape(tmp_path: Path) -> None:
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", ["N", 3, "H", "W"])],
                [out("y")])
    with pytest.raises(ShapeInferenceError) as info:
        from_onnx(path)
    message = str(info.value)
    assert "--input-shape" in message
    assert str(path) in message
    assert "'x'" in message and "H" in message


@pytest.mark.parametrize("key", ["x", ""])
def test_input_shapes_fix_symbolic_dims(tmp_path: Path, key: str) -> None:
    path = save(tmp_path, [helper.make_node("Conv", ["x", "W"], ["y"], name="c", pads=[1, 1, 1, 1])],
                [vi("x", ["N", 3, "H", "W"])], [out("y")], [f32("W", rng_array((4, 3, 3, 3)))])
    net = from_onnx(path, input_shapes={key: (1, 3, 8, 8)})
    assert net.inputs[0].name == "x"
    assert net.inputs[0].shape == (1, 3, 8, 8)
    layer = only_layer(net)
    assert layer.output_shape == (1, 4, 8, 8)
    # no bias: 3*3*3*8*8*4 = 6912
    assert layer_metrics(layer).macs == 6912


def test_input_shapes_override_a_static_batch(tmp_path: Path) -> None:
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [1, 3, 2, 2])], [out("y")])
    layer = only_layer(from_onnx(path, input_shapes={"x": (2, 3, 2, 2)}))
    assert layer.output_shape == (2, 3, 2, 2)
    # 2*3*2*2 = 24
    assert layer_metrics(layer).ops == 24


def test_input_shapes_unknown_name_is_an_error(tmp_path: Path) -> None:
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [1, 2])], [out("y", 2)])
    with pytest.raises(ShapeInferenceError, match="no graph input named nope"):
        from_onnx(path, input_shapes={"nope": (1, 2)})


def test_input_shapes_wrong_rank_is_an_error(tmp_path: Path) -> None:
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", ["N", 2])], [out("y", 2)])
    with pytest.raises(ShapeInferenceError, match="rank 2"):
        from_onnx(path, input_shapes={"x": (1, 2, 3)})


def test_unnamed_input_shape_with_two_inputs_is_an_error(tmp_path: Path) -> None:
    path = save(tmp_path, [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                [vi("a", [1, 2]), vi("b", [1, 2])], [out("y", 2)])
    with pytest.raises(ShapeInferenceError) as info:
        from_onnx(path, input_shapes={"": (1, 2)})
    assert "2 inputs" in str(info.value)
    assert "a, b" in str(info.value)


def test_initializers_listed_as_graph_inputs_are_not_network_inputs(tmp_path: Path) -> None:
    # older exporters (IR < 4) also list every weight as a graph input
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="c")
    net = load(tmp_path, [node], [vi("x", [1, 3, 4, 4]), vi("W", [2, 3, 1, 1])], [out("y")],
               [f32("W", rng_array((2, 3, 1, 1)))])
    assert [spec.name for spec in net.inputs] == ["x"]
    assert only_layer(net).inputs == ("x",)


# ---- errors --------------------------------------------------------------------------------------


def _valid_model_bytes() -> bytes:
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="c")
    model = make_model([node], [vi("x", [1, 3, 8, 8])], [out("y")],
                       [f32("W", rng_array((8, 3, 3, 3))), f32("B", rng_array((8,)))])
    return model.SerializeToString()


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.onnx"
    with pytest.raises(ModelFileError) as info:
        from_onnx(path)
    assert isinstance(info.value, NnperfError)
    assert str(path) in str(info.value)
    assert "no such file" in str(info.value)


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "dir.onnx"
    folder.mkdir()
    with pytest.raises(ModelFileError, match="not a file"):
        from_onnx(folder)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(ModelFileError) as info:
        from_onnx(path)
    assert str(path) in str(info.value)
    assert "empty" in str(info.value)


def test_truncated_file(tmp_path: Path) -> None:
    data = _valid_model_bytes()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(NnperfError) as info:
        from_onnx(path)
    assert isinstance(info.value, ModelFileError)
    assert str(path) in str(info.value)


def test_text_file_named_onnx(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_text("hello, this is not onnx\n")
    with pytest.raises(ModelFileError) as info:
        from_onnx(path)
    assert str(path) in str(info.value)


def test_valid_protobuf_without_graph(tmp_path: Path) -> None:
    path = tmp_path / "nograph.onnx"
    path.write_bytes(onnx.ModelProto(ir_version=8).SerializeToString())
    with pytest.raises(ModelFileError, match="not an ONNX model"):
        from_onnx(path)


def _save_with_external_data(folder: Path, bias: np.ndarray) -> Path:
    folder.mkdir()
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv", pads=[1, 1, 1, 1])
    model = make_model([node], [vi("x", [1, 3, 8, 8])], [out("y")],
                       [f32("W", rng_array((8, 3, 3, 3))), f32("B", bias)])
    path = folder / "model.onnx"
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=0)
    assert (folder / "w.bin").is_file()
    assert not model.graph.initializer[0].raw_data  # the weights live in w.bin only
    return path


@pytest.mark.parametrize("relative", [False, True])
def test_external_data_is_found_next_to_the_model_not_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool
) -> None:
    path = _save_with_external_data(tmp_path / "sub", rng_array((8,)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(tmp_path if relative else elsewhere)
    layer = only_layer(from_onnx(Path("sub/model.onnx") if relative else path))
    assert layer.op is OpType.CONV
    assert layer.output_shape == (1, 8, 8, 8)
    assert layer.attrs == ConvAttrs(kernel=(3, 3), stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1),
                                    groups=1, bias=True)
    # 8*3*3*3 weights + 8 biases = 224
    assert layer_metrics(layer).params == 224


def test_external_bias_values_are_read_from_the_model_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an all-zero bias counts as no bias: only known if the values in w.bin were read
    path = _save_with_external_data(tmp_path / "sub", np.zeros(8))
    monkeypatch.chdir(tmp_path)
    assert only_layer(from_onnx(path)).attrs.bias is False


def test_large_external_weights_are_found_next_to_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 128*64*3*3 = 73728 weights: over the 65536 whose values are read, so the file stays external
    (tmp_path / "sub").mkdir()
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv")
    model = make_model([node], [vi("x", [1, 64, 5, 5])], [out("y")], [f32("W", np.ones((128, 64, 3, 3)))])
    path = tmp_path / "sub" / "model.onnx"
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=0)
    monkeypatch.chdir(tmp_path)
    layer = only_layer(from_onnx(path))
    assert layer.output_shape == (1, 128, 3, 3)
    assert layer_metrics(layer).params == 73728


def test_missing_external_data_file_is_a_model_file_error(tmp_path: Path) -> None:
    path = _save_with_external_data(tmp_path / "sub", rng_array((8,)))
    (tmp_path / "sub" / "w.bin").unlink()
    with pytest.raises(ModelFileError) as info:
        from_onnx(path)
    assert str(path) in str(info.value)
    assert "w.bin" in str(info.value)


def test_unknown_operators_in_a_custom_domain_are_all_reported_when_strict(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("FooOp", ["x"], ["a"], name="foo_1", domain="my.ops"),
        helper.make_node("FooOp", ["a"], ["b"], name="foo_2", domain="my.ops"),
        helper.make_node("BarOp", ["b"], ["y"], name="bar_1", domain="my.ops"),
    ]
    path = save(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")],
                extra_opsets=[helper.make_opsetid("my.ops", 1)])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(path, strict=True)
    err = info.value
    assert isinstance(err, NnperfError)
    assert err.operators == {"my.ops.FooOp": ["foo_1", "foo_2"], "my.ops.BarOp": ["bar_1"]}
    message = str(err)
    assert str(path) in message
    for node_name in ("foo_1", "foo_2", "bar_1"):
        assert node_name in message


def test_unknown_operators_in_default_domain_are_all_reported(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("FooOp", ["x"], ["a"], name="foo_1"),
        helper.make_node("FooOp", ["a"], ["b"], name="foo_2"),
        helper.make_node("BarOp", ["b"], ["y"], name="bar_1"),
    ]
    path = save(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(path)
    assert info.value.operators == {"FooOp": ["foo_1", "foo_2"], "BarOp": ["bar_1"]}
    for node_name in ("foo_1", "foo_2", "bar_1"):
        assert node_name in str(info.value)


def test_unknown_operator_in_default_domain_is_a_clear_file_error(tmp_path: Path) -> None:
    """What happens today: a ModelFileError that still names the file and the operator."""
    path = save(tmp_path, [helper.make_node("FooOp", ["x"], ["y"], name="foo_1")], [vi("x", [1, 3, 4, 4])],
                [out("y")])
    with pytest.raises(NnperfError) as info:
        from_onnx(path)
    assert str(path) in str(info.value)
    assert "FooOp" in str(info.value)


def test_unsupported_operator_followed_by_supported_layer_when_strict(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("FooOp", ["x"], ["a"], name="foo_1", domain="my.ops"),
        helper.make_node("Relu", ["a"], ["y"], name="relu"),
    ]
    path = save(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")], extra_opsets=[helper.make_opsetid("my.ops", 1)])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(path, strict=True)
    assert info.value.operators == {"my.ops.FooOp": ["foo_1"]}


def test_conv_after_unsupported_operator_is_not_blamed_when_strict(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("FooOp", ["x"], ["a"], name="foo_1", domain="my.ops"),
        helper.make_node("Conv", ["a", "W"], ["y"], name="conv"),
    ]
    path = save(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")], [f32("W", rng_array((2, 3, 1, 1)))],
                extra_opsets=[helper.make_opsetid("my.ops", 1)])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(path, strict=True)
    assert info.value.operators == {"my.ops.FooOp": ["foo_1"]}


def test_unsupported_standard_operators_are_collected_in_one_error_when_strict(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Erf", ["x"], ["a"], name="erf_1"),
        helper.make_node("Erf", ["x"], ["b"], name="erf_2"),
        helper.make_node("Cos", ["x"], ["c"], name="cos"),
    ]
    path = save(tmp_path, nodes, [vi("x", [1, 3])], [out("a", 2), out("b", 2), out("c", 2)],
                [f32("lo", -1.0), f32("hi", 1.0)])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(path, strict=True)
    assert info.value.operators == {"Erf": ["erf_1", "erf_2"], "Cos": ["cos"]}


def test_conv_weight_channels_mismatch(tmp_path: Path) -> None:
    # input has 3 channels, the weight expects 5
    path = save(tmp_path, [helper.make_node("Conv", ["x", "W"], ["y"], name="c")], [vi("x", [1, 3, 8, 8])],
                [out("y")], [f32("W", rng_array((4, 5, 3, 3)))])
    with pytest.raises((ShapeInferenceError, ModelFileError)) as info:
        from_onnx(path)
    assert isinstance(info.value, NnperfError)
    assert str(path) in str(info.value)


def test_conv_groups_not_dividing_channels_is_an_nnperf_error(tmp_path: Path) -> None:
    # 3 input channels cannot be split into 2 groups
    path = save(tmp_path, [helper.make_node("Conv", ["x", "W"], ["y"], name="c", group=2)],
                [vi("x", [1, 3, 8, 8])], [out("y")], [f32("W", rng_array((4, 1, 3, 3)))])
    with pytest.raises(NnperfError) as info:
        from_onnx(path)
    assert "groups=2" in str(info.value)


def test_conv_groups_not_dividing_channels_names_the_file(tmp_path: Path) -> None:
    path = save(tmp_path, [helper.make_node("Conv", ["x", "W"], ["y"], name="c", group=2)],
                [vi("x", [1, 3, 8, 8])], [out("y")], [f32("W", rng_array((4, 1, 3, 3)))])
    with pytest.raises(NnperfError) as info:
        from_onnx(path)
    assert str(path) in str(info.value)


def test_incompatible_eltwise_shapes(tmp_path: Path) -> None:
    path = save(tmp_path, [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                [vi("a", [1, 3]), vi("b", [1, 4])], [out("y", 2)])
    with pytest.raises((ShapeInferenceError, ModelFileError)) as info:
        from_onnx(path)
    assert str(path) in str(info.value)


def test_graph_output_not_computed_from_input(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["unused"], name="r"),
             helper.make_node("Identity", ["c"], ["y"], name="const_out")]
    path = save(tmp_path, nodes, [vi("x", [1, 2])], [out("y", 1)], [f32("c", [1.0])])
    with pytest.raises(ShapeInferenceError) as info:
        from_onnx(path)
    assert str(path) in str(info.value)


# ---- inputs found by the parser fuzzing (tests/fuzz) ---------------------------------------------


def _conv_with_metadata(tmp_path: Path, metadata: dict[str, str]) -> Network:
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv")
    for key, value in metadata.items():
        entry = node.metadata_props.add()
        entry.key, entry.value = key, value
    return single(tmp_path, node, [1, 3, 8, 8], inits=[f32("W", rng_array((4, 3, 3, 3)))])


@pytest.mark.parametrize("value", [
    "-" * 100_000 + "1",  # MemoryError from Python's parser
    "1" + "+1" * 100_000,  # RecursionError while the parser builds the tree
    "[" + "-" * 100_000 + "1]",
    "[" * 100_000 + "]" * 100_000,
    "{[]}",  # TypeError: a set of lists
    "5",
])
def test_torch_name_scopes_that_are_no_list_literal_are_ignored(tmp_path: Path, value: str) -> None:
    # the metadata only gives a readable name: without it the layer keeps the node's own name
    net = _conv_with_metadata(tmp_path, {"pkg.torch.onnx.name_scopes": value,
                                         "pkg.torch.onnx.class_hierarchy": value})
    assert only_layer(net).name == "conv"


def test_torch_class_hierarchy_that_is_no_list_keeps_the_scope_name(tmp_path: Path) -> None:
    net = _conv_with_metadata(tmp_path, {"pkg.torch.onnx.name_scopes": "['features', 'features.0']",
                                         "pkg.torch.onnx.class_hierarchy": "5"})
    assert only_layer(net).name == "features.0"


def test_string_field_that_is_not_utf8_is_a_model_file_error(tmp_path: Path) -> None:
    data = _valid_model_bytes()
    path = tmp_path / "garbled.onnx"
    path.write_bytes(data.replace(b"\x01x", b"\x01\xf2", 1))  # the input's name 'x' becomes the byte 0xf2
    with pytest.raises(ModelFileError) as info:
        from_onnx(path)
    assert str(info.value).startswith(f"{path}: not a valid ONNX model")
    assert "not UTF-8" in str(info.value)


def test_initializer_of_an_unknown_data_type_is_a_shape_inference_error(tmp_path: Path) -> None:
    weight = f32("W", rng_array((4, 3, 3, 3)))
    weight.data_type = 999
    path = save(tmp_path, [helper.make_node("Conv", ["x", "W"], ["y"], name="conv")], [vi("x", [1, 3, 8, 8])],
                [out("y")], [weight])
    with pytest.raises(ShapeInferenceError) as info:
        from_onnx(path)
    assert str(info.value).startswith(f"{path}: shapes cannot be inferred")
    assert "999" in str(info.value)


# ---- activations and data movement ---------------------------------------------------------


def test_hard_sigmoid_prelu_and_unary_activations(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("HardSigmoid", ["x"], ["a"], name="hsig", alpha=1 / 6, beta=0.5),
        helper.make_node("PRelu", ["a", "slope"], ["b"], name="prelu"),
        helper.make_node("PRelu", ["b", "one"], ["c"], name="prelu_one"),
        helper.make_node("Gelu", ["c"], ["d"], name="gelu"),
        helper.make_node("Softplus", ["d"], ["e"], name="softplus"),
        helper.make_node("Mish", ["e"], ["f"], name="mish"),
        helper.make_node("Exp", ["f"], ["g"], name="exp"),
        helper.make_node("Log", ["g"], ["y"], name="log"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")],
               [f32("slope", rng_array((3, 1, 1))), f32("one", [0.25])], opset=20)
    assert [(layer.op, layer.attrs) for layer in net.layers] == [
        (OpType.HARD_SIGMOID, HardSigmoidAttrs(alpha=0.1666667, beta=0.5)),
        (OpType.PRELU, PReluAttrs(per_channel=True)), (OpType.PRELU, PReluAttrs(per_channel=False)),
        (OpType.GELU, NoAttrs()), (OpType.SOFTPLUS, NoAttrs()), (OpType.MISH, NoAttrs()), (OpType.EXP, NoAttrs()),
        (OpType.LOG, NoAttrs())]


def test_tanh_gelu_is_refused_when_strict(tmp_path: Path) -> None:
    node = helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="tanh")
    with pytest.raises(UnsupportedOperatorError) as info:
        single(tmp_path, node, [1, 2, 3, 3], opset=20, strict=True)
    assert info.value.operators == {"Gelu (only approximate='none')": ["gelu"]}


def test_erf_pattern_is_one_gelu_layer(tmp_path: Path) -> None:
    # torch's TorchScript exporter: x * (1 + erf(x / sqrt 2)) * 0.5
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", ["x", "a"], ["m"], name="mul"),
        helper.make_node("Mul", ["m", "half"], ["y"], name="gelu"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")],
               [f32("sqrt2", np.sqrt(2.0)), f32("one", 1.0), f32("half", 0.5)])
    layer = only_layer(net)
    assert (layer.op, layer.inputs, layer.output_shape) == (OpType.GELU, ("x",), (1, 3, 4, 4))


def test_torch_export_softplus_pattern_is_one_softplus_layer(tmp_path: Path) -> None:
    # torch.export's softplus(beta=1, threshold=20): where(x*1 > 20, x, softplus(x*1) / 1), constants cast like x
    nodes = [
        helper.make_node("Mul", ["x", "beta"], ["s"], name="scale"),
        helper.make_node("Softplus", ["s"], ["t"], name="softplus"),
        helper.make_node("Constant", [], ["b0"], value_float=1.0),
        helper.make_node("CastLike", ["b0", "t"], ["b0c"]),
        helper.make_node("Div", ["t", "b0c"], ["d"], name="div"),
        helper.make_node("Constant", [], ["th"], value_float=20.0),
        helper.make_node("CastLike", ["th", "s"], ["thc"]),
        helper.make_node("Greater", ["s", "thc"], ["g"], name="greater"),
        helper.make_node("Where", ["g", "x", "d"], ["y"], name="where"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 3, 4, 4])], [out("y")], [f32("beta", 1.0)])
    layer = only_layer(net)
    assert (layer.op, layer.inputs, layer.output_shape) == (OpType.SOFTPLUS, ("x",), (1, 3, 4, 4))


def test_split_is_one_slice_layer_per_output(tmp_path: Path) -> None:
    nodes = [helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], name="split", axis=1)]
    net = load(tmp_path, nodes, [vi("x", [1, 8, 4, 4])], [out("a"), out("b"), out("c")], [i64("sizes", [2, 4, 2])])
    assert [(layer.op, layer.attrs, layer.output_shape) for layer in net.layers] == [
        (OpType.SLICE, SliceAttrs(axis=1, start=0, end=2), (1, 2, 4, 4)),
        (OpType.SLICE, SliceAttrs(axis=1, start=2, end=6), (1, 4, 4, 4)),
        (OpType.SLICE, SliceAttrs(axis=1, start=6, end=8), (1, 2, 4, 4))]
    assert len({layer.name for layer in net.layers}) == 3


def test_slice_with_negative_bounds_and_a_step(tmp_path: Path) -> None:
    # axis 2 (size 9): from 1 to -1 (= 8) in steps of 3 -> rows 1, 4, 7
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")
    layer = only_layer(single(tmp_path, node, [1, 2, 9, 4], inits=[i64("starts", [1]), i64("ends", [-1]),
                                                                    i64("axes", [2]), i64("steps", [3])]))
    assert (layer.op, layer.attrs, layer.output_shape) == (OpType.SLICE, SliceAttrs(2, 1, 8, 3), (1, 2, 3, 4))


def test_slice_along_two_axes_is_refused_when_strict(tmp_path: Path) -> None:
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="slice")
    with pytest.raises(UnsupportedOperatorError):
        single(tmp_path, node, [1, 2, 9, 4], inits=[i64("starts", [0, 0]), i64("ends", [1, 2]), i64("axes", [1, 2])],
               strict=True)


def test_transpose_gather_and_expand(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[0, 2, 3, 1]),
        helper.make_node("Gather", ["t", "idx"], ["g"], name="gather", axis=3),
        helper.make_node("ReduceMean", ["g", "axes"], ["m"], name="mean", keepdims=1),
        helper.make_node("Expand", ["m", "shape"], ["y"], name="expand"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 6, 5, 4])], [out("y")],
               [i64("idx", [5, -1, 0]), i64("axes", [2, 3]), i64("shape", [1, 5, 4, 3])], opset=18)
    assert [(layer.op, layer.attrs, layer.output_shape) for layer in net.layers] == [
        (OpType.TRANSPOSE, TransposeAttrs(perm=(0, 2, 3, 1)), (1, 5, 4, 6)),
        (OpType.GATHER, GatherAttrs(axis=3, indices=(5, 5, 0)), (1, 5, 4, 3)),
        (OpType.GLOBAL_AVG_POOL, NoAttrs(), (1, 5, 1, 1)),
        (OpType.EXPAND, NoAttrs(), (1, 5, 4, 3))]


def test_reshape_transpose_reshape_is_one_channel_shuffle(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Reshape", ["x", "grouped"], ["r"], name="view"),
        helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t", "back"], ["y"], name="shuffle"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 12, 5, 5])], [out("y")],
               [i64("grouped", [1, 3, 4, 5, 5]), i64("back", [1, 12, 5, 5])])
    layer = only_layer(net)
    assert (layer.name, layer.op, layer.attrs, layer.inputs) == (
        "shuffle", OpType.CHANNEL_SHUFFLE, ChannelShuffleAttrs(groups=3), ("x",))


def test_a_transpose_of_other_axes_is_no_channel_shuffle(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Reshape", ["x", "grouped"], ["r"], name="view"),
        helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[0, 1, 2, 4, 3]),
        helper.make_node("Reshape", ["t", "back"], ["y"], name="back"),
    ]
    net = load(tmp_path, nodes, [vi("x", [1, 12, 5, 5])], [out("y")],
               [i64("grouped", [1, 3, 4, 5, 5]), i64("back", [1, 12, 5, 5])])
    assert [layer.op for layer in net.layers] == [OpType.RESHAPE, OpType.TRANSPOSE, OpType.RESHAPE]
# ---- resizing, normalisation and attention --------------------------------------------
def test_conv_transpose_attributes(tmp_path: Path) -> None:
    from nnperf.ir import ConvTransposeAttrs

    node = helper.make_node("ConvTranspose", ["x", "W", "B"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 0, 1, 0], output_padding=[1, 0], group=2)
    layer = only_layer(single(tmp_path, node, [1, 4, 5, 5], inits=[f32("W", rng_array((4, 3, 3, 3))),
                                                                    f32("B", rng_array((6,)))]))
    assert layer.op is OpType.CONV_TRANSPOSE
    assert layer.attrs == ConvTransposeAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 0, 1, 0),
                                             output_padding=(1, 0), groups=2, bias=True)
    # (5-1)*2 - 2 + 2 + 1 + 1 = 10 high, (5-1)*2 + 2 + 1 = 11 wide
    assert layer.output_shape == (1, 6, 10, 11)


def test_layer_instance_normalization_and_gelu(tmp_path: Path) -> None:
    from nnperf.ir import GroupNormAttrs, NormAttrs

    nodes = [helper.make_node("LayerNormalization", ["x", "s", "b"], ["n"], axis=-1, epsilon=1e-6),
             helper.make_node("Gelu", ["n"], ["g"]),
             helper.make_node("InstanceNormalization", ["g", "s4", "b4"], ["y"])]
    net = load(tmp_path, nodes, [vi("x", [1, 4, 3, 8])], [out("y")],
               [f32("s", np.ones(8)), f32("b", np.zeros(8)), f32("s4", np.ones(4)), f32("b4", np.zeros(4))],
               opset=20)
    assert [(layer.op, layer.attrs) for layer in net] == [
        (OpType.LAYER_NORM, NormAttrs(axis=-1, eps=1e-6, affine=True)), (OpType.GELU, NoAttrs()),
        (OpType.GROUP_NORM, GroupNormAttrs(groups=4, eps=1e-5, affine=True))]


def test_reduce_over_channels_and_matmul_of_activations(tmp_path: Path) -> None:
    from nnperf.ir import MatmulAttrs, ReduceAttrs

    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=1),
             helper.make_node("ReduceMax", ["x"], ["k"], axes=[-1], keepdims=0),
             helper.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["x", "t"], ["y"])]
    net = load(tmp_path, nodes, [vi("x", [1, 3, 4, 5])], [out("m"), out("k", 3), out("y")])
    assert [(layer.op, layer.attrs, layer.output_shape) for layer in net] == [
        (OpType.REDUCE_MEAN, ReduceAttrs(axes=(1,), keepdims=True), (1, 1, 4, 5)),
        (OpType.REDUCE_MAX, ReduceAttrs(axes=(3,), keepdims=False), (1, 3, 4)),
        (OpType.MATMUL, MatmulAttrs(transpose_b=True), (1, 3, 4, 4))]  # the Transpose is read by the product
    assert net.layers[2].inputs == ("x", "x")


def test_sub_div_pow_and_division_by_a_scalar(tmp_path: Path) -> None:
    nodes = [helper.make_node("Sub", ["x", "z"], ["s"]), helper.make_node("Div", ["s", "x"], ["d"]),
             helper.make_node("Pow", ["d", "z"], ["p"]), helper.make_node("Div", ["p", "c"], ["y"])]
    net = load(tmp_path, nodes, [vi("x", [1, 3, 4, 4]), vi("z", [1, 1, 4, 4])], [out("y")], [f32("c", 8.0)])
    assert [layer.op for layer in net] == [OpType.SUB, OpType.DIV, OpType.POW, OpType.SCALE]
    assert net.layers[3].attrs == ScaleAttrs(bias=False, per_channel=False)


def test_stored_tensors_concatenated_or_added_are_constant_layers(tmp_path: Path) -> None:
    # a class token concatenated before the tokens, then a position embedding added: DeiT's input
    nodes = [helper.make_node("Concat", ["cls", "x"], ["c"], axis=1), helper.make_node("Add", ["c", "pos"], ["y"])]
    net = load(tmp_path, nodes, [vi("x", [1, 196, 8])], [out("y", 3)],
               [f32("cls", np.zeros((1, 1, 8))), f32("pos", rng_array((1, 197, 8)))])
    cat = net.layers[1].name
    assert [(layer.op, layer.inputs, layer.output_shape) for layer in net] == [
        (OpType.CONSTANT, ("x",), (1, 1, 8)), (OpType.CONCAT, ("cls", "x"), (1, 197, 8)),
        (OpType.CONSTANT, (cat,), (1, 197, 8)), (OpType.ADD, (cat, "pos"), (1, 197, 8))]
    assert network_metrics(net).params == 8 + 197 * 8


def _layer_norm_nodes(axis: int, affine: bool) -> list[onnx.NodeProto]:
    nodes = [helper.make_node("ReduceMean", ["x"], ["mean"], axes=[axis], keepdims=1),
             helper.make_node("Sub", ["x", "mean"], ["sub"]),
             helper.make_node("Pow", ["sub", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["var"], axes=[axis], keepdims=1),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["std"]),
             helper.make_node("Div", ["sub", "std"], ["y" if not affine else "n"])]
    if affine:
        nodes += [helper.make_node("Mul", ["n", "w"], ["nw"]), helper.make_node("Add", ["nw", "b"], ["y"])]
    return nodes


@pytest.mark.parametrize(("axis", "affine"), [(1, True), (-1, True), (-1, False)])
def test_decomposed_layer_norm_is_fused(tmp_path: Path, axis: int, affine: bool) -> None:
    from nnperf.ir import NormAttrs

    per = (4, 1, 1) if axis == 1 else (6,)
    net = load(tmp_path, _layer_norm_nodes(axis, affine), [vi("x", [1, 4, 5, 6])], [out("y")],
               [f32("two", 2.0), f32("eps", 1e-6), f32("w", rng_array(per)), f32("b", rng_array(per))])
    layer = only_layer(net)
    assert (layer.op, layer.attrs) == (OpType.LAYER_NORM, NormAttrs(axis=axis, eps=1e-6, affine=affine))
    assert layer_metrics(layer).params == (2 * per[0] if affine else 0)


def test_exported_group_norm_pattern_is_fused(tmp_path: Path) -> None:
    from nnperf.ir import GroupNormAttrs

    nodes = [helper.make_node("Reshape", ["x", "grouped"], ["r"]),
             helper.make_node("InstanceNormalization", ["r", "ones", "zeros"], ["n"], epsilon=1e-5),
             helper.make_node("Reshape", ["n", "back"], ["u"]),
             helper.make_node("CastLike", ["w", "u"], ["wc"]),
             helper.make_node("Mul", ["u", "wc"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["y"])]
    net = load(tmp_path, nodes, [vi("x", [1, 8, 3, 3])], [out("y")],
               [i64("grouped", [1, 2, -1]), f32("ones", np.ones(2)), f32("zeros", np.zeros(2)),
                i64("back", [1, 8, 3, 3]), f32("w", rng_array((8, 1, 1))), f32("b", rng_array((8, 1, 1)))])
    layer = only_layer(net)
    assert (layer.op, layer.attrs) == (OpType.GROUP_NORM, GroupNormAttrs(groups=2, eps=1e-5, affine=True))
    assert layer_metrics(layer).params == 16
