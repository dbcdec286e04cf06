"""Metrics of every op type against hand-computed counts (PreVIous, section III)."""

from __future__ import annotations

import pytest

from nnperf.ir import (
    AxisAttrs,
    BatchNormAttrs,
    ChannelShuffleAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvKind,
    GatherAttrs,
    HardSigmoidAttrs,
    Layer,
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
    TensorSpec,
    TransposeAttrs,
    UpsampleAttrs,
)
from nnperf.ir.metrics import DType, layer_metrics, network_metrics


def one(op: OpType, in_shape, out_shape, attrs=None, inputs=1):
    shapes = (in_shape,) * inputs if not isinstance(in_shape, list) else tuple(in_shape)
    return layer_metrics(Layer("l", op, tuple(f"x{i}" for i in range(len(shapes))), shapes, out_shape,
                               attrs or NoAttrs()))


def test_standard_conv_with_bias():
    # 3x3, Cin=3 -> Cout=8, 8x8 input, pad 1, stride 1 -> 8x8 output.
    m = one(OpType.CONV, (1, 3, 8, 8), (1, 8, 8, 8), ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1), bias=True))
    # MACs: 3*3*3 * 8*8 * 8 = 13,824 plus bias 8*8*8 = 512 -> 14,336
    assert m.macs == 14_336 and m.ops == 14_336
    # params: 3*3*3*8 + 8 = 224
    assert m.params == 224
    # n(I) = 3*8*8 = 192, n(O) = 8*8*8 = 512; memOPs = 192 + 224 + 512 = 928
    assert (m.n_input, m.n_output, m.mem_ops) == (192, 512, 928)
    # im2col: n(I) -> 3*3*3 * 8*8 = 1,728; memOPs = 1,728 + 224 + 512 = 2,464
    assert m.mem_ops_im2col == 2_464
    # bytes: float32 4*928, int8 928
    assert m.mem_bytes(DType.FLOAT32) == 3_712 and m.mem_bytes(DType.INT8) == 928
    assert m.mem_bytes(DType.FLOAT16, im2col=True) == 4_928
    assert m.param_bytes(DType.BFLOAT16) == 448


def test_strided_conv_without_bias_and_batch_two():
    # 3x3 stride 2, pad 1, Cin=4 -> Cout=6, 9x9 -> 5x5, batch 2.
    m = one(OpType.CONV, (2, 4, 9, 9), (2, 6, 5, 5),
            ConvAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), bias=False))
    # MACs: 3*3*4 * 5*5 * 6 * 2 = 10,800; params 3*3*4*6 = 216
    assert (m.macs, m.params) == (10_800, 216)
    # im2col n(I): 3*3*4 * 5*5 * 2 = 1,800
    assert m.n_input_im2col == 1_800


def test_pointwise_depthwise_grouped_convs():
    pw = Layer("pw", OpType.CONV, ("x",), ((1, 16, 4, 4),), (1, 32, 4, 4), ConvAttrs(kernel=(1, 1), bias=False))
    dw = Layer("dw", OpType.CONV, ("x",), ((1, 16, 4, 4),), (1, 16, 4, 4),
               ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1), groups=16, bias=False))
    gr = Layer("gr", OpType.CONV, ("x",), ((1, 16, 4, 4),), (1, 8, 4, 4),
               ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1), groups=4, bias=True))
    std = Layer("std", OpType.CONV, ("x",), ((1, 16, 4, 4),), (1, 8, 2, 2), ConvAttrs(kernel=(3, 3), bias=False))
    assert (pw.conv_kind, dw.conv_kind, gr.conv_kind, std.conv_kind) == (
        ConvKind.POINTWISE, ConvKind.DEPTHWISE, ConvKind.GROUPED, ConvKind.STANDARD)
    # pointwise: 16 * 4*4 * 32 = 8,192 MACs, 512 params
    assert (layer_metrics(pw).macs, layer_metrics(pw).params) == (8_192, 512)
    # depthwise: 3*3*(16/16) * 4*4*16 = 2,304 MACs, 3*3*1*16 = 144 params
    assert (layer_metrics(dw).macs, layer_metrics(dw).params) == (2_304, 144)
    # grouped 4: 3*3*(16/4) * 4*4*8 = 4,608 + bias 4*4*8 = 128 -> 4,736 MACs; params 3*3*4*8 + 8 = 296
    assert (layer_metrics(gr).macs, layer_metrics(gr).params) == (4_736, 296)
    # im2col of grouped conv: 3*3*16 * 4*4 = 2,304 (every group unrolls its own channels)
    assert layer_metrics(gr).n_input_im2col == 2_304


