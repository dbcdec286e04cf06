"""Networks the graph builders rebuild from an ONNX file's IR compute what ONNX Runtime computes on the file.

Hand-built graphs for what kept networks from being verified: ONNX ``Shape`` had no torch form (Swin); a Gather by
a scalar index lost its rank in the rebuilt ONNX graph (a stored rank-0 index was written as a vector), so the
attention MatMuls of Swin and ViT and ViT's head Gemm were refused by ONNX Runtime; sizes stored as -1; an If on
a scalar input. Each rebuild, with the file's own parameters, is compared with ONNX Runtime on the file. With
``NNPERF_ONNX_CORPUS`` naming a folder, every ``*.onnx`` file under it must be verified on both backends (slow).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from nnperf.errors import NnperfWarning
from nnperf.ir import OpType
from nnperf.ir.importers import from_onnx, from_onnx_with_weights
from nnperf.measure.backends import build_onnx, build_torch, check_rebuild, random_inputs
from nnperf.measure.backends._onnx_graph import ONNX_NOT_BUILT
from nnperf.measure.backends._torch_graph import TORCH_NOT_BUILT

BACKENDS = Path(__file__).resolve().parents[2] / "src" / "nnperf" / "measure" / "backends"


def _save(path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
          outputs: list[onnx.ValueInfoProto], inits: Sequence[onnx.TensorProto] = (),
          value_info: Sequence[onnx.ValueInfoProto] = ()) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _v(name: str, shape: Sequence[int | str] | None, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def _f32(name: str, shape: Sequence[int], seed: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _i64(name: str, values: int | Sequence[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _assert_verified(path: Path, **kwargs: object) -> None:
    check = check_rebuild(str(path), **kwargs)  # type: ignore[arg-type]
    assert check.imported, check.error
    assert [b.backend for b in check.backends] == ["torch", "onnxruntime"]
    for backend in check.backends:
        assert backend.built and backend.ran, backend.error
        assert backend.relative_diff is not None and backend.relative_diff <= 1e-4, backend
    assert check.verified and check.weights_missing == ()


def test_shape_runs_on_torch(tmp_path: Path) -> None:
    # unfolded, Shape stays a generic layer: y = x * (sum of x's sizes after the first) = 12 x; and y2 = x * 5
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1), helper.make_node("Cast", ["s"], ["f"], to=1),
             helper.make_node("ReduceSum", ["f"], ["n"], keepdims=0), helper.make_node("Mul", ["x", "n"], ["y"]),
             helper.make_node("Shape", ["x"], ["last"], start=-1), helper.make_node("Cast", ["last"], ["g"], to=1),
             helper.make_node("Mul", ["x", "g"], ["y2"])]
    path = _save(tmp_path / "shape.onnx", nodes, [_v("x", [1, 3, 4, 5])], [_v("y", [1, 3, 4, 5]), _v("y2", [1, 3, 4, 5])])
    network = from_onnx(path, fold=False)
    assert sum(1 for layer in network.layers if layer.op is OpType.GENERIC and layer.attrs.operator == "Shape") == 2  # type: ignore[union-attr]
    (x,) = random_inputs([(1, 3, 4, 5)], seed=1)
    y, y2 = build_torch(network)(torch.from_numpy(x))
    np.testing.assert_allclose(y.numpy(), 12.0 * x, rtol=1e-6)
    np.testing.assert_allclose(y2.numpy(), 5.0 * x, rtol=1e-6)
    session = ort.InferenceSession(build_onnx(network).SerializeToString())
    np.testing.assert_allclose(session.run(None, {"x": x})[0], 12.0 * x, rtol=1e-6)


def _attention_with_a_head(path: Path) -> Path:
    """ViT's block as torch.onnx writes it: one projection to q, k and v, each picked by a Gather of a scalar
    index (which drops an axis), softmax(q k^T) v, then the class token picked by a scalar Gather into a Gemm."""
    tokens, dim, heads = 5, 8, 2
    nodes = [helper.make_node("MatMul", ["x", "w_qkv"], ["qkv0"]), helper.make_node("Add", ["qkv0", "b_qkv"], ["qkv"]),
             helper.make_node("Reshape", ["qkv", "split_shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4])]
    nodes += [helper.make_node("Gather", ["t", f"i{k}"], [name], axis=0) for k, name in enumerate("qkv")]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["scores"]),
              helper.make_node("Softmax", ["scores"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["o"]),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "merged"], ["m"]),
              helper.make_node("Gather", ["m", "i0"], ["cls"], axis=1),
              helper.make_node("Gemm", ["cls", "w_head", "b_head"], ["y"], name="head", transB=1)]
    inits = [_f32("w_qkv", (dim, 3 * dim), 0), _f32("b_qkv", (3 * dim,), 1), _f32("w_head", (10, dim), 2),
             _f32("b_head", (10,), 3), _i64("split_shape", [1, tokens, 3, heads, dim // heads]),
             _i64("merged", [1, tokens, dim]), _i64("i0", 0), _i64("i1", 1), _i64("i2", 2)]
    return _save(path, nodes, [_v("x", [1, tokens, dim])], [_v("y", [1, 10])], inits)


def test_attention_and_a_head_gemm_after_a_scalar_gather_rebuild_on_both_backends(tmp_path: Path) -> None:
    path = _attention_with_a_head(tmp_path / "attention.onnx")
    network, weights = from_onnx_with_weights(path)
    head = network.layer("head")
    assert (head.op, head.input_shapes, head.output_shape) == (OpType.LINEAR, ((1, 8),), (1, 10))
    matmuls = [layer for layer in network.layers if layer.op is OpType.MATMUL]
    assert [layer.input_shapes for layer in matmuls] == [((1, 2, 5, 4), (1, 2, 5, 4)), ((1, 2, 5, 5), (1, 2, 5, 4))]
    rebuilt = build_onnx(network, weights=weights.layers)
    index = {t.name: t for t in rebuilt.graph.initializer}[f"{network.layers[-2].name}/c0"]
    assert list(index.dims) == []  # the scalar index stays a scalar: the Gather keeps [1, 8], the Gemm's rank 2
    _assert_verified(path)


def test_sizes_stored_as_minus_one_rebuild_on_both_backends(tmp_path: Path) -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "w2"], ["y"], transB=1)]
    path = _save(tmp_path / "minus_one.onnx", nodes, [_v("x", ["N", 3, "H", "W"])], [_v("y", [-1, 4])],
                 [_f32("w", (8, 3, 3, 3), 0), _f32("w2", (4, 8), 1)],
                 [_v("c", [-1, 8, -1, -1]), _v("r", [-1, 8, -1, -1]), _v("f", [-1, 8])])
    _assert_verified(path, input_shapes={"x": (1, 3, 12, 10)})


def test_an_if_on_a_boolean_scalar_input_rebuilds_on_both_backends(tmp_path: Path) -> None:
    then_branch = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [_v("t", list("abcd"))])
    else_branch = helper.make_graph([helper.make_node("MaxPool", ["x"], ["e"], kernel_shape=[2, 2], strides=[2, 2])],
                                    "else", [], [_v("e", list("abcd"))])
    nodes = [helper.make_node("If", ["flag"], ["i"], then_branch=then_branch, else_branch=else_branch),
             helper.make_node("Sigmoid", ["i"], ["y"])]
    path = _save(tmp_path / "if.onnx", nodes, [_v("x", [1, 4, 8, 8]), _v("flag", [], TensorProto.BOOL)],
                 [_v("y", list("abcd"))])
    with pytest.warns(NnperfWarning, match="one run of ONNX Runtime"):
        _assert_verified(path)


def test_a_generic_layers_large_stored_operand_takes_the_files_values(tmp_path: Path) -> None:
    # too large for the importer to load: without the file's values the builders would draw random ones
    nodes = [helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Einsum", ["f", "w"], ["y"],
                                                                         equation="bi,oi->bo")]
    path = _save(tmp_path / "einsum.onnx", nodes, [_v("x", [1, 4, 100, 100])], [_v("y", [1, 4])],
                 [_f32("w", (4, 40000), 0)])
    _, weights = from_onnx_with_weights(path)
    (operands,) = weights.layers.values()
    assert list(operands) == ["w0"] and operands["w0"].shape == (4, 40000)
    _assert_verified(path)


@pytest.mark.parametrize(("module", "table", "not_built"), [("_torch_graph.py", "TORCH_BUILDERS", TORCH_NOT_BUILT),
                                                            ("_onnx_graph.py", "ONNX_BUILDERS", ONNX_NOT_BUILT)])
def test_each_builder_table_is_one_literal_bound_once(module: str, table: str, not_built: frozenset[OpType]) -> None:
    tree = ast.parse((BACKENDS / module).read_text())
    bindings = [node for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
                and any(isinstance(t, ast.Name) and t.id == table
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    assert len(bindings) == 1
    literal = bindings[0].value
    assert isinstance(literal, ast.Call) and isinstance(literal.args[0], ast.Dict)
    assert None not in literal.args[0].keys  # no **spread of another table
    assert len(literal.args[0].keys) == len(set(OpType) - not_built)  # every op type built, in that one literal


def _corpus_files() -> list[Path]:
    folder = os.environ.get("NNPERF_ONNX_CORPUS")
    return sorted(Path(folder).rglob("*.onnx")) if folder and Path(folder).is_dir() else []


@pytest.mark.slow
@pytest.mark.skipif(not _corpus_files(), reason="NNPERF_ONNX_CORPUS names no folder of .onnx files")
@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.name)
def test_every_corpus_file_is_verified_on_both_backends(path: Path) -> None:
    check = check_rebuild(str(path))
    assert check.verified, (check.error, check.weights_missing, check.backends)
