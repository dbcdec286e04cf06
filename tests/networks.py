"""Small IR networks shared by the measurement and CLI tests."""

from __future__ import annotations

from nnperf.ir import AxisAttrs, BatchNormAttrs, ConvAttrs, Layer, LinearAttrs, Network, OpType, PoolAttrs, TensorSpec


def tiny_network() -> Network:
    """12 layers: conv-bn-relu, a residual add, pooling, a depthwise conv, a concat, and a softmax classifier."""
    a, b = (1, 8, 16, 16), (1, 8, 8, 8)
    return Network("tiny", (TensorSpec("x", (1, 3, 16, 16)),), (
        Layer("conv1", OpType.CONV, ("x",), ((1, 3, 16, 16),), a, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("bn1", OpType.BATCH_NORM, ("conv1",), (a,), a, BatchNormAttrs()),
        Layer("relu1", OpType.RELU, ("bn1",), (a,), a),
        Layer("conv2", OpType.CONV, ("relu1",), (a,), a, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("add", OpType.ADD, ("conv2", "relu1"), (a, a), a),
        Layer("pool", OpType.MAX_POOL, ("add",), (a,), b, PoolAttrs((2, 2), (2, 2))),
        Layer("dw", OpType.CONV, ("pool",), (b,), b, ConvAttrs((3, 3), padding=(1,) * 4, groups=8)),
        Layer("cat", OpType.CONCAT, ("pool", "dw"), (b, b), (1, 16, 8, 8), AxisAttrs(1)),
        Layer("gap", OpType.GLOBAL_AVG_POOL, ("cat",), ((1, 16, 8, 8),), (1, 16, 1, 1)),
        Layer("flatten", OpType.FLATTEN, ("gap",), ((1, 16, 1, 1),), (1, 16), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 16),), (1, 10), LinearAttrs()),
        Layer("softmax", OpType.SOFTMAX, ("fc",), ((1, 10),), (1, 10), AxisAttrs(1)),
    ), ("softmax",))


def conv_net(name: str, c: int, hw: int) -> Network:
    """3 layers on a c x hw x hw map: 3x3 conv, ReLU, and an add of the two."""
    s = (1, c, hw, hw)
    return Network(name, (TensorSpec("x", s),), (
        Layer("a", OpType.CONV, ("x",), (s,), s, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("r", OpType.RELU, ("a",), (s,), s),
        Layer("add", OpType.ADD, ("r", "a"), (s, s), s),
    ), ("add",))


def residual_conv_net(name: str, c: int, hw: int) -> Network:
    """4 layers on a c x hw x hw map: 3x3 conv, ReLU, 1x1 conv, and an add of the two branches."""
    s = (1, c, hw, hw)
    return Network(name, (TensorSpec("x", s),), (
        Layer("a", OpType.CONV, ("x",), (s,), s, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("r", OpType.RELU, ("a",), (s,), s),
        Layer("b", OpType.CONV, ("r",), (s,), s, ConvAttrs((1, 1))),
        Layer("add", OpType.ADD, ("b", "r"), (s, s), s),
    ), ("add",))


def asymmetric_residual_network() -> Network:
    """x -> c1 (3x3) -> r1 -> c2 (1x1) -> add(c2, x) -> r2 -> c3 (3x3, stride 2, asymmetric padding) -> output:
    a residual join, and a convolution that the primitives needing symmetric padding (oneDNN, Winograd) refuse."""
    s = (1, 16, 8, 8)
    return Network("res", (TensorSpec("x", s),), (
        Layer("c1", OpType.CONV, ("x",), (s,), s, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("r1", OpType.RELU, ("c1",), (s,), s),
        Layer("c2", OpType.CONV, ("r1",), (s,), s, ConvAttrs((1, 1))),
        Layer("add", OpType.ADD, ("c2", "x"), (s, s), s),
        Layer("r2", OpType.RELU, ("add",), (s,), s),
        Layer("c3", OpType.CONV, ("r2",), (s,), (1, 32, 4, 4),
              ConvAttrs((3, 3), stride=(2, 2), padding=(0, 0, 1, 1))),
    ), ("c3",))


def conv_chain_network() -> Network:
    """x (batch 2) -> a (3x3) -> b (5x5, stride 2, asymmetric padding, 4 groups) -> c (3x3 depthwise, dilation 2)
    -> output: three convolutions in a row, nothing between them, on non-square maps."""
    x, a, b = (2, 16, 9, 11), (2, 16, 9, 11), (2, 32, 4, 5)
    return Network("chain", (TensorSpec("x", x),), (
        Layer("a", OpType.CONV, ("x",), (x,), a, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("b", OpType.CONV, ("a",), (a,), b, ConvAttrs((5, 5), stride=(2, 2), padding=(0, 1, 2, 1), groups=4)),
        Layer("c", OpType.CONV, ("b",), (b,), b, ConvAttrs((3, 3), padding=(2,) * 4, dilation=(2, 2), groups=32)),
    ), ("c",))


def relu_network(name: str = "plain") -> Network:
    """One ReLU on a 4 x 4 x 4 map: a network without a convolution."""
    s = (1, 4, 4, 4)
    return Network(name, (TensorSpec("x", s),), (Layer("r", OpType.RELU, ("x",), (s,), s),), ("r",))
