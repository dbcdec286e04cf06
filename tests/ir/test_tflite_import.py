""".tflite files import into the IR: NHWC images as NCHW layers, TensorFlow's SAME padding made explicit, fused
activations as layers of their own, weights counted as the file stores them, int8 layers named, operators without
a layer type kept as generic layers where an ONNX twin computes the same (checked against LiteRT's own output), and
every bad file or unsupported operator refused by name. The files are written by ``tflite_files`` with LiteRT's
schema (no TensorFlow) and each is run in LiteRT's interpreter first, so they are valid for LiteRT itself."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")

from cli_helpers import assert_error, run_cli, run_json
from nnperf.api import load_model
from nnperf.errors import ModelFileError, NnperfError, UnsupportedOperatorError
from nnperf.ir import (
    AxisAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    Network,
    OpType,
    PoolAttrs,
    ReduceAttrs,
    ScaleAttrs,
    SliceAttrs,
    TransposeAttrs,
    network_from_dict,
    network_to_dict,
)
from nnperf.ir.importers import from_tflite
from nnperf.ir.metrics import layer_metrics, network_metrics
from tflite_files import compressed_model, float_cnn, int8_cnn, ops_model, sequence_model, twins_model


def litert_outputs(path: Path, x: np.ndarray) -> list[np.ndarray]:
    """What LiteRT's interpreter computes for the file on ``x`` (NHWC): the proof the file is a valid model."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return [interpreter.get_tensor(o["index"]) for o in interpreter.get_output_details()]


def _ops(network: Network) -> list[tuple[str, OpType]]:
    return [(layer.name, layer.op) for layer in network.layers]


def _macs(network: Network) -> dict[str, int]:
    return {layer.name: layer_metrics(layer).macs for layer in network.layers if layer_metrics(layer).macs}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tflite")
    made = {f.__name__: f(folder / f"{f.__name__}.tflite")
            for f in (float_cnn, int8_cnn, ops_model, compressed_model, sequence_model)}
    made["twins"] = twins_model(folder / "twins.tflite")
    made["no_twin"] = twins_model(folder / "no_twin.tflite", unsupported=True)
    return made


def test_a_float_cnn_imports_as_nchw_layers_with_the_files_macs_and_parameters(files: dict[str, Path]) -> None:
    path = files["float_cnn"]
    probabilities = litert_outputs(path, np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32))[0]
    assert probabilities.shape == (1, 10) and abs(float(probabilities.sum()) - 1) < 1e-5
    network = from_tflite(path)
    assert network.inputs[0].shape == (1, 3, 224, 224) and network.outputs == ("Identity",)
    assert _ops(network) == [  # a fused activation: a layer of its own after the operator's, named after it
        ("model.conv1.Relu6", OpType.CONV), ("model.conv1.Relu6.relu6", OpType.RELU6),
        ("model.dw.Relu", OpType.CONV), ("model.dw.Relu.relu", OpType.RELU), ("model.pw.Conv2D", OpType.CONV),
        ("model.add.add", OpType.ADD), ("model.pool.AvgPool", OpType.AVG_POOL),
        ("model.gap.Mean", OpType.GLOBAL_AVG_POOL), ("model.fc.MatMul", OpType.LINEAR), ("Identity", OpType.SOFTMAX)]
    conv1, dw = network.layer("model.conv1.Relu6"), network.layer("model.dw.Relu")
    # SAME at stride 2 on 224: one pixel of padding in all, at the bottom and right, as TensorFlow pads
    assert conv1.attrs == ConvAttrs((3, 3), stride=(2, 2), padding=(0, 0, 1, 1), bias=True)
    assert conv1.output_shape == (1, 16, 112, 112)
    assert dw.attrs == ConvAttrs((3, 3), padding=(1, 1, 1, 1), groups=16, bias=True)
    assert network.layer("model.add.add").inputs == ("model.pw.Conv2D", "model.conv1.Relu6.relu6")
    assert network.layer("model.gap.Mean").output_shape == (1, 16)
    macs = _macs(network)  # a convolution counts a MAC per output for its bias (zero or not: LiteRT adds it)
    assert macs == {"model.conv1.Relu6": 3 * 3 * 3 * 16 * 112 * 112 + 16 * 112 * 112,
                    "model.dw.Relu": 3 * 3 * 16 * 112 * 112 + 16 * 112 * 112,
                    "model.pw.Conv2D": 16 * 16 * 112 * 112 + 16 * 112 * 112,
                    "model.fc.MatMul": 16 * 10}
    metrics = network_metrics(network)
    assert metrics.macs == sum(macs.values()) == 11_038_880
    assert metrics.params == (3 * 3 * 3 * 16 + 16) + (3 * 3 * 16 + 16) + (16 * 16 + 16) + (16 * 10 + 10)
    assert network.int8_layers == frozenset()
    assert network.source is not None and network.source.format == "tflite"
    assert network.source.path == str(path.resolve())
    assert network.source.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert network_from_dict(network_to_dict(network)).source == network.source