def test_linear():
    # FC 100 -> 10 with bias: MACs 1,000 (bias add not a MAC, as in PreVIous), params 1,010
    m = one(OpType.LINEAR, (1, 100), (1, 10), LinearAttrs(bias=True))
    assert (m.macs, m.ops, m.params, m.mem_ops) == (1_000, 1_000, 1_010, 100 + 1_010 + 10)
    # batch of 4 rows and no bias: 4*100*10 = 4,000 MACs, 1,000 params
    m = one(OpType.LINEAR, (4, 100), (4, 10), LinearAttrs(bias=False))
    assert (m.macs, m.params) == (4_000, 1_000)


def test_pooling():
    # max 2x2 stride 2 on 1x8x6x6 -> 1x8x3x3: ops 2*2*3*3*8 = 288
    m = one(OpType.MAX_POOL, (1, 8, 6, 6), (1, 8, 3, 3), PoolAttrs(kernel=(2, 2), stride=(2, 2)))
    assert (m.macs, m.ops, m.params, m.mem_ops) == (0, 288, 0, 288 + 72)
    # avg 3x3 stride 2 ceil mode on 7x7 -> 3x3 (ceil((7-3)/2)+1 = 3): ops 3*3*3*3*8 = 648
    m = one(OpType.AVG_POOL, (1, 8, 7, 7), (1, 8, 3, 3), PoolAttrs(kernel=(3, 3), stride=(2, 2), ceil_mode=True))
    assert m.ops == 648
    # global average over 8x5x5: ops 5*5*8 = 200, output 8
    m = one(OpType.GLOBAL_AVG_POOL, (1, 8, 5, 5), (1, 8, 1, 1))
    assert (m.ops, m.n_output) == (200, 8)
    assert one(OpType.GLOBAL_MAX_POOL, (1, 8, 5, 5), (1, 8)).ops == 200


def test_batch_norm_and_scale():
    # BN on 1x4x3x3: 2 ops per activation = 72; 2 params per channel = 8
    m = one(OpType.BATCH_NORM, (1, 4, 3, 3), (1, 4, 3, 3), BatchNormAttrs())
    assert (m.ops, m.params, m.mem_ops) == (72, 8, 36 + 8 + 36)
    assert one(OpType.BATCH_NORM, (1, 4, 3, 3), (1, 4, 3, 3), BatchNormAttrs(affine=False)).params == 0
    # scale: one MAC per activation (36); factor + bias per channel = 8 params
    m = one(OpType.SCALE, (1, 4, 3, 3), (1, 4, 3, 3), ScaleAttrs(bias=True))
    assert (m.macs, m.ops, m.params) == (36, 36, 8)
    assert one(OpType.SCALE, (1, 4, 3, 3), (1, 4, 3, 3), ScaleAttrs(bias=False)).params == 4
    assert one(OpType.SCALE, (1, 4, 3, 3), (1, 4, 3, 3), ScaleAttrs(bias=False, per_channel=False)).params == 1


@pytest.mark.parametrize("op", [OpType.RELU, OpType.RELU6, OpType.SIGMOID, OpType.TANH, OpType.HARDSWISH,
                                OpType.SILU])
def test_activations_one_op_per_element(op):
    # 1x2x3x4 = 24 elements: 24 ops, no params, memOPs 24 + 24
    m = one(op, (1, 2, 3, 4), (1, 2, 3, 4))
    assert (m.macs, m.ops, m.params, m.mem_ops) == (0, 24, 0, 48)


def test_leaky_relu():
    m = one(OpType.LEAKY_RELU, (1, 2, 3, 4), (1, 2, 3, 4), LeakyReluAttrs(negative_slope=0.1))
    assert (m.ops, m.mem_ops) == (24, 48)


@pytest.mark.parametrize("op", [OpType.ADD, OpType.MUL, OpType.MAX])
def test_eltwise(op):
    # two operands of 1x2x3x3 (18 each): 18 ops, memOPs 36 + 18
    m = one(op, (1, 2, 3, 3), (1, 2, 3, 3), inputs=2)
    assert (m.ops, m.n_input, m.mem_ops) == (18, 36, 54)
    # three operands: 2 ops per output = 36
    assert one(op, (1, 2, 3, 3), (1, 2, 3, 3), inputs=3).ops == 36


def test_eltwise_broadcast():
    # 1x4x3x3 * 1x4x1x1 (an SE gate): output 36, 36 ops, n(I) 36 + 4
    m = one(OpType.MUL, [(1, 4, 3, 3), (1, 4, 1, 1)], (1, 4, 3, 3))
    assert (m.ops, m.n_input) == (36, 40)


