"""The SQLite measurement store: round trips, resume after a kill, concurrent writers, versions, CSV."""

from __future__ import annotations

import csv
import io
import math
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nnperf.errors import StoreError
from nnperf.measure import HostInfo, LayerMeasurement, Method, NetworkMeasurement, SystemSpec, Timing, TimingStats
from nnperf.store import SCHEMA_VERSION, Store, default_store_path, export_csv
from nnperf.store._export import LAYER_COLUMNS, NETWORK_COLUMNS

HERE = Path(__file__).resolve().parent


# -- builders (also imported by the child processes below) --------------------------------------------------------
def make_spec(threads: str = "4") -> SystemSpec:
    host = HostInfo(
        hostname="bench-01",
        cpu_model="Test CPU @ 3.0GHz",
        logical_cores=8,
        governor="performance",
        os="Linux-6.1",
        python="3.11.9",
        versions=(("numpy", "1.26.4"), ("onnxruntime", "1.20.0")),
        allocator_env=(("MALLOC_ARENA_MAX", "2"),),
    )
    return SystemSpec("onnxruntime", "cpu", "Test CPU @ 3.0GHz", (("intra_op_threads", threads),), host)


def make_timing(i: int) -> Timing:
    # Values that are not short decimals (0.1 + 0.2, 1/3) check that floats come back bit for bit.
    times = (1e-3 + i * 1e-6, 0.1 + 0.2, 1 / 3 * 1e-3, 2.5e-3 + i * 1e-7)
    stats = TimingStats(
        n=len(times),
        median_s=1.2e-3 + i * 1e-6,
        q1_s=1.1e-3,
        q3_s=1 / 3,
        mean_s=0.077 + i * 1e-9,
        std_s=0.15,
        min_s=min(times),
        max_s=max(times),
        ci_low_s=1.0e-3,
        ci_high_s=2.6e-3,
        confidence=0.95,
        n_outliers=1 + i % 2,
    )
    return Timing(times, 16 + i, stats, "converged", 0.5 + i, started_at=1.7e9 + i, ended_at=1.7e9 + i + 0.5)


def make_layer(i: int, method: Method = Method.ISOLATED) -> LayerMeasurement:
    return LayerMeasurement(
        layer=f"conv{i}",
        op="conv",
        method=method,
        timing=make_timing(i),
        group=f"fused{i // 2}",
        group_size=2,
        energy_j=None if i % 2 else 0.0123 + i,
        power_meter="" if i % 2 else "rapl",
    )


def write_layers(path: str, run_id: int, count: int, start: object) -> None:
    """Child process of the concurrency test: wait for the start signal, then store ``count`` layers."""
    with Store(path) as store:
        start.wait()  # type: ignore[attr-defined]
        for i in range(count):
            store.add_layer_measurement(run_id, make_layer(i))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "m.db") as s:
        yield s


# -- round trips ---------------------------------------------------------------------------------------------------
def test_round_trip_of_system_run_layer_and_network(store: Store) -> None:
    spec = make_spec()
    system = store.add_system(spec)
    assert (system.key, system.backend, system.device, system.device_name) == (
        spec.key,
        "onnxruntime",
        "cpu",
        "Test CPU @ 3.0GHz",
    )
    assert system.options == {"intra_op_threads": "4"}
    assert system.host["versions"] == {"numpy": "1.26.4", "onnxruntime": "1.20.0"}
    assert system.host["logical_cores"] == 8
    assert system.spec() == spec and system.spec().key == spec.key
    assert system.label == "onnxruntime/cpu[intra_op_threads=4]"

    run = store.start_run(system.id, "tiny/isolated/abc", "tiny", "h123", "isolated", {"budget_s": 2.5, "seed": 3})
    assert (run.system_id, run.campaign, run.model, run.network_hash, run.method) == (
        system.id,
        "tiny/isolated/abc",
        "tiny",
        "h123",
        "isolated",
    )
    assert run.config == {"budget_s": 2.5, "seed": 3}
    assert (run.status, run.finished_at, run.resumed, run.pid) == ("running", None, False, os.getpid())

    layers = [make_layer(0), make_layer(1, Method.PROFILER)]
    for m in layers:
        store.add_layer_measurement(run.id, m)
    net = NetworkMeasurement(make_timing(7), energy_j=None, power_meter="", extra={"profiler_sum_s": 0.0042})
    store.add_network_measurement(run.id, net)
    store.finish_run(run.id)

    records = store.layer_measurements(run_id=run.id)
    assert [r.measurement() for r in records] == layers
    first = records[0]
    assert first.times_s == (1e-3, 0.1 + 0.2, 1 / 3 * 1e-3, 2.5e-3)
    assert (first.median_s, first.stats.q3_s, first.n, first.stats.n_outliers, first.block_size) == (
        1.2e-3, 1 / 3, 4, 1, 16)
    assert (first.energy_j, first.power_meter, first.group, first.group_size) == (0.0123, "rapl", "fused0", 2)
    assert records[1].energy_j is None and records[1].method is Method.PROFILER
    assert [r.layer for r in store.layer_measurements(method="profiler")] == ["conv1"]
    assert store.done_layers(run.id) == {("conv0", "isolated"), ("conv1", "profiler")}

    (net_record,) = store.network_measurements(system_id=system.id)
    assert net_record.measurement() == net
    assert net_record.extra == {"profiler_sum_s": 0.0042} and net_record.energy_j is None
    assert store.has_network_measurement(run.id)

    (done,) = store.runs(system_id=system.id, model="tiny")
    assert done.status == "done" and done.finished_at is not None and done.finished_at >= done.started_at
    assert store.runs(model="other") == []
    assert store.measurement_counts() == {system.id: (1, 2, 1)}


