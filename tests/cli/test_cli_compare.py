"""``nnperf compare A B`` end to end: runs and systems from a store of hand-chosen times, a prediction from a tiny
fake calibration, JSON, CSV, --fail-if-slower and one-line errors."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from cli_helpers import assert_error, run_cli, run_json
from compare_store import MS, WHOLE_A, WHOLE_B, add_run, built_store, copy_store
from networks import conv_net
from nnperf.ir import Network, OpType, save_network
from nnperf.prediction import MeasuredNetwork, fit_system_model
from nnperf.store import Store

__all__ = ["built_store"]  # the session fixture


@pytest.fixture
def db(built_store: Path, tmp_path: Path) -> str:
    return str(copy_store(built_store, tmp_path))


def test_tables_and_summary(capsys, db: str) -> None:
    code, out, err = run_cli(capsys, "compare", "run:1", "system:2", "--model", "net", "--db", db)
    assert code == 0, err
    for text in ("per-layer times; speed-up = A time / B time (above 1: B is faster)", "time by op type",
                 "A = run 1: net on fake/cpu[threads=1] (isolated): whole network 8.5 ms (measured)",
                 "B = run 3: net on fake/cpu[threads=2] (isolated): whole network 10.2 ms (measured)",
                 # 8.5 / 10.2 = 0.833; 10.2 / 8.5 - 1 = 20%
                 "whole network: speed-up 0.833x (B is 20.0% slower than A)",
                 "geometric mean of the per-layer speed-ups: 1x over 3 layer(s)",  # (2 x 1 x 0.5)^(1/3)
                 "largest slowdowns in B: conv2 +2 ms (0.5x)", "only in A: 1 layer(s): fc",
                 "only in B: 1 layer(s): pool", "only in A", "75.0%", "80.0%"):  # conv's share: 6/8, 6/7.5
        assert text in out, text


def test_json_document(capsys, db: str) -> None:
    doc = run_json(capsys, "compare", "run:1", "run:3", "--db", db)
    assert (doc["format"], doc["version"]) == ("nnperf-compare", 1)
    assert doc["convention"] == "speed-up = A time / B time (above 1: B is faster)"
    assert doc["network"]["a_s"] == WHOLE_A and doc["network"]["b_s"] == WHOLE_B
    assert doc["network"]["speedup"] == pytest.approx(8.5 / 10.2)
    assert doc["geomean_layer_speedup"] == pytest.approx(1.0)
    assert [(r["layer"], r["speedup"]) for r in doc["layers"]] == [
        ("conv1", pytest.approx(2.0)), ("relu1", pytest.approx(1.0)), ("conv2", pytest.approx(0.5)), ("fc", None),
        ("pool", None)]
    assert {o["op"]: o["b_s"] for o in doc["op_types"]} == pytest.approx(
        {"conv": 6 * MS, "relu": 1 * MS, "linear": 0.0, "max_pool": 0.5 * MS})
    assert (doc["only_in_a"], doc["only_in_b"]) == (["fc"], ["pool"])


def test_csv_file(capsys, db: str, tmp_path: Path) -> None:
    path = tmp_path / "layers.csv"
    code, _, err = run_cli(capsys, "compare", "run:3", "run:1", "--csv", str(path), "--json", "--db", db)
    assert code == 0 and f"wrote 5 layer row(s) to {path}" in err
    rows = list(csv.DictReader(path.open()))
    assert [r["layer"] for r in rows] == ["conv1", "relu1", "conv2", "pool", "fc"]
    assert float(rows[0]["speedup"]) == pytest.approx(2 / 4)  # run 3 is A now: 2 ms / 4 ms
    assert (rows[3]["a_s"], rows[3]["b_s"], rows[3]["speedup"]) == (repr(0.5 * MS), "", "")


@pytest.mark.parametrize(("pct", "code"), [("25", 0), ("19.9", 4), ("0", 4)])
def test_fail_if_slower_exit_codes(capsys, db: str, pct: str, code: int) -> None:
    got, _, err = run_cli(capsys, "compare", "run:1", "run:3", "--fail-if-slower", pct, "--json", "--db", db)
    assert got == code
    if code:
        assert err.splitlines() == [(f"nnperf: B is 20.0% slower than A (whole network 8.5 ms -> 10.2 ms), more "
                                     f"than --fail-if-slower {float(pct):g}%")]
    else:
        assert err == ""


def test_faster_b_passes_the_check(capsys, db: str) -> None:
    code, out, _ = run_cli(capsys, "compare", "run:3", "run:1", "--fail-if-slower", "0", "--db", db)
    assert code == 0 and "whole network: speed-up 1.2x (B is 16.7% faster than A)" in out  # 10.2/8.5; 1 - 8.5/10.2


@pytest.mark.parametrize(("argv", "needles"), [
    (("run:1", "run:99"), ("no run with id 99",)),
    (("run:1", "system:2", "--model", "resnet18"), ("no finished run of 'resnet18'", "net, other")),
    (("run:1", "system:2"), ("system:2 needs --model",)),
    (("run:1", "system:zz", "--model", "net"), ("no system whose key starts with 'zz'",)),
    (("1", "run:2"), ("cannot compare '1'", "run:ID, system:ID|KEY or predicted:ID|KEY")),
    (("run:x", "run:2"), ("a run is named by its number",)),
    (("run:1", "run:3", "--fail-if-slower", "-5"), ("--fail-if-slower takes a percentage >= 0",)),
    (("run:1", "run:3", "--fail-if-slower", "nan"), ("--fail-if-slower takes a percentage >= 0",)),
    (("run:1", "predicted:1", "--model", "unseen.json"), ("has measurements but no calibration",)),
])
def test_bad_input_is_a_one_line_error(capsys, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      argv: tuple[str, ...], needles: tuple[str, ...]) -> None:
    save_network(conv_net("unseen", 4, 4), tmp_path / "unseen.json")
    monkeypatch.chdir(tmp_path)
    assert_error(*run_cli(capsys, "compare", *argv, "--db", db)[::2], *needles)


def test_a_missing_store_is_an_error_and_none_is_created(capsys, tmp_path: Path) -> None:
    db = tmp_path / "nothing.db"
    assert_error(*run_cli(capsys, "compare", "run:1", "run:2", "--db", str(db))[::2], str(db))
    assert not db.exists()


def calibrate_by_hand(db: Path, nets: list[Network]) -> None:
    """Store runs of ``nets`` on system 1 with times from a made-up cost (1 ns per output element, 10 ns per
    conv output element) and fit system 1's model on them, as a calibration would: no backend needed."""
    with Store(db) as store:
        measured = []
        for net in nets:
            times = {layer.name: (layer.op.value, math.prod(layer.output_shape) * (10e-9 if layer.op is OpType.CONV
                                                                                    else 1e-9)) for layer in net.layers}
            run_id = add_run(store, 1, net.name, times, sum(t for _, t in times.values()))
            measured.append(MeasuredNetwork(net, store.run(run_id), tuple(store.layer_measurements(run_id=run_id)),
                                            store.network_measurements(run_id=run_id)[0], False))
        system = store.system(1)
        store.save_model(1, "previous", fit_system_model(measured, system.key, system.label).to_dict())