def test_concat_softmax_lrn():
    m = one(OpType.CONCAT, [(1, 2, 3, 3), (1, 5, 3, 3)], (1, 7, 3, 3), AxisAttrs(axis=1))
    # no ops; n(I) = 18 + 45 = 63, n(O) = 63
    assert (m.ops, m.mem_ops) == (0, 126)
    # softmax over 1000: 3 ops per element
    assert one(OpType.SOFTMAX, (1, 1000), (1, 1000), AxisAttrs(axis=1)).ops == 3_000
    # LRN size 5 on 1x8x2x2 (32 elements): (5 + 3) * 32 = 256
    assert one(OpType.LRN, (1, 8, 2, 2), (1, 8, 2, 2), LrnAttrs(size=5)).ops == 256


def test_data_movement_layers():
    assert one(OpType.FLATTEN, (1, 4, 2, 2), (1, 16), AxisAttrs(axis=1)).mem_ops == 32
    assert one(OpType.RESHAPE, (1, 4, 2, 2), (1, 2, 8)).ops == 0
    assert one(OpType.PAD, (1, 1, 2, 2), (1, 1, 3, 3), PadAttrs()).mem_ops == 4 + 9
    # nearest upsample: 0 ops; linear: 4 per output (1x1x4x4 = 16 -> 64)
    assert one(OpType.UPSAMPLE, (1, 1, 2, 2), (1, 1, 4, 4), UpsampleAttrs("nearest")).ops == 0
    assert one(OpType.UPSAMPLE, (1, 1, 2, 2), (1, 1, 4, 4), UpsampleAttrs("linear")).ops == 64
    for op in (OpType.IDENTITY, OpType.DROPOUT):
        assert one(op, (1, 3), (1, 3)).mem_ops == 6


def test_network_totals():
    net = Network(
        "tiny",
        (TensorSpec("x", (1, 3, 8, 8)),),
        (
            Layer("conv", OpType.CONV, ("x",), ((1, 3, 8, 8),), (1, 8, 8, 8),
                  ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1))),
            Layer("relu", OpType.RELU, ("conv",), ((1, 8, 8, 8),), (1, 8, 8, 8)),
            Layer("gap", OpType.GLOBAL_AVG_POOL, ("relu",), ((1, 8, 8, 8),), (1, 8, 1, 1)),
            Layer("flat", OpType.FLATTEN, ("gap",), ((1, 8, 1, 1),), (1, 8), AxisAttrs(axis=1)),
            Layer("fc", OpType.LINEAR, ("flat",), ((1, 8),), (1, 10)),
            Layer("prob", OpType.SOFTMAX, ("fc",), ((1, 10),), (1, 10), AxisAttrs(axis=1)),
        ),
        ("prob",),
    )
    m = network_metrics(net)
    # MACs: conv 14,336 + fc 80 = 14,416
    assert m.macs == 14_416
    # ops: conv 14,336 + relu 512 + gap 512 + flat 0 + fc 80 + softmax 30 = 15,470
    assert m.ops == 15_470
    # params: conv 224 + fc 90 = 314
    assert m.params == 314
    # memOPs: conv 928 + relu 1,024 + gap 520 + flat 16 + fc (8+90+10=108) + softmax 20 = 2,616
    assert m.mem_ops == 2_616
    assert m.mem_bytes(DType.FLOAT32) == 4 * 2_616


# activations and data movement
@pytest.mark.parametrize("op", [OpType.GELU, OpType.SOFTPLUS, OpType.MISH, OpType.EXP, OpType.LOG])
def test_unary_activations_count_one_op_per_element(op):
    # 2x3x4x5 = 120 elements: 120 #OPs, no MACs, no weights; memOPs 120 + 0 + 120 = 240
    m = one(op, (2, 3, 4, 5), (2, 3, 4, 5))
    assert (m.macs, m.ops, m.params, m.mem_ops) == (0, 120, 0, 240)


def test_hard_sigmoid_and_clip_count_one_op_per_element():
    # 1x8x7x7 = 392 elements
    for m in (one(OpType.HARD_SIGMOID, (1, 8, 7, 7), (1, 8, 7, 7), HardSigmoidAttrs(alpha=1 / 6, beta=0.5)),
              one(OpType.CLIP, (1, 8, 7, 7), (1, 8, 7, 7), ClipAttrs(low=-1.0, high=2.0))):
        assert (m.macs, m.ops, m.params, m.mem_ops) == (0, 392, 0, 392 + 392)


