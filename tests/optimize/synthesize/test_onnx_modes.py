"""ONNX Runtime programs: session settings, int8 quantisation of chosen layers, per-node profile times."""

from __future__ import annotations

import json
import platform
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from nnperf.ir.export import export_onnx
from nnperf.measure.backends.onnx_int8 import NodeOwners, fold_batch_norms
from nnperf.optimize.synthesize import _onnx
from nnperf.optimize.synthesize._errors import SynthesisError, UnsupportedModeError, ValidationDataError
from nnperf.optimize.synthesize._onnx import (
    Int8Quantizer,
    OrtSettings,
    named_model,
    node_macs,
    node_times,
    ort_session,
    quantizable_nodes,
    run_session,
)


class _TinyCnn(nn.Module):
    """conv-bn-relu x3 with a residual add around the last two, global average pool, linear: 1x3x16x16 -> 1x4."""

    def __init__(self) -> None:
        super().__init__()

        def block(c_in: int, c_out: int) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU())

        self.a, self.b, self.c = block(3, 8), block(8, 8), block(8, 8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        return self.fc((self.c(self.b(y)) + y).mean((2, 3)))


def _tiny_cnn() -> nn.Module:
    torch.manual_seed(0)
    net = _TinyCnn()
    for bn in (net.a[1], net.b[1], net.c[1]):  # non-trivial BN statistics, so that folding them is tested
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.2, 0.2)
    return net.eval()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_onnx(_tiny_cnn(), torch.randn(1, 3, 16, 16), tmp_path_factory.mktemp("tiny") / "tiny.onnx")


@pytest.fixture(scope="module")
def samples() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((8, 3, 16, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def calibrations() -> list[Path]:
    """The model path of every calibration run while the module's quantizer was built."""
    return []


@pytest.fixture(scope="module")
def quantizer(tiny: Path, samples: np.ndarray, calibrations: list[Path],
              tmp_path_factory: pytest.TempPathFactory) -> Int8Quantizer:
    real = _onnx._calibrate_ranges

    def counted(model_path: Path, *args: object) -> None:
        calibrations.append(model_path)
        real(model_path, *args)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_onnx, "_calibrate_ranges", counted)
        return Int8Quantizer(tiny, samples, tmp_path_factory.mktemp("int8"))


# -- OrtSettings ------------------------------------------------------------------------------------------------

def test_settings_map_to_the_documented_session_options() -> None:
    plain = OrtSettings(threads=3, execution="parallel", layout="plain").session_options()
    assert (plain.intra_op_num_threads, plain.inter_op_num_threads) == (3, 3)
    assert plain.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert plain.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    default = OrtSettings().session_options()
    assert default.intra_op_num_threads == 1
    assert default.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert default.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"threads": 0}, r"threads must be a whole number >= 1, not 0"),
    ({"threads": True}, r"threads must be a whole number >= 1, not True"),
    ({"threads": 1.5}, r"threads must be a whole number >= 1, not 1\.5"),
    ({"execution": "async"}, r"execution must be one of \('sequential', 'parallel'\), not 'async'"),
    ({"layout": "nhwc"}, r"layout must be one of \('plain', 'nchwc'\), not 'nhwc'"),
])
def test_settings_refuse_bad_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SynthesisError, match=message):
        OrtSettings(**kwargs)  # type: ignore[arg-type]


def test_settings_round_trip_through_json() -> None:
    settings = OrtSettings(threads=2, execution="parallel", layout="plain")
    data = json.loads(json.dumps(settings.to_dict()))
    assert data == {"threads": 2, "execution": "parallel", "layout": "plain"}
    assert OrtSettings.from_dict(data) == settings
    with pytest.raises(SynthesisError, match=r"unknown OrtSettings keys \['thread'\]"):
        OrtSettings.from_dict({"thread": 2})
    with pytest.raises(SynthesisError, match=r"layout must be one of"):
        OrtSettings.from_dict({"layout": "NCHWc"})


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="ORT's NCHWc kernels are x86 only")
def test_nchwc_layout_rewrites_convolutions_and_plain_does_not(tiny: Path, tmp_path: Path) -> None:
    def domains(layout: str) -> Counter[str]:
        options = OrtSettings(layout=layout).session_options()
        options.optimized_model_filepath = str(tmp_path / f"{layout}.onnx")
        ort.InferenceSession(str(tiny), options, providers=["CPUExecutionProvider"])
        return Counter(node.domain for node in onnx.load(options.optimized_model_filepath).graph.node)

    # the three convolutions become NCHWc convolutions; plain fuses conv+BN+ReLU into FusedConv instead
    assert domains("nchwc")["com.microsoft.nchwc"] >= 3
    assert domains("plain") == Counter({"com.microsoft": 3, "": 3})