def test_predicted_against_measured(capsys, db: str, tmp_path: Path) -> None:
    calibrate_by_hand(Path(db), [conv_net(f"cal{c}x{hw}", c, hw) for c, hw in ((4, 8), (8, 8), (8, 16), (4, 16))])
    net = tmp_path / "unseen.json"
    save_network(conv_net("unseen", 12, 12), net)
    measured = {"a": ("conv", 3 * MS), "r": ("relu", 1 * MS), "add": ("add", 1 * MS)}
    with Store(db) as store:
        add_run(store, 1, str(net), measured, 4 * MS)
    predicted = run_json(capsys, "predict", str(net), "--system", "1", "--db", db)
    doc = run_json(capsys, "compare", "predicted:1", "system:1", "--model", str(net), "--db", db)
    assert doc["a"]["network_source"] == f"predicted ({predicted['method']})"
    assert (doc["network"]["a_s"], doc["network"]["b_s"]) == (predicted["latency_s"], 4 * MS)
    assert [(r["layer"], r["op"], r["a_s"], r["b_s"]) for r in doc["layers"]] == [
        (p["layer"], p["op"], p["latency_s"], measured[p["layer"]][1]) for p in predicted["layers"]]
    assert doc["only_in_a"] == doc["only_in_b"] == []
    for row in doc["layers"]:
        assert row["speedup"] == pytest.approx(row["a_s"] / row["b_s"])
    predicted_ops = {}
    for p in predicted["layers"]:
        predicted_ops[p["op"]] = predicted_ops.get(p["op"], 0.0) + p["latency_s"]
    assert {o["op"]: o["a_s"] for o in doc["op_types"]} == pytest.approx(predicted_ops)
