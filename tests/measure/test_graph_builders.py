"""The torch and ONNX graph builders compute the same function as each other (and as OpenCV)."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from nnperf.errors import UnsupportedOperatorError
from nnperf.ir import (  # activations and data movement
    AxisAttrs,
    BatchNormAttrs,
    ChannelShuffleAttrs,
    ClipAttrs,
    ConvAttrs,
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
    Shape,
    SliceAttrs,
    TensorSpec,
    TransposeAttrs,
    UpsampleAttrs,
    conv_output_size,
    pool_output_size,
)
from nnperf.ir._ops import Attributes
from nnperf.measure.backends._onnx_graph import build_onnx, layer_onnx, onnx_node_layers
from nnperf.measure.backends._torch_graph import build_torch, layer_module
from nnperf.measure.backends._weights import layer_weights
from nnperf.zoo import zoo_network


class _Builder:
    """Builds a small IR network layer by layer, keeping track of shapes."""

    def __init__(self, name: str, **inputs: Shape) -> None:
        self.name = name
        self.specs = tuple(TensorSpec(n, s) for n, s in inputs.items())
        self.shapes: dict[str, Shape] = dict(inputs)
        self.layers: list[Layer] = []

    def add(self, name: str, op: OpType, inputs: str | tuple[str, ...], out: Shape | None = None,
            attrs: Attributes | None = None) -> str:
        inputs = (inputs,) if isinstance(inputs, str) else inputs
        shape = out if out is not None else self.shapes[inputs[0]]
        self.layers.append(Layer(name, op, inputs, tuple(self.shapes[i] for i in inputs), shape, attrs or NoAttrs()))
        self.shapes[name] = shape
        return name

    def conv(self, name: str, x: str, c_out: int, attrs: ConvAttrs) -> str:
        n, _, h, w = self.shapes[x]
        hw = [conv_output_size((h, w)[i], attrs.kernel[i], attrs.stride[i], attrs.padding[i], attrs.padding[2 + i],
                               attrs.dilation[i]) for i in range(2)]
        return self.add(name, OpType.CONV, x, (n, c_out, *hw), attrs)

    def pool(self, name: str, x: str, attrs: PoolAttrs, is_max: bool = True) -> str:
        n, c, h, w = self.shapes[x]
        hw = [pool_output_size((h, w)[i], attrs.kernel[i], attrs.stride[i], attrs.padding[i], attrs.padding[2 + i],
                               attrs.ceil_mode) for i in range(2)]
        return self.add(name, OpType.MAX_POOL if is_max else OpType.AVG_POOL, x, (n, c, *hw), attrs)

    def network(self, *outputs: str) -> Network:
        return Network(self.name, self.specs, tuple(self.layers), outputs)


def _conv_pool_net() -> Network:
    b = _Builder("convpool", x=(1, 4, 8, 8))
    y = b.conv("conv1", "x", 8, ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))
    y = b.add("bn1", OpType.BATCH_NORM, y, attrs=BatchNormAttrs(eps=1e-3))
    r = b.add("relu1", OpType.RELU, y)
    y = b.conv("dw", r, 8, ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1), groups=8, bias=False))
    y = b.add("relu6", OpType.RELU6, y)
    y = b.conv("strided", y, 8, ConvAttrs(kernel=(3, 3), stride=(2, 2), padding=(0, 0, 1, 1)))
    y = b.add("leaky", OpType.LEAKY_RELU, y, attrs=LeakyReluAttrs(0.2))
    m = b.pool("pool_ceil", r, PoolAttrs(kernel=(3, 3), stride=(2, 2), ceil_mode=True))
    y = b.add("residual", OpType.ADD, (y, m), (1, 8, 4, 4))
    a = b.pool("avg_nopad", y, PoolAttrs(kernel=(3, 3), stride=(1, 1), padding=(1, 1, 1, 1),
                                         count_include_pad=False), is_max=False)
    a = b.pool("avg_ceil", a, PoolAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), ceil_mode=True),
               is_max=False)
    m2 = b.pool("max_asym", y, PoolAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 2, 2, 1)))
    a2 = b.pool("avg_asym", y, PoolAttrs(kernel=(3, 3), stride=(2, 2), padding=(2, 1, 1, 2)), is_max=False)
    c = b.add("concat", OpType.CONCAT, (a, m2, a2), (1, 24, 3, 3), AxisAttrs(axis=1))
    g = b.add("gap", OpType.GLOBAL_AVG_POOL, c, (1, 24, 1, 1))
    f = b.add("flatten", OpType.FLATTEN, g, (1, 24), AxisAttrs(axis=1))
    fc = b.add("fc", OpType.LINEAR, f, (1, 10), LinearAttrs())
    b.add("softmax", OpType.SOFTMAX, fc, attrs=AxisAttrs(axis=1))
    gm = b.add("gmp", OpType.GLOBAL_MAX_POOL, c, (1, 24))
    b.add("fc_nobias", OpType.LINEAR, gm, (1, 5), LinearAttrs(bias=False))
    return b.network("softmax", "fc_nobias")


def _activation_net() -> Network:
    b = _Builder("activations", x=(1, 4, 8, 8))
    s = b.add("sigmoid", OpType.SIGMOID, "x")
    t = b.add("tanh", OpType.TANH, "x")
    h = b.add("hardswish", OpType.HARDSWISH, "x")
    si = b.add("silu", OpType.SILU, "x")
    mu = b.add("mul", OpType.MUL, (s, t), (1, 4, 8, 8))
    mx = b.add("max", OpType.MAX, (h, si), (1, 4, 8, 8))
    y = b.add("scale_bias", OpType.SCALE, mu, attrs=ScaleAttrs(bias=True))
    y = b.add("scale", OpType.SCALE, y, attrs=ScaleAttrs(bias=False))
    y = b.add("scale_scalar", OpType.SCALE, y, attrs=ScaleAttrs(bias=True, per_channel=False))
    z = b.add("scale_scalar_nobias", OpType.SCALE, mx, attrs=ScaleAttrs(per_channel=False))
    y = b.add("lrn", OpType.LRN, (y,), attrs=LrnAttrs(size=3, alpha=0.1, beta=0.75, k=2.0))
    z = b.add("lrn_even", OpType.LRN, z, attrs=LrnAttrs(size=2, alpha=0.5, beta=0.6, k=1.5))
    y = b.add("identity", OpType.IDENTITY, y)
    z = b.add("dropout", OpType.DROPOUT, z)
    y = b.add("bn_plain", OpType.BATCH_NORM, (y,), attrs=BatchNormAttrs(affine=False))
    y = b.add("sum3", OpType.ADD, (y, z, "x"), (1, 4, 8, 8))
    r = b.add("reshape", OpType.RESHAPE, y, (1, 4, 64))
    r = b.add("fc3d", OpType.LINEAR, r, (1, 4, 16), LinearAttrs())
    r = b.add("fc3d_nobias", OpType.LINEAR, r, (1, 4, 6), LinearAttrs(bias=False))
    b.add("softmax_last", OpType.SOFTMAX, r, attrs=AxisAttrs(axis=2))
    b.add("flatten_all", OpType.FLATTEN, y, (1, 256), AxisAttrs(axis=1))
    return b.network("softmax_last", "flatten_all")


def _resize_pad_net() -> Network:
    b = _Builder("resizepad", x=(1, 4, 5, 6))
    n = b.add("up_nearest", OpType.UPSAMPLE, "x", (1, 4, 10, 12), UpsampleAttrs("nearest"))
    li = b.add("up_linear", OpType.UPSAMPLE, "x", (1, 4, 10, 12), UpsampleAttrs("linear"))
    up = b.add("up_sum", OpType.ADD, (n, li), (1, 4, 10, 12))
    g = b.add("squeeze_pool", OpType.GLOBAL_AVG_POOL, up, (1, 4, 1, 1))
    g = b.add("gate", OpType.SIGMOID, g)
    b.add("excite", OpType.MUL, (up, g, up), (1, 4, 10, 12))
    b.add("pad_const", OpType.PAD, "x", (1, 4, 8, 9), PadAttrs("constant", 0.5))
    b.add("pad_reflect", OpType.PAD, "x", (1, 4, 7, 8), PadAttrs("reflect"))
    b.add("pad_edge", OpType.PAD, "x", (1, 4, 6, 7), PadAttrs("replicate"))
    b.add("pad_channels", OpType.PAD, "x", (1, 6, 5, 6), PadAttrs("constant", -1.0))
    return b.network("excite", "pad_const", "pad_reflect", "pad_edge", "pad_channels")


SMALL = {"convpool": _conv_pool_net, "activations": _activation_net, "resizepad": _resize_pad_net}


# activations and data movement
def _newer_activation_net() -> Network:
    b = _Builder("newer-ops", x=(1, 6, 5, 4))
    y = b.add("hsig", OpType.HARD_SIGMOID, "x", attrs=HardSigmoidAttrs(alpha=1 / 6, beta=0.5))
    c = b.add("clip", OpType.CLIP, "x", attrs=ClipAttrs(low=-0.5, high=1.5))
    c = b.add("clip_high", OpType.CLIP, c, attrs=ClipAttrs(high=1.0))
    p = b.add("prelu", OpType.PRELU, "x", attrs=PReluAttrs())
    p = b.add("prelu_one", OpType.PRELU, p, attrs=PReluAttrs(per_channel=False))
    g = b.add("gelu", OpType.GELU, p)
    m = b.add("mish", OpType.MISH, g)
    s = b.add("softplus", OpType.SOFTPLUS, m)
    s = b.add("log", OpType.LOG, s)
    e = b.add("exp", OpType.EXP, c)
    a = b.add("sum", OpType.ADD, (y, s, e), (1, 6, 5, 4))
    sh = b.add("shuffle", OpType.CHANNEL_SHUFFLE, a, attrs=ChannelShuffleAttrs(groups=3))
    lo = b.add("slice_lo", OpType.SLICE, sh, (1, 3, 5, 4), SliceAttrs(axis=1, start=0, end=3))
    st = b.add("slice_step", OpType.SLICE, sh, (1, 6, 2, 4), SliceAttrs(axis=2, start=1, end=5, step=2))
    ga = b.add("gather", OpType.GATHER, lo, (1, 4, 5, 4), GatherAttrs(axis=1, indices=(2, 0, 0, 1)))
    b.add("transpose", OpType.TRANSPOSE, st, (1, 4, 6, 2), TransposeAttrs(perm=(0, 3, 1, 2)))
    pool = b.add("pool", OpType.GLOBAL_AVG_POOL, ga, (1, 4, 1, 1))
    b.add("expand", OpType.EXPAND, pool, (1, 4, 5, 4))
    return b.network("expand", "transpose")


SMALL["newer-activations"] = _newer_activation_net


def _generic_net() -> Network:
    """ONNX operators without a dedicated op type, imported as generic layers: a comparison, a select, a sum."""
    import tempfile

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from nnperf.ir.importers import from_onnx

    nodes = [helper.make_node("Greater", ["x", "half"], ["mask"]),
             helper.make_node("Where", ["mask", "x", "zero"], ["kept"]),
             helper.make_node("ReduceSum", ["kept", "axes"], ["y"], keepdims=1)]
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array([2, 3], np.int64), "axes")]
    graph = helper.make_graph(nodes, "generic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with tempfile.TemporaryDirectory() as folder:
        onnx.save(model, f"{folder}/generic.onnx")
        return from_onnx(f"{folder}/generic.onnx")


SMALL["generic"] = _generic_net


def _inputs(network: Network, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(spec.shape).astype(np.float32) for spec in network.inputs]


def _run_torch(network: Network, inputs: list[np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        out = build_torch(network)(*(torch.from_numpy(x) for x in inputs))
    return [t.numpy() for t in ((out,) if isinstance(out, torch.Tensor) else out)]


def _run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return [np.asarray(y) for y in session.run(None, feeds)]


def _assert_close(actual: np.ndarray, expected: np.ndarray, name: str) -> None:
    assert actual.shape == expected.shape, name
    atol = 1e-4 * max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=atol, err_msg=name)


def _check_torch_vs_onnx(network: Network) -> list[np.ndarray]:
    model = build_onnx(network)
    onnx.checker.check_model(model)
    inputs = _inputs(network)
    expected = _run_torch(network, inputs)
    actual = _run_ort(model, {s.name: x for s, x in zip(network.inputs, inputs)})
    assert len(expected) == len(actual) == len(network.outputs)
    for name, t, o in zip(network.outputs, expected, actual):
        assert t.shape == network.layer(name).output_shape, name
        assert np.all(np.isfinite(t)), name
        _assert_close(o, t, name)
    return expected


@cache
def _zoo(name: str) -> Network:
    return zoo_network(name)


def test_small_networks_cover_every_op() -> None:
    used = {layer.op for make in SMALL.values() for layer in make().layers}
    assert used == set(OpType)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_torch_and_onnxruntime_agree_on_small_networks(name: str) -> None:
    _check_torch_vs_onnx(SMALL[name]())


@pytest.mark.parametrize("name", ["squeezenet1_1", "mobilenet_v2"])
def test_torch_and_onnxruntime_agree_on_zoo_networks(name: str) -> None:
    torch.set_num_threads(1)
    (out,) = _check_torch_vs_onnx(_zoo(name))
    assert out.shape == (1, 1000)
    assert 1e-3 < float(np.abs(out).max()) < 1e3  # activations neither vanish nor explode


@pytest.mark.parametrize("name", ["shufflenet_v2_x1_0", "mobilenet_v3_large"])
def test_torch_and_onnxruntime_agree_on_the_newer_zoo_networks(name: str) -> None:
    # without residual scaling the builders' random weights grow ShuffleNet's outputs to ~1e4: agreement only
    torch.set_num_threads(1)
    (out,) = _check_torch_vs_onnx(_zoo(name))
    assert out.shape == (1, 1000)


def test_torch_and_onnxruntime_agree_on_yolov8n() -> None:  # chunk, SPPF pools, nearest upsampling
    torch.set_num_threads(1)
    (out,) = _check_torch_vs_onnx(_zoo("yolov8n"))
    assert out.shape == (1, 144, 8400)


def _check_opencv_vs_torch(network: Network, tmp_path: Path) -> None:
    """OpenCV DNN runs ``network``'s ONNX build and every output matches torch's."""
    cv2 = pytest.importorskip("cv2")
    path = tmp_path / f"{network.name}.onnx"
    path.write_bytes(build_onnx(network).SerializeToString())
    net = cv2.dnn.readNetFromONNX(str(path))
    (x,) = _inputs(network)
    net.setInput(x)
    actual = net.forward(list(network.outputs))
    for name, got, expected in zip(network.outputs, actual, _run_torch(network, [x])):
        _assert_close(np.asarray(got).reshape(expected.shape), expected, f"{name} (OpenCV)")


def test_opencv_agrees_on_the_newer_ops(tmp_path: Path) -> None:
    _check_opencv_vs_torch(_zoo("previousnet04_7x7x64"), tmp_path)


def test_opencv_agrees_on_squeezenet(tmp_path: Path) -> None:
    _check_opencv_vs_torch(_zoo("squeezenet1_1"), tmp_path)


def test_deep_plain_network_stays_finite() -> None:
    b = _Builder("deep", x=(1, 3, 16, 16))
    y = "x"
    for i in range(20):
        y = b.conv(f"conv{i}", y, 32, ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))
        y = b.add(f"relu{i}", OpType.RELU, y)
    (out,) = _run_torch(b.network(y), _inputs(b.network(y)))
    assert 1e-2 < float(np.abs(out).max()) < 1e2


@pytest.mark.parametrize("layer_name", ["conv1", "residual"])
def test_isolated_layer_module_and_onnx_agree(layer_name: str) -> None:
    layer = _conv_pool_net().layer(layer_name)
    model = layer_onnx(layer)
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == [f"in{i}" for i in range(len(layer.inputs))]
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(s).astype(np.float32) for s in layer.input_shapes]
    with torch.no_grad():
        expected = layer_module(layer)(*(torch.from_numpy(x) for x in xs)).numpy()
    (actual,) = _run_ort(model, {f"in{i}": x for i, x in enumerate(xs)})
    assert expected.shape == layer.output_shape
    _assert_close(actual, expected, layer_name)


def test_isolated_layer_modules_of_squeezenet_have_the_ir_shapes() -> None:
    torch.set_num_threads(1)
    for layer in _zoo("squeezenet1_1").layers:
        xs = [torch.randn(s) for s in layer.input_shapes]
        with torch.no_grad():
            assert tuple(layer_module(layer)(*xs).shape) == layer.output_shape, layer.name


def test_graph_module_calls_the_hook_per_layer_in_order() -> None:
    network = _activation_net()
    module = build_torch(network)
    seen: list[str] = []

    class Record:
        def __init__(self, name: str) -> None:
            seen.append(name)

        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: object) -> None:
            return None

    module.layer_hook = Record
    with torch.no_grad():
        module(*(torch.from_numpy(x) for x in _inputs(network)))
    assert seen == [layer.name for layer in network.layers]
    assert [layer.name for layer, _ in module.layer_modules()] == seen
    assert not any(p.requires_grad for p in module.parameters())
    assert not module.training


def test_onnx_naming_contract() -> None:
    network = _activation_net()
    model = build_onnx(network)
    owners = onnx_node_layers(model)
    nodes = {node.name: node for node in model.graph.node}
    for layer in network.layers:
        assert list(nodes[layer.name].output) == [layer.name]
    for name, node in nodes.items():
        assert list(node.output) == [name]
        assert owners[name] == name or name.startswith(owners[name] + "/")
    assert set(owners.values()) == {layer.name for layer in network.layers}
    assert owners["silu/sigmoid"] == "silu"
    assert owners["scale_bias/mul"] == "scale_bias"
    assert owners["lrn_even/square"] == "lrn_even"
    assert [n.op_type for n in model.graph.node if owners[n.name] == "scale_bias"] == ["Mul", "Add"]
    inits = {t.name for t in model.graph.initializer}
    assert {"fc3d/weight", "fc3d/bias", "scale_bias/scale", "scale_bias/bias"} <= inits


def test_weights_are_deterministic_and_seeded() -> None:
    layer = _conv_pool_net().layer("conv1")
    a, b, c = layer_weights(layer, 0), layer_weights(layer, 0), layer_weights(layer, 1)
    assert set(a) == {"weight", "bias"} and a["weight"].shape == (8, 4, 3, 3) and a["weight"].dtype == np.float32
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
        assert not np.array_equal(a[key], c[key])
    fan_in = 4 * 3 * 3
    assert abs(float(a["weight"].std()) - math.sqrt(2 / fan_in)) < 0.1
    bn = layer_weights(_conv_pool_net().layer("bn1"))
    assert set(bn) == {"mean", "var", "weight", "bias"} and np.all(bn["var"] > 0)
    plain = layer_weights(_activation_net().layer("bn_plain"))
    np.testing.assert_array_equal(plain["weight"], np.ones(4, np.float32))
    assert layer_weights(_activation_net().layer("scale_scalar"))["scale"].shape == (1,)
    assert layer_weights(_activation_net().layer("tanh")) == {}


def test_unsupported_layer_is_reported() -> None:
    b = _Builder("bad", x=(1, 4, 5, 6))
    b.add("pad_channels", OpType.PAD, "x", (1, 6, 5, 6), PadAttrs("reflect"))
    with pytest.raises(UnsupportedOperatorError, match="pad_channels"):
        build_torch(b.network("pad_channels"))


# resizing, normalisation and attention
def _newer_spatial_net() -> Network:
    from nnperf.ir import ConvTransposeAttrs, GroupNormAttrs, MatmulAttrs, NormAttrs, ReduceAttrs

    b = _Builder("newer-ops", x=(1, 8, 6, 6))
    up = (1, 4, 12, 12)
    t1 = b.add("ct_2x2", OpType.CONV_TRANSPOSE, "x", up, ConvTransposeAttrs(kernel=(2, 2), stride=(2, 2)))
    t2 = b.add("ct_grouped", OpType.CONV_TRANSPOSE, "x", up,
               ConvTransposeAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), output_padding=(1, 1),
                                  groups=2, bias=False))
    t3 = b.add("ct_asym", OpType.CONV_TRANSPOSE, "x", up,
               ConvTransposeAttrs(kernel=(3, 3), stride=(2, 2), padding=(0, 1, 1, 0)))
    gate = b.add("gate", OpType.SIGMOID, t3)
    sub = b.add("sub", OpType.SUB, (t1, t2), up)
    div = b.add("div", OpType.DIV, (sub, gate), up)
    pw = b.add("pow", OpType.POW, (gate, t1), up)
    gn = b.add("group_norm", OpType.GROUP_NORM, sub, attrs=GroupNormAttrs(groups=2, eps=1e-5))
    b.add("instance_norm", OpType.GROUP_NORM, div, attrs=GroupNormAttrs(groups=4, affine=False))
    ln = b.add("ln_channels", OpType.LAYER_NORM, pw, attrs=NormAttrs(axis=1, eps=1e-6))
    b.add("ln_last", OpType.LAYER_NORM, gn, attrs=NormAttrs(axis=-1, affine=False))
    g = b.add("gelu", OpType.GELU, ln)
    b.add("mean_c", OpType.REDUCE_MEAN, g, (1, 1, 12, 12), ReduceAttrs(axes=(1,)))
    b.add("max_hw", OpType.REDUCE_MAX, g, (1, 4), ReduceAttrs(axes=(2, 3), keepdims=False))
    r = b.add("tokens", OpType.RESHAPE, g, (1, 4, 144))
    s = b.add("scores", OpType.MATMUL, (r, r), (1, 4, 4), MatmulAttrs(transpose_b=True))
    s = b.add("attend", OpType.SOFTMAX, s, attrs=AxisAttrs(axis=1))
    o = b.add("mix", OpType.MATMUL, (s, r), (1, 4, 144), MatmulAttrs())
    c = b.add("cls", OpType.CONSTANT, o, (1, 4, 1))
    b.add("with_cls", OpType.CONCAT, (c, o), (1, 4, 145), AxisAttrs(axis=2))
    h = b.add("heads", OpType.RESHAPE, t1, (1, 2, 2, 144))
    b.add("heads_ta", OpType.MATMUL, (h, h), (1, 2, 144, 144), MatmulAttrs(transpose_a=True))
    b.add("dilated", OpType.CONV, "x", (1, 4, 2, 2), ConvAttrs(kernel=(3, 3), dilation=(2, 2)))
    b.add("down_nearest", OpType.UPSAMPLE, "x", (1, 8, 3, 3), UpsampleAttrs("nearest"))
    b.add("up_linear_9", OpType.UPSAMPLE, "x", (1, 8, 9, 9), UpsampleAttrs("linear"))
    return b.network("instance_norm", "ln_last", "mean_c", "max_hw", "with_cls", "heads_ta", "dilated",
                     "down_nearest", "up_linear_9")


SMALL["newer-spatial"] = _newer_spatial_net


@pytest.mark.parametrize("opset", [17, 18, 20])
def test_torch_and_onnxruntime_agree_on_the_newer_layers(opset: int) -> None:
    network = _newer_spatial_net()
    model = build_onnx(network, opset=opset)
    onnx.checker.check_model(model)
    inputs = _inputs(network)
    actual = _run_ort(model, {s.name: x for s, x in zip(network.inputs, inputs)})
    for name, t, o in zip(network.outputs, _run_torch(network, inputs), actual):
        assert t.shape == network.layer(name).output_shape and np.all(np.isfinite(t)), name
        _assert_close(o, t, name)


def test_opencv_runs_the_newer_layers(tmp_path: Path) -> None:
    _check_opencv_vs_torch(_newer_spatial_net(), tmp_path)