# -- names ----------------------------------------------------------------------------------------------------

def _hand_built() -> onnx.ModelProto:
    """c1: Conv(x, W); unnamed Relu; a second Conv also named c1; unnamed MatMul with a constant B; MatMul of two
    activations; a Gemm named "Relu_1", the name the unnamed Relu (index 1) would otherwise get."""
    w = numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "W")
    m = numpy_helper.from_array(np.ones((2, 2), np.float32), "M")
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["a"], name="c1"),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("Conv", ["b", "W"], ["c"], name="c1"),
        helper.make_node("MatMul", ["c", "M"], ["d"]),
        helper.make_node("MatMul", ["d", "d"], ["e"], name="mm"),
        helper.make_node("Gemm", ["f", "M"], ["g"], name="Relu_1"),
    ]
    graph = helper.make_graph(nodes, "hand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2]),
                                              helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("g", TensorProto.FLOAT, [2, 2])], [w, m])
    return helper.make_model(graph)


def test_named_model_gives_every_node_a_unique_name_and_leaves_the_original() -> None:
    model = _hand_built()
    assert [node.name for node in named_model(model).graph.node] == ["c1", "Relu_1_1", "c1_1", "MatMul_3", "mm",
                                                                     "Relu_1"]
    assert [node.name for node in model.graph.node] == ["c1", "", "c1", "", "mm", "Relu_1"]


def test_node_macs_are_weights_times_output_positions(tiny: Path) -> None:
    layers = quantizable_nodes(onnx.load(str(tiny)))
    # 3x3 convolutions on 16x16 maps: 3->8, 8->8, 8->8; then a linear 8->4 on one sample
    assert node_macs(tiny, layers) == dict(zip(layers, [8 * 3 * 9 * 256.0, 8 * 8 * 9 * 256.0, 8 * 8 * 9 * 256.0,
                                                        32.0]))


def test_quantizable_nodes_are_conv_gemm_matmul_with_constant_weights_in_graph_order(tiny: Path) -> None:
    assert quantizable_nodes(_hand_built()) == ("c1", "c1_1", "MatMul_3", "Relu_1")  # not mm: B is computed
    assert quantizable_nodes(onnx.load(str(tiny))) == ("node_conv2d", "node_conv2d_1", "node_conv2d_2",
                                                       "node_linear")


# -- int8 -------------------------------------------------------------------------------------------------------

def test_batch_norm_folding_keeps_the_outputs_and_the_conv_names(tiny: Path, samples: np.ndarray,
                                                                 tmp_path: Path) -> None:
    model = named_model(onnx.load(str(tiny)))
    folded = fold_batch_norms(model)
    assert Counter(n.op_type for n in model.graph.node)["BatchNormalization"] == 3
    assert "BatchNormalization" not in {n.op_type for n in folded.graph.node}
    assert quantizable_nodes(folded) == quantizable_nodes(model)
    onnx.save(folded, str(tmp_path / "folded.onnx"))
    before = run_session(ort_session(tiny, OrtSettings()), samples)
    after = run_session(ort_session(tmp_path / "folded.onnx", OrtSettings()), samples)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_batch_norm_folding_passes_over_nodes_without_inputs(tiny: Path) -> None:
    model = named_model(onnx.load(str(tiny)))  # a Constant node (no input) first, as some exporters write them
    model.graph.node.insert(0, onnx.helper.make_node("Constant", [], ["unused_constant"], name="a_constant",
                                                     value=numpy_helper.from_array(np.ones(2, np.float32))))
    folded = fold_batch_norms(model)
    assert "BatchNormalization" not in {n.op_type for n in folded.graph.node}
    assert [n.name for n in folded.graph.node if n.op_type == "Constant"] == ["a_constant"]


def test_quantize_wraps_exactly_the_chosen_layer_in_quantize_dequantize(quantizer: Int8Quantizer) -> None:
    model = onnx.load(str(quantizer.quantize(["node_conv2d_1"])))
    ops = Counter(n.op_type for n in model.graph.node)
    # conv2d_1 reads DQ(Q(input)), DQ(int8 weight), DQ(int32 bias); its output goes through Q then DQ
    assert (ops["QuantizeLinear"], ops["DequantizeLinear"]) == (2, 4)
    producer = {out: n for n in model.graph.node for out in n.output}
    convs = {n.name: n for n in model.graph.node if n.op_type == "Conv"}
    assert [producer[name].op_type for name in convs["node_conv2d_1"].input] == ["DequantizeLinear"] * 3
    floats = {t.name for t in model.graph.initializer if t.data_type == TensorProto.FLOAT}
    for other in ("node_conv2d", "node_conv2d_2"):  # float weights and biases (conv2d_2 reads conv2d_1's DQ)
        assert set(convs[other].input[1:]) <= floats
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    weight_dq = producer[convs["node_conv2d_1"].input[1]]
    assert weights[weight_dq.input[0]].dtype == np.int8
    assert weights[weight_dq.input[1]].shape == (8,)  # one scale per output channel
    # its ReLU is folded into the output's quantisation; the other two ReLUs stay
    assert ops["Relu"] == 2 and "node_relu_1" not in {n.name for n in model.graph.node}


