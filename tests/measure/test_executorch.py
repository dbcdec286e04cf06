"""The ExecuTorch backend: its programs' outputs against ONNX Runtime's and torch's on the same network and weights
(whole networks and the per-layer programs cut from one lowering), the thread pool, the option, refusals in one
line, and per-layer times from ETDump for every layer.

Tolerance: an ExecuTorch output agrees with ONNX Runtime's (on ``build_onnx(network, seed)``) and with torch's (the
module it was exported from) within ``TOLERANCE`` times the largest magnitude of the reference's output. All three
compute in float32 but sum in other orders (XNNPACK's packed kernels, ExecuTorch's portable loops, MLAS, oneDNN);
the largest difference measured here is 6e-8 of the output's scale on the test network and 7e-5 over the layers of
the calibration networks (a 1x1 convolution over 256 channels), so 2e-4 holds every one while a wrong layout,
weight or padding (an error of the output's own order) cannot pass.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

pytest.importorskip("executorch")

from harness_presets import SMOKE_HARNESS
from networks import tiny_network
from nnperf.errors import UnsupportedOperatorError
from nnperf.ir import BatchNormAttrs, ConvAttrs, Layer, LrnAttrs, Network, OpType, TensorSpec
from nnperf.measure import measure
from nnperf.measure.backends import BackendOptions, build_torch, create_backend, layer_module, random_inputs
from nnperf.measure.backends._onnx_graph import build_onnx

TOLERANCE = 2e-4
"""Largest |ExecuTorch - reference| allowed, relative to the largest |reference| output (module docstring)."""

et_backend = importlib.import_module("nnperf.measure.backends._executorch")


@pytest.fixture(scope="module")
def backend():  # type: ignore[no-untyped-def]
    with create_backend("executorch", BackendOptions(threads=1)) as b:
        yield b


@pytest.fixture(scope="module")
def portable():  # type: ignore[no-untyped-def]
    with create_backend("executorch", BackendOptions(threads=1, extra={"delegate": "portable"})) as b:
        yield b


def _outputs(timer: Any) -> np.ndarray:
    """What the program a timer of the backend runs gives on the timer's inputs."""
    return timer.loaded.method_now()(timer.inputs, True)[0].numpy()


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    assert got.shape == want.shape
    return float(np.abs(got - want).max() / np.abs(want).max())


