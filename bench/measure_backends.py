"""Measurement backends on ResNet-18 and MobileNet v2: whole-network spread, per-layer noise, layer sums.

Run: .venv/bin/python bench/measure_backends.py [--json FILE]   (about 30 min here)
     .venv/bin/python bench/measure_backends.py --quick                 (ResNet-18, 1 thread)

For each network, backend and thread count, two profiling campaigns (`profile_network`) are run,
each into a fresh temporary store: an isolated pass (each layer alone) and a profiler pass (the
framework's per-node times over --profiler-runs whole-network runs). `backend.profile` is then
called once more directly, for the profiler's own run time, which `profile_network` does not return.

Noise guard (DESIGN.md: two threads on this VM are noisy, sometimes bimodal). Before each pass the
CPU time of other processes (all busy time minus this process's own) and the steal time are read from
/proc/stat over 0.5 s while this process sleeps, waiting up to --max-wait-s for them to drop below
25% and 5% of the vCPUs. After the pass, the campaign's sentinel drift (|drift| > 5%) and the other
processes' CPU time and steal time during the pass are checked. A disturbed pass is repeated, at
most --max-repeats times; the last attempt is the one reported, with its repeat count and drift.
Other sessions on a shared VM may run in other PID namespaces: their load shows in /proc/stat only.

Progress goes to stderr; stdout gets the table (rich on a terminal, else Markdown).
"""

from __future__ import annotations

import argparse
import math
import platform
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Self

import numpy as np
from _shared import command, log, machine, print_table, read_result, write_result

from nnperf.campaign import ProfileConfig, ProfileReport, profile_network
from nnperf.ir import Network
from nnperf.measure import HarnessConfig
from nnperf.measure.backends import Backend, BackendOptions, create_backend
from nnperf.store import Store
from nnperf.zoo import zoo_network

NETS = ("resnet18", "mobilenet_v2")
BACKENDS = ("torch", "onnxruntime", "opencv")
THREADS = (1, 2)

DRIFT_LIMIT = 0.05
"""|sentinel drift| above this marks a pass as disturbed (the campaign's own warning threshold)."""
OTHER_LOAD_LIMIT = 0.25
"""CPU time of other processes, as a fraction of all vCPUs, above which a pass is disturbed."""
STEAL_LIMIT = 0.05
"""Steal time, as a fraction of all vCPUs, above which a pass is disturbed."""






# -- noise guard ---------------------------------------------------------------------------------

def _cpu_ticks() -> tuple[int, int, int]:
    """(total, idle + iowait, steal) jiffies over all CPUs from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user
    total = sum(fields[:8])
    return total, fields[3] + fields[4], fields[7]


def _own_ticks() -> int:
    """utime + stime of this process (all threads), in jiffies."""
    parts = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return int(parts[11]) + int(parts[12])


@dataclass
class LoadReading:
    """Outside load over a window: fractions of all vCPUs' time."""

    loadavg_1m: float
    other_busy: float  # busy time not spent by this process
    steal: float
    window_s: float


def read_load(window_s: float = 0.5) -> LoadReading:
    """Other processes' CPU use and steal time over ``window_s`` while this process sleeps."""
    time.sleep(1.0)  # let worker threads of the last pass stop spinning and the store's temp files flush
    loadavg = float(Path("/proc/loadavg").read_text().split()[0])
    t0, idle0, steal0 = _cpu_ticks()
    own0 = _own_ticks()
    time.sleep(window_s)
    t1, idle1, steal1 = _cpu_ticks()
    own1 = _own_ticks()
    total = max(1, t1 - t0)
    busy = total - (idle1 - idle0)
    return LoadReading(loadavg, max(0.0, (busy - (own1 - own0)) / total), (steal1 - steal0) / total, window_s)


class PassLoad:
    """Other processes' CPU time and steal time over a span (the pass itself), as fractions of all vCPUs."""

    def __enter__(self) -> Self:
        self.t0, self.idle0, self.s0 = _cpu_ticks()
        self.own0 = _own_ticks()
        return self

    def __exit__(self, *exc: object) -> None:
        t1, idle1, s1 = _cpu_ticks()
        own1 = _own_ticks()
        total = max(1, t1 - self.t0)
        busy = total - (idle1 - self.idle0)
        self.other_busy = max(0.0, (busy - (own1 - self.own0)) / total)
        self.steal = (s1 - self.s0) / total