def test_quantize_per_tensor_gives_each_chosen_weight_one_scale_in_a_file_of_its_own(
        quantizer: Int8Quantizer, tiny: Path, samples: np.ndarray) -> None:
    per_channel = quantizer.quantize(["node_conv2d_1"])
    per_tensor = quantizer.quantize(["node_conv2d_1"], per_channel=False)
    assert per_tensor != per_channel and "per_tensor" in per_tensor.name
    assert quantizer.quantize(["node_conv2d_1"], per_channel=False) == per_tensor  # cached like the other
    model = onnx.load(str(per_tensor))
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producer = {out: n for n in model.graph.node for out in n.output}
    conv = next(n for n in model.graph.node if n.name == "node_conv2d_1")
    weight_dq = producer[conv.input[1]]
    assert weights[weight_dq.input[0]].dtype == np.int8 and weights[weight_dq.input[1]].shape == ()
    fp32 = run_session(ort_session(tiny, OrtSettings()), samples)
    outputs = [run_session(ort_session(path, OrtSettings()), samples) for path in (per_channel, per_tensor)]
    assert not np.array_equal(*outputs)  # one scale for 8 channels rounds them differently
    assert np.abs(outputs[1] - fp32).max() < 0.05 * np.abs(fp32).max()


def test_all_int8_outputs_stay_close_to_fp32(quantizer: Int8Quantizer, tiny: Path, samples: np.ndarray) -> None:
    fp32 = run_session(ort_session(tiny, OrtSettings()), samples)
    int8 = run_session(ort_session(quantizer.quantize(quantizer.quantizable_), OrtSettings()), samples)
    relative = np.abs(int8 - fp32).max() / np.abs(fp32).max()
    # Each of the 4 int8 layers rounds its input and output to 1/255 of the calibrated range (about 0.4 %);
    # through 4 layers that stays within a few per cent.  Measured: about 0.5 %.  Zero would mean nothing
    # was quantised.
    assert 1e-4 < relative < 0.03


def test_quantize_caches_per_node_set_and_never_recalibrates(quantizer: Int8Quantizer, calibrations: list[Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    ort_quantize = sys.modules["onnxruntime.quantization.quantize"]  # the package shadows it with a function

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("quantize() calibrated again")

    monkeypatch.setattr(ort_quantize, "create_calibrator", refuse)
    real_write = _onnx.quantize_qdq
    written: list[frozenset[str]] = []

    def counted_write(*args: Any, **kwargs: Any) -> None:
        written.append(frozenset(args[2]))
        real_write(*args, **kwargs)

    monkeypatch.setattr(_onnx, "quantize_qdq", counted_write)
    first = quantizer.quantize(["node_conv2d", "node_linear"])  # a set not written before: uses stored ranges
    assert written == [{"node_conv2d", "node_linear"}]
    written_ns = first.stat().st_mtime_ns
    again = quantizer.quantize(("node_linear", "node_conv2d"))  # the same set in another order: the cached file
    assert written == [{"node_conv2d", "node_linear"}]
    assert again == first and first.stat().st_mtime_ns == written_ns
    assert quantizer.quantize(["node_conv2d"]) != first
    assert calibrations == [quantizer.workdir / "fp32_prepared.onnx"]
    assert quantizer.quantize(()) == quantizer.model_path


def test_quantize_refuses_unknown_and_unquantizable_nodes(quantizer: Int8Quantizer) -> None:
    listed = r"the quantizable nodes are node_conv2d, node_conv2d_1, node_conv2d_2, node_linear"
    with pytest.raises(UnsupportedModeError, match=r"'conv9'.*no node of that name.*" + listed):
        quantizer.quantize(["node_conv2d", "conv9"])
    with pytest.raises(UnsupportedModeError, match=r"'node_relu'.*a Relu node, which int8 cannot run.*" + listed):
        quantizer.quantize(["node_relu"])


@pytest.mark.parametrize(("calibration", "message"), [
    (np.zeros((0, 3, 16, 16), np.float32), r"holds no samples \(array of shape \(0, 3, 16, 16\)\)"),
    (np.zeros((4, 3, 8, 8), np.float32), r"shape \(3, 8, 8\).*'x' has shape \(1, 3, 16, 16\).*\(3, 16, 16\)"),
    (np.zeros((4, 3, 16), np.float32), r"shape \(3, 16\)"),
    (np.full((2, 3, 16, 16), np.nan, np.float32), r"non-finite"),
])
def test_quantizer_refuses_unusable_calibration(tiny: Path, tmp_path: Path, calibration: np.ndarray,
                                                message: str) -> None:
    with pytest.raises(ValidationDataError, match=message):
        Int8Quantizer(tiny, calibration, tmp_path)


def test_quantizer_refuses_an_unknown_activation_type(tiny: Path, samples: np.ndarray, tmp_path: Path) -> None:
    with pytest.raises(SynthesisError, match=r"activation_type must be one of \('uint8', 'int8'\), not 'int4'"):
        Int8Quantizer(tiny, samples, tmp_path, activation_type="int4")


# -- running and profiling --------------------------------------------------------------------------------------

def test_run_session_stacks_fixed_batch_one_and_chunks_a_dynamic_batch(tiny: Path, samples: np.ndarray,
                                                                       tmp_path: Path) -> None:
    fixed = run_session(ort_session(tiny, OrtSettings()), samples)
    assert fixed.shape == (8, 4)
    one = ort_session(tiny, OrtSettings()).run(None, {"x": samples[3:4]})[0]
    np.testing.assert_array_equal(fixed[3:4], one)

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])])
    onnx.save(helper.make_model(graph), str(tmp_path / "relu.onnx"))
    x = np.arange(-30, 30, dtype=np.float32).reshape(20, 3)  # 20 samples: chunks of 16 and 4
    np.testing.assert_array_equal(run_session(ort_session(tmp_path / "relu.onnx", OrtSettings()), x),
                                  np.maximum(x, 0))


