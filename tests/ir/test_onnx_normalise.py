"""Graphs as other toolchains export them: shape computations folded into constants before mapping, constants of
one element read whatever their rank, and binary ops with broadcast constants.

Each graph here is one a real exporter writes (the comment says which); before the folding and the scalar reading
they were refused or stopped with an internal error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnperf.ir import OpType
from nnperf.ir.importers import from_onnx
from nnperf.ir.importers._onnx_fold import MAX_FOLDED_ELEMENTS, fold_constants


def vi(name: str, shape: list[int | str | None], dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name: str, value: object, dtype: type = np.int64) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def save(tmp_path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: dict[str, int],
         inits: list[onnx.TensorProto] = (), opset: int = 17) -> Path:  # type: ignore[assignment]
    """The graph saved with ``outputs`` (name -> rank; shape inference fills in the sizes)."""
    graph = helper.make_graph(nodes, "g", inputs, [vi(o, [None] * rank) for o, rank in outputs.items()],
                              initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    return path


def runs_in_ort(path: Path, shape: tuple[int, ...]) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": np.ones(shape, np.float32)})[0]


def chunk_graph(tmp_path: Path) -> Path:
    """``a, b = x.chunk(2, dim=1); y = a * 2 + b`` as torch's TorchScript exporter writes it for a dynamic batch:
    the half is Shape -> Gather -> Div -> Cast -> Unsqueeze, the Slice bounds are computed."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["channels"], axis=0),
        helper.make_node("Div", ["channels", "two"], ["half"]),
        helper.make_node("Cast", ["half"], ["half64"], to=TensorProto.INT64),
        helper.make_node("Unsqueeze", ["half64", "axis0"], ["half1"]),
        helper.make_node("Slice", ["x", "zero1", "half1", "axis1"], ["a"]),
        helper.make_node("Slice", ["x", "half1", "big", "axis1"], ["b"]),
        helper.make_node("Mul", ["a", "twof"], ["a2"]),
        helper.make_node("Add", ["a2", "b"], ["y"]),
    ]
    inits = [const("one", 1), const("two", 2), const("axis0", [0]), const("zero1", [0]), const("axis1", [1]),
             const("big", [2**62]), const("twof", 2.0, np.float32)]
    return save(tmp_path, nodes, [vi("x", ["batch", 16, 8, 8])], {"y": 4}, inits)


def test_slice_bounds_computed_from_the_shape_become_constants(tmp_path: Path) -> None:
    path = chunk_graph(tmp_path)
    net = from_onnx(path)
    slices = [layer for layer in net.layers if layer.op is OpType.SLICE]
    assert [(s.attrs.axis, s.attrs.start, s.attrs.end) for s in slices] == [(1, 0, 8), (1, 8, 16)]
    assert [s.output_shape for s in slices] == [(1, 8, 8, 8), (1, 8, 8, 8)]
    assert net.layers[-1].op is OpType.ADD and net.layers[-1].output_shape == (1, 8, 8, 8)
    assert runs_in_ort(path, (1, 16, 8, 8)).shape == (1, 8, 8, 8)  # the file itself is unchanged


def test_a_chunk_of_a_chunk_folds_in_a_second_round(tmp_path: Path) -> None:
    # the second half's bound comes from the shape of the first Slice, known only once that one is folded
    nodes = []
    for stage, source in enumerate(["x", "s0"]):
        nodes += [helper.make_node("Shape", [source], [f"shape{stage}"]),
                  helper.make_node("Gather", [f"shape{stage}", "one"], [f"c{stage}"], axis=0),
                  helper.make_node("Div", [f"c{stage}", "two"], [f"h{stage}"]),
                  helper.make_node("Unsqueeze", [f"h{stage}", "axis0"], [f"e{stage}"]),
                  helper.make_node("Slice", [source, "zero1", f"e{stage}", "axis1"], [f"s{stage}"])]
    inits = [const("one", 1), const("two", 2), const("axis0", [0]), const("zero1", [0]), const("axis1", [1])]
    net = from_onnx(save(tmp_path, nodes, [vi("x", ["batch", 16, 8, 8])], {"s1": 4}, inits), strict=True)
    assert [(layer.op, layer.output_shape) for layer in net.layers] == [(OpType.SLICE, (1, 8, 8, 8)),
                                                                        (OpType.SLICE, (1, 4, 8, 8))]


