"""Bad inputs to the CLI: one line on stderr starting 'nnperf: error:', a non-zero exit code, no traceback.

Uses tiny hand-built ONNX graphs and IR JSON dicts only; nothing here exports a zoo network.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cli_helpers import assert_error, run_cli
from nnperf.cli import main
from nnperf.ir import network_to_dict
from nnperf.ir.importers import from_onnx


def relu_model(op_type: str = "Relu", domain: str = "", node_name: str = "act") -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)
    node = helper.make_node(op_type, ["x"], ["y"], name=node_name, domain=domain)
    opsets = [helper.make_opsetid("", 17)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=opsets, ir_version=8)


def conv_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "W")
    b = numpy_helper.from_array(np.ones((4,), np.float32), "B")
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv", pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "g", [x], [y], initializer=[w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs the test inside tmp_path so relative file names can be given to the CLI."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def good_onnx(in_tmp: Path) -> Path:
    path = in_tmp / "good.onnx"
    onnx.save(relu_model(), str(path))
    return path


@pytest.fixture
def truncated_onnx(in_tmp: Path) -> Path:
    data = conv_model().SerializeToString()
    path = in_tmp / "truncated.onnx"
    path.write_bytes(data[: len(data) // 2])
    return path


def tiny_network_dict(shape: list[int]) -> dict[str, Any]:
    """One relu layer reading the input, written in network_to_dict's format."""
    return {
        "format": "nnperf-network",
        "version": 1,
        "name": "tiny",
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}],
        "layers": [
            {
                "name": "act",
                "op": "relu",
                "inputs": ["x"],
                "input_shapes": [shape],
                "output_shape": shape,
                "attrs": {},
            }
        ],
        "outputs": ["act"],
    }


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


# ---- sanity: the good cases work and the hand-written dict has the real format --------------------


def test_inspect_good_onnx_succeeds(capsys: pytest.CaptureFixture[str], good_onnx: Path) -> None:
    code, out, err = run_cli(capsys, "inspect", good_onnx.name, "--json")
    assert code == 0
    assert err == ""
    assert json.loads(out)  # machine-readable output


def test_hand_written_dict_matches_network_to_dict(good_onnx: Path) -> None:
    # guards the error tests below: the dict only differs from a real one by the bad dimension
    real = network_to_dict(from_onnx(good_onnx))
    real["name"] = "tiny"
    real["layers"][0]["name"] = "act"
    real["outputs"] = ["act"]
    assert real == tiny_network_dict([1, 3, 8, 8])


