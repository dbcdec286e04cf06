"""Generic layers: ONNX nodes without a dedicated op type are kept as they are, and compute what the file computes.

Each case is a small graph around one operator users meet; it must import as a generic layer naming the
operator, and both graph builders must compute what ONNX Runtime computes on the original file (same inputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from nnperf.errors import InvalidNetworkError, NnperfWarning, UnsupportedOperatorError
from nnperf.ir import GenericAttrs, Layer, Network, OpType, network_from_dict, network_to_dict
from nnperf.ir.importers import from_onnx
from nnperf.ir.metrics import layer_metrics
from nnperf.measure.backends import build_torch, layer_module, random_inputs
from nnperf.measure.backends._onnx_graph import build_onnx, layer_onnx


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
           inits: Sequence[onnx.TensorProto] = (), opset: int = 17) -> onnx.ModelProto:
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _x(shape: Sequence[int], name: str = "x", elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, list(shape))


def _y(name: str = "y", elem: int = TensorProto.FLOAT, rank: int = 4) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, [f"d{i}" for i in range(rank)])


def _i64(name: str, values: Sequence[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _f32(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


def _scalar(name: str, value: float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.float32), name)


X = (1, 4, 6, 5)
CASES: dict[str, tuple[list[onnx.NodeProto], Sequence[onnx.TensorProto], int]] = {
    "ReduceSum": ([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)], [_i64("axes", [2, 3])], 17),
    "ReduceL2": ([helper.make_node("ReduceL2", ["x"], ["y"], axes=[1], keepdims=0)], [], 17),
    "ReduceMin": ([helper.make_node("ReduceMin", ["x"], ["y"], axes=[3], keepdims=1)], [], 17),
    "ReduceSum at opset 11": ([helper.make_node("ReduceSum", ["x"], ["y"], axes=[1], keepdims=1)], [], 11),
    "Neg": ([helper.make_node("Neg", ["x"], ["y"])], [], 17),
    "Abs": ([helper.make_node("Abs", ["x"], ["y"])], [], 17),
    "Sqrt": ([helper.make_node("Sqrt", ["x"], ["y"])], [], 17),
    "Reciprocal": ([helper.make_node("Reciprocal", ["x"], ["y"])], [], 17),
    "Erf": ([helper.make_node("Erf", ["x"], ["y"])], [], 17),
    "Tile": ([helper.make_node("Tile", ["x", "r"], ["y"])], [_i64("r", [1, 2, 1, 3])], 17),
    "LogSoftmax": ([helper.make_node("LogSoftmax", ["x"], ["y"], axis=2)], [], 17),
    "Einsum": ([helper.make_node("Einsum", ["x", "x"], ["y"], equation="bchw,bcvw->bchv")], [], 17),
    "Where on a comparison": ([helper.make_node("Greater", ["x", "half"], ["m"]),
                               helper.make_node("Where", ["m", "x", "zero"], ["y"])],
                              [_scalar("half", 0.5), _scalar("zero", 0.0)], 17),
    "Equal, Not and a cast back": ([helper.make_node("Less", ["x", "half"], ["m"]),
                                    helper.make_node("Not", ["m"], ["n"]),
                                    helper.make_node("Cast", ["n"], ["y"], to=TensorProto.FLOAT)],
                                   [_scalar("half", 0.5)], 17),
    "Mul by a full-size constant": ([helper.make_node("Mul", ["x", "s"], ["y"])],
                                    [_f32("s", np.linspace(0, 1, 120).reshape(X))], 17),
    "Conv 1-D": ([helper.make_node("Reshape", ["x", "shape"], ["r"]),
                  helper.make_node("Conv", ["r", "w"], ["y"], pads=[1, 1])],
                 [_i64("shape", [1, 4, 30]), _f32("w", np.linspace(-1, 1, 24).reshape(2, 4, 3))], 17),
    "CumSum": ([helper.make_node("CumSum", ["x", "axis"], ["y"])], [_i64("axis", [3])], 17),
    "MaxPool 1-D with SAME padding": ([helper.make_node("Reshape", ["x", "shape"], ["r"]),
                                       helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3], strides=[2],
                                                        auto_pad="SAME_UPPER")], [_i64("shape", [1, 4, 30])], 17),
    "Slice on two axes": ([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])],
                          [_i64("s", [1, 0]), _i64("e", [3, -1]), _i64("a", [1, 3])], 17),
    "Gelu tanh at opset 20": ([helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")], [], 20),
}
"""case -> (nodes reading 'x' (1x4x6x5 float) and writing 'y', stored operands, opset)"""

OUTPUT_RANK = {"ReduceL2": 3, "Conv 1-D": 3, "MaxPool 1-D with SAME padding": 3}
"""cases whose output is not 4-D"""

NO_TORCH_FORM: set[str] = set()
"""Cases whose generic layer only ONNX Runtime runs (the torch builder names it and the way out)."""


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Network]]:
    found = {}
    for case, (nodes, inits, opset) in CASES.items():
        path = tmp_path_factory.mktemp("generic") / "model.onnx"
        onnx.save(_model(nodes, [_x(X)], [_y(rank=OUTPUT_RANK.get(case, 4))], inits, opset), str(path))
        found[case] = (path, from_onnx(path))
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_operator_without_a_dedicated_type_imports_as_a_generic_layer(
        case: str, imported: dict[str, tuple[Path, Network]]) -> None:
    _, network = imported[case]
    generic = [layer for layer in network.layers if layer.op is OpType.GENERIC]
    assert generic, [layer.op for layer in network.layers]
    operators = {layer.attrs.operator for layer in generic if isinstance(layer.attrs, GenericAttrs)}
    assert CASES[case][0][-1].op_type in operators


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_onnx_builder_computes_what_the_file_computes(case: str, imported: dict[str, tuple[Path, Network]]) -> None:
    path, network = imported[case]
    (x,) = random_inputs([X], seed=3)
    expected = _ort(onnx.load(str(path)), {"x": x})[0]
    got = _ort(build_onnx(network), {"x": x})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", sorted(set(CASES) - NO_TORCH_FORM))
def test_the_torch_builder_computes_what_the_file_computes(case: str, imported: dict[str, tuple[Path, Network]]) -> None:
    path, network = imported[case]
    (x,) = random_inputs([X], seed=3)
    expected = _ort(onnx.load(str(path)), {"x": x})[0]
    got = build_torch(network)(torch.from_numpy(x))
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_a_generic_layer_without_a_torch_form_names_the_backend_that_runs_it(tmp_path: Path) -> None:
    nodes = [helper.make_node("Hardmax", ["x"], ["y"], axis=1)]
    onnx.save(_model(nodes, [_x(X)], [_y()]), str(tmp_path / "m.onnx"))
    with pytest.raises(UnsupportedOperatorError, match="ONNX Hardmax has no PyTorch form here; measure it with "
                                                       "--backend onnxruntime"):
        build_torch(from_onnx(tmp_path / "m.onnx"))


def test_an_isolated_generic_layer_reading_booleans_gets_boolean_inputs(
        imported: dict[str, tuple[Path, Network]]) -> None:
    _, network = imported["Where on a comparison"]
    where = next(layer for layer in network.layers
                 if isinstance(layer.attrs, GenericAttrs) and layer.attrs.operator == "Where")
    assert where.attrs.input_types == (TensorProto.BOOL, TensorProto.FLOAT)  # type: ignore[union-attr]
    session = ort.InferenceSession(layer_onnx(where).SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"in0": np.array([[[[True] * 5] * 6] * 4]), "in1": np.full(X, 2.0, np.float32)}
    assert _ort(layer_onnx(where), feeds)[0].min() == 2.0
    assert session.get_inputs()[0].type == "tensor(bool)"
    out = layer_module(where)(torch.from_numpy(feeds["in0"]), torch.from_numpy(feeds["in1"]))
    assert float(out.min()) == 2.0


def test_both_outputs_of_a_topk_head_are_layers(tmp_path: Path) -> None:
    nodes = [helper.make_node("Flatten", ["x"], ["f"]),
             helper.make_node("TopK", ["f", "k"], ["values", "indices"], axis=1)]
    model = _model(nodes, [_x(X)], [_y("values", rank=2), _y("indices", TensorProto.INT64, rank=2)], [_i64("k", [3])])
    path = tmp_path / "topk.onnx"
    onnx.save(model, str(path))
    network = from_onnx(path)
    topk = [layer for layer in network.layers if layer.op is OpType.GENERIC]
    assert [(layer.output_shape, layer.attrs.output_index, layer.attrs.output_type)  # type: ignore[union-attr]
            for layer in topk] == [((1, 3), 0, TensorProto.FLOAT), ((1, 3), 1, TensorProto.INT64)]
    (x,) = random_inputs([X], seed=1)
    values, indices = _ort(model, {"x": x})
    got_values, got_indices = build_torch(network)(torch.from_numpy(x))
    np.testing.assert_allclose(got_values.numpy(), values, rtol=1e-6)
    np.testing.assert_array_equal(got_indices.numpy(), indices)
    built = _ort(build_onnx(network), {"x": x})
    np.testing.assert_array_equal(built[1], indices)


def test_a_generic_layer_survives_the_json_round_trip(imported: dict[str, tuple[Path, Network]]) -> None:
    _, network = imported["Tile"]
    assert network_from_dict(network_to_dict(network)) == network


def test_generic_metrics_count_the_larger_side_and_the_stored_operands(
        imported: dict[str, tuple[Path, Network]]) -> None:
    _, network = imported["Tile"]  # 1x4x6x5 = 120 read, tiled x2 x3 = 720 written, 4 repeats stored
    tile = next(layer for layer in network.layers if layer.op is OpType.GENERIC)
    m = layer_metrics(tile)
    assert (m.macs, m.ops, m.params, m.n_input, m.n_output) == (0, 720, 4, 120, 720)
    assert m.mem_ops == 120 + 4 + 720


@pytest.mark.parametrize(("operator", "reads"), [("Gather", 30), ("Slice", 30), ("Tile", 120)])
def test_a_selecting_generic_layer_reads_only_what_it_keeps(operator: str, reads: int) -> None:
    # Swin's q = qkv[0]: a scalar-index Gather keeps one of the leading axis's entries, 30 of 120 here
    attrs = GenericAttrs(operator, "", (1,), 1, 0, stored_elements=1, opset=17)
    layer = Layer("g", OpType.GENERIC, ("x",), ((4, 6, 5),), (6, 5), attrs)
    m = layer_metrics(layer)
    assert (m.macs, m.params, m.n_input, m.n_output) == (0, 1, reads, 30)
    assert m.ops == max(reads, 30) and m.mem_ops == reads + 1 + 30


def test_strict_refuses_what_would_be_generic(tmp_path: Path) -> None:
    nodes, inits, opset = CASES["ReduceSum"]
    path = tmp_path / "m.onnx"
    onnx.save(_model(nodes, [_x(X)], [_y()], inits, opset), str(path))
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(path, strict=True)
    assert info.value.operators == {"ReduceSum": ["ReduceSum_0"]}


def test_an_operator_whose_output_shape_is_unknown_is_refused_with_the_reason(tmp_path: Path) -> None:
    nodes = [helper.make_node("FooOp", ["x"], ["y"], name="foo", domain="my.ops")]
    model = _model(nodes, [_x(X)], [_y()])
    model.opset_import.append(helper.make_opsetid("my.ops", 1))
    onnx.save(model, str(tmp_path / "m.onnx"))
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(tmp_path / "m.onnx")
    ((reason, nodes),) = info.value.operators.items()  # ONNX Runtime cannot run it either, and says why
    assert nodes == ["foo"]
    assert reason.startswith("FooOp (its output shape cannot be inferred, and ONNX Runtime cannot run the file to "
                             "find it: ")
    assert "my.ops:FooOp(-1) is not a registered function/op" in reason


def test_an_if_whose_branches_read_outer_tensors_is_a_generic_layer_that_runs(tmp_path: Path) -> None:
    # the branches read x and a stored scale from outside: the layer takes them as its own inputs
    then_branch = helper.make_graph([helper.make_node("Mul", ["x", "scale"], ["t"])], "then", [], [_x(X, "t")])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_x(X, "e")])
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
             helper.make_node("Greater", ["m", "half"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_branch, else_branch=else_branch)]
    model = _model(nodes, [_x(X)], [_x(X, "y")], [_scalar("half", 0.5), _scalar("scale", 3.0)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    network = from_onnx(tmp_path / "m.onnx")
    branch = network.layer("branch")
    assert (branch.op, branch.attrs.operator, branch.inputs) == (OpType.GENERIC, "If", ("Greater_1", "x"))  # type: ignore[union-attr]
    for x in (np.full(X, 0.9, np.float32), np.full(X, 0.1, np.float32)):  # both branches
        np.testing.assert_allclose(_ort(build_onnx(network), {"x": x})[0], _ort(model, {"x": x})[0])


def test_a_generic_layer_with_a_large_stored_operand_gets_random_values_of_its_shape(tmp_path: Path) -> None:
    big = np.ones((4, 40000), np.float32)  # larger than the importer loads: only its shape is kept
    nodes = [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Einsum", ["f", "w"], ["y"],
                                                                         equation="bi,oi->bo")]
    model = _model(nodes, [_x((1, 4, 100, 100))], [_y(rank=2)], [_f32("w", big)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    network = from_onnx(tmp_path / "m.onnx")
    einsum = next(layer for layer in network.layers if layer.op is OpType.GENERIC)
    assert isinstance(einsum.attrs, GenericAttrs) and einsum.attrs.stored_elements == 160000
    assert einsum.output_shape == (1, 4)
    out = layer_module(einsum)(torch.rand(1, 40000))
    assert tuple(out.shape) == (1, 4)


def test_inspect_names_the_generic_layers_and_strict_refuses_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_helpers import assert_error, run_cli

    nodes, inits, opset = CASES["Where on a comparison"]
    path = tmp_path / "where.onnx"
    onnx.save(_model(nodes, [_x(X)], [_y()], inits, opset), str(path))
    code, out, err = run_cli(capsys, "inspect", str(path))
    assert code == 0, err
    assert "2 generic layer(s), ONNX operators without a dedicated layer type: Greater (Greater_0); Where (Where_1)" \
        in " ".join(out.split())
    code, _, err = run_cli(capsys, "inspect", str(path), "--strict")
    assert_error(code, err, str(path), "Greater (Greater_0)", "Where (Where_1)")


def test_a_size_that_depends_on_values_is_taken_from_one_run_with_a_warning(tmp_path: Path) -> None:
    # NonZero's row count depends on the data: shape inference leaves it unknown, one run of ONNX Runtime gives it
    nodes = [helper.make_node("Greater", ["x", "half"], ["m"]), helper.make_node("NonZero", ["m"], ["y"])]
    model = _model(nodes, [_x(X)], [_y(elem=TensorProto.INT64, rank=2)], [_scalar("half", 0.5)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    with pytest.warns(NnperfWarning, match="shape inference left 1 tensor size\\(s\\) unknown \\(NonZero: .*\\); "
                                           "nnperf took them from one run of ONNX Runtime on random inputs"):
        network = from_onnx(tmp_path / "m.onnx")
    nonzero = network.layers[-1]
    expected = int((random_inputs([X])[0] > 0.5).sum())  # the run's inputs: [0, 1) floats of seed 0
    assert (nonzero.attrs.operator, nonzero.output_shape) == ("NonZero", (4, expected))  # type: ignore[union-attr]


def test_a_generic_layer_reading_and_writing_scalars_runs_in_both_builders(tmp_path: Path) -> None:
    # the IR holds rank-0 tensors as one-element vectors; the node still reads and writes scalars
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Sqrt", ["s"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "axes"], ["y"])]
    model = _model(nodes, [_x(X)], [_y(rank=2)], [_i64("axes", [0, 1])])
    onnx.save(model, str(tmp_path / "m.onnx"))
    network = from_onnx(tmp_path / "m.onnx")
    assert [layer.output_shape for layer in network.layers] == [(1,), (1,), (1, 1)]
    (x,) = random_inputs([X], seed=2)
    expected = _ort(model, {"x": x})[0]
    np.testing.assert_allclose(_ort(build_onnx(network), {"x": x})[0], expected, rtol=1e-6)
    np.testing.assert_allclose(build_torch(network)(torch.from_numpy(x)).numpy(), expected, rtol=1e-6)


def test_a_node_whose_shapes_break_its_dedicated_type_becomes_a_generic_layer(tmp_path: Path) -> None:
    # a matrix times a vector: the MATMUL layer type takes operands of rank 2 or more
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "v"], ["y"])], "g", [_x((2, 4)), _x((4,), "v")],
                              [_y(rank=1)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    (layer,) = from_onnx(tmp_path / "m.onnx").layers
    assert (layer.name, layer.op, layer.output_shape) == ("MatMul_0", OpType.GENERIC, (2,))
    with pytest.raises(InvalidNetworkError, match="node 'MatMul_0'.*rank 2 or more"):
        from_onnx(tmp_path / "m.onnx", strict=True)


def test_opencv_names_the_generic_layers_it_cannot_run(imported: dict[str, tuple[Path, Network]]) -> None:
    from nnperf.measure.backends import create_backend

    _, network = imported["Where on a comparison"]
    with create_backend("opencv") as backend, pytest.raises(UnsupportedOperatorError) as info:
        backend.network_timer(network)
    assert set(info.value.operators) == {
        f"generic {op} (OpenCV DNN runs the dedicated layer types only; measure it with --backend onnxruntime)"
        for op in ("Greater", "Where")}
