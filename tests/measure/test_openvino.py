"""The OpenVINO backend: the same outputs as ONNX Runtime on the same model, the compile settings it fixes, its
profiler's attribution, and the errors it gives."""

from __future__ import annotations

import tempfile
from functools import cache
from importlib import metadata
from typing import Any

import numpy as np
import onnx
import pytest

pytest.importorskip("openvino")

from networks import tiny_network
from nnperf.errors import UnsupportedOperatorError
from nnperf.ir import Network
from nnperf.measure import MeasurementError
from nnperf.measure.backends import BackendOptionError, BackendOptions, create_backend, random_inputs
from nnperf.measure.backends._onnx_graph import build_onnx
from nnperf.measure.backends._openvino import (
    OpenVinoBackend,
    _profile_result,
    node_means_s,
)
from nnperf.registry import UnavailableError

RTOL = 1e-4
"""Both run float32, but with different kernels (OpenVINO's brgconv and JIT kernels, ONNX Runtime's MLAS): sums in
another order differ by a few float32 epsilons (1.2e-7) per accumulation, and a deep network compounds them; 1e-4
leaves room for that and none for a wrong operator, layout or weight. The absolute floor is 1e-4 of the output's
largest magnitude, for elements that cancel to near zero."""


@pytest.fixture(scope="module")
def ov() -> Any:
    with create_backend("openvino", BackendOptions(threads=1)) as backend:
        yield backend


@cache
def _small_mobilenet() -> Network:
    """MobileNetV2 (152 layers, 3.5 M weights) on a 96 x 96 input: every layer type of the real network, a
    fifth of its work."""
    import torch

    from nnperf.ir.importers import from_torch
    from nnperf.zoo import get

    entry = get("mobilenet_v2")
    with torch.device("meta"):
        module = entry.factory()
    return from_torch(module, torch.empty((1, 3, 96, 96), device="meta"), name=entry.name)


