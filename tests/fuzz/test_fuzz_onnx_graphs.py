"""Fuzzing of the ONNX normaliser and mapper: random chains of the operators exporters write (shape computations
folded into constants, broadcasting constants, reductions, casts, comparisons, tiling) that ONNX Runtime runs
import without an internal error, give the output shape ONNX Runtime computes, and, built back by nnperf, run in
ONNX Runtime. Values are not compared: nnperf's builders give dedicated layers random weights."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from nnperf.errors import NnperfError
from nnperf.ir.importers import from_onnx
from nnperf.measure.backends import random_inputs
from nnperf.measure.backends._onnx_graph import build_onnx

Step = Callable[["_Chain", st.DrawFn], None]


class _Chain:
    """A graph under construction: the last float tensor, its shape, the nodes and the stored operands."""

    def __init__(self) -> None:
        self.tensor, self.shape = "x", [1, 4, 6, 5]
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def name(self, stem: str) -> str:
        return f"{stem}{len(self.nodes)}_{len(self.inits)}"

    def const(self, value: np.ndarray) -> str:
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], shape: list[int], **attrs: object) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        self.tensor, self.shape = out, shape
        return out


def _unary(chain: _Chain, draw: st.DrawFn) -> None:
    op = draw(st.sampled_from(["Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Erf", "Floor", "Ceil", "Softsign"]))
    chain.node(op, [chain.tensor], chain.shape)


def _broadcast_constant(chain: _Chain, draw: st.DrawFn) -> None:
    kept = [draw(st.booleans()) for _ in chain.shape]
    shape = [d if keep else 1 for d, keep in zip(chain.shape, kept)][draw(st.integers(0, len(chain.shape))):]
    value = np.random.default_rng(len(chain.nodes)).uniform(0.5, 1.5, shape).astype(np.float32)
    op = draw(st.sampled_from(["Add", "Sub", "Mul", "Div", "Max", "Min"]))
    chain.node(op, [chain.tensor, chain.const(value)], chain.shape)


def _reduce(chain: _Chain, draw: st.DrawFn) -> None:
    axis = draw(st.integers(1, len(chain.shape) - 1))
    op = draw(st.sampled_from(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2"]))
    shape = [1 if i == axis else d for i, d in enumerate(chain.shape)]
    if op in ("ReduceSum",):
        chain.node(op, [chain.tensor, chain.const(np.array([axis], np.int64))], shape, keepdims=1)
    else:
        chain.node(op, [chain.tensor], shape, axes=[axis], keepdims=1)


def _softmax(chain: _Chain, draw: st.DrawFn) -> None:
    op = draw(st.sampled_from(["Softmax", "LogSoftmax"]))
    chain.node(op, [chain.tensor], chain.shape, axis=draw(st.integers(-1, len(chain.shape) - 1)))


def _computed_slice(chain: _Chain, draw: st.DrawFn) -> None:
    """Half of an axis, its bound computed from Shape as torch's exporter writes ``x[:, : x.shape[1] // 2]``."""
    axis = draw(st.integers(1, len(chain.shape) - 1))
    if chain.shape[axis] < 2:
        return
    shape_of = chain.node("Shape", [chain.tensor], chain.shape)
    size = chain.node("Gather", [shape_of, chain.const(np.array(axis, np.int64))], chain.shape)
    half = chain.node("Div", [size, chain.const(np.array(2, np.int64))], chain.shape)
    end = chain.node("Unsqueeze", [half, chain.const(np.array([0], np.int64))], chain.shape)
    source = chain.nodes[-4].input[0]
    out_shape = [d // 2 if i == axis else d for i, d in enumerate(chain.shape)]
    chain.node("Slice", [source, chain.const(np.array([0], np.int64)), end, chain.const(np.array([axis], np.int64))],
               out_shape)


def _computed_flatten(chain: _Chain, draw: st.DrawFn) -> None:
    """``x.view(x.size(0), -1)`` as torch's exporter writes it, then back to 4-D by a stored shape."""
    source, shape = chain.tensor, list(chain.shape)
    shape_of = chain.node("Shape", [source], shape)
    batch = chain.node("Gather", [shape_of, chain.const(np.array([0], np.int64))], shape)
    target = chain.node("Concat", [batch, chain.const(np.array([-1], np.int64))], shape, axis=0)
    flat = chain.node("Reshape", [source, target], [shape[0], int(np.prod(shape[1:]))])
    chain.node("Reshape", [flat, chain.const(np.array(shape, np.int64))], shape)


def _cast_round_trip(chain: _Chain, draw: st.DrawFn) -> None:
    ints = chain.node("Cast", [chain.tensor], chain.shape, to=TensorProto.INT64)
    chain.node("Cast", [ints], chain.shape, to=TensorProto.FLOAT)


def _where(chain: _Chain, draw: st.DrawFn) -> None:
    source = chain.tensor
    mask = chain.node(draw(st.sampled_from(["Greater", "Less", "Equal"])),
                      [source, chain.const(np.array(0.5, np.float32))], chain.shape)
    chain.node("Where", [mask, source, chain.const(np.array(0.0, np.float32))], chain.shape)


def _tile(chain: _Chain, draw: st.DrawFn) -> None:
    repeats = [1] * len(chain.shape)
    repeats[draw(st.integers(1, len(chain.shape) - 1))] = 2
    chain.node("Tile", [chain.tensor, chain.const(np.array(repeats, np.int64))],
               [d * r for d, r in zip(chain.shape, repeats)])


def _transpose(chain: _Chain, draw: st.DrawFn) -> None:
    perm = [0] + draw(st.permutations(list(range(1, len(chain.shape)))))
    chain.node("Transpose", [chain.tensor], [chain.shape[p] for p in perm], perm=perm)


STEPS: list[Step] = [_unary, _broadcast_constant, _reduce, _softmax, _computed_slice, _computed_flatten,
                     _cast_round_trip, _where, _tile, _transpose]


@st.composite
def chains(draw: st.DrawFn) -> onnx.ModelProto:
    chain = _Chain()
    for _ in range(draw(st.integers(1, 6))):
        draw(st.sampled_from(STEPS))(chain, draw)
    if not chain.nodes:
        chain.node("Relu", [chain.tensor], chain.shape)
    graph = helper.make_graph(chain.nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 5])],
                              [helper.make_tensor_value_info(chain.tensor, TensorProto.FLOAT,
                                                             [f"d{i}" for i in range(len(chain.shape))])], chain.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(chains())
def test_exporter_chains_import_with_ort_shapes_and_run_once_built(model: onnx.ModelProto) -> None:
    # found here: a Slice whose bound comes from the shape of another computed Slice needed a second folding round
    (x,) = random_inputs([(1, 4, 6, 5)])
    expected = _run(model, x)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chain.onnx"
        onnx.save(model, str(path))
        try:
            network = from_onnx(path)
        except NnperfError as exc:  # a refusal must name the file; none is expected for these chains
            raise AssertionError(f"refused: {exc}") from exc
    output = network.layer(network.outputs[0])
    assert output.output_shape == (expected.shape or (1,))
    assert _run(build_onnx(network), x).shape == expected.shape