def _onnxruntime_output(network: Network) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(build_onnx(network, 0).SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = random_inputs([spec.shape for spec in network.inputs], 0)
    return session.run(None, {spec.name: array for spec, array in zip(network.inputs, feeds)})[0]


def _torch_output(module: Any, shapes: list[tuple[int, ...]]) -> np.ndarray:
    import torch

    with torch.inference_mode():
        return module(*[torch.from_numpy(a) for a in random_inputs(shapes, 0)]).numpy()


# ---------------------------------------------------------------------- outputs
@pytest.mark.parametrize("delegate", ["xnnpack", "portable"])
def test_the_test_network_computes_what_onnxruntime_and_torch_compute(backend, portable, delegate: str) -> None:  # type: ignore[no-untyped-def]
    net = tiny_network()
    got = _outputs((backend if delegate == "xnnpack" else portable).network_timer(net))
    assert _relative_error(got, _onnxruntime_output(net)) < TOLERANCE
    assert _relative_error(got, _torch_output(build_torch(net, 0), [net.inputs[0].shape])) < TOLERANCE


def test_each_layer_program_cut_from_one_lowering_computes_its_layer(backend) -> None:  # type: ignore[no-untyped-def]
    net = tiny_network()
    backend.prepare_layers(net.layers)
    for layer in net.layers:
        got = _outputs(backend.layer_timer(layer))
        assert _relative_error(got, _torch_output(layer_module(layer, 0), list(layer.input_shapes))) < TOLERANCE, \
            layer.name


def test_a_configuration_is_lowered_once_whatever_the_layers_name(backend, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    net = tiny_network()
    backend.prepare_layers(net.layers)
    monkeypatch.setattr(et_backend, "lower_layers", _never)
    monkeypatch.setattr(et_backend, "lower_one", _never)
    renamed = Layer("conv2_again", OpType.CONV, ("x",), net.layers[3].input_shapes, net.layers[3].output_shape,
                    net.layers[3].attrs)
    backend.prepare_layers([*net.layers, renamed])
    assert backend.layer_timer(renamed).time_block(2) > 0


def test_layers_of_one_name_and_two_configurations_get_a_program_each(backend) -> None:  # type: ignore[no-untyped-def]
    small, large = (1, 4, 8, 8), (1, 8, 8, 8)  # one layer name at two input sizes, as calibration networks have
    layers = [Layer("c", OpType.CONV, ("x",), (s,), s, ConvAttrs((3, 3), padding=(1,) * 4)) for s in (small, large)]
    backend.prepare_layers(layers)
    for layer in layers:
        want = _torch_output(layer_module(layer, 0), list(layer.input_shapes))
        assert _relative_error(_outputs(backend.layer_timer(layer)), want) < TOLERANCE, layer.input_shapes


def _never(*args: Any) -> Any:
    raise AssertionError("lowered again")


@pytest.mark.slow  # lowers a program per layer: about 11 s here
def test_layers_torch_builds_from_kernels_executorch_lacks_compute_the_same(backend) -> None:  # type: ignore[no-untyped-def]
    """Local response normalisation, global max pooling, and two batch norms without scale and shift in one
    delegate where XNNPACK cannot fold them into a convolution (it turns each into a depthwise one) run, and
    compute what torch's own modules compute."""
    s, c = (1, 8, 6, 6), (1, 16, 6, 6)
    net = Network("swapped", (TensorSpec("x", s),), (
        Layer("lrn", OpType.LRN, ("x",), (s,), s, LrnAttrs(size=3)),
        Layer("relu1", OpType.RELU, ("lrn",), (s,), s),
        Layer("bn1", OpType.BATCH_NORM, ("relu1",), (s,), s, BatchNormAttrs(affine=False)),
        Layer("conv", OpType.CONV, ("bn1",), (s,), c, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("relu2", OpType.RELU, ("conv",), (c,), c),
        Layer("bn2", OpType.BATCH_NORM, ("relu2",), (c,), c, BatchNormAttrs(affine=False)),
        Layer("gmp", OpType.GLOBAL_MAX_POOL, ("bn2",), (c,), (1, 16, 1, 1)),
    ), ("gmp",))
    got = _outputs(backend.network_timer(net))
    assert _relative_error(got, _torch_output(build_torch(net, 0), [s])) < TOLERANCE
    for layer in (net.layers[0], net.layers[6]):
        want = _torch_output(layer_module(layer, 0), list(layer.input_shapes))
        assert _relative_error(_outputs(backend.layer_timer(layer)), want) < TOLERANCE, layer.name


# ---------------------------------------------------------------------- settings
def test_the_thread_pool_has_the_thread_count_of_the_backend_that_runs(backend) -> None:  # type: ignore[no-untyped-def]
    runtime = backend.et.runtime
    timer = backend.network_timer(tiny_network())
    assert runtime._threadpool_get_thread_count() == 1
    with create_backend("executorch", BackendOptions(threads=2)) as two:
        assert runtime._threadpool_get_thread_count() == 2
        assert dict(two.thread_settings())["threadpool_threads"] == "2"
        assert two.layer_timer(tiny_network().layers[0]).time_block(2) > 0
        assert timer.time_block(2) > 0  # its program loaded again on the pool it runs with
        assert runtime._threadpool_get_thread_count() == 1
    assert dict(backend.thread_settings()) == {"threadpool_threads": "1", "delegate": "xnnpack"}


def test_the_delegate_option_joins_the_systems_key_only_when_set(backend, portable) -> None:  # type: ignore[no-untyped-def]
    assert backend.resolved_options() == (("threads", "1"),)
    assert portable.resolved_options() == (("delegate", "portable"), ("threads", "1"))


# ---------------------------------------------------------------------- refusals
def _pool3d_network() -> Network:
    """A ReLU, then an ONNX MaxPool over three spatial axes (a generic layer: ExecuTorch has no kernel for it)."""
    import tempfile

    import onnx
    from onnx import TensorProto, helper

    from nnperf.ir.importers import from_onnx

    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["y"], name="pool3d", kernel_shape=[2, 2, 2], strides=[2, 2, 2])]
    graph = helper.make_graph(nodes, "pool3d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 2, 4, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with tempfile.TemporaryDirectory() as folder:
        onnx.save(model, f"{folder}/pool3d.onnx")
        return from_onnx(f"{folder}/pool3d.onnx")


def test_a_layer_executorch_cannot_run_is_refused_in_one_line_naming_it(backend) -> None:  # type: ignore[no-untyped-def]
    net = _pool3d_network()
    reason = ("generic MaxPool (ExecuTorch's runtime has no kernel for aten::max_pool3d_with_indices.out; measure it "
              "with --backend torch) (pool3d)")
    with pytest.raises(UnsupportedOperatorError) as raised:
        backend.network_timer(net)
    assert str(raised.value) == f"pool3d: unsupported operator(s): {reason}"
    backend.prepare_layers(net.layers)  # the ReLU is lowered all the same
    assert backend.layer_timer(net.layers[0]).time_block(2) > 0
    with pytest.raises(UnsupportedOperatorError) as raised:
        backend.layer_timer(net.layers[1])
    assert str(raised.value) == f"pool3d: unsupported operator(s): {reason}"


# ---------------------------------------------------------------------- timers and per-layer times
def test_the_network_timer_times_one_run(backend) -> None:  # type: ignore[no-untyped-def]
    timing = measure(backend.network_timer(tiny_network()), SMOKE_HARNESS)
    assert 1e-6 < timing.stats.median_s < 0.01


@pytest.mark.parametrize("delegate", ["xnnpack", "portable"])
def test_the_profile_maps_every_layer_with_consistent_groups(backend, portable, delegate: str) -> None:  # type: ignore[no-untyped-def]
    runner = backend if delegate == "xnnpack" else portable
    net = tiny_network()
    result = runner.profile(net, runs=5)
    assert [m.layer for m in result.layers] == [layer.name for layer in net.layers]
    assert all(m.timing.stats.n == 5 and m.timing.stats.median_s >= 0 for m in result.layers)
    for m in result.layers:  # members of one group share its time
        assert m.group_size == sum(other.group == m.group for other in result.layers)
    assert result.run_timing.stats.n == 5
    assert 0.2 < result.profiler_sum_s / result.run_timing.stats.median_s < 1.5
    whole_s = measure(runner.network_timer(net), SMOKE_HARNESS).stats.median_s
    assert 0.3 < result.run_timing.stats.median_s / whole_s < 3  # ETDump's ticks read as nanoseconds
    groups = {m.layer: m.group for m in result.layers}
    if delegate == "xnnpack":  # XNNPACK folds the batch norm and the ReLU into the convolution
        assert groups["bn1"] == groups["relu1"] == "conv1" and groups["conv2"] == "conv2"
        assert set(result.unattributed_s) == {"Transpose (ND, X32) #1 (XNNPACK, instruction 0)",
                                              "Transpose (ND, X32) #2 (XNNPACK, instruction 0)"}
    else:  # one portable kernel per layer; the flatten is a view, no kernel: it joins the pooling before it
        assert [groups[n] for n in ("conv1", "bn1", "relu1", "flatten")] == ["conv1", "bn1", "relu1", "gap"]
        assert result.unattributed_s == {}


def test_a_network_timed_is_profiled_without_lowering_it_again(backend, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    net = tiny_network()
    backend.network_timer(net)
    net.layer("conv1")  # fills the network's own caches, which must not change what it is
    monkeypatch.setattr(et_backend, "lower_network", _never)
    assert len(backend.profile(net, runs=2).layers) == len(net.layers)


def test_xnnpack_operators_follow_their_graph_nodes_past_folds_and_clamps() -> None:
    nodes = [("XNNStaticTranspose", None), ("XNNConv2d", "c1"), ("XNNClamp", "r1"), ("XNNAdd", "add"),
             ("XNNConv2d", "c2"), ("XNNMultiply", "sq")]
    operators = ["Transpose (ND, X32) #1", "Convolution (NHWC, F32) IGEMM #1", "Add (ND) #1", "Clamp (NC) #1",
                 "Fully Connected (NC, F32) GEMM #1", "Square (NC) #1", "Copy (NC, X32) #1"]
    # the clamp folded into the convolution; the add's activation a clamp of its own; a 1x1 convolution run as
    # a fully connected operator, x * x as a square; a copy no node is named for
    assert et_backend._aligned(operators, nodes) == [None, "c1", "add", "add", "c2", "sq", None]