# -- one pass ------------------------------------------------------------------------------------

@dataclass
class PassResult:
    """One guarded campaign (the last attempt), with what the guard saw on every attempt."""

    method: str
    report: ProfileReport
    wall_s: float
    repeats: int
    disturbed: bool  # still disturbed after the last repeat
    attempts: list[dict[str, Any]] = field(default_factory=list)


def _reasons(before: LoadReading, during: PassLoad, drift: float | None) -> list[str]:
    reasons = []
    if drift is None or not math.isfinite(drift) or abs(drift) > DRIFT_LIMIT:
        reasons.append(f"drift {drift:+.1%}" if drift is not None else "no drift")
    if before.other_busy > OTHER_LOAD_LIMIT:
        reasons.append(f"other load {before.other_busy:.0%}")
    if before.steal > STEAL_LIMIT:
        reasons.append(f"steal before {before.steal:.0%}")
    if during.other_busy > OTHER_LOAD_LIMIT:
        reasons.append(f"other load during {during.other_busy:.0%}")
    if during.steal > STEAL_LIMIT:
        reasons.append(f"steal during {during.steal:.0%}")
    return reasons


def wait_for_quiet(max_wait_s: float, label: str) -> tuple[LoadReading, float]:
    """The first quiet load reading within ``max_wait_s`` (else the last one), and the seconds waited."""
    start = time.perf_counter()
    while True:
        reading = read_load()
        waited = time.perf_counter() - start
        quiet = reading.other_busy <= OTHER_LOAD_LIMIT and reading.steal <= STEAL_LIMIT
        if quiet or waited >= max_wait_s:
            return reading, waited
        if waited < 1.6 or int(waited) % 15 < 2:
            log(f"{label}: waiting for outside load to drop (other {reading.other_busy:.0%}, "
                f"steal {reading.steal:.0%}, {waited:.0f} s so far)")
        time.sleep(0.5)


def _progress_logger(label: str, method: str) -> Callable[[str, int, int], None]:
    """Logs the whole-network step and every 25th isolated layer to stderr."""
    last_shown = -1

    def progress(what: str, done: int, total: int) -> None:
        nonlocal last_shown
        if what == "whole network" and done == 0:
            log(f"{label} {method}: whole network")
        elif method == "isolated" and total > 1 and done // 25 != last_shown:
            last_shown = done // 25
            log(f"{label} isolated: layer {done}/{total}")

    return progress


def guarded_pass(network: Network, backend: Backend, config: ProfileConfig, label: str,
                 max_repeats: int, max_wait_s: float) -> PassResult:
    attempts: list[dict[str, Any]] = []
    for attempt in range(max_repeats + 1):
        before, waited = wait_for_quiet(max_wait_s, label)
        log(f"{label} {config.per_layer} pass, attempt {attempt + 1}: other load {before.other_busy:.0%}, "
            f"steal {before.steal:.0%}, loadavg {before.loadavg_1m:.2f}")
        progress = _progress_logger(label, config.per_layer)
        with tempfile.TemporaryDirectory(prefix="nnperf-bench-") as tmp:
            store = Store(Path(tmp) / "store.db")
            try:
                with PassLoad() as during:
                    start = time.perf_counter()
                    report = profile_network(network, backend, store, config, progress=progress)
                    wall = time.perf_counter() - start
            finally:
                store.close()
        if report.resumed or report.skipped:
            raise RuntimeError(f"{label}: a fresh store resumed a campaign (resumed={report.resumed}, "
                               f"skipped={report.skipped})")
        reasons = _reasons(before, during, report.drift)
        extra = report.network.extra
        attempts.append({"load_before": asdict(before), "waited_s": waited, "steal_during": during.steal, "other_during": during.other_busy, "drift": report.drift,
                         "sentinel_start_s": extra.get("sentinel_start_s"), "sentinel_end_s": extra.get("sentinel_end_s"),
                         "wall_s": wall, "whole_median_s": report.network.timing.stats.median_s,
                         "disturbed_by": reasons})
        log(f"{label} {config.per_layer} pass took {wall:.1f} s, whole {report.network.timing.stats.median_s * 1e3:.2f}"
            f" ms, drift {report.drift:+.1%}" + (f"; disturbed: {', '.join(reasons)}" if reasons else ""))
        if not reasons:
            break
        if attempt < max_repeats:
            time.sleep(2.0)
    return PassResult(config.per_layer, report, wall, len(attempts) - 1, bool(reasons), attempts)


