"""Measurement campaigns that are killed, interrupted and run side by side.

Run: .venv/bin/python bench/kill_and_concurrency.py [--kills 20] [--interrupts 5] [--pairs 10] [--seed 15]
     [--json bench/results/reliability/kill_and_concurrency.json]

1. Kills: ``nnperf calibrate`` on the real torch backend (1 thread) with a small per-layer effort
   (``--budget-s 0.05 --target-ci 0.05``) runs once uninterrupted into its own store (the reference:
   its duration T and its set of stored (model, layer, method) rows). Then, into a fresh store, it is
   started again and again and stopped each time: ``--kills`` times with SIGKILL and ``--interrupts``
   times with SIGINT (Ctrl-C), in a seeded random order, each session stopped a seeded random delay
   after it started, uniform in [1 s, startup + 2 T / sessions] (startup: the reference's time to its
   first stored row), so together the sessions cover about the whole calibration. A last session runs
   to the end. Counted: kills survived (the last session finishes, exit 0), interrupts answered with
   exactly the one resume line on stderr and exit 130, rows lost (in the reference, not in the killed
   store), rows extra, rows duplicated (one (model, layer, method) stored twice) and runs per campaign.
2. Concurrent writers: ``--pairs`` times two ``nnperf profile`` processes (torch, same effort) started
   together on one store, profiling different networks (allcnn_c, previousnet02), and ``--pairs``
   times two running the identical campaign (allcnn_c twice). Counted: exit codes, error lines on
   stderr, 'database is locked' messages, drift warnings (two processes on two cores disturb each
   other's sentinel: expected, not an error), rows missing or duplicated per run, and for the
   identical pairs whether each process owned its own run (two runs, each with its pid, both 'done').

All times here are real measurements on this machine, but only the store's contents are reported.
Stdout gets Markdown.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _shared import markdown_table, result_path, write_result

NNPERF = str(Path(sys.executable).with_name("nnperf"))
EFFORT = ("--budget-s", "0.05", "--target-ci", "0.05")
CALIBRATE = ("calibrate", "--backend", "torch", *EFFORT)
DIFFERENT = ("allcnn_c", "previousnet02")
IDENTICAL = ("allcnn_c", "allcnn_c")

Row = tuple[str, str, str]


def _default_sigint() -> None:
    # A background job's SIGINT is ignored and inherited: give the child Python's Ctrl-C back.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(*argv: str, db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([NNPERF, *argv, "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_default_sigint)  # noqa: PLW1509 - no threads here


def _rows(db: Path) -> list[Row]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return conn.execute("SELECT r.model, m.layer, m.method FROM layer_measurements m "
                                "JOIN runs r ON r.id = m.run_id").fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        return []


def _runs(db: Path) -> list[tuple[int, str, str, str, int]]:
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute("SELECT id, model, method, status, pid FROM runs ORDER BY id").fetchall()


def _reference(folder: Path) -> tuple[float, float, set[Row], int]:
    """An uninterrupted calibration: (seconds, seconds to its first row, its rows, its runs)."""
    db = folder / "reference.db"
    started = time.monotonic()
    proc = _start(*CALIBRATE, db=db)
    first_row_s = None
    while proc.poll() is None:
        if first_row_s is None and _rows(db):
            first_row_s = time.monotonic() - started
        time.sleep(0.2)
    seconds = time.monotonic() - started
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"the uninterrupted calibration failed ({proc.returncode}): {err}")
    return seconds, first_row_s or 0.0, set(_rows(db)), len(_runs(db))


def bench_kills(kills: int, interrupts: int, seed: int, folder: Path) -> dict[str, Any]:
    ref_s, startup_s, expected, ref_runs = _reference(folder)
    rng = random.Random(seed)
    signals = [signal.SIGKILL] * kills + [signal.SIGINT] * interrupts
    rng.shuffle(signals)
    db = folder / "killed.db"
    hi_s = startup_s + 2 * ref_s / len(signals)
    sessions = []
    started = time.monotonic()
    for sig in signals:
        delay_s = rng.uniform(1.0, hi_s)
        proc = _start(*CALIBRATE, db=db)
        time.sleep(delay_s)
        finished_first = proc.poll() is not None
        if not finished_first:
            proc.send_signal(sig)
        _, err = proc.communicate()
        sessions.append({"signal": sig.name, "delay_s": round(delay_s, 2), "rc": proc.returncode,
                         "finished_before_the_signal": finished_first, "stderr": err.strip()[-300:],
                         "rows_after": len(set(_rows(db)))})
    final = _start(*CALIBRATE, db=db)
    _, final_err = final.communicate()
    total_s = time.monotonic() - started
    rows = _rows(db)
    counts = Counter(rows)
    runs = _runs(db)
    message = (f"nnperf: interrupted; everything measured so far is saved in {db}; "
               "run the same command again to resume")
    stopped = [s for s in sessions if not s["finished_before_the_signal"]]
    return {
        "reference_s": round(ref_s, 1), "reference_first_row_s": round(startup_s, 1),
        "reference_rows": len(expected), "reference_runs": ref_runs,
        "sigkills": sum(s["signal"] == "SIGKILL" for s in stopped),
        "sigkills_rc_minus_9": sum(s["signal"] == "SIGKILL" and s["rc"] == -9 for s in stopped),
        "sigints": sum(s["signal"] == "SIGINT" for s in stopped),
        "sigints_one_line_rc_130": sum(s["signal"] == "SIGINT" and s["rc"] == 130 and s["stderr"] == message
                                       for s in stopped),
        "sessions_finished_before_the_signal": len(sessions) - len(stopped),
        "final_rc": final.returncode, "final_stderr": final_err.strip()[-300:],
        "killed_store_rows": len(rows), "rows_lost": len(expected - set(rows)),
        "rows_extra": len(set(rows) - expected), "rows_duplicated": sum(n - 1 for n in counts.values() if n > 1),
        "runs": len(runs), "runs_not_done": sum(r[3] != "done" for r in runs),
        "campaigns_with_more_than_one_run": sum(n > 1 for n in Counter((r[1], r[2]) for r in runs).values()),
        "wall_s_killed_sessions_and_final": round(total_s, 1),
        "sessions": sessions,
    }


def _pair(models: tuple[str, str], folder: Path, index: int) -> dict[str, Any]:
    db = folder / f"pair-{'-'.join(models)}-{index}.db"
    procs = [_start("profile", model, "--backend", "torch", *EFFORT, db=db) for model in models]
    errs = [p.communicate()[1] for p in procs]
    rcs = [p.returncode for p in procs]
    from nnperf.zoo import zoo_network

    runs = _runs(db) if db.exists() else []
    per_run = []
    if db.exists():
        with sqlite3.connect(db, timeout=30) as conn:
            per_run = conn.execute("SELECT run_id, layer, COUNT(*) FROM layer_measurements GROUP BY run_id, layer"
                                   ).fetchall()
    stored: dict[int, set[str]] = {}
    duplicated = 0
    for run_id, layer, n in per_run:
        stored.setdefault(run_id, set()).add(layer)
        duplicated += n - 1
    missing = 0
    for run_id, model, _, _, _ in runs:
        missing += len({layer.name for layer in zoo_network(model).layers} - stored.get(run_id, set()))
    owners_ok = (len(runs) == 2 and sorted(r[4] for r in runs) == sorted(p.pid for p in procs)
                 and all(r[3] == "done" for r in runs))
    lines = [line for e in errs for line in e.splitlines()]
    return {"rcs": rcs, "errors": sum("error" in line.lower() or "traceback" in line.lower() for line in lines),
            "drift_warnings": sum("drifted" in line for line in lines),
            "locked": sum(e.lower().count("locked") for e in errs), "runs": len(runs),
            "rows_missing": missing, "rows_duplicated": duplicated, "each_owns_its_run": owners_ok,
            "stderr": [e.strip()[-300:] for e in errs if e.strip()]}


def bench_pairs(pairs: int, folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, models in (("different_networks", DIFFERENT), ("identical_campaign", IDENTICAL)):
        results = [_pair(models, folder, i) for i in range(pairs)]
        out[kind] = {
            "pairs": pairs, "processes_exit_0": sum(rc == 0 for r in results for rc in r["rcs"]),
            "error_lines": sum(r["errors"] for r in results),
            "drift_warnings": sum(r["drift_warnings"] for r in results),
            "database_is_locked": sum(r["locked"] for r in results),
            "rows_missing": sum(r["rows_missing"] for r in results),
            "rows_duplicated": sum(r["rows_duplicated"] for r in results),
            "pairs_each_owning_its_run": sum(r["each_owns_its_run"] for r in results),
            "details": results,
        }
    return out


def markdown(report: dict[str, Any]) -> str:
    k = report["kills"]
    kills = markdown_table(
        ["SIGKILLs (rc -9)", "SIGINTs (one line, rc 130)", "ended before the signal", "final rc", "rows lost",
         "rows extra", "rows duplicated", "runs (not done)", "campaigns with >1 run", "wall s"],
        [[f"{k['sigkills']} ({k['sigkills_rc_minus_9']})", f"{k['sigints']} ({k['sigints_one_line_rc_130']})",
          k["sessions_finished_before_the_signal"], k["final_rc"], k["rows_lost"], k["rows_extra"],
          k["rows_duplicated"], f"{k['runs']} ({k['runs_not_done']})", k["campaigns_with_more_than_one_run"],
          k["wall_s_killed_sessions_and_final"]]])
    pairs = markdown_table(
        ["pair", "pairs", "processes exit 0", "error lines", "'database is locked'", "drift warnings", "rows missing",
         "rows duplicated", "pairs each owning its run"],
        [[f"{kind.replace('_', ' ')} ({' + '.join(DIFFERENT if kind == 'different_networks' else IDENTICAL)})",
          c["pairs"], c["processes_exit_0"], c["error_lines"], c["database_is_locked"], c["drift_warnings"],
          c["rows_missing"], c["rows_duplicated"], c["pairs_each_owning_its_run"]]
         for kind, c in report["pairs"].items()])
    return "\n".join([
        (f"Kills: `nnperf calibrate {' '.join(CALIBRATE[1:])}` (uninterrupted {k['reference_s']} s, "
         f"{k['reference_rows']} layer rows in {k['reference_runs']} runs)"), "", kills, "",
        "Concurrent writers: two `nnperf profile --backend torch` on one store, started together", "", pairs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs of the calibration (default 20)")
    parser.add_argument("--interrupts", type=int, default=5, help="SIGINTs of the calibration (default 5)")
    parser.add_argument("--pairs", type=int, default=10, help="concurrent pairs of each kind (default 10)")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--json", type=Path, default=result_path("reliability", "kill_and_concurrency"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nnperf-kill-") as tmp:
        folder = Path(tmp)
        report = {"seed": args.seed, "cpus": os.cpu_count(),
                  "kills": bench_kills(args.kills, args.interrupts, args.seed, folder),
                  "pairs": bench_pairs(args.pairs, folder)}
    write_result(args.json, method="reliability", concern="kills and concurrent writers", values=report)
    print(markdown(report))


if __name__ == "__main__":
    main()
