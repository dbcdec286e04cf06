"""``nnperf calibrate`` and ``nnperf predict`` end to end on the fake backend with a tiny calibration set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from networks import tiny_network
from nnperf.cli import main
from nnperf.ir import ConvAttrs, Layer, Network, OpType, TensorSpec, save_network


def conv_net(name: str, c: int, hw: int) -> Network:
    s = (1, c, hw, hw)
    return Network(name, (TensorSpec("x", s),), (
        Layer("a", OpType.CONV, ("x",), (s,), s, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("r", OpType.RELU, ("a",), (s,), s),
        Layer("add", OpType.ADD, ("r", "a"), (s, s), s),
    ), ("add",))


@pytest.fixture
def small_calibration(monkeypatch: pytest.MonkeyPatch) -> None:
    nets = [conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16)]
    monkeypatch.setattr("nnperf.predict._calibrate.calibration_networks", lambda: nets)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


FAKE = ["--backend", "fake", "--budget-s", "0.02"]


def test_calibrate_then_predict_with_verify(capsys, tmp_path: Path, small_calibration: None) -> None:
    db = str(tmp_path / "m.db")
    code, out, _ = run(capsys, "calibrate", *FAKE, "--db", db)
    assert code == 0
    for text in ("fake/cpu[threads=1]", "conv", "eltwise", "relu", "network coefficient c", "18 layers measured"):
        assert text in out
    code, out, _ = run(capsys, "calibrate", "--backend", "fake", "--if-needed", "--db", db)
    assert code == 0 and "already calibrated" in out
    net = tmp_path / "unseen.json"
    save_network(conv_net("unseen", 12, 12), net)
    code, out, _ = run(capsys, "predict", str(net), "--backend", "fake", "--db", db, "--json")
    doc = json.loads(out)
    assert (doc["format"], doc["version"]) == ("nnperf-prediction", 1)
    assert [layer["model"] for layer in doc["layers"]] == ["conv", "relu", "eltwise"]
    assert doc["latency_s"] == pytest.approx(doc["coefficient_c"] * doc["layer_sum_s"])
    assert doc["hotspots"][0]["layer"] == "a"
    code, out, _ = run(capsys, "predict", str(net), "--backend", "fake", "--db", db, "--verify")
    assert code == 0
    for text in ("predicted per-layer latency vs measured", "measured network latency", "per-layer error"):
        assert text in out


def test_predict_without_calibration_says_how(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "predict", "resnet18", "--db", str(tmp_path / "m.db"))
    assert code == 1
    assert "no calibration for torch/cpu[memory_format=nchw,threads=1]" in err
    assert "nnperf calibrate --backend torch" in err


def test_predict_names_uncovered_layer_types(capsys, tmp_path: Path, small_calibration: None) -> None:
    db = str(tmp_path / "m.db")
    assert run(capsys, "calibrate", *FAKE, "--db", db)[0] == 0
    net = tmp_path / "tiny.json"
    save_network(tiny_network(), net)
    code, _, err = run(capsys, "predict", str(net), "--backend", "fake", "--db", db)
    assert code == 1
    for text in ("no calibrated model on fake/cpu[threads=1]", "batch_norm (bn1)", "softmax (softmax)"):
        assert text in err


def test_predict_on_another_system_needs_its_own_calibration(capsys, tmp_path: Path,
                                                             small_calibration: None) -> None:
    db = str(tmp_path / "m.db")
    assert run(capsys, "calibrate", *FAKE, "--db", db)[0] == 0
    code, _, err = run(capsys, "predict", "resnet18", "--backend", "fake", "--threads", "2", "--db", db)
    assert code == 1 and "no calibration for fake/cpu[threads=2]" in err
