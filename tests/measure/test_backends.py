"""Conformance suite every real backend passes on this CPU (torch, ONNX Runtime, OpenCV DNN, and the deployment
runtimes OpenVINO, LiteRT and ExecuTorch where their extras are installed).

Times here are real but the networks are tiny: the tests check that timers,
isolated layers and profiler attribution work, not how fast anything is.
"""

from __future__ import annotations

import pytest

from harness_presets import SMOKE_HARNESS
from networks import tiny_network
from nnperf.campaign import ProfileConfig, profile_network
from nnperf.measure import measure
from nnperf.measure.backends import BackendOptionError, BackendOptions, backend_report, create_backend
from nnperf.registry import UnavailableError, UnknownPluginError
from nnperf.store import Store

REAL = ["torch", "onnxruntime", "opencv", "openvino", "litert",
        pytest.param("executorch", marks=pytest.mark.slow)]  # a program lowered per layer: a minute here
"""Every real backend; ExecuTorch's own tests (test_executorch.py) run its layers in ``make test``."""


@pytest.fixture(params=REAL)
def backend(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    from nnperf.measure.backends import BACKENDS

    available = BACKENDS.create(request.param).availability("cpu")
    if not available.ok:
        pytest.skip(f"{request.param}: {available.reason}")
    with create_backend(request.param, BackendOptions(threads=1)) as b:
        yield b


def test_every_real_backend_runs_here(backend) -> None:  # type: ignore[no-untyped-def]
    assert backend.availability("cpu").ok
    system = backend.system()
    assert dict(system.options)["threads"] == "1"
    assert system.device == "cpu" and system.device_name  # the CPU model
    assert dict(system.host.versions)[type(backend).PACKAGE] == type(backend).version()  # the framework's own


def test_whole_network_timer(backend) -> None:  # type: ignore[no-untyped-def]
    timing = measure(backend.network_timer(tiny_network()), SMOKE_HARNESS)
    assert 1e-6 < timing.stats.median_s < 0.1
    assert timing.block_size * timing.stats.median_s >= 0.5 * SMOKE_HARNESS.min_block_s


def test_every_layer_runs_in_isolation_with_all_its_inputs(backend) -> None:  # type: ignore[no-untyped-def]
    for layer in tiny_network().layers:
        assert backend.layer_timer(layer).time_block(3) > 0, layer.name


def test_profiler_times_map_to_every_layer(backend) -> None:  # type: ignore[no-untyped-def]
    net = tiny_network()
    result = backend.profile(net, runs=5)
    assert [m.layer for m in result.layers] == [layer.name for layer in net.layers]
    assert all(m.timing.stats.n == 5 and m.timing.stats.median_s >= 0 for m in result.layers)
    for m in result.layers:  # members of one group share its time
        assert m.group_size == sum(other.group == m.group for other in result.layers)
    assert result.run_timing.stats.n == 5
    # groups timed alone each pay a call's overhead (about 1-2 us on 11 groups against a 15 us run)
    most = 4.0 if backend.profiles_in_isolation else 1.5
    assert 0.2 < result.profiler_sum_s / result.run_timing.stats.median_s < most


def test_isolated_campaign_into_the_store(backend, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Store(tmp_path / "m.db") as store:
        report = profile_network(tiny_network(), backend, store, ProfileConfig(harness=SMOKE_HARNESS))
        assert len(store.layer_measurements(run_id=report.run_id)) == 12
        assert report.sum_ratio > 0.3  # isolated layers of a tiny net carry per-call overhead; never near zero
        assert store.systems()[0].backend == backend.name


def test_onnxruntime_fuses_conv_and_relu_and_says_so() -> None:
    with create_backend("onnxruntime", BackendOptions(extra={"opt_level": "all"})) as ort:
        result = ort.profile(tiny_network(), runs=3)
    groups = {m.layer: (m.group, m.group_size) for m in result.layers}
    assert groups["bn1"][0] == groups["relu1"][0] == groups["conv1"][0] == "conv1"
    with create_backend("onnxruntime", BackendOptions(extra={"opt_level": "disable"})) as ort:
        plain = ort.profile(tiny_network(), runs=3)
    assert all(m.group_size == 1 for m in plain.layers)  # no optimisation, no fusion


def test_a_graph_onnxruntime_refuses_is_a_measurement_error_naming_it() -> None:
    from onnx import TensorProto, helper

    from nnperf.measure import MeasurementError

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 3])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 5], [0.0] * 20)  # 3 columns against 4 rows
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mismatched", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with create_backend("onnxruntime", BackendOptions(threads=1)) as ort, \
            pytest.raises(MeasurementError, match="ONNX Runtime cannot build the graph nnperf made of 'mismatched'"):
        ort._timer(model)


def test_torch_channels_last_option() -> None:
    with create_backend("torch", BackendOptions(extra={"memory_format": "channels_last"})) as torch_cl:
        assert ("memory_format", "channels_last") in torch_cl.system().options
        assert torch_cl.layer_timer(tiny_network().layers[0]).time_block(2) > 0


def test_unknown_backend_lists_the_known_ones() -> None:
    known = "executorch, fake, litert, onnxruntime, opencv, openvino, torch"
    with pytest.raises(UnknownPluginError, match=f"unknown backend 'tensorrt'; known: {known}"):
        create_backend("tensorrt")


def test_cuda_is_unavailable_here_with_a_reason() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(UnavailableError, match="backend 'torch' cannot run here: no CUDA device"):
        create_backend("torch", BackendOptions(device="cuda"))
    reasons = dict(backend_report("cuda"))
    assert not reasons["onnxruntime"].ok and "CUDA" in reasons["onnxruntime"].reason


@pytest.mark.parametrize(("options", "message"), [
    (lambda: BackendOptions(threads=0), "thread count must be a positive integer"),
    (lambda: BackendOptions(device="tpu"), "unknown device 'tpu'"),
    (lambda: create_backend("torch", BackendOptions(extra={"layout": "nhwc"})), "no option layout; its options: memory_format"),
    (lambda: create_backend("onnxruntime", BackendOptions(extra={"opt_level": "max"})), "use one of disable"),
])
def test_bad_backend_options_are_refused(options, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(BackendOptionError, match=message):
        options()


@pytest.mark.gpu
def test_torch_cuda_times_with_cuda_events() -> None:
    with create_backend("torch", BackendOptions(device="cuda")) as gpu:
        timing = measure(gpu.network_timer(tiny_network()), SMOKE_HARNESS)
        assert timing.stats.median_s > 0
        assert gpu.profile(tiny_network(), runs=3).layers