def test_an_int8_model_imports_as_the_float_network_it_quantises_its_int8_layers_named(
        files: dict[str, Path]) -> None:
    path = files["int8_cnn"]
    assert litert_outputs(path, np.random.default_rng(0).random((1, 16, 16, 3), dtype=np.float32))[0].shape == (1, 10)
    network = from_tflite(path)
    assert _ops(network) == [  # QUANTIZE and DEQUANTIZE of activations make no layers
        ("model.conv1.Relu", OpType.CONV), ("model.conv1.Relu.relu", OpType.RELU),
        ("model.pool.MaxPool", OpType.MAX_POOL), ("model.dw.BiasAdd", OpType.CONV),
        ("model.flatten.Reshape", OpType.FLATTEN), ("model.fc.BiasAdd", OpType.LINEAR),
        ("StatefulPartitionedCall:0", OpType.SOFTMAX)]
    assert network.layer("model.conv1.Relu").inputs == ("serving_default_input:0",)
    assert network.inputs[0].shape == (1, 3, 16, 16) and network.inputs[0].dtype == "float32"
    assert network.int8_layers == {"model.conv1.Relu", "model.dw.BiasAdd", "model.fc.BiasAdd"}
    assert _macs(network) == {"model.conv1.Relu": 3 * 3 * 3 * 8 * 16 * 16 + 8 * 16 * 16,
                              "model.dw.BiasAdd": 3 * 3 * 8 * 8 * 8 + 8 * 8 * 8, "model.fc.BiasAdd": 512 * 10}
    assert network_metrics(network).params == (3 * 3 * 3 * 8 + 8) + (3 * 3 * 8 + 8) + (512 * 10 + 10)


def test_float16_weights_are_weights_and_int8_weights_on_a_float_input_run_in_int8(files: dict[str, Path]) -> None:
    path = files["compressed_model"]
    assert litert_outputs(path, np.random.default_rng(0).random((1, 16, 16, 3), dtype=np.float32))[0].shape == (1, 4)
    network = from_tflite(path)
    assert _ops(network) == [("conv", OpType.CONV), ("fc.flatten", OpType.FLATTEN), ("fc", OpType.LINEAR)]
    assert network.int8_layers == {"fc"}  # the float16 convolution computes in float
    assert network.layer("conv").attrs == ConvAttrs((3, 3), padding=(1, 1, 1, 1), bias=True)
    metrics = network_metrics(network)
    assert metrics.macs == 3 * 3 * 3 * 8 * 16 * 16 + 8 * 16 * 16 + 2048 * 4
    assert metrics.params == (3 * 3 * 3 * 8 + 8) + (2048 * 4 + 4)


