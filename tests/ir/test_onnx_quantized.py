"""Quantised models import as the float network they quantise, their int8 layers named: ONNX Runtime's QDQ format
(what ``synthesize`` writes) and its QOperator format (QLinearConv, QGemm, QLinearAdd, ...)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from nnperf.errors import NnperfWarning
from nnperf.ir import OpType, network_from_dict, network_to_dict
from nnperf.ir.importers import from_onnx
from nnperf.ir.metrics import network_metrics
from nnperf.measure.backends import random_inputs
from nnperf.measure.backends._onnx_graph import build_onnx
from nnperf.measure.backends.onnx_int8 import fold_batch_norms, int8_nodes, quantize_qdq
from nnperf.zoo import zoo_network


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """ResNet-18 as nnperf builds it, batch norms folded (as ``synthesize`` quantises it), and its int8 nodes."""
    folder = tmp_path_factory.mktemp("resnet18")
    model = fold_batch_norms(build_onnx(zoo_network("resnet18")))
    path = folder / "fp32.onnx"
    onnx.save(model, str(path))
    return path, int8_nodes(model)


def test_a_qdq_resnet18_imports_as_its_float_network_with_the_int8_layers_named(
        resnet18: tuple[Path, list[str]], tmp_path: Path) -> None:
    fp32, nodes = resnet18
    qdq = tmp_path / "int8.onnx"
    feed = {"x": random_inputs([(1, 3, 224, 224)])[0]}
    quantize_qdq(fp32, qdq, nodes, calibration=[feed])
    network, float_network = from_onnx(qdq), from_onnx(fp32)
    assert len(nodes) == 21  # 20 convolutions and the classifier
    assert sorted(network.int8_layers) == sorted(nodes)
    assert not any(layer.op is OpType.GENERIC for layer in network.layers)  # no QuantizeLinear layers
    # the quantiser drops a ReLU that only follows an int8 convolution (it clips through the zero point)
    assert {layer.name for layer in float_network.layers} - {layer.name for layer in network.layers} == {
        layer.name for layer in float_network.layers if layer.op is OpType.RELU
        and float_network.producers(layer.name)[0] in nodes and len(float_network.consumers(
            float_network.producers(layer.name)[0])) == 1}
    assert network_metrics(network).macs == network_metrics(float_network).macs
    assert network_from_dict(network_to_dict(network)) == network


def test_weights_get_a_scale_per_output_channel_or_one_per_tensor(resnet18: tuple[Path, list[str]],
                                                                  tmp_path: Path) -> None:
    fp32, nodes = resnet18
    feed = {"x": random_inputs([(1, 3, 224, 224)])[0]}
    scales = {}
    for per_channel in (True, False):
        qdq = tmp_path / f"int8_{per_channel}.onnx"
        quantize_qdq(fp32, qdq, nodes[:1], calibration=[feed], per_channel=per_channel)
        model = onnx.load(str(qdq))
        constants = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        weight_dq = [n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in constants
                     and constants[n.input[0]].ndim == 4]
        assert len(weight_dq) == 1  # the first convolution's weights only
        scales[per_channel] = constants[weight_dq[0].input[1]].shape
    assert scales == {True: (64,), False: ()}  # conv1's 64 output channels, or one scale


def test_a_qoperator_resnet18_imports_the_same_int8_layers(resnet18: tuple[Path, list[str]], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fp32, nodes = resnet18
    monkeypatch.chdir(tmp_path)  # ONNX Runtime's quantiser writes its shape-inference scratch files here

    class OneBatch(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter([{"x": random_inputs([(1, 3, 224, 224)])[0]}])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.feeds, None)

    qoperator = tmp_path / "qoperator.onnx"
    quantize_static(str(fp32), str(qoperator), OneBatch(), quant_format=QuantFormat.QOperator, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    operators = {node.op_type for node in onnx.load(str(qoperator)).graph.node}
    assert {"QLinearConv", "QLinearAdd", "QGemm"} <= operators
    with pytest.warns(NnperfWarning, match="QLinearAdd"):  # onnx does not know ONNX Runtime's operators' shapes
        network = from_onnx(qoperator)
    assert sorted(name.removesuffix("_quant") for name in network.int8_layers) == sorted(nodes)  # the quantiser's names
    assert not any(layer.op is OpType.GENERIC for layer in network.layers)
    assert network_metrics(network).macs == network_metrics(from_onnx(fp32)).macs
    session = ort.InferenceSession(build_onnx(network).SerializeToString(), providers=["CPUExecutionProvider"])
    assert session.run(None, {"x": random_inputs([(1, 3, 224, 224)])[0]})[0].shape == (1, 1000)


def test_inspect_names_the_int8_layers_and_a_float_calibration_is_named_when_predicting(
        resnet18: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_helpers import run_cli

    fp32, nodes = resnet18
    qdq = tmp_path / "int8.onnx"
    quantize_qdq(fp32, qdq, nodes, calibration=[{"x": random_inputs([(1, 3, 224, 224)])[0]}])
    code, out, err = run_cli(capsys, "inspect", str(qdq))
    assert code == 0, err
    weights = sum(m.params for m in network_metrics(from_onnx(qdq)).layers if m.name in nodes)
    assert (f"21 int8 layer(s), quantised in the file ({', '.join(nodes[:4])}, ...): their weights take "
            f"{weights / 1e6:.3g} MB in int8 against {4 * weights / 1e6:.3g} MB in float32") in " ".join(out.split())
    from nnperf.api import predict
    from nnperf.prediction import SystemModel, UncoveredLayersError

    float_system = SystemModel("key", "onnxruntime/cpu[threads=1]", {})
    with pytest.warns(NnperfWarning, match="runs 21 layer\\(s\\) in int8, but the calibration of "
                                           "onnxruntime/cpu\\[threads=1\\] is of float programs"), \
            pytest.raises(UncoveredLayersError):
        predict(str(qdq), float_system)
