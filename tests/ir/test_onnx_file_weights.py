"""Files the importer refused, and a file's own parameters for its IR.

Two classes of real shipped files used to be refused: stored intermediate shapes that record a dynamic size as -1
(strict shape inference read them as a contradiction once the input's size was fixed), and an If on a scalar
input whose branches give different shapes (one run of ONNX Runtime gives them, but a boolean scalar input was
fed as numpy's bool_, which ONNX Runtime refuses). ViT-H/14 was refused too: a tensor folded into a constant
kept the symbolic shape an earlier inference gave it. ``from_onnx_with_weights`` gives the builders the file's own
parameters, in their layout, hand-checked here against the stored tensors.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnperf.errors import NnperfWarning, UnsupportedOperatorError
from nnperf.ir import OpType
from nnperf.ir.importers import from_onnx, from_onnx_with_weights
from nnperf.measure.backends import random_inputs


def _save(tmp_path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
          outputs: list[onnx.ValueInfoProto], inits: Sequence[onnx.TensorProto] = (),
          value_info: Sequence[onnx.ValueInfoProto] = (), opset: int = 17) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    return path


def _v(name: str, shape: Sequence[int | str] | None, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def _f32(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


def _conv_head(tmp_path: Path) -> Path:
    """Conv, ReLU, global pool, flatten: the exporter recorded every dynamic size of its tensors as -1."""
    weight = np.arange(8 * 3 * 3 * 3, dtype=np.float32).reshape(8, 3, 3, 3) / 100.0
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]), helper.make_node("Flatten", ["g"], ["y"])]
    return _save(tmp_path, nodes, [_v("x", ["N", 3, "H", "W"])], [_v("y", [-1, 8])], [_f32("w", weight)],
                 [_v("c", [-1, 8, -1, -1]), _v("r", [-1, 8, -1, -1])])


def test_sizes_stored_as_minus_one_are_unknown_not_a_contradiction(tmp_path: Path) -> None:
    network = from_onnx(_conv_head(tmp_path), input_shapes={"x": (1, 3, 16, 16)})
    assert [(layer.op, layer.output_shape) for layer in network.layers] == [
        (OpType.CONV, (1, 8, 16, 16)), (OpType.RELU, (1, 8, 16, 16)), (OpType.GLOBAL_AVG_POOL, (1, 8, 1, 1)),
        (OpType.FLATTEN, (1, 8))]


def _if_on_a_flag(tmp_path: Path, else_op: str = "MaxPool", domain: str | None = None) -> Path:
    """y = sigmoid(relu(x)) if flag else sigmoid(maxpool2x2(x)): the branch, and so the shape, is the flag's."""
    then_branch = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [_v("t", list("abcd"))])
    other = helper.make_node(else_op, ["x"], ["e"], kernel_shape=[2, 2], strides=[2, 2], domain=domain)
    else_branch = helper.make_graph([other], "else", [], [_v("e", list("abcd"))])
    nodes = [helper.make_node("If", ["flag"], ["i"], name="branch", then_branch=then_branch,
                              else_branch=else_branch), helper.make_node("Sigmoid", ["i"], ["y"])]
    path = _save(tmp_path, nodes, [_v("x", [1, 4, 8, 8]), _v("flag", [], TensorProto.BOOL)], [_v("y", list("abcd"))])
    if domain:
        model = onnx.load(str(path))
        model.opset_import.append(helper.make_opsetid(domain, 1))
        onnx.save(model, str(path))
    return path


def test_an_if_on_a_boolean_scalar_input_takes_its_shape_from_one_run(tmp_path: Path) -> None:
    path = _if_on_a_flag(tmp_path)
    with pytest.warns(NnperfWarning, match=r"shape inference left 2 tensor size\(s\) unknown \(If, Sigmoid"):
        network = from_onnx(path)
    x, flag = random_inputs([(1, 4, 8, 8), (1,)], 0, ["float32", "bool"])  # what the run and the backends feed
    expected = ort.InferenceSession(str(path)).run(None, {"x": x, "flag": flag.reshape(())})[0]
    assert expected.shape == ((1, 4, 8, 8) if flag[0] else (1, 4, 4, 4))
    assert [spec.shape for spec in network.inputs] == [(1, 4, 8, 8), (1,)]  # the scalar held as one element
    assert network.layer("branch").output_shape == expected.shape


def test_an_if_onnx_runtime_cannot_run_either_is_refused_saying_why(tmp_path: Path) -> None:
    path = _if_on_a_flag(tmp_path, "FooPool", "my.ops")
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(path)
    ((reason, nodes),) = info.value.operators.items()
    assert nodes == ["branch"]
    assert reason.startswith("If (its output shape cannot be inferred, and ONNX Runtime cannot run the file to find "
                             "it: ")


def test_a_pad_split_unlike_a_pad_layer_stays_the_node_it_is(tmp_path: Path) -> None:
    # Swin V2 pads its windows at the end only; a PAD layer keeps only the shape and pads half before
    def padded(pads: list[int]) -> OpType:
        nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant")]
        inits = [numpy_helper.from_array(np.array(pads, np.int64), "pads")]
        return from_onnx(_save(tmp_path, nodes, [_v("x", [1, 2, 5, 5])], [_v("y", list("abcd"))], inits)).layers[0].op

    assert padded([0, 0, 0, 0, 0, 0, 3, 3]) is OpType.GENERIC  # 0 before, 3 after
    assert padded([0, 0, 1, 1, 0, 0, 2, 2]) is OpType.PAD  # 1 before, 2 after: the layer's split
    assert padded([0, 0, 2, 2, 0, 0, 2, 2]) is OpType.PAD


