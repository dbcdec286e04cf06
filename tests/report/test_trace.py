"""Chrome trace files (nnperf.report.trace): layer spans of a hand-made profile and prediction, the
frameworks' own traces of a tiny network (torch, ONNX Runtime), and the validator the tests rely on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from networks import tiny_network
from nnperf.campaign import ProfileReport
from nnperf.errors import OutputFileError
from nnperf.measure import LayerMeasurement, Method, NetworkMeasurement, fixed_timing
from nnperf.measure.backends import create_backend
from nnperf.prediction import LayerPrediction, NetworkPrediction, Verification
from nnperf.registry import UnavailableError
from nnperf.report.trace import (
    LAYERS_TID,
    MEASURED_PID,
    NETWORK_TID,
    PREDICTED_PID,
    framework_trace,
    measured_trace,
    predicted_trace,
    write_trace,
)
from report.chrome_trace import process_names, spans_on, validate_trace

NET = tiny_network()
NAMES = [layer.name for layer in NET.layers]


def layer_times_s() -> dict[str, float]:
    """A distinct median for each layer: 1 us, 2 us, ..., 12 us in network order."""
    return {name: (i + 1) * 1e-6 for i, name in enumerate(NAMES)}


def report_of(layers: tuple[LayerMeasurement, ...], whole_s: float = 70e-6,
              unattributed_s: dict[str, float] | None = None) -> ProfileReport:
    whole = NetworkMeasurement(fixed_timing([whole_s * 0.9, whole_s, whole_s * 1.1]))
    return ProfileReport("fake/cpu[threads=1]", "abc123", 7, False, whole, layers, "isolated",
                         unattributed_s=unattributed_s or {})


def isolated_layers() -> tuple[LayerMeasurement, ...]:
    times = layer_times_s()
    return tuple(LayerMeasurement(layer.name, layer.op.value, Method.ISOLATED,
                                  fixed_timing([times[layer.name]] * 3), layer.name) for layer in NET.layers)


def test_measured_trace_lays_the_medians_end_to_end_beside_the_whole_network() -> None:
    doc = measured_trace(NET, report_of(isolated_layers()))
    validate_trace(doc)
    assert process_names(doc) == {MEASURED_PID: "nnperf measured: fake/cpu[threads=1]"}
    (whole,) = spans_on(doc, MEASURED_PID, NETWORK_TID)
    assert (whole["name"], whole["ts"], whole["dur"]) == ("tiny", 0.0, pytest.approx(70.0))
    layers = spans_on(doc, MEASURED_PID, LAYERS_TID)
    assert [s["name"] for s in layers] == NAMES
    assert [s["dur"] for s in layers] == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0,
                                                        12.0])
    # each starts where the one before ends: 0, 1, 1+2, 1+2+3, ...
    assert [s["ts"] for s in layers] == pytest.approx([i * (i + 1) / 2 for i in range(12)])
    conv1 = layers[0]["args"]
    assert conv1["op"] == "conv" and conv1["input_shapes"] == ["1x3x16x16"] and conv1["output_shape"] == "1x8x16x16"
    assert conv1["macs"] == 3 * 3 * 3 * (8 * 16 * 16) + 8 * 16 * 16  # kh kw Cin per output, plus the bias
    assert conv1["median_s"] == pytest.approx(1e-6) and conv1["ci_low_s"] <= 1e-6 <= conv1["ci_high_s"]
    assert doc["displayTimeUnit"] == "ms"
    assert doc["otherData"].items() >= {"format": "nnperf-trace", "version": 1, "source": "layers",
                                        "run_id": 7}.items()


def test_a_fused_group_shows_its_time_once_and_framework_nodes_come_last() -> None:
    times = layer_times_s()
    fused = {"conv1", "bn1", "relu1"}
    layers = tuple(
        LayerMeasurement(layer.name, layer.op.value, Method.PROFILER,
                         fixed_timing([(30e-6 if layer.name in fused else times[layer.name])] * 3),
                         "conv1" if layer.name in fused else layer.name, 3 if layer.name in fused else 1)
        for layer in NET.layers)
    doc = measured_trace(NET, report_of(layers, unattributed_s={"ReorderOutput": 5e-6}))
    validate_trace(doc)
    spans = spans_on(doc, MEASURED_PID, LAYERS_TID)
    assert [s["name"] for s in spans] == NAMES + ["ReorderOutput"]
    assert [(s["dur"], s["cat"]) for s in spans[:4]] == [(pytest.approx(30.0), "layer"), (0.0, "fused"),
                                                         (0.0, "fused"), (pytest.approx(4.0), "layer")]
    assert spans[1]["ts"] == spans[2]["ts"] == spans[3]["ts"] == pytest.approx(30.0)
    assert spans[1]["args"]["fused_group"] == "conv1" and spans[1]["args"]["group_size"] == 3
    # the node outside the IR starts after every layer: 30 us for the group, then 4 + 5 + ... + 12 us
    assert spans[-1]["cat"] == "framework" and spans[-1]["ts"] == pytest.approx(30 + sum(range(4, 13)))
    assert spans[-1]["dur"] == pytest.approx(5.0)


def prediction(fused: frozenset[str] = frozenset()) -> NetworkPrediction:
    times = layer_times_s()
    layers = tuple(LayerPrediction(layer.name, layer.op.value, layer.op.value, 2 * times[layer.name])
                   for layer in NET.layers)
    return NetworkPrediction("tiny", "torch/cpu[threads=1]", layers, {"composed": 150e-6, "previous": 160e-6},
                             coefficient_c=1.03, fused_layers=fused)


def test_predicted_trace_shows_the_predictions_with_fused_layers_at_zero_length() -> None:
    doc = predicted_trace(NET, prediction(frozenset({"relu1"})))
    validate_trace(doc)
    assert process_names(doc) == {PREDICTED_PID: "nnperf predicted: torch/cpu[threads=1]"}
    (whole,) = spans_on(doc, PREDICTED_PID, NETWORK_TID)
    assert whole["dur"] == pytest.approx(150.0) and whole["args"]["predictor"] == "composed"
    assert whole["args"]["network_predictions_s"] == {"composed": 150e-6, "previous": 160e-6}
    spans = spans_on(doc, PREDICTED_PID, LAYERS_TID)
    assert [s["name"] for s in spans] == NAMES
    # twice the layer times of layer_times_s, relu1 (the third) fused: 2, 4, 0, 8, 10, ...
    expected = [2.0 * (i + 1) for i in range(12)]
    expected[2] = 0.0
    assert [s["dur"] for s in spans] == pytest.approx(expected)
    assert spans[2]["cat"] == "fused" and spans[2]["args"]["predicted_s"] == pytest.approx(6e-6)
    assert spans[2]["ts"] == pytest.approx(2.0 + 4.0)


def test_a_verified_prediction_carries_the_measured_inference_beside_it() -> None:
    check = Verification(prediction(), 140e-6, 78e-6, layer_times_s(), run_id=3)
    doc = predicted_trace(NET, prediction(), check)
    validate_trace(doc)
    assert process_names(doc) == {PREDICTED_PID: "nnperf predicted: torch/cpu[threads=1]",
                                  MEASURED_PID: "nnperf measured: torch/cpu[threads=1]"}
    (whole,) = spans_on(doc, MEASURED_PID, NETWORK_TID)
    assert whole["dur"] == pytest.approx(140.0)
    measured = spans_on(doc, MEASURED_PID, LAYERS_TID)
    assert [s["dur"] for s in measured] == pytest.approx([float(i + 1) for i in range(12)])


def test_framework_trace_names_its_processes_and_keeps_the_events() -> None:
    events = [{"name": "process_name", "ph": "M", "pid": 9, "tid": 0, "args": {"name": "python"}},
              {"name": "model_run", "cat": "Session", "ph": "X", "ts": 10, "dur": 50, "pid": 9, "tid": 9},
              {"name": "conv1_kernel_time", "cat": "Node", "ph": "X", "ts": 12, "dur": 20, "pid": 9, "tid": 9}]
    doc = framework_trace({"traceEvents": events, "traceName": "/tmp/x.json", "schemaVersion": 1}, NET,
                          "torch/cpu[threads=1]", "torch")
    validate_trace(doc)
    assert process_names(doc) == {9: "nnperf measured (torch profiler): torch/cpu[threads=1] [python]"}
    assert [e["name"] for e in spans_on(doc, 9, 9)] == ["model_run", "conv1_kernel_time"]
    assert "traceName" not in doc and doc["schemaVersion"] == 1
    assert doc["otherData"]["source"] == "framework"
    bare = framework_trace(events[1:], NET, "onnxruntime/cpu", "onnxruntime")
    assert process_names(bare) == {9: "nnperf measured (onnxruntime profiler): onnxruntime/cpu"}


def test_write_trace_writes_json_and_names_the_path_it_cannot_write(tmp_path: Path) -> None:
    doc = measured_trace(NET, report_of(isolated_layers()))
    path = write_trace(doc, tmp_path / "sub" / "t.json")
    assert json.loads(path.read_text()) == doc
    with pytest.raises(OutputFileError, match=f"cannot write {tmp_path}: Is a directory"):
        write_trace(doc, tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputFileError, match="file is a file, not a folder"):
        write_trace(doc, tmp_path / "file" / "t.json")


@pytest.mark.parametrize(("backend", "run_name"), [("torch", "nnperf::run"), ("onnxruntime", "model_run")])
def test_framework_traces_of_a_tiny_network(backend: str, run_name: str) -> None:
    with create_backend(backend) as b:
        doc = framework_trace(b.trace(NET, 2), NET, b.system().label, backend)
    spans = validate_trace(doc)
    assert sum(s["name"] == run_name for s in spans) == 2  # the warm-up runs are left out
    names = " ".join(s["name"] for s in spans)
    for layer in ("conv2", "fc", "softmax"):  # ONNX Runtime names conv1 after relu1, the end of its fusion
        assert layer in names
    assert all(name.startswith(f"nnperf measured ({backend} profiler): {backend}/cpu")
               for name in process_names(doc).values())


def test_backends_without_a_trace_say_so() -> None:
    with create_backend("fake") as b:
        assert not b.has_trace
        with pytest.raises(UnavailableError, match="backend 'fake' writes no trace of its own"):
            b.trace(NET, 2)


def test_the_validator_refuses_what_perfetto_would_not_show() -> None:
    def doc(*events: dict) -> dict:
        return {"traceEvents": list(events), "displayTimeUnit": "ms"}

    def x(name: str, ts: float, dur: float, tid: int = 1) -> dict:
        return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": tid}

    validate_trace(doc(x("parent", 0, 10), x("child", 2, 8), x("next", 10, 1), x("other thread", 5, 20, tid=2)))
    with pytest.raises(AssertionError, match="'child' overruns 'parent'"):
        validate_trace(doc(x("parent", 0, 10), x("child", 2, 9)))
    with pytest.raises(AssertionError, match="dur must be a number >= 0"):
        validate_trace(doc(x("a", 0, -1)))
    with pytest.raises(AssertionError, match="lacks"):
        validate_trace(doc({"name": "a", "ph": "X", "ts": 0, "pid": 1, "tid": 1}))
    with pytest.raises(AssertionError, match="empty name"):
        validate_trace(doc(x("", 0, 1)))
    with pytest.raises(AssertionError, match="unknown phase"):
        validate_trace(doc({"name": "a", "ph": "Q", "ts": 0, "pid": 1}))
