"""``nnperf calibrate`` and ``nnperf predict`` end to end on the fake backend with a tiny calibration set."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from cli_helpers import run_cli as run
from networks import conv_net, tiny_network
from nnperf.cli import main
from nnperf.ir import save_network

CALIBRATION_NETWORKS = "nnperf.campaign._calibration.calibration_networks"
FAKE = ["--backend", "fake", "--budget-s", "0.02"]


def _small_networks() -> list:
    return [conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16)]


@pytest.fixture
def small_calibration(monkeypatch: pytest.MonkeyPatch) -> None:
    nets = _small_networks()
    monkeypatch.setattr(CALIBRATION_NETWORKS, lambda: nets)


@pytest.fixture(scope="module")
def _calibrated_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One calibration on the small networks (no sampled layers: no test that reads it needs them), made once for
    the tests that only read or add to it."""
    db = tmp_path_factory.mktemp("calibrated") / "m.db"
    nets = _small_networks()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
        patch.setattr(CALIBRATION_NETWORKS, lambda: nets)
        assert main(["calibrate", *FAKE, "--sample-budget", "0", "--db", str(db)]) == 0
    return db


@pytest.fixture
def calibrated_db(_calibrated_once: Path, tmp_path: Path, small_calibration: None) -> str:
    """A copy of the shared calibration's store, this test's own."""
    return str(shutil.copy(_calibrated_once, tmp_path / "m.db"))


def test_calibrate_then_predict_with_verify(capsys, tmp_path: Path, small_calibration: None) -> None:
    db = str(tmp_path / "m.db")
    code, out, _ = run(capsys, "calibrate", *FAKE, "--db", db)
    assert code == 0
    for text in ("fake/cpu[threads=1]", "conv", "eltwise", "relu", "network coefficient c", "18 layers measured",
                 "kernel-aware models (regressor, cross-validated median error): conv:standard ridge"):
        assert text in out
    code, out, _ = run(capsys, "calibrate", "--backend", "fake", "--if-needed", "--db", db)
    assert code == 0 and "already calibrated" in out
    net = tmp_path / "unseen.json"
    save_network(conv_net("unseen", 12, 12), net)
    code, out, _ = run(capsys, "predict", str(net), "--backend", "fake", "--db", db, "--json")
    doc = json.loads(out)
    assert (doc["format"], doc["version"]) == ("nnperf-prediction", 2)
    assert [layer["model"] for layer in doc["layers"]] == ["conv", "relu", "eltwise"]
    assert doc["previous_latency_s"] == pytest.approx(doc["coefficient_c"] * doc["layer_sum_s"])
    # six calibration networks: the composition replaces c; the fake fuses nothing, so it is the sum + 3 delta
    assert doc["method"] == "composed" and doc["latency_s"] == doc["composed_latency_s"]
    assert not any(layer["fused"] for layer in doc["layers"])
    assert doc["hotspots"][0]["layer"] == "a"
    table = tmp_path / "predicted.csv"
    code, out, _ = run(capsys, "predict", str(net), "--backend", "fake", "--db", db, "--verify", "--csv", str(table))
    assert code == 0
    for text in ("predicted per-layer latency vs measured", "measured network latency", "per-layer error",
                 "rounds (interleaved) measured", "machine speed: the reference (resnet18@112) took",
                 "speed-adjusted error", f"per-layer predictions written to {table}"):
        assert text in out
    rows = list(csv.DictReader(table.open()))
    assert [(r["layer"], r["op"], r["model"], r["fused"]) for r in rows] == [
        ("a", "conv", "conv", "False"), ("r", "relu", "relu", "False"), ("add", "add", "eltwise", "False")]
    for row, layer in zip(rows, doc["layers"]):  # the same models, so the same predictions as --json's
        assert float(row["predicted_s"]) == pytest.approx(layer["latency_s"])
        assert float(row["error"]) == pytest.approx(float(row["predicted_s"]) / float(row["measured_s"]) - 1)
    assert {r["network"] for r in rows} == {"unseen"} and {r["system"] for r in rows} == {"fake/cpu[threads=1]"}


