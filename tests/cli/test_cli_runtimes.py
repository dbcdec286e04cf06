"""``nnperf runtimes``: a model ranked across calibrated systems (two fake systems, at one and two threads), predicted
and measured interleaved; the table, JSON and figure; the refusals."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from cli_helpers import run_cli as run
from networks import conv_net
from nnperf.cli import main
from nnperf.ir import save_network

CALIBRATION_NETWORKS = "nnperf.campaign._calibration.calibration_networks"
FAKE = ["--backend", "fake", "--budget-s", "0.02", "--no-check"]


@pytest.fixture(scope="module")
def _two_systems(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fake backend calibrated at one and at two threads: two systems of one store."""
    db = tmp_path_factory.mktemp("runtimes") / "m.db"
    nets = [conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16)]
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
        patch.setattr(CALIBRATION_NETWORKS, lambda: nets)
        for threads in ("1", "2"):
            assert main(["calibrate", *FAKE, "--threads", threads, "--sample-budget", "0", "--db", str(db)]) == 0
    return db


@pytest.fixture
def db(_two_systems: Path, tmp_path: Path) -> str:
    return str(shutil.copy(_two_systems, tmp_path / "m.db"))


@pytest.fixture
def model(tmp_path: Path) -> str:
    path = tmp_path / "unseen.json"
    save_network(conv_net("unseen", 12, 12), path)
    return str(path)


def test_every_calibrated_system_is_ranked_fastest_predicted_first(capsys, db: str, model: str) -> None:
    code, out, _ = run(capsys, "runtimes", model, "--db", db, "--json")
    assert code == 0
    document = json.loads(out)
    assert document["format"] == "nnperf-runtimes" and document["network"] == "unseen"
    runtimes = document["runtimes"]
    assert sorted(r["system"] for r in runtimes) == ["fake/cpu[threads=1]", "fake/cpu[threads=2]"]
    assert [r["rank"] for r in runtimes] == [1, 2]
    assert runtimes[0]["predicted_s"] <= runtimes[1]["predicted_s"]
    assert document["predicted_fastest"] == runtimes[0]["system"]
    assert all(r["measured_s"] is None for r in runtimes) and document["verified"] is False


def test_verify_measures_each_runtime_in_the_same_rounds(capsys, db: str, model: str, tmp_path: Path) -> None:
    figure = tmp_path / "rank.png"
    code, out, err = run(capsys, "runtimes", model, "--db", db, "--verify", "--json", "--plot", str(figure))
    assert code == 0
    document = json.loads(out)
    assert document["verified"] is True and document["rounds"] >= 10
    for r in document["runtimes"]:
        assert r["measured_s"] > 0
        assert r["error"] == pytest.approx(r["predicted_s"] / r["measured_s"] - 1)
    assert document["measured_fastest"] in {r["system"] for r in document["runtimes"]}
    predicted = {r["predicted_s"] for r in document["runtimes"]}
    measured = {r["measured_s"] for r in document["runtimes"]}
    tau = document["kendall_tau"]
    assert tau is None if 1 in (len(predicted), len(measured)) else -1 <= tau <= 1  # a tie has no order
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {figure}" in err


def _system(db: str, label: str) -> tuple[int, str]:
    """The id and key of the system labelled ``label``."""
    from nnperf.store import Store

    with Store(db, create=False) as store:
        return next((s.id, s.key) for s in store.systems() if s.label == label)


def test_the_table_names_each_system_and_the_verdict(capsys, db: str, model: str) -> None:
    one, key = _system(db, "fake/cpu[threads=1]")
    code, out, _ = run(capsys, "runtimes", model, "--db", db, "--system", key[:8])
    assert code == 0
    assert f"fake/cpu[threads=1] (#{one})" in out and "threads=2" not in out
    assert "predicted fastest: fake/cpu[threads=1]" in out


def test_a_store_without_calibrations_is_refused_with_what_to_run(capsys, tmp_path: Path, model: str) -> None:
    from nnperf.store import Store

    Store(tmp_path / "empty.db").close()
    code, _, err = run(capsys, "runtimes", model, "--db", str(tmp_path / "empty.db"))
    assert code == 1
    assert "has no calibrated system: run `nnperf calibrate --backend NAME`" in err


def test_verify_needs_two_runtimes(capsys, db: str, model: str) -> None:
    code, _, err = run(capsys, "runtimes", model, "--db", db, "--system", _system(db, "fake/cpu[threads=2]")[1],
                       "--verify")
    assert code == 1
    assert "verifying a ranking needs two or more runtimes measurable here, got 1" in err