# -- figures -------------------------------------------------------------------------------------

def timing_summary(report: ProfileReport) -> dict[str, Any]:
    s = report.network.timing.stats
    return {"median_s": s.median_s, "q1_s": s.q1_s, "q3_s": s.q3_s, "iqr_s": s.iqr_s,
            "iqr_rel": s.iqr_s / s.median_s, "ci_rel": s.ci_rel, "cv": s.cv, "n": s.n,
            "stop_reason": report.network.timing.stop_reason, "times_s": list(report.network.timing.times_s)}


def measure_row(net_name: str, network: Network, backend_name: str, threads: int, harness: HarnessConfig,
                profiler_runs: int, max_repeats: int, max_wait_s: float) -> dict[str, Any]:
    label = f"{net_name}/{backend_name}/t{threads}"
    with create_backend(backend_name, BackendOptions(device="cpu", threads=threads)) as backend:
        iso = guarded_pass(network, backend, ProfileConfig(per_layer="isolated", harness=harness), label, max_repeats,
                           max_wait_s)
        prof = guarded_pass(network, backend, ProfileConfig(per_layer="profiler", harness=harness,
                                                            profiler_runs=profiler_runs), label, max_repeats,
                            max_wait_s)
        log(f"{label}: direct backend.profile({profiler_runs} runs)")
        start = time.perf_counter()
        direct = backend.profile(network, profiler_runs)
        direct_wall = time.perf_counter() - start
    cvs = np.array([m.timing.stats.cv for m in iso.report.layers])
    groups: dict[str, int] = {}
    for m in prof.report.layers:
        groups[m.group or m.layer] = m.group_size
    run = direct.run_timing.stats
    return {
        "net": net_name, "backend": backend_name, "threads": threads, "system": iso.report.system_label,
        "layers": len(network.layers),
        "whole": timing_summary(iso.report),
        "whole_profiler_pass": timing_summary(prof.report),
        "layer_cv_median": float(np.median(cvs)), "layer_cv_p90": float(np.percentile(cvs, 90)),
        "layer_cv_max": float(cvs.max()),
        "layers_not_converged": sum(1 for m in iso.report.layers if m.timing.stop_reason != "converged"),
        "isolated_sum_s": iso.report.layer_sum_s, "isolated_sum_ratio": iso.report.sum_ratio,
        "profiler_sum_s": prof.report.layer_sum_s,
        "profiler_sum_over_whole": prof.report.sum_ratio,
        "direct_profiler_sum_s": direct.profiler_sum_s, "direct_run_median_s": run.median_s,
        "direct_run_iqr_s": run.iqr_s, "direct_profiler_sum_over_run": direct.profiler_sum_s / run.median_s,
        "direct_wall_s": direct_wall,
        "profiler_layers_timed": len(prof.report.layers),
        "profiler_groups": len(groups), "fused_groups": sum(1 for size in groups.values() if size > 1),
        "fused_layers": sum(size for size in groups.values() if size > 1),
        "unattributed_nodes": len(prof.report.unattributed_s),
        "unattributed_s": sum(prof.report.unattributed_s.values()),
        "unattributed_names": sorted(prof.report.unattributed_s),
        "passes": {p.method: {"wall_s": p.wall_s, "repeats": p.repeats, "disturbed": p.disturbed,
                              "drift": p.report.drift, "warnings": list(p.report.warnings),
                              "attempts": p.attempts} for p in (iso, prof)},
        "isolated_layers": [{"layer": m.layer, "op": m.op, "median_s": m.timing.stats.median_s,
                             "cv": m.timing.stats.cv, "n": m.timing.stats.n, "stop": m.timing.stop_reason}
                            for m in iso.report.layers],
        "profiler_layers": [{"layer": m.layer, "op": m.op, "group": m.group, "group_size": m.group_size,
                             "median_s": m.timing.stats.median_s, "cv": m.timing.stats.cv}
                            for m in prof.report.layers],
    }