def test_prelu_has_one_slope_per_channel_or_one():
    # 1x8x7x7 = 392 elements; 8 slopes per channel: memOPs 392 + 8 + 392 = 792
    m = one(OpType.PRELU, (1, 8, 7, 7), (1, 8, 7, 7), PReluAttrs(per_channel=True))
    assert (m.macs, m.ops, m.params, m.mem_ops) == (0, 392, 8, 792)
    m = one(OpType.PRELU, (1, 8, 7, 7), (1, 8, 7, 7), PReluAttrs(per_channel=False))
    assert (m.params, m.mem_ops) == (1, 392 + 1 + 392)


def test_data_movement_counts_no_ops_and_reads_the_whole_input():
    # slice channels 2..6 (step 2) of 1x8x5x5: n(I) = 200, n(O) = 2*25 = 50
    m = one(OpType.SLICE, (1, 8, 5, 5), (1, 2, 5, 5), SliceAttrs(axis=1, start=2, end=6, step=2))
    assert (m.macs, m.ops, m.params, m.n_input, m.n_output) == (0, 0, 0, 200, 50)
    # gather 3 of 8 channels: n(O) = 3*25 = 75
    m = one(OpType.GATHER, (1, 8, 5, 5), (1, 3, 5, 5), GatherAttrs(axis=1, indices=(7, 0, 7)))
    assert (m.ops, m.n_input, m.n_output) == (0, 200, 75)
    # transpose and channel shuffle move all 200 elements: memOPs 400
    m = one(OpType.TRANSPOSE, (1, 8, 5, 4), (1, 5, 4, 8), TransposeAttrs(perm=(0, 2, 3, 1)))
    assert (m.ops, m.mem_ops) == (0, 160 + 160)
    m = one(OpType.CHANNEL_SHUFFLE, (1, 8, 5, 5), (1, 8, 5, 5), ChannelShuffleAttrs(groups=2))
    assert (m.ops, m.mem_ops) == (0, 400)
    # expand 1x8x1x1 to 1x8x5x5: n(I) = 8, n(O) = 200
    m = one(OpType.EXPAND, (1, 8, 1, 1), (1, 8, 5, 5))
    assert (m.ops, m.mem_ops) == (0, 8 + 200)


@pytest.mark.parametrize(("op", "in_shape", "out_shape", "attrs"), [
    (OpType.SLICE, (1, 8, 5, 5), (1, 3, 5, 5), SliceAttrs(axis=1, start=2, end=6, step=2)),
    (OpType.SLICE, (1, 8, 5, 5), (1, 8, 5, 5), SliceAttrs(axis=1, start=0, end=9)),
    (OpType.GATHER, (1, 8, 5, 5), (1, 2, 5, 5), GatherAttrs(axis=1, indices=(0, 8))),
    (OpType.TRANSPOSE, (1, 8, 5, 4), (1, 4, 5, 8), TransposeAttrs(perm=(0, 2, 3, 1))),
    (OpType.CHANNEL_SHUFFLE, (1, 9, 5, 5), (1, 9, 5, 5), ChannelShuffleAttrs(groups=2)),
    (OpType.EXPAND, (1, 8, 2, 1), (1, 8, 5, 5), NoAttrs()),
])
def test_data_movement_shapes_are_checked(op, in_shape, out_shape, attrs):
    from nnperf.errors import InvalidNetworkError

    with pytest.raises(InvalidNetworkError):
        Layer("l", op, ("x",), (in_shape,), out_shape, attrs)
# resizing, normalisation and attention
def test_conv_transpose_2x2_stride_2():
    from nnperf.ir import ConvTransposeAttrs

    # 2x2/2 up-convolution, Cin=8 -> Cout=4, 5x5 -> 10x10, with bias.
    m = one(OpType.CONV_TRANSPOSE, (1, 8, 5, 5), (1, 4, 10, 10), ConvTransposeAttrs(kernel=(2, 2), stride=(2, 2)))
    # MACs: every input element times every tap of Cout kernels: 2*2 * 4 * 8*5*5 = 3,200, plus bias 4*10*10 = 400
    assert m.macs == m.ops == 3_200 + 400
    # params: 8*4*2*2 + 4 = 132; n(I) = 200, n(O) = 400
    assert (m.params, m.n_input, m.n_output, m.mem_ops) == (132, 200, 400, 200 + 132 + 400)
    # im2col reads the equivalent direct convolution's unrolled input: 2*2*8 * 10*10 = 3,200
    assert m.n_input_im2col == 3_200


