"""What the command line asks of :mod:`nnperf.api` beyond the commands' main functions: errors worded with the
Python parameters (the CLI puts its options in their place), the documents it prints, a profile's trace and a power
analyser's trace turned into energies."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from cli_helpers import assert_error, run_cli, run_json
from harness_presets import SMOKE_HARNESS
from networks import tiny_network
from nnperf.api import (
    TRACE_RUNS,
    Store,
    accel_spec,
    accel_spec_yaml,
    attach_power_trace,
    inspect,
    load_model,
    partition,
    primitive_catalog,
    profile,
    profile_trace_source,
)
from nnperf.cli import profile_cmd
from nnperf.cli._main import option_names
from nnperf.cli._parser import build_parser
from nnperf.errors import ParameterError


def test_a_parameter_error_names_the_python_parameters_and_the_cli_its_options() -> None:
    error = ParameterError("give {parameter} and {values} together, not {parameter} alone", "parameter", "values")
    assert str(error) == "give parameter and values together, not parameter alone"
    assert error.worded({"parameter": "--param"}) == "give --param and values together, not --param alone"
    assert isinstance(error, ValueError)


def test_option_names_are_those_of_the_command_run() -> None:
    parser = build_parser()
    names = option_names(parser, parser.parse_args(["steps", "predict", "conv2d"]))
    assert {k: names[k] for k in ("kind", "parameter", "values", "models_of", "backend", "debug")} == {
        "kind": "KIND", "parameter": "--param", "values": "--range", "models_of": "--system", "backend": "--backend",
        "debug": "--debug"}
    names = option_names(parser, parser.parse_args(["partition", "alexnet"]))
    assert (names["model"], names["system"], names["client_power"]) == ("MODEL", "--system", "--client-power")
    assert "parameter" not in names  # another command's option
    assert option_names(parser, argparse.Namespace(command=None))["debug"] == "--debug"


def test_the_same_refusal_from_python_and_from_the_shell(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ParameterError) as info:
        partition(system=1)
    assert str(info.value) == "system partitions an IR network: name a model (zoo name, .onnx, .tflite or .json)"
    code, _, err = run_cli(capsys, "partition", "--system", "1")
    assert assert_error(code, err) == ("nnperf: error: --system partitions an IR network: name a MODEL (zoo name, "
                                       ".onnx, .tflite or .json)")
    with pytest.raises(ParameterError, match="^alexnet: input_shape applies to ONNX files only$"):
        load_model("alexnet", {"": (1, 3, 8, 8)})
    code, _, err = run_cli(capsys, "inspect", "alexnet", "--input-shape", "1x3x8x8")
    assert assert_error(code, err) == "nnperf: error: alexnet: --input-shape applies to ONNX files only"


def test_the_documents_the_cli_prints_are_the_apis(capsys: pytest.CaptureFixture[str]) -> None:
    catalog = primitive_catalog()
    assert run_json(capsys, "primitives", "list") == catalog.to_dict()
    assert len(catalog.layout_transforms) == len({p.input_layout for p in catalog.primitives}
                                                 | {p.output_layout for p in catalog.primitives}) ** 2
    found = inspect("alexnet", dtype="int8")
    document = run_json(capsys, "inspect", "alexnet", "--dtype", "int8")
    assert document == found.to_dict() and document["dtype"] == "int8"
    with pytest.raises(ParameterError, match="^dtype must be one of float32, float16, bfloat16, int8, got 'int4'$"):
        inspect("alexnet", dtype="int4")
    code, out, _ = run_cli(capsys, "accel", "spec", "--bits", "8")
    assert code == 0 and out == accel_spec_yaml(bits=8)
    assert yaml.safe_load(out) == accel_spec(bits=8).to_dict()


def test_a_trace_source_is_resolved_as_the_profile_help_says() -> None:
    assert profile_cmd.TRACE_RUNS == TRACE_RUNS == 5
    assert profile_trace_source("torch", "profiler") == "framework"
    assert profile_trace_source("torch", "isolated") == "layers"
    assert profile_trace_source("fake", "profiler") == "layers"  # the fake backend has no profiler
    assert profile_trace_source("fake", "none", "layers") == "layers"
    with pytest.raises(ParameterError, match="^backend 'opencv' writes no trace of its own; use trace_source "
                                             "layers$"):
        profile_trace_source("opencv", "profiler", "framework")
    with pytest.raises(ParameterError, match="^trace_source must be one of auto, framework, layers, got 'both'$"):
        profile_trace_source("torch", "isolated", "both")


def test_a_profile_writes_the_trace_of_its_stored_medians(tmp_path: Path) -> None:
    from nnperf.report.trace import measured_trace

    trace = tmp_path / "tiny.trace.json"
    network = tiny_network()
    report = profile(network, "fake", tmp_path / "m.db", harness=SMOKE_HARNESS, trace=trace)
    written = json.loads(trace.read_text())
    assert written == json.loads(json.dumps(measured_trace(network, report)))
    assert (written["otherData"]["source"], written["otherData"]["run_id"]) == ("layers", report.run_id)


def test_a_power_trace_becomes_energy_per_layer(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    profile(tiny_network(), "torch", db, harness=SMOKE_HARNESS, gap_s=0.01, model_name="tiny")
    with Store(db) as store:
        runs = store.runs(model="tiny")
        records = store.layer_measurements(run_id=runs[0].id)
    start, end = min(r.started_at for r in records) - 1.0, max(r.ended_at for r in records) + 1.0
    times = np.arange(0.0, end - start, 2e-5)
    csv = tmp_path / "analyser.csv"
    csv.write_text("time_s,power_w\n" + "".join(f"{t:.6f},3.0\n" for t in times))
    energies = attach_power_trace("tiny", csv, "torch", db, offset_s=start)
    assert [e.label for e in energies] == [r.layer for r in records]
    with Store(db) as store:
        for r in store.layer_measurements(run_id=runs[0].id):
            window_s = r.ended_at - r.started_at
            assert r.energy_j == pytest.approx(3.0 * window_s / (r.n * r.block_size), rel=0.05)
            assert r.power_meter == "trace:analyser.csv"
