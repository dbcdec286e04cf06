"""``nnperf calibrate`` killed (SIGKILL) and interrupted (Ctrl-C) at random moments, then run again to the end.

The fake backend keeps it quick (about 35 s uninterrupted on a 2-core VM:
the harness's warm-ups run on the real clock); the real-backend version with
20 kills is bench/kill_and_concurrency.py. Whatever the moments, the store must
end with every layer of every calibration network once per method: nothing
lost, nothing twice.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nnperf.campaign import calibration_networks

NNPERF = str(Path(sys.executable).with_name("nnperf"))
SETTINGS = ("--backend", "fake", "--budget-s", "0.01", "--target-ci", "0.5", "--sample-budget", "0")
KILLS = (signal.SIGKILL, signal.SIGINT, signal.SIGKILL)
"""One session per signal, each stopped at a moment drawn from ``MOMENTS_S``."""

MOMENTS_S = (1.5, 8.0)
"""Seconds after a session starts, well inside the remaining work of an uninterrupted run."""


def _interrupt_message(db: Path) -> str:
    return f"nnperf: interrupted; everything measured so far is saved in {db}; run the same command again to resume\n"


def _calibrate(db: Path) -> subprocess.Popen[str]:
    # The test may run as a background job, whose SIGINT is ignored and would be inherited: restore the default.
    return subprocess.Popen([NNPERF, "calibrate", *SETTINGS, "--db", str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509


def _rows(db: Path) -> list[tuple[str, str, str]]:
    """(model, layer, method) of every stored layer measurement; none while the store is not there yet, or is
    created but its tables are not (a calibration just started, or killed before it wrote them)."""
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=30) as conn:
        try:
            return conn.execute("SELECT r.model, m.layer, m.method FROM layer_measurements m "
                                "JOIN runs r ON r.id = m.run_id").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise


def _expected() -> set[tuple[str, str, str]]:
    return {(net.name, layer.name, method) for net in calibration_networks() for layer in net.layers
            for method in ("isolated", "profiler")}


def _stop(proc: subprocess.Popen[str], db: Path, sig: signal.Signals, moment_s: float) -> tuple[int, str]:
    """Sends ``sig`` ``moment_s`` after the start (a Ctrl-C only once this session stored a row); (rc, stderr)."""
    before = len(_rows(db))
    time.sleep(moment_s)
    deadline = time.monotonic() + 30
    while sig == signal.SIGINT and len(_rows(db)) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, "the calibration ended before it could be stopped"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.slow
def test_calibrate_killed_and_interrupted_at_random_moments_resumes_with_nothing_lost_or_doubled(
        tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    rng = random.Random(15)
    for sig in KILLS:
        rc, err = _stop(_calibrate(db), db, sig, rng.uniform(*MOMENTS_S))
        if sig == signal.SIGKILL:
            assert rc == -signal.SIGKILL
        else:
            assert (rc, err) == (130, _interrupt_message(db))  # one line, no traceback
        rows = _rows(db)
        assert len(rows) == len(set(rows)) and set(rows) <= _expected()
    stopped_with = len(set(_rows(db)))
    final = _calibrate(db)
    out, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    assert "stored for fake/cpu" in out.replace("\n", "")
    rows = _rows(db)
    assert len(rows) == len(set(rows)) and set(rows) == _expected() and 0 < stopped_with < len(rows)
    with sqlite3.connect(db) as conn:
        runs = conn.execute("SELECT model, method, status FROM runs").fetchall()
    # one run per network and method, every one finished: the killed runs were resumed, not started again
    assert sorted(runs) == sorted({(model, method, "done") for model, _, method in _expected()})