def test_a_reshape_target_computed_from_the_shape_becomes_a_constant(tmp_path: Path) -> None:
    """``x.view(x.size(0), -1)`` from a dynamic-batch export: Shape -> Gather -> Unsqueeze -> Concat."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axis0"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = [const("zero", 0), const("axis0", [0]), const("minus1", [-1])]
    net = from_onnx(save(tmp_path, nodes, [vi("x", ["batch", 4, 3, 3])], {"y": 2}, inits))
    assert [(layer.op, layer.output_shape) for layer in net.layers] == [(OpType.FLATTEN, (1, 36))]


def test_fold_constants_folds_the_chain_and_keeps_data_and_large_tensors(tmp_path: Path) -> None:
    model = onnx.load(str(chunk_graph(tmp_path)))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    big = MAX_FOLDED_ELEMENTS + 1
    model.graph.node.append(helper.make_node("ConstantOfShape", ["bigshape"], ["ones"],
                                             value=numpy_helper.from_array(np.ones(1, np.float32))))
    model.graph.initializer.append(const("bigshape", [big]))
    model.graph.output.append(vi("ones", [None]))
    shapes = {"x": (1, 16, 8, 8)}
    assert fold_constants(model, shapes) == 5  # Shape, Gather, Div, Cast, Unsqueeze
    assert [n.op_type for n in model.graph.node] == ["Slice", "Slice", "Mul", "Add", "ConstantOfShape"]
    folded = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert folded["half1"].tolist() == [8]
    assert "shape" not in folded  # read only by folded nodes: not kept
    assert fold_constants(model, shapes) == 0  # nothing left to fold


@pytest.mark.parametrize("value", [0.5, [0.5], [[0.5]]], ids=["rank-0", "[1]", "[1,1]"])
def test_add_and_sub_of_a_constant_of_any_one_element_shape(tmp_path: Path, value: object) -> None:
    """``conv(x) + k - 0.25`` with k a registered buffer: torch writes k as [1], Paddle2ONNX as [1, 1]."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "k"], ["s"]),
             helper.make_node("Sub", ["s", "q"], ["y"])]
    path = save(tmp_path, nodes, [vi("x", [1, 8, 4, 4])], {"y": 4},
                [const("k", value, np.float32), const("q", value, np.float32)])
    net = from_onnx(path)
    assert [layer.op for layer in net.layers] == [OpType.RELU, OpType.CONSTANT, OpType.ADD, OpType.CONSTANT,
                                                  OpType.SUB]
    assert net.layers[2].output_shape == net.layers[4].output_shape == (1, 8, 4, 4)
    assert runs_in_ort(path, (1, 8, 4, 4)).shape == (1, 8, 4, 4)


def test_a_constant_minus_an_activation_broadcasts(tmp_path: Path) -> None:
    """``1 - sigmoid(x)`` with a per-channel constant first (a gating block)."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Sub", ["c", "s"], ["y"])]
    net = from_onnx(save(tmp_path, nodes, [vi("x", [1, 8, 4, 4])], {"y": 4}, [const("c", np.ones((8, 1, 1)), np.float32)]))
    sub = net.layers[-1]
    assert sub.op is OpType.SUB and sub.input_shapes == ((8, 1, 1), (1, 8, 4, 4)) and sub.output_shape == (1, 8, 4, 4)


@pytest.mark.parametrize("bound", [[0.0], [[0.0]]], ids=["[1]", "[1,1]"])
def test_clip_bounds_of_one_element_any_rank_are_read_as_scalars(tmp_path: Path, bound: list[object]) -> None:
    """Paddle2ONNX writes Clip's min and max as [1]: reading them as Python floats raised TypeError before."""
    top = [[6.0]] if isinstance(bound[0], list) else [6.0]
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
    net = from_onnx(save(tmp_path, [node], [vi("x", [1, 8, 4, 4])], {"y": 4},
                         [const("lo", bound, np.float32), const("hi", top, np.float32)]))
    assert [layer.op for layer in net.layers] == [OpType.RELU6]


