"""nnperf.report.compare and nnperf.report.optypes on a store with hand-chosen times (tests/compare_store.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from compare_store import MS, RUN_A, WHOLE_A, WHOLE_B, add_run, built_store, copy_store, spec
from nnperf.errors import NnperfError, StoreError
from nnperf.measure import Method
from nnperf.report.compare import (
    COMPARE_FORMAT,
    CSV_COLUMNS,
    SideSpec,
    compare,
    load_side,
    parse_side,
    write_csv,
)
from nnperf.report.optypes import OpTime, time_by_op
from nnperf.store import Store

__all__ = ["built_store"]  # the session fixture


@pytest.fixture
def store(built_store: Path, tmp_path: Path):
    with Store(copy_store(built_store, tmp_path)) as opened:
        yield opened


def test_time_by_op_sums_per_type_largest_first() -> None:
    got = time_by_op([("conv", 4.0), ("relu", 1.0), ("conv", 2.0), ("linear", 1.0)])
    assert got == (OpTime("conv", 6.0, 6.0 / 8.0, 2), OpTime("linear", 1.0, 1.0 / 8.0, 1),
                   OpTime("relu", 1.0, 1.0 / 8.0, 1))
    assert time_by_op([]) == ()
    assert time_by_op([("relu", 0.0)]) == (OpTime("relu", 0.0, 0.0, 1),)


@pytest.mark.parametrize(("text", "expected"), [
    ("run:3", SideSpec("run", "3")), ("system:1", SideSpec("system", "1")),
    (" predicted:a0c0 ", SideSpec("predicted", "a0c0")),
])
def test_parse_side(text: str, expected: SideSpec) -> None:
    assert parse_side(text) == expected


@pytest.mark.parametrize(("text", "needle"), [
    ("3", "run:ID, system:ID|KEY or predicted:ID|KEY"), ("runs:3", "run:ID"), ("run:", "run:ID"),
    ("run:abc", "a run is named by its number"), ("run:-1", "a run is named by its number"),
])
def test_parse_side_refuses_malformed_text(text: str, needle: str) -> None:
    with pytest.raises(NnperfError, match=needle):
        parse_side(text)


def test_two_runs_layer_by_layer_by_op_type_and_whole(store: Store) -> None:
    c = compare(load_side(store, SideSpec("run", "1")), load_side(store, SideSpec("system", "2"), "net"))
    assert c.b.run_id == 3  # the newest finished run of 'net' on system 2: not run 4 (unfinished) nor 5 ('other')
    rows = {d.layer: (d.op, d.a_s, d.b_s, d.speedup) for d in c.layers}
    assert [d.layer for d in c.layers] == ["conv1", "relu1", "conv2", "fc", "pool"]  # A's order, then B's extras
    assert rows["conv1"] == ("conv", 4 * MS, 2 * MS, pytest.approx(4 / 2))
    assert rows["relu1"][3] == pytest.approx(1.0)
    assert rows["conv2"][3] == pytest.approx(2 / 4)
    assert rows["fc"] == ("linear", 1 * MS, None, None) and rows["pool"] == ("max_pool", None, 0.5 * MS, None)
    assert (c.only_in_a, c.only_in_b) == (("fc",), ("pool",))
    assert c.speedup == pytest.approx(8.5 / 10.2)
    assert c.slower_pct == pytest.approx((10.2 / 8.5 - 1) * 100)  # 20%
    assert c.geomean_speedup == pytest.approx((2 * 1 * 0.5) ** (1 / 3))  # 1.0
    assert [(d.layer, d.delta_s) for d in c.slowdowns()] == [("conv2", pytest.approx(2 * MS))]
    ops = {o.op: (o.a_s, o.a_share, o.b_s, o.b_share) for o in c.op_types}
    assert list(ops) == ["conv", "linear", "relu", "max_pool"]  # A's by total (ties by name), then B's
    assert ops["conv"] == pytest.approx((6 * MS, 6 / 8, 6 * MS, 6 / 7.5))
    assert ops["linear"] == pytest.approx((1 * MS, 1 / 8, 0.0, 0.0))
    assert ops["max_pool"] == pytest.approx((0.0, 0.0, 0.5 * MS, 0.5 / 7.5))
    assert sum(o.a_s for o in c.op_types) == pytest.approx(c.a.layer_sum_s) == pytest.approx(8 * MS)
    assert (c.a.network_s, c.a.network_source, c.b.network_s) == (WHOLE_A, "measured", WHOLE_B)


def test_the_document_carries_the_envelope_and_seconds(store: Store) -> None:
    doc = compare(load_side(store, SideSpec("run", "1")), load_side(store, SideSpec("run", "3"))).to_dict()
    assert (doc["format"], doc["version"]) == COMPARE_FORMAT == ("nnperf-compare", 1)
    assert doc["network"] == {"a_s": WHOLE_A, "b_s": WHOLE_B, "speedup": pytest.approx(8.5 / 10.2),
                              "slower_pct": pytest.approx(20.0)}
    assert doc["a"]["label"] == "run 1: net on fake/cpu[threads=1] (isolated)"
    assert doc["layers"][0] == {"layer": "conv1", "op": "conv", "a_s": 4 * MS, "b_s": 2 * MS,
                                "speedup": pytest.approx(2.0)}


def test_a_fused_group_counts_once_and_framework_nodes_are_kept(store: Store) -> None:
    run_id = add_run(store, 1, "fused", {"conv1": ("conv", 3 * MS), "relu1": ("relu", 3 * MS),
                                         "conv2": ("conv", 2 * MS)}, 6 * MS, Method.PROFILER,
                     groups={"conv1": "conv1", "relu1": "conv1"}, extra={"unattributed:aten::copy_": 0.5 * MS})
    side = load_side(store, SideSpec("run", str(run_id)))
    assert [(t.layer, t.op, t.time_s, t.group) for t in side.layers] == [
        ("conv1", "conv", 3 * MS, "conv1"), ("relu1", "relu", 0.0, "conv1"), ("conv2", "conv", 2 * MS, ""),
        ("aten::copy_", "framework", 0.5 * MS, "")]
    assert side.layer_sum_s == pytest.approx((3 + 2 + 0.5) * MS)
    c = compare(load_side(store, SideSpec("run", "1")), side)
    relu = next(d for d in c.layers if d.layer == "relu1")
    assert (relu.speedup, relu.b_group) == (None, "conv1")  # a fused member has no ratio of its own


def test_a_run_without_a_whole_network_time_uses_the_layer_sum(store: Store) -> None:
    run_id = add_run(store, 1, "partial", RUN_A, None)
    side = load_side(store, SideSpec("run", str(run_id)))
    assert (side.network_s, side.network_source) == (pytest.approx(8 * MS), "sum of layers")


@pytest.mark.parametrize(("spec_", "model", "error", "needle"), [
    (SideSpec("run", "99"), None, StoreError, "no run with id 99"),
    (SideSpec("system", "9"), "net", StoreError, "no system with id 9"),
    (SideSpec("system", "1"), None, NnperfError, "system:1 needs --model"),
    (SideSpec("system", "1"), "resnet18", NnperfError, "no finished run of 'resnet18'; it has finished runs of net"),
    (SideSpec("predicted", "1"), None, NnperfError, "predicted:1 needs --model"),
])
def test_what_cannot_be_read_is_a_clear_error(store: Store, spec_: SideSpec, model: str | None,
                                              error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle):
        load_side(store, spec_, model)


def test_an_empty_run_is_refused(store: Store) -> None:
    run = store.start_run(store.add_system(spec("3")).id, "empty", "empty", "h", "isolated", {})
    with pytest.raises(NnperfError, match=f"run {run.id} .* holds no measurement"):
        load_side(store, SideSpec("run", str(run.id)))


def test_csv_holds_the_per_layer_table_with_formula_cells_quoted(store: Store, tmp_path: Path) -> None:
    run_id = add_run(store, 1, "odd", {"=cmd": ("conv", 1 * MS)}, 1 * MS)
    c = compare(load_side(store, SideSpec("run", "1")), load_side(store, SideSpec("run", str(run_id))))
    path = tmp_path / "c.csv"
    assert write_csv(c, path) == 5
    rows = list(csv.reader(path.open()))
    assert tuple(rows[0]) == CSV_COLUMNS == ("layer", "op", "a_s", "b_s", "speedup")
    assert rows[1] == ["conv1", "conv", repr(4 * MS), "", ""]
    assert rows[-1] == ["'=cmd", "conv", "", repr(1 * MS), ""]