def test_verify_times_the_network_beside_the_reference_under_the_protocol(capsys, tmp_path: Path,
                                                                         small_calibration: None) -> None:
    db = str(tmp_path / "m.db")
    code, out, _ = run(capsys, "calibrate", *FAKE, "--db", db, "--json")
    assert code == 0
    calibration = json.loads(out)
    # the machine was checked before calibrating, and the reference read before, between and after its phases
    assert (calibration["machine_check"]["format"], calibration["machine_check"]["version"]) == ("nnperf-check", 1)
    assert calibration["machine_check"]["verdict"] in ("ok", "warn", "bad")
    reference = calibration["reference"]
    assert reference["workload"] == "resnet18@112" and len(reference["readings_s"]) == 5
    assert reference["median_s"] == pytest.approx(sorted(reference["readings_s"])[2])
    net = tmp_path / "unseen.json"
    save_network(conv_net("unseen", 12, 12), net)
    for protocol in ("interleaved", "sequential"):
        code, out, _ = run(capsys, "predict", str(net), "--backend", "fake", "--db", db, "--verify", "--json",
                           "--protocol", protocol)
        assert code == 0
        doc = json.loads(out)
        check = doc["verify"]
        assert check["protocol"] == protocol and check["reference_ratio"]["paired"] == (protocol == "interleaved")
        speed, ratio = check["speed"], check["reference_ratio"]
        assert speed["reference"] == "resnet18@112" and speed["factor"] == pytest.approx(speed["current_s"] / speed["calibration_s"])
        # the measurement at the calibration's speed: the network's ratio to the reference x the reference then
        assert check["adjusted_latency_s"] == pytest.approx(ratio["median"] * speed["calibration_s"])
        assert check["adjusted_error"] == pytest.approx(doc["latency_s"] / check["adjusted_latency_s"] - 1)
        assert check["predicted_now_s"] == pytest.approx(doc["latency_s"] * speed["factor"])
        assert check["error"] == pytest.approx(doc["latency_s"] / check["measured_latency_s"] - 1)
    with pytest.raises(SystemExit) as info:
        run(capsys, "predict", str(net), "--backend", "fake", "--db", db, "--verify", "--protocol", "paired")
    assert info.value.code == 2 and "invalid choice: 'paired'" in capsys.readouterr().err


def test_a_sampling_budget_that_is_no_duration_is_refused_before_measuring(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "calibrate", *FAKE, "--sample-budget", "soon", "--db", str(tmp_path / "m.db"))
    assert code == 1 and "--sample-budget: 'soon' is not a duration" in err
    assert not (tmp_path / "m.db").exists()


def test_predict_without_calibration_says_how(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "predict", "resnet18", "--db", str(tmp_path / "m.db"))
    assert code == 1
    assert "no calibration for torch/cpu[memory_format=nchw,threads=1]" in err
    assert "nnperf calibrate --backend torch" in err


def test_predict_names_uncovered_layer_types(capsys, tmp_path: Path, calibrated_db: str) -> None:
    db = calibrated_db
    net = tmp_path / "tiny.json"
    save_network(tiny_network(), net)
    code, _, err = run(capsys, "predict", str(net), "--backend", "fake", "--db", db)
    assert code == 1
    for text in ("no calibrated model on fake/cpu[threads=1]", "batch_norm (bn1)", "softmax (softmax)"):
        assert text in err


def test_predict_on_another_system_needs_its_own_calibration(capsys, tmp_path: Path,
                                                             calibrated_db: str) -> None:
    db = calibrated_db
    code, _, err = run(capsys, "predict", "resnet18", "--backend", "fake", "--threads", "2", "--db", db)
    assert code == 1 and "no calibration for fake/cpu[threads=2]" in err


