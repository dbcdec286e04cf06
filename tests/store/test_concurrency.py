"""Concurrent writers of one store: who owns a run, and campaigns of separate processes that overlap in time.

Every process here is real (spawned or a ``nnperf`` subprocess), so SQLite's
locking and the pid ownership of runs are what is tested, not a simulation.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_store import make_spec

from nnperf.store import Store
from nnperf.zoo import zoo_network

NNPERF = str(Path(sys.executable).with_name("nnperf"))
QUICK = ("--backend", "fake", "--budget-s", "0.01", "--target-ci", "0.5")


def claim(path: str, system_id: int, start: object, release: object, out: object) -> None:
    """Child process: wait for the start signal, open the campaign's run, report it, stay alive until released."""
    with Store(path) as store:
        start.wait()  # type: ignore[attr-defined]
        run = store.start_run(system_id, "c", "m", "h", "isolated", {})
        out.put((os.getpid(), run.id, run.resumed))  # type: ignore[attr-defined]
        release.wait(60)  # type: ignore[attr-defined]


def test_two_processes_racing_for_a_dead_owners_run_do_not_both_get_it(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    with Store(path) as store:
        system = store.add_system(make_spec())
        orphan = store.start_run(system.id, "c", "m", "h", "isolated", {})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET pid = ? WHERE id = ?", (dead.pid, orphan.id))
    ctx = multiprocessing.get_context("spawn")
    start, release, out = ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=claim, args=(str(path), system.id, start, release, out)) for _ in range(2)]
    for p in procs:
        p.start()
    start.set()
    try:
        claims = sorted((out.get(timeout=60) for _ in procs), key=lambda c: not c[2])
    finally:
        release.set()
        for p in procs:
            p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0]
    (winner, won_id, resumed), (loser, new_id, loser_resumed) = claims
    assert (won_id, resumed) == (orphan.id, True) and not loser_resumed and new_id != orphan.id
    with Store(path) as store:
        assert {(r.id, r.pid) for r in store.runs()} == {(orphan.id, winner), (new_id, loser)}


def _nnperf_profile(db: Path, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([NNPERF, "profile", *argv, *QUICK, "--db", str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(procs: list[subprocess.Popen[str]]) -> list[str]:
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert not any("locked" in e or "error" in e.lower() for e in errs), errs
    return errs


def _layers_by_run(db: Path) -> dict[int, list[str]]:
    with Store(db, create=False) as store:
        rows = store.layer_measurements()
    out: dict[int, list[str]] = {}
    for r in rows:
        out.setdefault(r.run_id, []).append(r.layer)
    return out


@pytest.mark.slow
def test_two_processes_profiling_different_networks_into_one_store(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    models = ("allcnn_c", "previousnet02")
    _finish([_nnperf_profile(db, model) for model in models])
    with Store(db, create=False) as store:
        runs = {r.model: r for r in store.runs()}
    assert sorted(runs) == sorted(models) and {r.status for r in runs.values()} == {"done"}
    layers = _layers_by_run(db)
    for model in models:
        assert sorted(layers[runs[model].id]) == sorted(layer.name for layer in zoo_network(model).layers)


@pytest.mark.slow
def test_two_processes_running_the_same_campaign_at_once_each_own_their_run(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    procs = [_nnperf_profile(db, "allcnn_c", "--gap-s", "0.05") for _ in range(2)]
    _finish(procs)
    with Store(db, create=False) as store:
        runs = store.runs()
    # Both started before either finished, so the second found the first one's run alive and started its own.
    assert sorted(r.pid for r in runs) == sorted(p.pid for p in procs)
    assert [r.status for r in runs] == ["done", "done"]
    expected = sorted(layer.name for layer in zoo_network("allcnn_c").layers)
    assert {run_id: sorted(names) for run_id, names in _layers_by_run(db).items()} == {r.id: expected for r in runs}