def test_the_file_gives_its_layers_parameters_in_the_builders_layout(tmp_path: Path) -> None:
    w = np.arange(2 * 3 * 1 * 1, dtype=np.float32).reshape(2, 3, 1, 1)  # Conv: (Cout, Cin, kh, kw), as stored
    b = np.array([0.5, -0.5], np.float32)
    mean, var = np.array([1.0, 2.0], np.float32), np.array([4.0, 9.0], np.float32)
    gamma, beta = np.array([2.0, 3.0], np.float32), np.array([0.125, 0.25], np.float32)
    factors = np.array([4.0, 8.0], np.float32).reshape(2, 1, 1)  # Div by per-channel constants: a scale of 1/x
    gemm_b = np.arange(2 * 5, dtype=np.float32).reshape(2, 5)  # Gemm's B as (in, out), transB=0, alpha=2
    gemm_c = np.full((1, 5), 3.0, np.float32)  # beta=0.5
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"]),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"]),
             helper.make_node("Div", ["n", "factors"], ["d"]),
             helper.make_node("GlobalAveragePool", ["d"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "gemm_b", "gemm_c"], ["y"], name="head", alpha=2.0, beta=0.5)]
    inits = [_f32("w", w), _f32("b", b), _f32("gamma", gamma), _f32("beta", beta), _f32("mean", mean),
             _f32("var", var), _f32("factors", factors), _f32("gemm_b", gemm_b), _f32("gemm_c", gemm_c)]
    path = _save(tmp_path, nodes, [_v("x", [1, 3, 4, 4])], [_v("y", [1, 5])], inits)
    network, weights = from_onnx_with_weights(path)
    conv, norm, scale, _, _, head = (weights.layers.get(layer.name) for layer in network.layers)
    assert conv is not None and norm is not None and scale is not None and head is not None
    np.testing.assert_array_equal(conv["weight"], w)
    np.testing.assert_array_equal(conv["bias"], b)
    assert {k: v.tolist() for k, v in norm.items()} == {"weight": [2.0, 3.0], "bias": [0.125, 0.25],
                                                        "mean": [1.0, 2.0], "var": [4.0, 9.0]}
    assert scale["scale"].tolist() == [0.25, 0.125]
    np.testing.assert_array_equal(head["weight"], 2.0 * gemm_b.T)  # (out, in)
    assert head["bias"].tolist() == [1.5] * 5
    assert weights.missing == ()
    assert weights.tensors[network.layers[-1].name] == "y"


def test_a_bias_the_file_computes_from_stored_tensors_comes_from_one_run(tmp_path: Path) -> None:
    # Swin V2's qkv bias: the stored bias with its key part zeroed by a ScatterND, which the folding leaves
    bias = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("ScatterND", ["bias", "at", "zero"], ["zeroed"]),
             helper.make_node("Add", ["zeroed", "m"], ["y"])]
    inits = [_f32("w", np.eye(3, 4)), _f32("bias", bias),
             numpy_helper.from_array(np.array([[1], [2]], np.int64), "at"), _f32("zero", np.zeros(2))]
    network, weights = from_onnx_with_weights(_save(tmp_path, nodes, [_v("x", [1, 6, 3])], [_v("y", [1, 6, 4])],
                                                    inits))
    (linear,) = network.layers
    assert linear.op is OpType.LINEAR
    assert weights.layers[linear.name]["bias"].tolist() == [1.0, 0.0, 0.0, 4.0]
    np.testing.assert_array_equal(weights.layers[linear.name]["weight"], np.eye(3, 4, dtype=np.float32).T)


def test_a_folded_tensor_loses_the_symbolic_shape_an_earlier_inference_gave_it(tmp_path: Path) -> None:
    # ViT's class token expanded to the batch by a shape computed through Where: the first inference gives the
    # expansion symbolic sizes; once it is folded into a stored (1, 1, 4) tensor, the Concat after it is (1, 6, 4)
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "zero_axis"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus_one", "four"], ["target"], axis=0),
             helper.make_node("Equal", ["target", "minus_ones"], ["is_free"]),
             helper.make_node("Where", ["is_free", "ones", "target"], ["size"]),
             helper.make_node("Expand", ["token", "size"], ["tokens"]),
             helper.make_node("Concat", ["tokens", "x"], ["y"], name="join", axis=1)]
    inits = [numpy_helper.from_array(np.array(v, np.int64), name) for name, v in
             [("zero", 0), ("zero_axis", [0]), ("minus_one", [-1]), ("four", [4]), ("minus_ones", [-1, -1, -1]),
              ("ones", [1, 1, 1])]] + [_f32("token", np.arange(4.0).reshape(1, 1, 4))]
    path = _save(tmp_path, nodes, [_v("x", [1, 5, 4])], [_v("y", [1, "t", 4])], inits)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NnperfWarning)  # no run of ONNX Runtime needed: the shape is inferred
        network = from_onnx(path)
    assert network.layer("join").output_shape == (1, 6, 4)
