"""``nnperf profile --trace`` and ``nnperf predict --trace``: Chrome trace files that open in Perfetto.

Layer spans on the fake backend (its times are a formula, fast); the frameworks' own traces on torch and
ONNX Runtime profiling the tiny network whole (``--per-layer none`` or the profiler, a short budget).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import assert_error
from cli_helpers import run_cli as run
from networks import conv_net, tiny_network
from nnperf.ir import save_network
from nnperf.report.trace import LAYERS_TID, MEASURED_PID, NETWORK_TID, PREDICTED_PID
from report.chrome_trace import process_names, spans_on, validate_trace

QUICK = ["--budget-s", "0.02", "--target-ci", "0.1"]
NAMES = [layer.name for layer in tiny_network().layers]


@pytest.fixture(autouse=True)
def no_sentinel_warmup(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drift sentinel's half-second warm-up twice a campaign would be most of these tests' time."""
    monkeypatch.setattr("nnperf.campaign._measuring.SENTINEL_WARMUP_S", 0.0)


@pytest.fixture
def tiny_json(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    save_network(tiny_network(), path)
    return path


def read(path: Path) -> dict:
    doc = json.loads(path.read_text())
    validate_trace(doc)
    return doc


def test_profile_trace_of_layer_spans_holds_the_stored_medians(capsys, tiny_json: Path, tmp_path: Path) -> None:
    trace, db = tmp_path / "out" / "fake.json", str(tmp_path / "m.db")
    code, out, err = run(capsys, "profile", str(tiny_json), "--backend", "fake", "--db", db, "--trace", str(trace),
                         "--json", *QUICK)
    assert code == 0, err
    profile = json.loads(out)
    doc = read(trace)
    assert doc["otherData"]["source"] == "layers" and doc["otherData"]["run_id"] == profile["run_id"]
    assert process_names(doc) == {MEASURED_PID: "nnperf measured: fake/cpu[threads=1]"}
    (whole,) = spans_on(doc, MEASURED_PID, NETWORK_TID)
    assert whole["dur"] == pytest.approx(profile["whole_network"]["median_s"] * 1e6)
    layers = spans_on(doc, MEASURED_PID, LAYERS_TID)
    assert [s["name"] for s in layers] == NAMES
    assert [s["dur"] for s in layers] == pytest.approx([m["median_s"] * 1e6 for m in profile["layers"]])
    assert [s["args"]["op"] for s in layers] == [m["op"] for m in profile["layers"]]


def test_profile_trace_from_torch_profiler(capsys, tiny_json: Path, tmp_path: Path) -> None:
    trace = tmp_path / "torch.json"
    code, out, err = run(capsys, "profile", str(tiny_json), "--backend", "torch", "--per-layer", "profiler",
                       "--profiler-runs", "3", "--trace-runs", "2", "--db", str(tmp_path / "m.db"),
                       "--trace", str(trace), *QUICK)
    assert code == 0, err
    assert f"trace (framework) written to {trace}: open it in ui.perfetto.dev" in out
    doc = read(trace)
    assert doc["otherData"]["source"] == "framework" and doc["otherData"]["backend"] == "torch"
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    runs = [s for s in spans if s["name"] == "nnperf::run"]
    assert len(runs) == 2
    # every layer is a record_function span inside a run, on the run's thread
    first = runs[0]
    inside = {s["name"] for s in spans if s["tid"] == first["tid"]
              and first["ts"] <= s["ts"] and s["ts"] + s["dur"] <= first["ts"] + first["dur"]}
    assert set(NAMES) <= inside
    assert all(name.startswith("nnperf measured (torch profiler): torch/cpu") for name in process_names(doc).values())


def test_profile_trace_from_onnxruntime_and_layer_spans_on_request(capsys, tiny_json: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    trace = tmp_path / "ort.json"
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "onnxruntime", "--per-layer", "none",
                       "--trace-runs", "3", "--db", db, "--trace", str(trace), "--json", *QUICK)
    assert code == 0, err
    doc = read(trace)
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert sum(s["name"] == "model_run" for s in spans) == 3
    assert {"fc_kernel_time", "softmax_kernel_time"} <= {s["name"] for s in spans}
    # the profiler's medians as layer spans: a fused group once, its other members at zero length
    layers_trace = tmp_path / "ort-layers.json"
    code, out, err = run(capsys, "profile", str(tiny_json), "--backend", "onnxruntime", "--per-layer", "profiler",
                         "--profiler-runs", "3", "--trace-source", "layers", "--db", db, "--trace",
                         str(layers_trace), "--json", *QUICK)
    assert code == 0, err
    profile = json.loads(out)
    doc = read(layers_trace)
    layers = [s for s in spans_on(doc, MEASURED_PID, LAYERS_TID) if s["cat"] != "framework"]
    assert [s["name"] for s in layers] == NAMES
    first_of_group: set[str] = set()
    for span, m in zip(layers, profile["layers"]):
        group = m["group"] or m["layer"]
        expected = 0.0 if group in first_of_group else m["median_s"] * 1e6
        first_of_group.add(group)
        assert span["dur"] == pytest.approx(expected), span["name"]


def test_trace_options_that_cannot_work_are_refused_before_measuring(capsys, tiny_json: Path,
                                                                     tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "opencv", "--trace-source", "framework",
                       "--trace", str(tmp_path / "t.json"), "--db", str(db))
    assert_error(code, err, "backend 'opencv' writes no trace of its own", "--trace-source layers")
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "torch", "--trace-runs", "3", "--db", str(db))
    assert_error(code, err, "--trace-runs needs --trace FILE.json")
    csv = tmp_path / "power.csv"
    csv.write_text("time_s,power_w\n0,1\n")
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "torch", "--energy", str(csv), "--trace",
                       str(tmp_path / "t.json"), "--db", str(db))
    assert_error(code, err, "--energy TRACE.csv profiles nothing")
    assert not db.exists()


