"""Fuzzing of the ONNX importer: corrupted files and mutated models either import or raise an NnperfError;
valid models of random sizes import with the sizes and counts worked out by hand."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import FUZZ, PARSERS, conv_model, parses_or_refuses, write
from nnperf.api import load_model
from nnperf.ir import OpType
from nnperf.ir.metrics import layer_metrics

ONNX = PARSERS["onnx"]


@FUZZ
@given(ONNX.inputs)
def test_any_onnx_input_imports_or_is_refused(data: bytes) -> None:
    network = parses_or_refuses(ONNX, data)
    if network is not None:
        assert network.layers and network.outputs


@st.composite
def conv_sizes(draw) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    groups = draw(st.sampled_from((1, 2)))
    c, m = groups * draw(st.integers(1, 4)), groups * draw(st.integers(1, 4))
    h, w = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    pad = draw(st.integers(0, 2))
    k = draw(st.integers(1, min(h, w) + 2 * pad))
    return c, h, w, m, k, draw(st.integers(1, 3)), pad, groups


@FUZZ
@given(conv_sizes())
def test_valid_conv_model_of_any_size_imports_with_its_sizes(sizes: tuple[int, ...]) -> None:
    c, h, w, m, k, stride, pad, groups = sizes
    network = load_model(write("conv.onnx", conv_model(*sizes).SerializeToString()))
    assert [layer.op for layer in network.layers] == [OpType.CONV, OpType.RELU, OpType.GLOBAL_AVG_POOL,
                                                      OpType.FLATTEN, OpType.LINEAR]
    conv = network.layers[0]
    h_out, w_out = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    assert conv.output_shape == (1, m, h_out, w_out)
    assert conv.attrs.groups == groups and conv.attrs.kernel == (k, k) and conv.attrs.stride == (stride, stride)
    # k*k*(C/groups) MACs per output value, no bias
    assert layer_metrics(conv).macs == k * k * (c // groups) * m * h_out * w_out
    assert network.layers[-1].output_shape == (1, 10)