def _generic_network() -> Network:
    """ONNX operators nnperf keeps as generic layers, which OpenVINO converts: a comparison, a select, a sum."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Greater", ["x", "half"], ["mask"]),
             helper.make_node("Where", ["mask", "x", "zero"], ["kept"]),
             helper.make_node("ReduceSum", ["kept", "axes"], ["y"], keepdims=1)]
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array([2, 3], np.int64), "axes")]
    graph = helper.make_graph(nodes, "generic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 1, 1])], inits)
    return _imported(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def _det_network() -> Network:
    """ReLU, then Det (an ONNX operator OpenVINO has no conversion for), then an Unsqueeze."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Det", ["r"], ["d"], name="det"),
             helper.make_node("Unsqueeze", ["d", "axes"], ["y"], name="unsqueeze")]
    graph = helper.make_graph(nodes, "detnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])],
                              [numpy_helper.from_array(np.array([1], np.int64), "axes")])
    return _imported(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def _imported(model: onnx.ModelProto) -> Network:
    from nnperf.ir.importers import from_onnx

    with tempfile.TemporaryDirectory() as folder:
        onnx.save(model, f"{folder}/{model.graph.name}.onnx")
        return from_onnx(f"{folder}/{model.graph.name}.onnx")


def _outputs(ov: OpenVinoBackend, model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    request = ov.compile(model).create_infer_request()
    result = request.infer({i: x for i, x in enumerate(inputs)})
    return [np.asarray(result[i]) for i in range(len(model.graph.output))]


def _ort_outputs(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return [np.asarray(y) for y in session.run(None, {i.name: x for i, x in zip(model.graph.input, inputs)})]


@pytest.mark.parametrize("make", [tiny_network, _generic_network, _small_mobilenet], ids=["tiny", "generic",
                                                                                       "mobilenet_v2"])
def test_outputs_match_onnxruntime_on_the_same_model(ov: OpenVinoBackend, make: Any) -> None:
    network = make()
    model = build_onnx(network, seed=0)
    inputs = random_inputs([spec.shape for spec in network.inputs], seed=3)
    expected = _ort_outputs(model, inputs)
    actual = _outputs(ov, model, inputs)
    assert len(actual) == len(expected) == len(network.outputs)
    for name, got, want in zip(network.outputs, actual, expected):
        assert got.shape == want.shape, name
        assert np.abs(want).max() > 0, name  # a network that outputs zeros would prove nothing
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * float(np.abs(want).max()), err_msg=name)


@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_models_report_the_settings_that_keep_times_honest(threads: int) -> None:
    with create_backend("openvino", BackendOptions(threads=threads)) as ov:
        model = build_onnx(tiny_network())
        for profiling, compiled in ((False, ov.compile(model)), (True, ov.compile(model, profiling=True))):
            assert compiled.get_property("INFERENCE_NUM_THREADS") == threads
            assert compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name() == "f32"
            assert compiled.get_property("ENABLE_CPU_PINNING") is False
            assert compiled.get_property("NUM_STREAMS") == 1
            assert str(compiled.get_property("PERFORMANCE_HINT")) == "LATENCY"
            assert compiled.get_property("PERF_COUNT") == ("YES" if profiling else "NO")
        assert ov.core.get_property("CACHE_DIR") == ""  # no compiled blob read from or written to disk
        assert dict(ov.system().options) == {"threads": str(threads)}  # precision keyed only when set


def test_bf16_runs_in_bf16_or_is_refused_where_the_cpu_cannot() -> None:
    import openvino

    if "BF16" in openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        with create_backend("openvino", BackendOptions(extra={"precision": "bf16"})) as ov:
            compiled = ov.compile(build_onnx(tiny_network()))
            assert compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name() == "bf16"
            assert ("precision", "bf16") in ov.system().options
    else:  # OpenVINO would run f32 under a bf16 label
        with pytest.raises(BackendOptionError, match="precision=bf16: this CPU has no bf16 support"):
            create_backend("openvino", BackendOptions(extra={"precision": "bf16"}))


def test_the_system_records_openvinos_version(ov: OpenVinoBackend) -> None:
    assert dict(ov.system().host.versions)["openvino"] == metadata.version("openvino")


def test_a_timer_is_warm_when_built(ov: OpenVinoBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    made = OpenVinoBackend._request

    def counted(self: OpenVinoBackend, compiled: Any) -> Any:
        request = made(self, compiled)

        class Counting:
            def infer(self, *args: Any, **kwargs: Any) -> Any:
                calls.append("infer")
                return request.infer(*args, **kwargs)

        return Counting()

    monkeypatch.setattr(OpenVinoBackend, "_request", counted)
    timer = ov.network_timer(tiny_network())
    assert calls == ["infer"]  # the first inference ran while the timer was built
    assert timer.time_block(4) > 0
    assert len(calls) == 5


def test_every_layer_runs_alone(ov: OpenVinoBackend) -> None:
    for layer in tiny_network().layers:
        assert 0 < ov.layer_timer(layer).time_block(3) < 1.0, layer.name


def test_the_profiler_maps_every_layer_of_the_tiny_network(ov: OpenVinoBackend) -> None:
    net = tiny_network()
    result = ov.profile(net, runs=20)
    assert [m.layer for m in result.layers] == [layer.name for layer in net.layers]
    assert all(m.timing.stats.n == 20 and m.timing.stats.median_s > 0 for m in result.layers)
    for m in result.layers:  # members of one group share its time
        assert m.group_size == sum(other.group == m.group for other in result.layers)
        assert m.timing.times_s == next(o for o in result.layers if o.layer == m.group).timing.times_s
    groups = {m.layer: m.group for m in result.layers}
    assert groups["conv1"] == groups["bn1"] == groups["relu1"] == "conv1"  # one oneDNN convolution with its post-ops
    assert groups["conv2"] == "conv2" and groups["fc"] == "fc"
    assert any("abcd" in node for node in result.unattributed_s)  # the input's layout reorder belongs to no layer
    assert result.run_timing.stats.n == 20
    # OpenVINO spends 15-20 us of the tiny network's ~46 us per run outside its nodes (the call, the request's
    # checks, input and output handling): the nodes hold 0.5-0.8 of a run here, less on a loaded machine
    assert 0.3 < result.profiler_sum_s / result.run_timing.stats.median_s < 1.5


def test_node_means_undo_openvinos_running_averages() -> None:
    # after 5 runs a counter of 10 us means a total in [50, 54], taken as 52; after 10 runs 12 us means [120, 129],
    # taken as 124.5: 72.5 us over the 5 runs between, 14.5 us each, plus the 0.5 us cutting drops on average
    means = node_means_s({"conv": 10}, {"conv": 12, "new": 3}, warmup_runs=5, runs=5)
    assert means["conv"] == pytest.approx(15e-6)
    assert means["new"] == pytest.approx((3 * 10 + 4.5) / 5 * 1e-6 + 0.5e-6)  # not counted before: from zero


def test_layers_one_node_holds_form_one_group_carrying_its_time() -> None:
    net = tiny_network()
    held = {"c1": ["bn1", "relu1"], "c2": ["conv2"], "sum": ["add"], "both": ["pool", "dw"], "cat": ["cat"],
            "gap": ["gap"], "flat": ["flatten"], "fc": ["fc"], "soft": ["softmax"], "reorder": []}
    means = {node: 1e-5 for node in held}
    means["both"] = 4e-5
    runs = [1e-3, 2e-3, 3e-3]
    result = _profile_result(net, means, held, runs)
    layer = {m.layer: m for m in result.layers}
    assert layer["conv1"].group == layer["bn1"].group == layer["relu1"].group == "conv1"  # conv1 renamed, found
    assert layer["pool"].group == layer["dw"].group == "pool" and layer["pool"].group_size == 2
    assert layer["pool"].timing.times_s == pytest.approx((2e-5, 4e-5, 6e-5))  # the mean scaled by run / mean run
    assert result.unattributed_s == pytest.approx({"reorder": 1e-5})
    assert result.run_timing.stats.median_s == pytest.approx(2e-3)


def test_an_operator_openvino_cannot_convert_is_named_in_one_line(ov: OpenVinoBackend) -> None:
    net = _det_network()
    message = (r"unsupported operator\(s\): ONNX Det \(OpenVINO [\d.]+ has no conversion for it; measure it with "
               r"--backend onnxruntime\) \(det\)$")
    for attempt in (lambda: ov.network_timer(net), lambda: ov.layer_timer(net.layer("det")),
                    lambda: ov.profile(net, 2)):
        with pytest.raises(UnsupportedOperatorError, match=message) as caught:
            attempt()
        assert "\n" not in str(caught.value)
    assert ov.layer_timer(net.layer("relu")).time_block(1) > 0  # the layers around it run


def test_a_model_openvino_cannot_read_is_a_one_line_error(ov: OpenVinoBackend) -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 3])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 5], [0.0] * 20)  # 3 columns against 4 rows
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mismatched", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises((UnsupportedOperatorError, MeasurementError), match="mismatched.*OpenVINO") as caught:
        ov.compile(model)
    assert "\n" not in str(caught.value) and "Exception from src" not in str(caught.value)


def test_unknown_options_and_cuda_are_refused() -> None:
    with pytest.raises(BackendOptionError, match="'openvino' has no option threads_per_stream; its options: precision"):
        create_backend("openvino", BackendOptions(extra={"threads_per_stream": "2"}))
    with pytest.raises(BackendOptionError, match="precision='fp16': use one of f32, bf16"):
        create_backend("openvino", BackendOptions(extra={"precision": "fp16"}))
    available = OpenVinoBackend.availability("cuda")
    assert not available.ok and "CPU plugin only" in available.reason
    with pytest.raises(UnavailableError, match="backend 'openvino' cannot run here: .*CPU plugin only"):
        create_backend("openvino", BackendOptions(device="cuda"))