def test_conv_transpose_grouped_padded_output_padding():
    from nnperf.ir import ConvTransposeAttrs

    # 3x3/2, pad 1, output padding 1, groups 2, Cin=4 -> Cout=6, 3x3 -> (3-1)*2 - 2 + 2 + 1 + 1 = 6, no bias.
    m = one(OpType.CONV_TRANSPOSE, (1, 4, 3, 3), (1, 6, 6, 6),
            ConvTransposeAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), output_padding=(1, 1), groups=2,
                               bias=False))
    # MACs: 3*3 * (6/2) * 4*3*3 = 972; params: 4 * 3 * 3*3 = 108
    assert (m.macs, m.params) == (972, 108)


def test_layer_and_group_norm():
    from nnperf.ir import GroupNormAttrs, NormAttrs

    # layer norm over the last axis of 1x197x192: 6 ops per element, 2*192 parameters
    m = one(OpType.LAYER_NORM, (1, 197, 192), (1, 197, 192), NormAttrs(axis=-1))
    assert (m.macs, m.ops, m.params) == (0, 6 * 197 * 192, 384)
    # over the channels of 1x96x56x56, without affine: 4 ops per element, no parameters
    m = one(OpType.LAYER_NORM, (1, 96, 56, 56), (1, 96, 56, 56), NormAttrs(axis=1, affine=False))
    assert (m.ops, m.params, m.mem_ops) == (4 * 96 * 56 * 56, 0, 2 * 96 * 56 * 56)
    # channel layer norm's parameters are per channel
    assert one(OpType.LAYER_NORM, (1, 96, 7, 5), (1, 96, 7, 5), NormAttrs(axis=1)).params == 192
    # group norm, 4 groups of 2x8 channels: a scale and a shift per channel
    m = one(OpType.GROUP_NORM, (2, 8, 3, 3), (2, 8, 3, 3), GroupNormAttrs(groups=4))
    assert (m.ops, m.params) == (6 * 2 * 8 * 3 * 3, 16)


def test_reductions():
    from nnperf.ir import ReduceAttrs

    # mean over the channels of 1x4x5x5, kept: one accumulate per element read
    m = one(OpType.REDUCE_MEAN, (1, 4, 5, 5), (1, 1, 5, 5), ReduceAttrs(axes=(1,)))
    assert (m.macs, m.ops, m.params, m.n_output) == (0, 100, 0, 25)
    m = one(OpType.REDUCE_MAX, (1, 4, 5, 5), (1, 4), ReduceAttrs(axes=(2, 3), keepdims=False))
    assert (m.ops, m.n_output) == (100, 4)


def test_matmul_of_two_activations():
    from nnperf.ir import MatmulAttrs

    # attention scores q k^T of 3 heads, 197 tokens, 64 per head: 3*197*197 outputs of 64 MACs each
    m = one(OpType.MATMUL, [(1, 3, 197, 64), (1, 3, 64, 197)], (1, 3, 197, 197), MatmulAttrs())
    assert (m.macs, m.ops, m.params) == (3 * 197 * 197 * 64, 3 * 197 * 197 * 64, 0)
    assert m.n_input == 2 * 3 * 197 * 64
    # K^T Q with K read transposed: (64 x 197)^T x (64 x 197) -> 197 x 197, still 64 MACs per output
    m = one(OpType.MATMUL, [(1, 64, 197), (1, 64, 197)], (1, 197, 197), MatmulAttrs(transpose_a=True))
    assert m.macs == 197 * 197 * 64
    # a batch broadcast against a single matrix: 2 x (4x5 @ 5x3)
    assert one(OpType.MATMUL, [(2, 4, 5), (5, 3)], (2, 4, 3), MatmulAttrs()).macs == 2 * 4 * 3 * 5


def test_sub_div_pow_gelu_and_constant():
    # element-wise: k-1 ops per output, as add/mul/max
    for op in (OpType.SUB, OpType.DIV, OpType.POW):
        m = one(op, [(1, 4, 3, 3), (1, 1, 3, 3)], (1, 4, 3, 3))
        assert (m.macs, m.ops, m.n_input) == (0, 36, 36 + 9)
    assert one(OpType.GELU, (1, 5, 7), (1, 5, 7)).ops == 35
    # a class token 1x1x192: its elements are parameters; it reads nothing (n(I) = 0)
    m = one(OpType.CONSTANT, (1, 196, 192), (1, 1, 192))
    assert (m.macs, m.ops, m.params, m.n_input, m.mem_ops) == (0, 0, 192, 0, 192 + 192)
