"""The ``precision`` option: ONNX Runtime static int8 (QDQ) and torch bf16, timed and profiled like fp32."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnxruntime as ort
import pytest

from networks import residual_conv_net, tiny_network
from nnperf.ir import Layer, LrnAttrs, Network, OpType, TensorSpec
from nnperf.measure.backends import BackendOptionError, BackendOptions, create_backend
from nnperf.measure.backends._onnx_graph import build_onnx
from nnperf.measure.backends.onnx_int8 import int8_model, int8_nodes, u8s8_saturates


def _run(model: object, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])  # type: ignore[attr-defined]
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x})[0])


def test_int8_model_quantises_every_convolution_and_stays_close_to_fp32() -> None:
    net = residual_conv_net("res", 8, 12)
    fp32 = build_onnx(net, seed=0)
    int8 = int8_model(fp32, seed=0)
    ops = Counter(node.op_type for node in int8.graph.node)
    convs = [layer.name for layer in net.layers if layer.op.value == "conv"]
    assert len(int8_nodes(fp32)) == len(convs) == ops["Conv"]
    assert int8_nodes(int8) == ()  # every weight is now an int8 initializer behind a DequantizeLinear
    assert ops["QuantizeLinear"] >= 1 and ops["DequantizeLinear"] >= len(convs) + ops["QuantizeLinear"]
    x = np.random.default_rng(1).random((1, 8, 12, 12), dtype=np.float32)
    want, got = _run(fp32, x), _run(int8, x)
    assert float(np.abs(got - want).max()) <= 0.05 * float(np.abs(want).max())  # 8-bit: within 5% of the range
    assert not np.array_equal(got, want)  # it did change the arithmetic


def test_int8_model_folds_batch_norm_into_its_convolution() -> None:
    net = tiny_network()  # conv1 -> bn1
    ops = Counter(node.op_type for node in int8_model(build_onnx(net, seed=0)).graph.node)
    assert ops["BatchNormalization"] == 0 and ops["Conv"] == 3 and ops["Gemm"] + ops["MatMul"] == 1


def test_int8_precision_keeps_fp32_system_keys_and_names_itself() -> None:
    with create_backend("onnxruntime", BackendOptions()) as fp32, \
            create_backend("onnxruntime", BackendOptions(extra={"precision": "fp32"})) as explicit, \
            create_backend("onnxruntime", BackendOptions(extra={"precision": "int8"})) as int8:
        assert "precision" not in dict(fp32.system().options)  # stored fp32 calibrations keep their keys
        assert explicit.system().key == fp32.system().key
        assert dict(int8.system().options)["precision"] == "int8"
        assert int8.system().key != fp32.system().key
    with pytest.raises(BackendOptionError, match="precision='fp16'"):
        create_backend("onnxruntime", BackendOptions(extra={"precision": "fp16"}))


def _weight_scales(model: object) -> list[tuple[int, ...]]:
    """The shape of each int8 weight's scale: (channels,) per output channel, () per tensor."""
    from onnx import numpy_helper

    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}  # type: ignore[attr-defined]
    return [arrays[node.input[1]].shape for node in model.graph.node  # type: ignore[attr-defined]
            if node.op_type == "DequantizeLinear" and arrays.get(node.input[0], np.zeros(0)).dtype == np.int8]


def test_int8_weights_per_tensor_take_one_scale_each_and_their_own_system_key() -> None:
    net = residual_conv_net("res", 8, 12)
    fp32 = build_onnx(net, seed=0)
    per_channel, per_tensor = int8_model(fp32, seed=0), int8_model(fp32, seed=0, per_channel=False)
    convs = sum(layer.op.value == "conv" for layer in net.layers)
    assert _weight_scales(per_channel) == [(8,)] * convs  # the residual net's convolutions have 8 outputs
    assert _weight_scales(per_tensor) == [()] * convs
    x = np.random.default_rng(1).random((1, 8, 12, 12), dtype=np.float32)
    want, got = _run(fp32, x), _run(per_tensor, x)
    assert float(np.abs(got - want).max()) <= 0.05 * float(np.abs(want).max())
    assert not np.array_equal(got, _run(per_channel, x))
    with create_backend("onnxruntime", BackendOptions(extra={"precision": "int8"})) as int8, \
            create_backend("onnxruntime", BackendOptions(extra={"precision": "int8",
                                                                "int8_weights": "per_channel"})) as explicit, \
            create_backend("onnxruntime", BackendOptions(extra={"precision": "int8",
                                                                "int8_weights": "per_tensor"})) as tensor:
        assert explicit.system().key == int8.system().key  # stored int8 calibrations keep their keys
        assert dict(tensor.system().options)["int8_weights"] == "per_tensor"
        assert tensor.system().key != int8.system().key
        assert tensor.network_timer(net).time_block(2) > 0
    with pytest.raises(BackendOptionError, match="int8_weights='per_row'"):
        create_backend("onnxruntime", BackendOptions(extra={"int8_weights": "per_row"}))


@pytest.mark.parametrize(("backend", "precision"), [("onnxruntime", "int8"), ("torch", "bf16")])
def test_inexact_precision_times_and_profiles_every_layer(backend: str, precision: str) -> None:
    net = tiny_network()
    with create_backend(backend, BackendOptions(extra={"precision": precision})) as b:
        assert b.network_timer(net).time_block(3) > 0
        for layer in net.layers:
            assert b.layer_timer(layer).time_block(2) > 0, layer.name
        result = b.profile(net, runs=5)
    assert [m.layer for m in result.layers] == [layer.name for layer in net.layers]
    # against the least disturbed of the 5 runs: on a busy machine the median of 5 can be a run that waited for
    # the core (1.5 ms and 10.5 ms runs alternated in one)
    assert 0.2 < result.profiler_sum_s / min(result.run_timing.times_s) < 3.0


def test_bf16_runs_local_response_norm_which_has_no_bf16_kernel_in_fp32() -> None:
    shape = (1, 8, 6, 6)
    lrn = Layer("lrn", OpType.LRN, ("x",), (shape,), shape, LrnAttrs())
    net = Network("lrn", (TensorSpec("x", shape),), (lrn,), ("lrn",))
    with create_backend("torch", BackendOptions(extra={"precision": "bf16"})) as b:
        assert b.layer_timer(lrn).time_block(2) > 0  # torch alone: avg_pool3d "not implemented for 'BFloat16'"
        assert b.network_timer(net).time_block(2) > 0


def test_int8_weights_take_7_bits_only_on_x86_without_vnni() -> None:
    assert u8s8_saturates({"sse4_2", "avx2", "fma"}, "x86_64")  # AVX2 alone: 16-bit pair sums saturate
    assert u8s8_saturates({"avx2", "avx512f", "avx512bw"}, "x86_64")  # AVX-512 without VNNI too
    assert not u8s8_saturates({"avx2", "avx512f", "avx512_vnni"}, "x86_64")
    assert not u8s8_saturates({"avx2", "avx_vnni"}, "AMD64")
    assert not u8s8_saturates(set(), "aarch64")  # not an x86 kernel