COLUMNS = ("network", "backend", "thr", "whole ms", "IQR ms", "IQR %", "whole ms, quiet passes", "layer CV med", "layer CV p90",
           "iso sum/whole", "prof sum/whole", "prof sum/prof run", "iso wall s", "prof wall s",
           "fused groups", "unattr. nodes", "repeats iso/prof", "drift iso/prof")


def cells(r: dict[str, Any]) -> list[str]:
    w, p = r["whole"], r["passes"]
    flag = {m: "!" if p[m]["disturbed"] else "" for m in p}
    # whole-network medians of every attempt not disturbed by outside load (drift-only flags kept)
    wholes = [a["whole_median_s"] for m in p for a in p[m]["attempts"]
              if not any("load" in why or "steal" in why for why in a["disturbed_by"])]
    return [r["net"], r["backend"], str(r["threads"]), f"{w['median_s'] * 1e3:.2f}", f"{w['iqr_s'] * 1e3:.2f}",
            f"{w['iqr_rel']:.1%}", f"{min(wholes) * 1e3:.2f}-{max(wholes) * 1e3:.2f}", f"{r['layer_cv_median']:.1%}", f"{r['layer_cv_p90']:.1%}",
            f"{r['isolated_sum_ratio']:.2f}", f"{r['profiler_sum_over_whole']:.2f}",
            f"{r['direct_profiler_sum_over_run']:.2f}", f"{p['isolated']['wall_s']:.0f}",
            f"{p['profiler']['wall_s']:.0f}", str(r["fused_groups"]), str(r["unattributed_nodes"]),
            f"{p['isolated']['repeats']}{flag['isolated']}/{p['profiler']['repeats']}{flag['profiler']}",
            f"{p['isolated']['drift']:+.1%}/{p['profiler']['drift']:+.1%}"]


def print_tables(rows: list[dict[str, Any]]) -> None:
    print_table(COLUMNS, [cells(r) for r in rows], title="Measurement backends ('!' = still disturbed after the "
                "last repeat)", right=range(2, len(COLUMNS)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nets", nargs="+", default=list(NETS))
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS))
    parser.add_argument("--threads", nargs="+", type=int, default=list(THREADS))
    parser.add_argument("--quick", action="store_true", help="resnet18 only, 1 thread")
    parser.add_argument("--budget-s", type=float, default=2.0, help="harness budget per layer (s)")
    parser.add_argument("--target-ci", type=float, default=0.02)
    parser.add_argument("--profiler-runs", type=int, default=50)
    parser.add_argument("--max-repeats", type=int, default=2, help="repeats of a disturbed pass")
    parser.add_argument("--max-wait-s", type=float, default=90.0,
                        help="wait at most this long for outside load to drop before a pass")
    parser.add_argument("--json", type=Path, help="also write the result file here "
                        "(bench/results/measurement/measure_backends.json)")
    parser.add_argument("--report", type=Path, help="measure nothing: print the tables of an earlier --json file")
    args = parser.parse_args()
    if args.report:
        print_tables(read_result(args.report)["values"]["rows"])
        return
    if args.quick:
        args.nets, args.threads = ["resnet18"], [1]
    harness = HarnessConfig(target_ci=args.target_ci, budget_s=args.budget_s)
    here = machine()
    print(f"Command: {command()}")
    print(f"Machine: {here['cpu']}, {here['cores']} vCPUs, Python {platform.python_version()}, "
          + ", ".join(f"{k} {v}" for k, v in here["versions"].items()))
    print(f"Harness: target_ci={harness.target_ci}, budget_s={harness.budget_s} per layer; "
          f"profiler_runs={args.profiler_runs}\n", flush=True)
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for net_name in args.nets:
        network = zoo_network(net_name)
        for threads in args.threads:
            for backend_name in args.backends:
                start = time.perf_counter()
                rows.append(measure_row(net_name, network, backend_name, threads, harness, args.profiler_runs,
                                        args.max_repeats, args.max_wait_s))
                log(f"{net_name}/{backend_name}/t{threads} done in {time.perf_counter() - start:.0f} s "
                    f"({time.perf_counter() - began:.0f} s so far)")
                if args.json:  # written after every row so a long run that dies keeps what it measured
                    write_result(args.json, method="measurement", concern="layer, whole-network and profiler times",
                                 values={"rows": rows}, harness=asdict(harness))
    print_tables(rows)
    print(f"\nTotal wall time: {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