def test_more_operators_map_to_their_layers_with_nchw_attributes(files: dict[str, Path]) -> None:
    path = files["ops_model"]
    probabilities, nchw = litert_outputs(path, np.random.default_rng(0).random((1, 32, 32, 8), dtype=np.float32))
    assert probabilities.shape == (1, 5) and nchw.shape == (1, 4, 32, 32)
    network = from_tflite(path, strict=True)
    assert [op for _, op in _ops(network)] == [
        OpType.PAD, OpType.CONV, OpType.RELU, OpType.SCALE, OpType.HARDSWISH, OpType.MAX_POOL, OpType.CONV,
        OpType.LEAKY_RELU, OpType.AVG_POOL, OpType.CONCAT, OpType.PRELU, OpType.UPSAMPLE, OpType.CONV_TRANSPOSE,
        OpType.SLICE, OpType.SLICE, OpType.SLICE, OpType.SUB, OpType.GLOBAL_AVG_POOL, OpType.FLATTEN, OpType.LINEAR,
        OpType.CLIP, OpType.TANH, OpType.SOFTMAX, OpType.TRANSPOSE]
    layer = network.layer
    assert layer("pad").output_shape == (1, 8, 34, 34)
    # MUL and ADD by per-channel constants: one scale layer, named after the tensor it writes
    assert layer("bn.add").attrs == ScaleAttrs(bias=True, per_channel=True)
    assert layer("bn.add").output_shape == (1, 16, 32, 32) and layer("hswish").inputs == ("bn.add",)
    assert layer("maxpool").attrs == PoolAttrs((3, 3), (2, 2), padding=(0, 0, 1, 1))
    assert layer("avgpool").attrs == PoolAttrs((2, 2), (2, 2), count_include_pad=False)
    assert layer("dw").attrs == ConvAttrs((3, 3), stride=(2, 2), padding=(0, 0, 1, 1), groups=16)  # multiplier 2
    assert layer("dw").output_shape == (1, 32, 8, 8)
    assert layer("concat").attrs == AxisAttrs(1) and layer("concat").output_shape == (1, 48, 8, 8)
    assert layer("deconv").attrs == ConvTransposeAttrs((3, 3), stride=(2, 2), padding=(0, 0, 1, 1))
    assert layer("slice").attrs == SliceAttrs(axis=1, start=2, end=6)  # channels 2..5 of NHWC
    assert [layer(f"split:{i}").attrs for i in (0, 1)] == [SliceAttrs(1, 0, 2), SliceAttrs(1, 2, 4)]
    assert layer("mean").output_shape == (1, 2, 1, 1)
    assert layer("fc.flatten").output_shape == (1, 2) and layer("fc").inputs == ("fc.flatten",)
    assert layer("nchw").attrs == TransposeAttrs((0, 1, 2, 3))  # NHWC -> NCHW is the IR's own order
    assert network.outputs == ("probs", "nchw")
    assert _macs(network) == {"conv": 3 * 3 * 8 * 16 * 32 * 32 + 16 * 32 * 32, "bn.add": 16 * 32 * 32,
                              "dw": 3 * 3 * 32 * 8 * 8 + 32 * 8 * 8,
                              "deconv": 3 * 3 * 48 * 8 * 16 * 16 + 8 * 32 * 32, "fc": 2 * 5}
    assert network_metrics(network).params == (
        (3 * 3 * 8 * 16 + 16) + 2 * 16 + (3 * 3 * 32 + 32) + 48 + (3 * 3 * 48 * 8 + 8) + (2 * 5 + 5))


