"""The CLI's happy paths: zoo, inspect (table and JSON), export then inspect the file."""

from __future__ import annotations

import json

import pytest

from nnperf.cli import main


def test_inspect_prints_the_per_layer_table(capsys):
    assert main(["inspect", "resnet18"]) == 0
    out = capsys.readouterr().out
    assert "resnet18: 69 layers" in out
    for text in ("layer1.0.conv1", "conv/standard", "1x64x112x112", "1.81 G", "11.7 M", "total"):
        assert text in out


def test_inspect_json_totals(capsys):
    assert main(["inspect", "mobilenet_v1", "--json", "--dtype", "int8"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["format"], doc["version"], doc["dtype"]) == ("nnperf-inspect", 1, "int8")
    totals = doc["totals"]
    assert totals["macs"] == pytest.approx(569e6, rel=0.01)
    assert totals["params"] == 4_231_976
    assert totals["mem_bytes"] == totals["mem_ops"]  # one byte per int8 element
    assert sum(layer["macs"] for layer in doc["layers"]) == totals["macs"]
    depthwise = [layer for layer in doc["layers"] if layer["conv_kind"] == "depthwise"]
    assert len(depthwise) == 13


def test_zoo_lists_every_network(capsys):
    assert main(["zoo", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_name = {n["name"]: n for n in doc["networks"]}
    assert len(by_name) == 14 + 2 + 3 + 1  # + shufflenet, mobilenet v3; unet, convnext_tiny, vit_tiny; yolov8n
    assert [n["layers"] for n in doc["calibration_networks"]] == [52] * 4 + [44] + [55] * 4 + [62] * 4 + [69] * 4
    assert [n["layers"] for n in doc["block_calibration_networks"]] == [77] * 4
    assert not {n["name"] for n in doc["block_calibration_networks"]} & {n["name"] for n in doc["calibration_networks"]}
    assert by_name["vgg16"]["params"] == 138_357_544
    assert by_name["tiny_yolo_v2"]["input_shape"] == [1, 3, 416, 416]


def test_export_then_inspect_the_file(tmp_path, capsys):
    out = tmp_path / "sq.onnx"
    assert main(["export", "squeezenet1_1", str(out)]) == 0
    assert main(["inspect", "squeezenet1_1", "--json", "--save-ir", str(tmp_path / "sq.json")]) == 0
    capsys.readouterr()
    assert main(["inspect", str(out), "--json"]) == 0
    from_file = json.loads(capsys.readouterr().out)["totals"]
    assert main(["inspect", str(tmp_path / "sq.json"), "--json"]) == 0
    from_ir = json.loads(capsys.readouterr().out)["totals"]
    assert from_file == from_ir
    assert from_file["params"] == 1_235_496