def test_evaluate_writes_tables_figures_and_a_self_contained_report(capsys, tmp_path: Path,
                                                                    calibrated_db: str) -> None:
    db, out_dir = calibrated_db, tmp_path / "eval"
    nets = []
    for c, hw in ((12, 12), (6, 20)):
        nets.append(str(tmp_path / f"n{c}.json"))
        save_network(conv_net(f"n{c}", c, hw), nets[-1])
    layers_csv = tmp_path / "layers.csv"
    code, out, _ = run(capsys, "evaluate", *nets, *FAKE, "--db", db, "--out", str(out_dir), "--csv", str(layers_csv))
    assert code == 0
    assert layers_csv.read_text().splitlines()[0].startswith("system,system_key,network,run_id,layer,op,")
    assert len(layers_csv.read_text().splitlines()) == 1 + 2 * 3  # two networks of three layers
    for text in ("Table I", "Table II", "n12", "n6", "PreVIous (c)", "nnperf composed", "nnperf kernel-aware",
                 "MACs baseline",
                 "roofline baseline", "MAPE", "against the speed-adjusted measurements", "prediction time per network"):
        assert text in out
    assert (out_dir / "fig5_layers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out_dir / "fig7_networks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out_dir / "report.html").read_text()
    assert report.count("data:image/png;base64,") == 4 and "<table" in report  # nothing outside the file
    assert '<section id="provenance">' in report and "<dt>nnperf version</dt>" in report
    code, out, _ = run(capsys, "evaluate", *nets, *FAKE, "--db", db, "--out", str(out_dir), "--json")
    doc = json.loads(out)
    assert (doc["format"], doc["version"]) == ("nnperf-evaluation", 1)
    assert list(doc["methods"]) == ["previous", "composed", "kernel", "macs", "roofline"]
    for network in doc["networks"]:  # Table I: the sums are the layers' sums, the error is relative
        layers = network["layers"]
        assert network["measured_layer_sum_s"] == pytest.approx(sum(x["measured_s"] for x in layers))
        assert network["layer_sum_error"] == pytest.approx(
            network["predicted_layer_sum_s"] / network["measured_layer_sum_s"] - 1)
        for method, error in network["error"].items():
            assert error == pytest.approx(network["predicted_s"][method] / network["measured_s"] - 1)
    errors = [abs(n["error"]["composed"]) for n in doc["networks"]]
    assert doc["summary"]["mape"]["composed"] == pytest.approx(sum(errors) / 2)
    # each network was also timed beside the reference: its errors against the speed-adjusted time
    for network in doc["networks"]:
        assert network["adjusted_s"] > 0
        for method, error in network["adjusted_error"].items():
            assert error == pytest.approx(network["predicted_s"][method] / network["adjusted_s"] - 1)
    adjusted = [abs(n["adjusted_error"]["composed"]) for n in doc["networks"]]
    assert doc["summary"]["adjusted_mape"]["composed"] == pytest.approx(sum(adjusted) / 2)
    code, out, _ = run(capsys, "evaluate", *nets, *FAKE, "--db", db, "--out", str(out_dir), "--json",
                       "--protocol", "none")
    doc = json.loads(out)
    assert doc["summary"]["adjusted_mape"]["composed"] is None and doc["networks"][0]["adjusted_s"] is None


def test_evaluate_refuses_before_measuring(capsys, tmp_path: Path, small_calibration: None) -> None:
    db = str(tmp_path / "m.db")
    code, _, err = run(capsys, "evaluate", "resnet18", "--backend", "fake", "--db", db)
    assert code == 1 and "nnperf calibrate --backend fake" in err
    assert run(capsys, "calibrate", *FAKE, "--db", db)[0] == 0
    tiny = tmp_path / "tiny.json"
    save_network(tiny_network(), tiny)
    code, _, err = run(capsys, "evaluate", str(tiny), "--backend", "fake", "--db", db, "--out", str(tmp_path))
    assert code == 1 and "softmax (softmax)" in err
    code, _, err = run(capsys, "evaluate", str(tiny), "--backend", "fake", "--budget-s", "0", "--db", db)
    assert code == 1 and "--budget-s must be > 0" in err


@pytest.mark.slow
def test_calibrate_if_needed_refits_an_older_model(capsys, tmp_path: Path, small_calibration: None) -> None:
    from nnperf.measure.backends import BackendOptions, create_backend
    from nnperf.store import Store

    db = str(tmp_path / "m.db")
    assert run(capsys, "calibrate", *FAKE, "--db", db)[0] == 0
    with Store(db) as store, create_backend("fake", BackendOptions(device="cpu")) as backend:
        system = store.add_system(backend.system())
        old = {**store.latest_model(system.id, "previous"), "version": 1}  # as an older nnperf stored it
        store.save_model(system.id, "previous", old)
        measured = len(store.layer_measurements())
    code, out, _ = run(capsys, "calibrate", *FAKE, "--if-needed", "--db", db)
    assert code == 0 and "refitting: model format version 1" in out and "composition:" in out
    with Store(db) as store:
        assert store.latest_model(system.id, "previous")["version"] == 3
        assert len(store.layer_measurements()) == measured  # refitted from the stored measurements