def test_a_sequence_keeps_its_axes_and_sizes_computed_at_run_time_are_the_files(files: dict[str, Path]) -> None:
    path = files["sequence_model"]
    assert litert_outputs(path, np.random.default_rng(0).random((1, 16, 32), dtype=np.float32))[0].shape == (1, 4)
    network = from_tflite(path)
    assert network.inputs[0].shape == (1, 16, 32)  # 3-D: no image, no axis renumbered
    assert _ops(network) == [
        ("norm.mean", OpType.REDUCE_MEAN), ("norm.squared.difference", OpType.SUB), ("norm.squared", OpType.MUL),
        ("norm.variance", OpType.REDUCE_MEAN), ("norm.eps", OpType.CONSTANT), ("norm.eps_added", OpType.ADD),
        ("norm.rsqrt", OpType.GENERIC), ("norm.centred", OpType.SUB), ("norm.out", OpType.MUL),
        ("mlp.fc", OpType.LINEAR), ("mlp.silu", OpType.SILU), ("attn.keys", OpType.TRANSPOSE),
        ("attn.scores", OpType.MATMUL), ("attn.softmax", OpType.SOFTMAX), ("attn.context", OpType.MATMUL),
        ("flat", OpType.FLATTEN), ("logits", OpType.LINEAR)]  # SHAPE, STRIDED_SLICE, PACK: sizes, no layers
    assert network.layer("norm.mean").attrs == ReduceAttrs(axes=(2,), keepdims=True)
    assert network.layer("norm.squared").inputs == ("norm.squared.difference",) * 2
    assert network.layer("attn.keys").attrs == TransposeAttrs((0, 2, 1))
    assert network.layer("attn.softmax").attrs == AxisAttrs(2)
    assert network.layer("attn.context").inputs == ("attn.softmax", "mlp.silu")
    assert _macs(network) == {"mlp.fc": 16 * 32 * 64, "attn.scores": 16 * 64 * 16, "attn.context": 16 * 16 * 64,
                              "logits": 1024 * 4}
    assert network_metrics(network).params == (32 * 64 + 64) + 1 + (1024 * 4 + 4)  # epsilon: a stored operand


def test_operators_without_a_layer_type_are_generic_layers_computing_what_litert_computes(
        files: dict[str, Path]) -> None:
    import onnxruntime as ort

    from nnperf.measure.backends._onnx_graph import build_onnx

    path = files["twins"]
    x = np.random.default_rng(1).standard_normal((1, 8, 8, 4)).astype(np.float32)
    expected = litert_outputs(path, x)[0]
    network = from_tflite(path)
    assert [(layer.op, layer.attrs.operator) for layer in network.layers] == [  # type: ignore[union-attr]
        (OpType.GENERIC, "Abs"), (OpType.GENERIC, "Pow"), (OpType.GENERIC, "Min"), (OpType.GENERIC, "DepthToSpace")]
    assert network.layer("d2s").output_shape == (1, 1, 16, 16)
    assert network_metrics(network).params == 4  # MINIMUM's bounds; RSQRT's exponent is no weight of the file
    session = ort.InferenceSession(build_onnx(network).SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": x.transpose(0, 3, 1, 2)})[0]
    # float32 rsqrt and the same comparisons: equal to a few units in the last place
    np.testing.assert_allclose(got, expected.transpose(0, 3, 1, 2), rtol=1e-5, atol=0)
    with pytest.raises(UnsupportedOperatorError) as info:
        from_tflite(path, strict=True)
    assert sorted(info.value.operators) == ["ABS", "DEPTH_TO_SPACE", "MINIMUM", "RSQRT"]
    assert info.value.operators["DEPTH_TO_SPACE"] == ["d2s"] and str(path) in str(info.value)


def test_an_operator_without_a_layer_type_or_an_onnx_twin_is_refused_by_name(files: dict[str, Path]) -> None:
    path = files["no_twin"]
    assert litert_outputs(path, np.ones((1, 8, 8, 4), dtype=np.float32))[0].shape == (1, 16, 16, 1)
    with pytest.raises(UnsupportedOperatorError) as info:
        from_tflite(path)
    assert info.value.operators == {"L2_NORMALIZATION": ["l2norm"]}
    with pytest.raises(UnsupportedOperatorError) as info:
        from_tflite(path, strict=True)  # every one at once
    assert sorted(info.value.operators) == ["ABS", "DEPTH_TO_SPACE", "L2_NORMALIZATION", "MINIMUM", "RSQRT"]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "onnx", "missing"])