def test_inspect_hand_written_json_succeeds(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    path = write_json(in_tmp / "ok.json", tiny_network_dict([1, 3, 8, 8]))
    code, _out, err = run_cli(capsys, "inspect", str(path), "--json")
    assert code == 0, err
    assert err == ""


# ---- inspect: ONNX files -------------------------------------------------------------------------


def test_inspect_truncated_onnx(capsys: pytest.CaptureFixture[str], truncated_onnx: Path) -> None:
    code, _, err = run_cli(capsys, "inspect", truncated_onnx.name)
    assert_error(code, err, "truncated.onnx", "not a valid ONNX model")


def test_inspect_text_file_named_onnx(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    (in_tmp / "model.onnx").write_text("hello, this is not onnx\n")
    code, _, err = run_cli(capsys, "inspect", "model.onnx")
    assert_error(code, err, "model.onnx")


def test_inspect_empty_onnx(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    (in_tmp / "empty.onnx").write_bytes(b"")
    code, _, err = run_cli(capsys, "inspect", "empty.onnx")
    assert_error(code, err, "empty.onnx", "empty")


def test_inspect_unknown_operator_custom_domain(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    onnx.save(relu_model("FooOp", domain="my.ops", node_name="foo_1"), str(in_tmp / "foo.onnx"))
    code, _, err = run_cli(capsys, "inspect", "foo.onnx")
    assert_error(code, err, "foo.onnx", "FooOp", "foo_1", "unsupported")


def test_inspect_unknown_operator_default_domain(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    onnx.save(relu_model("FooOp", node_name="foo_1"), str(in_tmp / "foo.onnx"))
    code, _, err = run_cli(capsys, "inspect", "foo.onnx")
    assert_error(code, err, "foo.onnx", "FooOp")


def test_inspect_missing_onnx(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    code, _, err = run_cli(capsys, "inspect", "missing.onnx")
    assert_error(code, err, "missing.onnx", "no such file")


def test_inspect_dynamic_spatial_dims_suggest_input_shape(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    model = relu_model()
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[2].Clear()
    dims[2].dim_param = "H"
    onnx.save(model, str(in_tmp / "dyn.onnx"))
    code, _, err = run_cli(capsys, "inspect", "dyn.onnx")
    assert_error(code, err, "dyn.onnx", "--input-shape")
    # and the suggested fix works
    code, _out, err = run_cli(capsys, "inspect", "dyn.onnx", "--input-shape", "x=1x3x8x8", "--json")
    assert code == 0, err


def test_inspect_input_shape_for_unknown_input(capsys: pytest.CaptureFixture[str], good_onnx: Path) -> None:
    code, _, err = run_cli(capsys, "inspect", good_onnx.name, "--input-shape", "nope=1x3x8x8")
    assert_error(code, err, "good.onnx", "nope")


# ---- inspect: zoo names and other files ----------------------------------------------------------


def test_inspect_unknown_zoo_name_suggests_close_name(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    code, _, err = run_cli(capsys, "inspect", "resnet19")
    assert_error(code, err, "resnet19", "resnet18")


def test_inspect_zoo_name_with_input_shape(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    code, _, err = run_cli(capsys, "inspect", "resnet18", "--input-shape", "1x3x8x8")
    assert_error(code, err, "resnet18", "ONNX")


def test_inspect_existing_file_of_unknown_type(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    (in_tmp / "weights.pt").write_bytes(b"\x00\x01")
    code, _, err = run_cli(capsys, "inspect", "weights.pt")
    assert_error(code, err, "weights.pt", ".pt")


def test_inspect_json_that_is_not_a_network(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    write_json(in_tmp / "other.json", {"hello": "world"})
    code, _, err = run_cli(capsys, "inspect", "other.json")
    assert_error(code, err, "other.json", "not an nnperf network")


def test_inspect_json_list(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    write_json(in_tmp / "list.json", [1, 2, 3])
    code, _, err = run_cli(capsys, "inspect", "list.json")
    assert_error(code, err, "list.json", "not an nnperf network")


def test_inspect_file_that_is_not_json(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    (in_tmp / "broken.json").write_text("{not json")
    code, _, err = run_cli(capsys, "inspect", "broken.json")
    assert_error(code, err, "broken.json", "JSON")


def test_inspect_missing_json(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    code, _, err = run_cli(capsys, "inspect", "missing.json")
    assert_error(code, err, "missing.json", "no such file")


def test_inspect_json_of_newer_version(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    data = tiny_network_dict([1, 3, 8, 8])
    data["version"] = 99
    write_json(in_tmp / "v99.json", data)
    code, _, err = run_cli(capsys, "inspect", "v99.json")
    assert_error(code, err, "v99.json", "version 99")


@pytest.mark.parametrize(("label", "shape"), [("zero", [1, 3, 0, 8]), ("negative", [1, 3, -8, 8])])
def test_inspect_json_with_non_positive_dimension(capsys: pytest.CaptureFixture[str], in_tmp: Path, label: str,
                                                   shape: list[int]) -> None:
    write_json(in_tmp / f"{label}.json", tiny_network_dict(shape))
    code, _, err = run_cli(capsys, "inspect", f"{label}.json")
    line = assert_error(code, err, f"{label}.json", "'act'", "positive")
    assert "input" in line


def test_inspect_json_with_zero_dimension_in_network_input(capsys: pytest.CaptureFixture[str],
                                                            in_tmp: Path) -> None:
    data = tiny_network_dict([1, 3, 8, 8])
    data["inputs"][0]["shape"] = [1, 0, 8, 8]
    write_json(in_tmp / "zin.json", data)
    code, _, err = run_cli(capsys, "inspect", "zin.json")
    assert_error(code, err, "zin.json", "input 'x'", "positive")


def test_inspect_json_with_unknown_op(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    data = tiny_network_dict([1, 3, 8, 8])
    data["layers"][0]["op"] = "frobnicate"
    write_json(in_tmp / "badop.json", data)
    code, _, err = run_cli(capsys, "inspect", "badop.json")
    assert_error(code, err, "badop.json", "frobnicate")


def test_inspect_json_with_missing_key(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    data = tiny_network_dict([1, 3, 8, 8])
    del data["layers"][0]["output_shape"]
    write_json(in_tmp / "nokey.json", data)
    code, _, err = run_cli(capsys, "inspect", "nokey.json")
    assert_error(code, err, "nokey.json", "output_shape")


def test_inspect_json_with_dangling_producer(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    data = tiny_network_dict([1, 3, 8, 8])
    data["layers"][0]["inputs"] = ["ghost"]
    write_json(in_tmp / "ghost.json", data)
    code, _, err = run_cli(capsys, "inspect", "ghost.json")
    assert_error(code, err, "ghost.json", "'ghost'")


def _conv_dict(attrs: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(tiny_network_dict([1, 3, 8, 8]))
    data["layers"][0].update(op="conv", attrs=attrs, output_shape=[1, 4, 6, 6])
    return data


def test_inspect_json_conv_with_wrong_output_shape(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    data = _conv_dict({"kernel": [3, 3]})
    # a 3x3 conv without padding on 8x8 gives 6x6, not 5x5
    data["layers"][0]["output_shape"] = [1, 4, 5, 5]
    write_json(in_tmp / "conv.json", data)
    code, _, err = run_cli(capsys, "inspect", "conv.json")
    assert_error(code, err, "conv.json", "'act'", "6x6")


def test_inspect_json_conv_with_one_kernel_value(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    write_json(in_tmp / "conv1.json", _conv_dict({"kernel": [3]}))
    code, _, err = run_cli(capsys, "inspect", "conv1.json")
    assert_error(code, err, "conv1.json", "kernel")


def test_inspect_json_lrn_with_string_size(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    data = tiny_network_dict([1, 3, 8, 8])
    data["layers"][0].update(op="lrn", attrs={"size": "big"})
    write_json(in_tmp / "lrn.json", data)
    code, _, err = run_cli(capsys, "inspect", "lrn.json")
    assert_error(code, err, "lrn.json", "size")


# ---- inspect: options ----------------------------------------------------------------------------


def test_inspect_save_ir_into_missing_folder(capsys: pytest.CaptureFixture[str], good_onnx: Path) -> None:
    code, _, err = run_cli(capsys, "inspect", good_onnx.name, "--save-ir", "no_such_dir/net.json")
    assert_error(code, err, "no_such_dir")


@pytest.mark.parametrize("bad", ["1x0x3", "1x-3x8", "axb", ""])
def test_inspect_bad_input_shape_is_a_usage_error(capsys: pytest.CaptureFixture[str], in_tmp: Path,
                                                  bad: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", "x.onnx", "--input-shape", bad])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("usage: nnperf inspect")
    assert "--input-shape" in err
    assert f"bad shape {bad!r}" in err


def test_inspect_zero_in_input_shape_says_positive(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", "x.onnx", "--input-shape", "1x0x3"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        "nnperf inspect: error: argument --input-shape: bad shape '1x0x3': every size must be a positive integer"
    )


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str], truncated_onnx: Path) -> None:
    code, _, err = run_cli(capsys, "--debug", "inspect", truncated_onnx.name)
    assert code == 1
    assert "Traceback" in err
    assert "ModelFileError" in err
    # the one-line message still ends the output
    assert err.splitlines()[-1].startswith("nnperf: error: truncated.onnx")


# ---- export --------------------------------------------------------------------------------------


def test_export_needs_onnx_suffix(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    code, _, err = run_cli(capsys, "export", "resnet18", "out.txt")
    assert_error(code, err, "out.txt", ".onnx")
    assert not (in_tmp / "out.txt").exists()


def test_export_unknown_model(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    code, _, err = run_cli(capsys, "export", "nosuchnet", "x.onnx")
    assert_error(code, err, "nosuchnet", "unknown model")
    assert not (in_tmp / "x.onnx").exists()


def test_export_into_missing_folder(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    target = in_tmp / "nonexistent_dir" / "x.onnx"
    code, _, err = run_cli(capsys, "export", "resnet18", str(target))
    assert_error(code, err, str(in_tmp / "nonexistent_dir"), "does not exist")
    assert not target.parent.exists()


# ---- the real process ----------------------------------------------------------------------------


def test_subprocess_exit_code_and_clean_stderr(truncated_onnx: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nnperf", "inspect", str(truncated_onnx)],
        capture_output=True, text=True, timeout=120, check=False, cwd=truncated_onnx.parent,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("nnperf: error:")
    assert str(truncated_onnx) in lines[0]
    assert result.stdout == ""