def test_kernel_seconds_are_grouped_by_model_run() -> None:
    trace = [
        {"cat": "Session", "name": "model_run", "ts": 100, "dur": 50},
        {"cat": "Node", "name": "a_kernel_time", "ts": 110, "dur": 20},
        {"cat": "Node", "name": "b_kernel_time", "ts": 130, "dur": 10},
        {"cat": "Session", "name": "model_run", "ts": 200, "dur": 50},
        {"cat": "Node", "name": "a_kernel_time", "ts": 205, "dur": 30},
        {"cat": "Node", "name": "a_fence_before", "ts": 204, "dur": 1},
        {"cat": "Node", "name": "c_kernel_time", "ts": 10, "dur": 5},  # before any run: session set-up
    ]
    runs = _onnx._kernel_seconds_per_run(trace)
    assert [dict(run) for run in runs] == [{"a": pytest.approx(20e-6), "b": pytest.approx(10e-6)},
                                           {"a": pytest.approx(30e-6)}]


def test_ort_node_names_are_charged_to_the_model_nodes(quantizer: Int8Quantizer, tiny: Path) -> None:
    fp32 = NodeOwners(onnx.load(str(tiny)))
    assert fp32.owner("node_conv2d") == "node_conv2d"
    assert fp32.owner("relu_1_nchwc") == "node_conv2d_1"  # NCHWc conv named after its fused ReLU's output
    assert fp32.owner("getitem_nchwc") == "node_conv2d"  # ... or its fused BN's output
    assert fp32.owner("ReorderOutput_token_9") == "ReorderOutput_token_9"
    int8 = NodeOwners(onnx.load(str(quantizer.quantize(["node_conv2d_1"]))))
    assert int8.owner("node_conv2d_1_token_7") == "node_conv2d_1"  # NHWC QLinearConv
    assert int8.owner("relu_QuantizeLinear") == "node_conv2d_1"  # the Q before it
    assert int8.owner("relu_1_DequantizeLinear") == "node_conv2d_1"  # the DQ after it
    assert int8.owner("relu_DequantizeLinear/duplicated") == "node_conv2d_1"
    assert int8.owner("Transpose_token_6") == "Transpose_token_6"


@pytest.mark.parametrize("layout", ["plain", "nchwc"])
def test_node_times_charge_every_layer_of_an_int8_program(quantizer: Int8Quantizer, samples: np.ndarray,
                                                          layout: str) -> None:
    path = quantizer.quantize(quantizer.quantizable_)
    times = node_times(path, OrtSettings(layout=layout), samples[:1], runs=3)
    assert set(quantizer.quantizable_) <= set(times)
    assert all(seconds > 0 for seconds in times.values())
    names = {node.name for node in onnx.load(str(path)).graph.node}
    unmapped = set(times) - names
    assert all(name.startswith(("Transpose", "Reorder")) for name in unmapped), unmapped
    assert not any("QuantizeLinear" in name for name in times)
    assert 1e-6 < sum(times.values()) < 0.1