def test_a_file_that_is_no_tflite_model_is_refused_naming_it(files: dict[str, Path], tmp_path: Path,
                                                            damage: str) -> None:
    data = files["float_cnn"].read_bytes()
    path = tmp_path / f"{damage}.tflite"
    content = {"truncated": data[: len(data) // 2], "garbage": np.random.default_rng(0).bytes(4096), "empty": b"",
               "onnx": (Path(__file__).parent / "test_tflite_import.py").read_bytes(), "missing": None}[damage]
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ModelFileError) as info:
        from_tflite(path)
    assert str(path) in str(info.value)
    assert {"truncated": "truncated or corrupted", "garbage": "not a TFLite model", "empty": "empty",
            "onnx": "not a TFLite model", "missing": "no such file"}[damage] in str(info.value)


def test_without_ai_edge_litert_the_error_says_what_to_install(files: dict[str, Path],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)  # import ai_edge_litert now raises ImportError
    with pytest.raises(ModelFileError, match=r"needs ai-edge-litert \(pip install nnperf\[litert\]\)"):
        from_tflite(files["float_cnn"])


def test_load_model_and_the_cli_read_tflite_files(files: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    path = files["int8_cnn"]
    assert load_model(str(path)) == from_tflite(path)
    with pytest.raises(NnperfError, match="a .tflite file has its shapes"):
        load_model(str(path), (1, 3, 32, 32))
    document = run_json(capsys, "inspect", str(path))
    assert [layer["name"] for layer in document["layers"]][:2] == ["model.conv1.Relu", "model.conv1.Relu.relu"]
    assert document["totals"]["macs"] == network_metrics(from_tflite(path)).macs
    code, out, err = run_cli(capsys, "inspect", str(files["float_cnn"]))
    assert code == 0 and "model.conv1.Relu6" in out, err
    code, _, err = run_cli(capsys, "inspect", str(files["no_twin"]))
    assert_error(code, err, "L2_NORMALIZATION (l2norm)")
    code, _, err = run_cli(capsys, "predict", str(path), "--backend", "torch", "--db", str(tmp_path / "none.db"))
    assert_error(code, err, "no calibration for torch", "nnperf calibrate --backend torch")


def _product_macs(network: Network) -> int:
    """The MACs of convolutions and matrix products without their bias MACs (a batch norm folded into a convolution
    gives it a bias)."""
    products = (OpType.CONV, OpType.CONV_TRANSPOSE, OpType.LINEAR, OpType.MATMUL)
    return sum(m.macs - (m.n_output if isinstance(layer.attrs, (ConvAttrs, ConvTransposeAttrs)) and layer.attrs.bias
                         else 0)
               for layer, m in zip(network.layers, network_metrics(network).layers) if layer.op in products)


@pytest.mark.parametrize("name", ["mobilenet_v2", "yolov8n", "vit_tiny"])
def test_zoo_networks_written_by_the_litert_backend_import_with_their_products(name: str, tmp_path: Path) -> None:
    """The LiteRT backend's writer folds batch norms, fuses activations and keeps NCHW at the model's edges (a
    TRANSPOSE after the input, as converters from PyTorch do); what it writes imports with the same convolutions
    and matrix products."""
    graph = pytest.importorskip("nnperf.measure.backends._tflite_graph")
    from nnperf.zoo import zoo_network

    network = zoo_network(name)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(graph.build_tflite(network).content)
    imported = from_tflite(path, strict=name != "vit_tiny")  # vit's layer norms: RSQRT, a generic Pow
    assert imported.inputs[0].shape == network.inputs[0].shape
    assert _product_macs(imported) == _product_macs(network)
    counts = imported.op_counts()
    assert counts.get(OpType.SILU, 0) == network.op_counts().get(OpType.SILU, 0)  # LOGISTIC and MUL fused back
    assert {layer.attrs.operator for layer in imported.layers  # type: ignore[union-attr]
            if layer.op is OpType.GENERIC} <= {"Pow"}