def test_nan_statistic_reads_back_as_nan(store: Store) -> None:
    run = store.start_run(store.add_system(make_spec()).id, "c", "m", "h", "isolated", {})
    t = make_timing(0)
    one = Timing(
        (2e-3,), 1, TimingStats(1, 2e-3, 2e-3, 2e-3, 2e-3, math.nan, 2e-3, 2e-3, 2e-3, 2e-3, 0.95, 0), "budget", 1.0
    )
    store.add_layer_measurement(run.id, LayerMeasurement("relu", "relu", Method.ISOLATED, one))
    store.add_network_measurement(run.id, NetworkMeasurement(t))
    (record,) = store.layer_measurements(run_id=run.id)
    assert math.isnan(record.stats.std_s) and record.median_s == 2e-3 and record.timing.stop_reason == "budget"


def test_add_system_is_idempotent_and_systems_are_found_by_id_or_key_prefix(store: Store) -> None:
    a = store.add_system(make_spec())
    again = store.add_system(make_spec())
    assert again == a
    b = store.add_system(make_spec(threads="8"))
    assert b.id != a.id and b.key != a.key
    assert [s.id for s in store.systems()] == [a.id, b.id]
    assert store.system(a.id) == a
    assert store.system(b.key[:6]) == b
    assert store.system(a.key.upper()) == a
    with pytest.raises(StoreError, match="no system"):
        store.system(999)
    with pytest.raises(StoreError, match="no system whose key starts with 'zz'"):
        store.system("zz")
    assert store.find_system(b.key) == b
    assert store.find_system(b.key[:6]) is None  # the whole key, not a prefix
    assert store.find_system(make_spec(threads="16").key) is None


def test_ambiguous_key_prefix_is_refused(store: Store) -> None:
    first = store.add_system(make_spec("1"))
    threads = 2
    while make_spec(str(threads)).key[0] != first.key[0]:
        threads += 1
    store.add_system(make_spec(str(threads)))
    with pytest.raises(StoreError, match="ambiguous"):
        store.system(first.key[0])


def test_a_layer_measured_again_replaces_the_old_one(store: Store) -> None:
    run = store.start_run(store.add_system(make_spec()).id, "c", "m", "h", "isolated", {})
    store.add_layer_measurement(run.id, make_layer(0))
    newer = LayerMeasurement("conv0", "conv", Method.ISOLATED, make_timing(5))
    store.add_layer_measurement(run.id, newer)
    assert [r.measurement() for r in store.layer_measurements(run_id=run.id)] == [newer]


def test_writes_to_unknown_runs_or_systems_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="no run with id 42"):
        store.add_layer_measurement(42, make_layer(0))
    with pytest.raises(StoreError, match="no run with id 42"):
        store.finish_run(42)
    with pytest.raises(StoreError, match="no system with id 7"):
        store.start_run(7, "c", "m", "h", "isolated", {})
    run = store.start_run(store.add_system(make_spec()).id, "c", "m", "h", "isolated", {})
    with pytest.raises(StoreError, match="'done' or 'failed'"):
        store.finish_run(run.id, "paused")
    with pytest.raises(StoreError, match="unknown measuring method 'guess'"):
        store.layer_measurements(method="guess")


