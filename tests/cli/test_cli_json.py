"""Every command that prints results takes --json and prints one document with the project's envelope:
``{"format": "nnperf-...", "version": N, ...}`` (bare lists from `systems` and `steps fit` before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import run_json
from networks import residual_conv_net
from nnperf.accel import eyeriss_spec


def envelope(document: object, name: str) -> dict:
    assert isinstance(document, dict)
    assert (document["format"], document["version"]) == (name, 1)
    return document


def test_backends_json_lists_every_backend_per_device_and_every_meter(capsys: pytest.CaptureFixture[str]) -> None:
    doc = envelope(run_json(capsys, "backends"), "nnperf-backends")
    cpu = {b["name"]: b for b in doc["backends"] if b["device"] == "cpu"}
    assert {"torch", "onnxruntime", "opencv", "fake"} <= set(cpu)
    assert cpu["torch"]["available"] is True and cpu["torch"]["measures"] is True
    assert cpu["fake"]["measures"] is False
    cuda = {b["name"]: b for b in doc["backends"] if b["device"] == "cuda"}
    assert set(cuda) == set(cpu)
    for b in cuda.values():  # no GPU on the test machines: each says why
        assert b["available"] or b["reason"] != ""
    assert {m["name"] for m in doc["power_meters"]} >= {"nvml", "rapl"}


@pytest.mark.parametrize("bits", [16, 8])
def test_accel_spec_json_is_the_spec_document(capsys: pytest.CaptureFixture[str], bits: int) -> None:
    doc = run_json(capsys, "accel", "spec", "--bits", str(bits))
    assert doc == json.loads(json.dumps(eyeriss_spec(bits).to_dict()))
    assert (doc["format"], doc["version"], doc["bits"]) == ("nnperf-accelerator", 1, bits)


def test_export_json_says_what_was_written(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "squeeze.onnx"
    doc = envelope(run_json(capsys, "export", "squeezenet1_1", str(out)), "nnperf-export")
    assert (doc["network"], doc["path"], doc["input_shape"], doc["seed"]) == (
        "squeezenet1_1", str(out), [1, 3, 224, 224], 0)
    assert out.stat().st_size > 4 * 1_000_000  # 1.24 M float32 weights


@pytest.mark.slow
def test_calibrate_json_summarises_the_fitted_models(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nets = [residual_conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16)]
    monkeypatch.setattr("nnperf.campaign._calibration.calibration_networks", lambda: nets)
    db = str(tmp_path / "c.db")
    doc = envelope(run_json(capsys, "calibrate", "--backend", "fake", "--budget-s", "0.01", "--db", db),
                   "nnperf-calibration")
    assert doc["system"] == "fake/cpu[threads=1]" and doc["store"] == db
    assert doc["networks"] == [net.name for net in nets]
    assert doc["reused_networks"] == 0 and doc["layers_measured"] == 4 * len(nets)
    models = {m["layer_type"]: m for m in doc["latency_models"]}
    assert set(models) == {"conv", "relu", "eltwise", "generic"}  # its layer types, and the memory-bound model
    assert all(0 < m["fastest_s"] <= m["slowest_s"] and m["samples"] > 0 for m in models.values())
    assert doc["coefficient_c"] > 0 and doc["roofline"]["ops_per_s"] > 0
    # --if-needed with a stored calibration prints the same summary, measuring nothing
    again = run_json(capsys, "calibrate", "--backend", "fake", "--if-needed", "--db", db)
    assert again["latency_models"] == doc["latency_models"] and again["coefficient_c"] == doc["coefficient_c"]