@pytest.mark.parametrize("fill", [0.0, [0.0], [[0.0]]], ids=["rank-0", "[1]", "[1,1]"])
def test_pad_fill_of_one_element_any_rank(tmp_path: Path, fill: object) -> None:
    """An attention block's padded key/value cache pads with a [1] fill (ONNX's expanded Attention tests)."""
    node = helper.make_node("Pad", ["x", "pads", "fill"], ["y"])
    net = from_onnx(save(tmp_path, [node], [vi("x", [1, 8, 4, 4])], {"y": 4},
                         [const("pads", [0, 0, 1, 1, 0, 0, 1, 1]), const("fill", fill, np.float32)]))
    assert [(layer.op, layer.attrs.value, layer.output_shape) for layer in net.layers] == [
        (OpType.PAD, 0.0, (1, 8, 6, 6))]


def conformance_sample() -> list[object]:
    """Every 24th of the ONNX project's conformance node models, and the expanded attention ones that once
    stopped with an internal error (the whole set is ``bench/onnx_conformance.py``)."""
    import warnings

    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    return [c for i, c in enumerate(cases) if i % 24 == 0 or (c.name.startswith("test_attention") and "padded" in c.name)]


@pytest.mark.slow
def test_conformance_models_import_or_are_refused_with_a_reason(tmp_path: Path) -> None:
    from nnperf.errors import NnperfError

    imported = refused = 0
    for case in conformance_sample():
        path = tmp_path / f"{case.name}.onnx"  # type: ignore[attr-defined]
        onnx.save(case.model, str(path))  # type: ignore[attr-defined]
        try:
            from_onnx(path)
            imported += 1
        except NnperfError as exc:
            assert str(exc).startswith(str(path)), exc  # names the file, then the reason
            refused += 1
    assert imported >= 5 and refused > 0  # anything else (an internal error) has failed the test already


def dynamic_image_model(tmp_path: Path, metadata: dict[str, str]) -> Path:
    """A conv net whose input's batch, height and width are symbolic, as Ultralytics and Paddle2ONNX export."""
    node = helper.make_node("Conv", ["images", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    path = save(tmp_path, [node], [vi("images", ["batch", 3, "height", "width"])], {"y": 4},
                [const("w", np.ones((8, 3, 3, 3)), np.float32)])
    model = onnx.load(str(path))
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize(("metadata", "shape"), [({"imgsz": "[640, 480]"}, (1, 3, 640, 480)),
                                                 ({"imgsz": "320"}, (1, 3, 320, 320)),
                                                 ({"input_shape": "[1, 3, 96, 128]"}, (1, 3, 96, 128))])
def test_a_size_the_exporter_recorded_is_used_with_a_warning(tmp_path: Path, metadata: dict[str, str],
                                                             shape: tuple[int, ...]) -> None:
    from nnperf.errors import NnperfWarning

    path = dynamic_image_model(tmp_path, metadata)
    with pytest.warns(NnperfWarning, match=f"uses {'x'.join(map(str, shape))} from the file's metadata"):
        net = from_onnx(path)
    assert net.inputs[0].shape == shape and net.layers[0].output_shape == (1, 8, *shape[2:])
    assert from_onnx(path, {"images": (1, 3, 64, 64)}).inputs[0].shape == (1, 3, 64, 64)  # asked: no hint


@pytest.mark.parametrize("metadata", [{}, {"imgsz": "[1, 1, 32, 32]"}, {"imgsz": "large"}, {"imgsz": "[0, 5]"}])
def test_without_a_usable_hint_a_dynamic_size_still_needs_the_input_shape(tmp_path: Path,
                                                                         metadata: dict[str, str]) -> None:
    """No metadata, a shape that contradicts the fixed 3 channels, text, a zero size: refused as before."""
    from nnperf.errors import ShapeInferenceError

    with pytest.raises(ShapeInferenceError, match="dynamic dimension 2 .height.; give its shape"):
        from_onnx(dynamic_image_model(tmp_path, metadata))


def test_the_cli_prints_the_choice_as_a_warning_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_helpers import run_cli

    code, out, err = run_cli(capsys, "inspect", str(dynamic_image_model(tmp_path, {"imgsz": "[64, 64]"})))
    assert code == 0 and "1x8x64x64" in out
    expected = (f"nnperf: warning: {tmp_path / 'model.onnx'}: input 'images' has dynamic sizes; nnperf uses "
                "1x3x64x64 from the file's metadata (imgsz=[64, 64]); give --input-shape to choose another")
    assert err.strip().splitlines() == [expected]