# -- resume --------------------------------------------------------------------------------------------------------
def test_a_killed_campaign_resumes_with_nothing_lost(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    child = f"""
import sys, time
sys.path.insert(0, {str(HERE)!r})
from test_store import make_layer, make_spec
from nnperf.store import Store
store = Store({str(path)!r})
system = store.add_system(make_spec())
run = store.start_run(system.id, "tiny/isolated", "tiny", "h1", "isolated", {{"budget_s": 1.0}})
for i in range(3):
    store.add_layer_measurement(run.id, make_layer(i))
print("stored 3", run.id, flush=True)
time.sleep(60)
"""
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
    assert line.startswith("stored 3"), line
    child_run_id = int(line.split()[2])

    with Store(path) as store:
        system = store.add_system(make_spec())
        run = store.start_run(system.id, "tiny/isolated", "tiny", "h1", "isolated", {"budget_s": 1.0})
        assert run.resumed and run.id == child_run_id and run.status == "running" and run.pid == os.getpid()
        assert store.done_layers(run.id) == {(f"conv{i}", "isolated") for i in range(3)}
        for i in range(5):
            if (f"conv{i}", "isolated") not in store.done_layers(run.id):
                store.add_layer_measurement(run.id, make_layer(i))
        store.finish_run(run.id)
        assert [r.measurement() for r in store.layer_measurements(run_id=run.id)] == [make_layer(i) for i in range(5)]
        assert [(r.id, r.status) for r in store.runs()] == [(run.id, "done")]
        # A finished campaign is not resumed: measuring it again starts a new run.
        again = store.start_run(system.id, "tiny/isolated", "tiny", "h1", "isolated", {"budget_s": 1.0})
        assert not again.resumed and again.id != run.id and store.done_layers(again.id) == set()


def test_a_failed_run_resumes_but_another_network_does_not(store: Store) -> None:
    system = store.add_system(make_spec())
    run = store.start_run(system.id, "c", "m", "h1", "isolated", {})
    store.finish_run(run.id, "failed")
    assert store.runs()[0].status == "failed"
    resumed = store.start_run(system.id, "c", "m", "h1", "isolated", {})
    assert resumed.resumed and resumed.id == run.id and resumed.finished_at is None
    other = store.start_run(system.id, "c", "m", "h2", "isolated", {})
    assert not other.resumed and other.id != run.id


def test_finished_run_is_the_newest_done_run_of_the_campaign(store: Store) -> None:
    system = store.add_system(make_spec())
    other_system = store.add_system(make_spec(threads="8"))
    assert store.finished_run(system.id, "c") is None
    first = store.start_run(system.id, "c", "m", "h", "isolated", {})
    assert store.finished_run(system.id, "c") is None  # still running
    store.finish_run(first.id, "done")
    second = store.start_run(system.id, "c", "m", "h", "isolated", {})
    store.finish_run(second.id, "done")
    failed = store.start_run(system.id, "c", "m", "h", "isolated", {})
    store.finish_run(failed.id, "failed")
    store.finish_run(store.start_run(system.id, "d", "m", "h", "isolated", {}).id, "done")
    store.finish_run(store.start_run(other_system.id, "c", "m", "h", "isolated", {}).id, "done")
    found = store.finished_run(system.id, "c")
    assert found is not None and (found.id, found.status) == (second.id, "done")


def _set_owner(path: Path, run_id: int, pid: int) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET pid = ? WHERE id = ?", (pid, run_id))


def test_a_run_whose_owner_is_alive_is_not_resumed_and_not_finished_by_another(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with Store(path) as store:
            system = store.add_system(make_spec())
            theirs = store.start_run(system.id, "c", "m", "h", "isolated", {})
            _set_owner(path, theirs.id, owner.pid)
            mine = store.start_run(system.id, "c", "m", "h", "isolated", {})
            assert not mine.resumed and mine.id != theirs.id and mine.pid == os.getpid()
            with pytest.raises(StoreError, match=f"belongs to process {owner.pid}"):
                store.finish_run(theirs.id, "done")
            store.finish_run(mine.id, "done")
            assert [(r.id, r.status, r.pid) for r in store.runs()] == [(theirs.id, "running", owner.pid),
                                                                      (mine.id, "done", os.getpid())]
            owner.kill()
            os.waitid(os.P_PID, owner.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie owns nothing
            resumed = store.start_run(system.id, "c", "m", "h", "isolated", {})
            assert resumed.resumed and resumed.id == theirs.id and resumed.pid == os.getpid()
    finally:
        owner.kill()
        owner.wait(timeout=30)


def test_a_running_run_of_this_very_process_is_resumed(store: Store) -> None:
    system = store.add_system(make_spec())
    first = store.start_run(system.id, "c", "m", "h", "isolated", {})
    again = store.start_run(system.id, "c", "m", "h", "isolated", {})
    assert again.resumed and again.id == first.id


# -- concurrency ---------------------------------------------------------------------------------------------------
def test_two_processes_writing_at_once_both_succeed(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Store(path) as store:
        system = store.add_system(make_spec())
        runs = [store.start_run(system.id, f"c{k}", "m", "h", "isolated", {}).id for k in range(2)]
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=write_layers, args=(str(path), run_id, 50, start)) for run_id in runs]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0]
    with Store(path) as store:
        assert [len(store.layer_measurements(run_id=r)) for r in runs] == [50, 50]
        assert store.measurement_counts() == {system.id: (2, 100, 0)}


# -- opening files -------------------------------------------------------------------------------------------------
def test_new_file_gets_schema_version_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    Store(path).close()
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        raw.close()
    Store(path).close()  # reopening our own file is fine


def test_store_written_by_newer_nnperf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    Store(path).close()
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA user_version = 99")
    raw.close()
    with pytest.raises(StoreError, match="newer") as err:
        Store(path)
    assert str(path) in str(err.value) and "schema 99" in str(err.value) and "up to 1" in str(err.value)


def test_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(StoreError, match="is not an nnperf store"):
        Store(path)
    assert path.read_text().startswith("these are my notes")


def test_database_of_another_program_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE invoices (id INTEGER)")
    raw.commit()
    raw.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="is not an nnperf store.*invoices"):
        Store(path)
    assert path.read_bytes() == before  # not switched to WAL before it was refused
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_refused_newer_store_is_left_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA user_version = 99")
    raw.execute("CREATE TABLE systems (id INTEGER)")
    raw.commit()
    raw.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="newer"):
        Store(path)
    assert path.read_bytes() == before and not Path(f"{path}-wal").exists()


