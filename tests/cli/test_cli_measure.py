"""``nnperf profile``, ``systems``, ``measurements export`` and ``backends``: happy paths and bad inputs.

Profiles a tiny IR network saved as JSON on the real torch backend with a small
time budget, so each command takes a second or two.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from cli_helpers import assert_error
from cli_helpers import run_cli as run
from networks import tiny_network
from nnperf.cli import main
from nnperf.ir import save_network

QUICK = ["--budget-s", "0.05", "--target-ci", "0.1"]


@pytest.fixture
def tiny_json(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    save_network(tiny_network(), path)
    return path


def test_profile_prints_the_table_the_ratio_and_stores_it(capsys, tiny_json: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    code, out, _ = run(capsys, "profile", str(tiny_json), "--backend", "torch", "--db", str(db), *QUICK)
    assert code == 0
    for text in ("tiny on torch/cpu", "conv1", "softmax", "sum of layers", "whole network:",
                 "sum of isolated layer times", "x the whole network", "stored as run 1"):
        assert text in out
    code, out, _ = run(capsys, "systems", "--db", str(db), "--json")
    document = json.loads(out)
    assert (document["format"], document["version"], document["store"]) == ("nnperf-systems", 1, str(db))
    systems = document["systems"]
    assert len(systems) == 1 and systems[0]["backend"] == "torch"
    assert (systems[0]["runs"], systems[0]["layer_measurements"], systems[0]["network_measurements"]) == (1, 12, 1)
    code, out, _ = run(capsys, "measurements", "export", "--db", str(db))
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 12 and {r["layer"] for r in rows} >= {"conv1", "fc", "softmax"}
    assert all(float(r["median_s"]) > 0 for r in rows)


def test_profile_json_with_the_profiler(capsys, tiny_json: Path, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "profile", str(tiny_json), "--backend", "onnxruntime", "--per-layer", "profiler",
                       "--profiler-runs", "5", "--json", "--db", str(tmp_path / "m.db"), *QUICK)
    assert code == 0
    doc = json.loads(out)
    assert (doc["format"], doc["version"], doc["method"]) == ("nnperf-profile", 1, "profiler")
    assert len(doc["layers"]) == 12 and all(layer["n"] == 5 for layer in doc["layers"])
    assert doc["whole_network"]["median_s"] > 0 and doc["sum_ratio"] > 0


def test_commands_that_only_read_create_no_store(capsys, tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    for argv in (("systems",), ("measurements", "export")):
        code, _, err = run(capsys, *argv, "--db", str(typo))
        assert code == 1 and f"no store at {typo}" in err and len(err.strip().splitlines()) == 1
        assert not typo.exists()
    # predict reads a calibration: a missing store says how to calibrate, and stays missing
    code, _, err = run(capsys, "predict", "resnet18", "--db", str(typo))
    assert_error(code, err, f"no calibration for torch/cpu[memory_format=nchw,threads=1] in {typo}", "calibrate")
    assert not typo.exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    code, _, err = run(capsys, "systems", "--db", str(empty))
    assert code == 1 and "is an empty file, not an nnperf store" in err
    assert empty.stat().st_size == 0 and not Path(f"{empty}-wal").exists()


def test_a_refused_setting_creates_no_store(capsys, tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    code, _, err = run(capsys, "profile", "resnet18", "--backend", "fake", "--budget-s=-1", "--db", str(db))
    assert code == 1 and "budget" in err
    assert not db.exists()


def test_systems_on_a_store_without_systems(capsys, tmp_path: Path) -> None:
    from nnperf.store import Store

    Store(tmp_path / "new.db").close()  # a command that measures created it
    code, out, _ = run(capsys, "systems", "--db", str(tmp_path / "new.db"))
    assert code == 0 and "no systems" in out


def test_backends_lists_availability(capsys) -> None:
    code, out, _ = run(capsys, "backends")
    assert code == 0
    for text in ("torch", "onnxruntime", "opencv", "nvml", "rapl"):
        assert text in out


def test_unknown_backend_lists_the_known(capsys, tiny_json: Path, tmp_path: Path) -> None:
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "tvm", "--db", str(tmp_path / "m.db"))
    assert_error(code, err, "unknown backend 'tvm'", "litert, onnxruntime, opencv, openvino, torch")


def test_unavailable_backend_says_why(capsys, tiny_json: Path, tmp_path: Path) -> None:
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "onnxruntime", "--device", "cuda",
                       "--db", str(tmp_path / "m.db"))
    assert_error(code, err, "backend 'onnxruntime' cannot run here", "CUDA execution provider")


def test_unavailable_power_meter_says_why(capsys, tiny_json: Path, tmp_path: Path) -> None:
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "torch", "--energy", "rapl",
                       "--db", str(tmp_path / "m.db"))
    assert_error(code, err, "power meter 'rapl' cannot run here", "powercap")


@pytest.mark.parametrize("threads", ["0", "-2", "two"])
def test_non_positive_thread_count_is_a_usage_error(capsys, tiny_json: Path, threads: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["profile", str(tiny_json), "--backend", "torch", "--threads", threads])
    assert exc.value.code == 2
    assert "expected a positive integer" in capsys.readouterr().err


def test_store_in_a_missing_folder(capsys, tiny_json: Path, tmp_path: Path) -> None:
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "torch", "--db",
                       str(tmp_path / "nowhere" / "m.db"))
    assert_error(code, err, "nowhere")


def test_malformed_trace_csv(capsys, tiny_json: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,power_w\n0.0,1.5\n0.1,abc\n")
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "torch", "--energy", str(trace),
                       "--db", str(tmp_path / "m.db"))
    assert_error(code, err, "trace.csv", "line 3")


def test_trace_without_a_run_says_how_to_record_one(capsys, tiny_json: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,power_w\n0.0,1.5\n0.1,1.5\n")
    code, _, err = run(capsys, "profile", str(tiny_json), "--backend", "torch", "--energy", str(trace),
                       "--db", str(tmp_path / "m.db"))
    assert_error(code, err, "no finished isolated run of", "--gap-s")


def test_a_newer_store_is_refused(capsys, tiny_json: Path, tmp_path: Path) -> None:
    import sqlite3

    from nnperf.store import Store

    db = tmp_path / "m.db"
    Store(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 7")
    code, _, err = run(capsys, "systems", "--db", str(db))
    assert_error(code, err, "newer nnperf")