def test_a_trace_path_that_is_a_folder_is_a_one_line_error(capsys, tiny_json: Path, tmp_path: Path) -> None:
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "fake", "--db", str(tmp_path / "m.db"),
                       "--trace", str(tmp_path), *QUICK)
    assert code == 1 and err.splitlines()[-1] == f"nnperf: error: cannot write {tmp_path}: Is a directory"


@pytest.fixture
def calibrated(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> str:
    """A store with the fake backend calibrated on four small networks (as tests/cli/test_cli_predict.py on six)."""
    nets = [conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 16) for hw in (8, 16)]
    monkeypatch.setattr("nnperf.campaign._calibration.calibration_networks", lambda: nets)
    db = str(tmp_path / "m.db")
    code, _, err = run(capsys, "calibrate", "--backend", "fake", "--budget-s", "0.02", "--db", db)
    assert code == 0, err
    return db


def test_predict_trace_holds_the_predictions(capsys, tmp_path: Path, calibrated: str) -> None:
    net = tmp_path / "unseen.json"
    save_network(conv_net("unseen", 12, 12), net)
    trace = tmp_path / "predicted.json"
    code, out, err = run(capsys, "predict", str(net), "--backend", "fake", "--db", calibrated, "--trace", str(trace),
                         "--json")
    assert code == 0, err
    prediction = json.loads(out)
    doc = read(trace)
    assert process_names(doc) == {PREDICTED_PID: "nnperf predicted: fake/cpu[threads=1]"}
    (whole,) = spans_on(doc, PREDICTED_PID, NETWORK_TID)
    assert whole["dur"] == pytest.approx(prediction["latency_s"] * 1e6)
    assert whole["args"]["predictor"] == prediction["method"] == "composed"
    layers = spans_on(doc, PREDICTED_PID, LAYERS_TID)
    assert [s["name"] for s in layers] == ["a", "r", "add"]
    assert [s["dur"] for s in layers] == pytest.approx([p["latency_s"] * 1e6 for p in prediction["layers"]])
    # with --verify, the measured inference is a second process of the same file
    code, out, err = run(capsys, "predict", str(net), "--backend", "fake", "--db", calibrated, "--verify",
                         "--trace", str(trace))
    assert code == 0, err
    assert f"trace written to {trace}" in out
    doc = read(trace)
    assert process_names(doc) == {PREDICTED_PID: "nnperf predicted: fake/cpu[threads=1]",
                                  MEASURED_PID: "nnperf measured: fake/cpu[threads=1]"}
    assert [s["name"] for s in spans_on(doc, MEASURED_PID, LAYERS_TID)] == ["a", "r", "add"]