def test_reading_without_create_refuses_a_missing_or_empty_file(tmp_path: Path) -> None:
    from nnperf.errors import MissingStoreError

    missing = tmp_path / "typo.db"
    with pytest.raises(MissingStoreError, match="no store at"):
        Store(missing, create=False)
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreError, match="empty file"):
        Store(empty, create=False)
    assert empty.stat().st_size == 0
    Store(tmp_path / "real.db").close()
    with Store(tmp_path / "real.db", create=False) as store:
        assert store.systems() == []


def test_missing_folder_is_named_and_not_created(tmp_path: Path) -> None:
    folder = tmp_path / "no" / "such"
    with pytest.raises(StoreError) as err:
        Store(folder / "m.db")
    assert str(folder) in str(err.value) and "does not exist" in str(err.value)
    assert not folder.exists()


def test_closed_store_raises_store_error(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        pass
    with pytest.raises(StoreError):
        store.systems()


def test_default_store_path_honours_nnperf_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NNPERF_DB", str(tmp_path / "elsewhere.db"))
    assert default_store_path() == tmp_path / "elsewhere.db"
    monkeypatch.delenv("NNPERF_DB")
    monkeypatch.chdir(tmp_path)
    assert default_store_path().resolve() == (tmp_path / "nnperf.db").resolve()


# -- CSV -----------------------------------------------------------------------------------------------------------
def test_export_csv(store: Store, tmp_path: Path) -> None:
    system = store.add_system(make_spec())
    other = store.add_system(make_spec(threads="1"))
    run = store.start_run(system.id, "c", "tiny", "h", "isolated", {})
    for i in range(3):
        store.add_layer_measurement(run.id, make_layer(i))
    store.add_network_measurement(run.id, NetworkMeasurement(make_timing(2), 1.5, "rapl", {"profiler_sum_s": 0.25}))

    out = io.StringIO()
    assert export_csv(store, out, "layers") == 3
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[0] == list(LAYER_COLUMNS)
    assert rows[0][:3] == ["system_id", "system_key", "backend"] and rows[0][-1] == "times_s"
    first = dict(zip(rows[0], rows[1]))
    assert (first["system_key"], first["model"], first["layer"], first["method"]) == (
        system.key,
        "tiny",
        "conv0",
        "isolated",
    )
    assert first["options"] == "intra_op_threads=4"
    assert float(first["median_s"]) == 1.2e-3 and first["energy_j"] == "0.0123"
    assert tuple(float(x) for x in first["times_s"].split()) == make_timing(0).times_s
    assert dict(zip(rows[0], rows[2]))["energy_j"] == ""

    path = tmp_path / "networks.csv"
    assert export_csv(store, path, "networks", system_id=system.id) == 1
    with open(path, newline="") as f:
        (net,) = list(csv.DictReader(f))
    assert list(net) == list(NETWORK_COLUMNS)
    assert float(net["energy_j"]) == 1.5 and net["extra"] == '{"profiler_sum_s": 0.25}'
    assert export_csv(store, io.StringIO(), "layers", system_id=other.id) == 0
    with pytest.raises(StoreError, match="no system with id 99"):
        export_csv(store, io.StringIO(), "layers", system_id=99)
    with pytest.raises(StoreError, match="unknown table"):
        export_csv(store, io.StringIO(), "bogus")  # type: ignore[arg-type]