def test_calibrate_if_needed_reuses_only_a_calibration_that_held_out_the_same_networks(
        capsys, tmp_path: Path, small_calibration: None) -> None:
    db = str(tmp_path / "m.db")
    sampled = [*FAKE, "--sample-budget", "1s", "--no-check", "--db", db]
    assert run(capsys, "calibrate", *sampled, "--held-out", "alexnet")[0] == 0
    code, out, _ = run(capsys, "calibrate", *sampled, "--held-out", "alexnet", "--if-needed")
    assert code == 0 and "nothing to do" in out
    code, out, _ = run(capsys, "calibrate", *sampled, "--held-out", "resnet18", "--if-needed")
    assert code == 0 and "nothing to do" not in out and "calibrating fake" in out  # others held out: again
    code, out, _ = run(capsys, "calibrate", *sampled, "--held-out", "resnet18", "--if-needed")
    assert code == 0 and "nothing to do" in out


def test_predict_with_a_stored_system(capsys, tmp_path: Path, calibrated_db: str) -> None:
    db = calibrated_db
    net = tmp_path / "unseen.json"
    save_network(conv_net("unseen", 12, 12), net)
    code, out, _ = run(capsys, "predict", str(net), "--system", "1", "--db", db, "--json")
    assert code == 0 and json.loads(out)["system"] == "fake/cpu[threads=1]"  # no --backend needed
    code, _, err = run(capsys, "predict", str(net), "--system", "9", "--db", db)
    assert code == 1 and "no system with id 9" in err
    # verifying on another system than the model's is refused: the backend options say threads=2
    code, _, err = run(capsys, "predict", str(net), "--system", "1", "--backend", "fake", "--threads", "2",
                       "--verify", "--db", db)
    assert code == 1
    assert "verify measures on fake/cpu[threads=2] here, but system 1 is fake/cpu[threads=1]" in err


def test_a_sample_budget_of_zero_turns_sampling_off_and_a_bad_one_is_named() -> None:
    from nnperf.cli._units import parse_budget
    from nnperf.errors import NnperfError

    assert parse_budget(None, "--sample-budget") is None  # not given: the API's default
    assert parse_budget("0", "--sample-budget") == 0.0 and parse_budget("0s", "--sample-budget") == 0.0
    assert parse_budget("90s", "--sample-budget") == 90.0 and parse_budget("2m", "--sample-budget") == 120.0
    for bad in ("soon", "-5s"):
        with pytest.raises(NnperfError, match="--sample-budget"):
            parse_budget(bad, "--sample-budget")


def test_calibrate_with_blocks_adds_their_networks_and_if_needed_wants_them(
        capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nets, blocks = _small_networks()[:3], [conv_net(f"block{c}", c, 12) for c in (4, 8)]
    monkeypatch.setattr(CALIBRATION_NETWORKS, lambda: nets)
    monkeypatch.setattr("nnperf.campaign._calibration.block_calibration_networks", lambda: blocks)
    monkeypatch.setattr("nnperf.zoo.block_calibration_names", lambda: [b.name for b in blocks])
    db = str(tmp_path / "m.db")
    assert run(capsys, "calibrate", *FAKE, "--no-check", "--db", db)[0] == 0
    code, out, _ = run(capsys, "calibrate", *FAKE, "--no-check", "--blocks", "--if-needed", "--db", db)
    assert code == 0 and "nothing to do" not in out  # the stored calibration lacks the blocks: calibrated again
    assert f"{len(nets + blocks)} calibration networks" in out
    doc = json.loads(run(capsys, "calibrate", *FAKE, "--blocks", "--if-needed", "--json", "--db", db)[1])
    # the stored calibration is the second: on both sets, the first's networks reused rather than measured again
    assert doc["networks"] == [n.name for n in nets + blocks] and doc["reused_networks"] == len(nets)
    code, out, _ = run(capsys, "calibrate", *FAKE, "--blocks", "--if-needed", "--db", db)
    assert code == 0 and "nothing to do" in out
    code, out, _ = run(capsys, "calibrate", *FAKE, "--if-needed", "--db", db)
    assert code == 0 and "nothing to do" in out  # without --blocks, any calibration will do
    # with the blocks, the kernel-aware predictor judges its sampled layers by the in-network ones
    from nnperf.campaign import predictor_options

    assert predictor_options(nets) == predictor_options(nets, "int8") == {}
    assert predictor_options(nets + blocks) == {"kernel": {"sampled_layers": "judged"}}
    # ...and an int8 system moves them into the network by a line per kind
    assert predictor_options(nets + blocks, "int8") == {"kernel": {"sampled_layers": "judged",
                                                                   "sampled_context": "line"}}
