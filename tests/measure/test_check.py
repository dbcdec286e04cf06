"""The machine check: parsers on hand-written /proc and /sys text, thresholds to levels, a whole check on a
fixture tree, a real busy process named by pid, and the noise statistics of a fake timer that slows down halfway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nnperf.measure import (
    CHECK_FORMAT,
    CHECK_VERSION,
    BusyProcess,
    HarnessConfig,
    Level,
    MeasurementError,
    check_machine,
    measure_noise,
)
from nnperf.measure._check import (
    BUSY_WARN,
    CpuTimes,
    PidStat,
    allocator_finding,
    busy_finding,
    busy_processes,
    governor_finding,
    graded,
    load_finding,
    memory_finding,
    noise_finding,
    noise_stats,
    parse_cpu_list,
    parse_loadavg,
    parse_meminfo,
    parse_pid_stat,
    parse_pressure,
    parse_proc_stat,
    parse_siblings,
    pressure_finding,
    read_cpufreq,
    read_turbo,
    smt_finding,
    steal_finding,
    steal_share,
    turbo_finding,
    worst,
)

NO_WARMUP = HarnessConfig(min_block_s=0.01, warmup_s=0.0, warmup_runs=0)
PRESSURE = "some avg10=1.83 avg60=0.47 avg300=0.44 total=3462767\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


def pid_stat_line(pid: int, name: str, utime: int, stime: int, start: int) -> str:
    # fields 3..22 of proc(5): state, ppid, pgrp, session, tty_nr, tpgid, flags, minflt, cminflt, majflt, cmajflt,
    # utime, stime, cutime, cstime, priority, nice, num_threads, itrealvalue, starttime; then the rest
    return (f"{pid} ({name}) R 1 {pid} {pid} 0 -1 4194304 100 0 0 0 {utime} {stime} 7 8 20 0 1 0 {start} "
            "12345678 300 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n")


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ------------------------------------------------------------------------------------------------------ parsers

def test_proc_stat_totals_and_steal_share() -> None:
    before = parse_proc_stat("cpu  100 5 50 800 20 0 5 20 3 0\ncpu0 50 2 25 400 10 0 2 10 3 0\nintr 1 2\n")
    after = parse_proc_stat("cpu  150 5 60 1000 20 0 5 60 7 0\n")
    # user + nice + system + idle + iowait + irq + softirq + steal; guest (already inside user) left out
    assert before == CpuTimes(100 + 5 + 50 + 800 + 20 + 0 + 5 + 20, 20)
    assert after == CpuTimes(150 + 5 + 60 + 1000 + 20 + 0 + 5 + 60, 60)
    share = steal_share(before, after)
    assert share == pytest.approx((60 - 20) / (1300 - 1000))
    assert steal_finding(share).level is Level.BAD  # 13% > 10%
    assert steal_finding(0.03).level is Level.WARN
    assert steal_finding(0.0).level is Level.OK
    assert parse_proc_stat("cpu 1 2 3\n") is None  # an old kernel without a steal column
    assert parse_proc_stat("intr 1 2\n") is None
    assert steal_share(before, before) is None  # no tick passed
    assert steal_finding(None).level is Level.UNKNOWN


def test_load_per_cpu_grades() -> None:
    assert parse_loadavg("1.50 0.80 0.40 3/92 3356\n") == 1.5
    assert parse_loadavg("") is None
    assert load_finding(0.9, 2).level is Level.OK  # 0.45 per CPU
    warn = load_finding(1.5, 2)
    assert (warn.level, warn.value) == (Level.WARN, 1.5 / 2)
    assert "below 1.0" in (warn.advice or "")
    assert load_finding(2.0, 2).level is Level.WARN  # 1.0 per CPU: not above the bad threshold
    assert load_finding(2.2, 2).level is Level.BAD
    assert load_finding(None, 2).level is Level.UNKNOWN


def test_pid_stat_with_spaces_and_parentheses_in_the_name() -> None:
    stat = parse_pid_stat(pid_stat_line(1234, "my (odd) name", 300, 45, 9876))
    assert stat == PidStat(1234, "my (odd) name", 300 + 45, 9876)
    assert parse_pid_stat("1234 (truncated") is None
    assert parse_pid_stat("1234 (x) R 1 2\n") is None
    mine = parse_pid_stat(Path(f"/proc/{os.getpid()}/stat").read_text()) if Path("/proc/self/stat").exists() else None
    if mine is not None:
        assert mine.pid == os.getpid() and mine.cpu_ticks > 0


def test_busy_processes_from_two_samples() -> None:
    before = {1: PidStat(1, "hog", 100, 5), 2: PidStat(2, "idle", 100, 5), 3: PidStat(3, "reused", 0, 5),
              4: PidStat(4, "me", 0, 5)}
    after = {1: PidStat(1, "hog", 250, 5), 2: PidStat(2, "idle", 110, 5), 3: PidStat(3, "reused", 500, 77),
             4: PidStat(4, "me", 200, 5), 5: PidStat(5, "new", 400, 90)}
    busy = busy_processes(before, after, elapsed_s=2.0, ticks_per_s=100, exclude=(4,))
    # pid 1: 150 ticks = 1.5 s over 2 s; pid 2: 0.05 of a core, under 10%; pid 3 is another process (start
    # time moved); pid 4 is excluded; pid 5 was not there before
    assert busy == (BusyProcess(1, "hog", 150 / 100 / 2.0),)
    finding = busy_finding(busy)
    assert (finding.level, finding.value) == (Level.BAD, 0.75)
    assert finding.detail == "PID 1 (hog, 75% of a core)"
    assert finding.advice == "stop PID 1 (hog) before measuring, or measure once it has finished"
    two = busy_finding((BusyProcess(7, "a", 0.3), BusyProcess(8, "b", 0.2)))
    assert two.level is Level.WARN and two.advice is not None and "PID 7 (a) and PID 8 (b)" in two.advice
    assert busy_finding(()).level is Level.OK
    assert busy_finding(None).level is Level.UNKNOWN


def test_meminfo_in_bytes_and_memory_levels() -> None:
    info = parse_meminfo("MemTotal:       1000 kB\nMemFree:   100 kB\nMemAvailable:     80 kB\nHugePages_Total: 0\n")
    assert info == {"MemTotal": 1000 * 1024, "MemFree": 100 * 1024, "MemAvailable": 80 * 1024, "HugePages_Total": 0}
    bad = memory_finding(info)
    assert (bad.level, bad.value) == (Level.BAD, 80 / 1000)
    assert memory_finding({"MemTotal": 1000, "MemAvailable": 150}).level is Level.WARN
    assert memory_finding({"MemTotal": 1000, "MemAvailable": 500}).level is Level.OK
    assert memory_finding({"MemTotal": 1000}).level is Level.UNKNOWN


def test_pressure_some_avg10() -> None:
    parsed = parse_pressure(PRESSURE)
    assert parsed["some"] == {"avg10": 1.83, "avg60": 0.47, "avg300": 0.44, "total": 3462767.0}
    assert parsed["full"]["avg10"] == 0.0
    cpu = pressure_finding("cpu_pressure", "cpu", parsed, 0.05, 0.25)
    assert (cpu.level, cpu.value) == (Level.OK, pytest.approx(0.0183))
    memory = pressure_finding("memory_pressure", "memory", parsed, 0.01, 0.10)
    assert memory.level is Level.WARN  # 1.83% > 1%
    assert pressure_finding("cpu_pressure", "cpu", parse_pressure("some avg10=30.00\n"), 0.05, 0.25).level is Level.BAD
    assert pressure_finding("cpu_pressure", "cpu", None, 0.05, 0.25).level is Level.UNKNOWN


def test_cpu_lists_and_smt_siblings() -> None:
    assert parse_cpu_list("0-3,8-11\n") == (0, 1, 2, 3, 8, 9, 10, 11)
    assert parse_cpu_list("5") == (5,)
    cores = parse_siblings(["0,4\n", "1,5\n", "2-3\n", "0,4\n", "1,5\n", "2-3\n", "junk"])
    assert cores == ((0, 4), (1, 5), (2, 3))
    assert smt_finding(cores, ()).level is Level.OK  # shared, but nothing else is busy
    warn = smt_finding(cores, (BusyProcess(9, "hog", 0.9),))
    assert (warn.level, warn.value) == (Level.WARN, 2)
    assert smt_finding(parse_siblings(["0", "1"]), (BusyProcess(9, "hog", 0.9),)).level is Level.OK
    assert smt_finding((), ()).level is Level.UNKNOWN


def test_governor_frequency_and_turbo_from_sys(tmp_path: Path) -> None:
    base = "sys/devices/system/cpu"
    for cpu, governor, now_khz in ((0, "powersave", 800000), (1, "performance", 3100000)):
        write(tmp_path, f"{base}/cpu{cpu}/cpufreq/scaling_governor", f"{governor}\n")
        write(tmp_path, f"{base}/cpu{cpu}/cpufreq/scaling_cur_freq", f"{now_khz}\n")
        write(tmp_path, f"{base}/cpu{cpu}/cpufreq/scaling_max_freq", "4200000\n")
    freq = read_cpufreq(tmp_path)
    assert freq is not None
    assert freq.governors == ("powersave", "performance")
    assert freq.current_hz == (0.8e9, 3.1e9) and freq.max_hz == (4.2e9, 4.2e9)
    finding = governor_finding(freq)
    assert finding.level is Level.WARN and finding.value == "performance,powersave"
    assert finding.detail == "performance, powersave on 2 CPUs; now 0.80-3.10 GHz, max 4.20 GHz"
    assert finding.advice == "set the governor to performance: sudo cpupower frequency-set -g performance"
    assert read_turbo(tmp_path) is None
    write(tmp_path, f"{base}/cpufreq/boost", "0\n")
    turbo = read_turbo(tmp_path)
    assert turbo is not None and not turbo.enabled and turbo_finding(turbo).level is Level.OK
    write(tmp_path, f"{base}/intel_pstate/no_turbo", "0\n")  # intel_pstate's knob wins where both exist
    on = turbo_finding(read_turbo(tmp_path))
    assert (on.level, on.value) == (Level.WARN, "on")
    assert on.advice == ("turn turbo off for a steady clock: echo 1 | sudo tee "
                         "/sys/devices/system/cpu/intel_pstate/no_turbo")
    assert governor_finding(read_cpufreq(tmp_path / "absent")).level is Level.UNKNOWN
    assert turbo_finding(None).level is Level.UNKNOWN


def test_allocator_variables_in_their_fixed_order() -> None:
    finding = allocator_finding({"OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2", "HOME": "/root"})
    assert (finding.level, finding.value) == (Level.OK, "MALLOC_ARENA_MAX=2 OMP_NUM_THREADS=1")
    assert allocator_finding({}).value == ""


def test_thresholds_to_levels_and_the_worst_level() -> None:
    assert graded(0.02, 0.02, 0.10) is Level.OK  # strictly above a threshold
    assert graded(0.021, 0.02, 0.10) is Level.WARN
    assert graded(0.11, 0.02, 0.10) is Level.BAD
    assert worst([]) is Level.OK
    assert worst([Level.UNKNOWN, Level.UNKNOWN]) is Level.OK
    assert worst([Level.OK, Level.WARN, Level.UNKNOWN]) is Level.WARN
    assert worst([Level.WARN, Level.BAD, Level.OK]) is Level.BAD


# ---------------------------------------------------------------------------------------------- a whole check

def test_a_whole_check_on_a_fixture_tree(tmp_path: Path) -> None:
    write(tmp_path, "proc/loadavg", "0.00 0.00 0.00 1/80 100\n")
    write(tmp_path, "proc/stat", "cpu  100 0 50 800 0 0 0 0 0 0\n")
    write(tmp_path, "proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 150 kB\n")
    write(tmp_path, "proc/pressure/cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    write(tmp_path, "proc/42/stat", pid_stat_line(42, "sleeper", 10, 10, 5))
    write(tmp_path, "sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0-1\n")
    write(tmp_path, "sys/devices/system/cpu/cpu1/topology/thread_siblings_list", "0-1\n")
    check = check_machine(root=tmp_path, sample_s=0.01, environ={"MALLOC_ARENA_MAX": "2"})
    levels = {f.name: f.level.value for f in check.findings}
    assert levels == {"busy_processes": "ok", "load": "ok", "steal": "unknown", "cpu_pressure": "ok",
                      "memory": "warn", "memory_pressure": "unknown", "governor": "unknown", "turbo": "unknown",
                      "smt": "ok", "allocator": "ok", "noise": "unknown"}
    assert check.finding("memory").value == pytest.approx(0.15)
    assert check.finding("smt").value == 2
    assert check.finding("allocator").value == "MALLOC_ARENA_MAX=2"
    assert check.verdict is Level.WARN
    assert check.busy == () and check.noise is None
    document = json.loads(json.dumps(check.to_dict()))
    assert (document["format"], document["version"]) == (CHECK_FORMAT, CHECK_VERSION) == ("nnperf-check", 1)
    assert document["verdict"] == "warn" and document["noise"] is None
    assert document["findings"][4] == {"name": "memory", "level": "warn", "value": pytest.approx(0.15),
                                       "detail": "0.0 GiB of 0.0 GiB available (15%)",
                                       "advice": check.finding("memory").advice}


def test_an_empty_root_gives_unknowns_not_a_crash(tmp_path: Path) -> None:
    check = check_machine(root=tmp_path, sample_s=0.01, environ={})
    assert {f.level for f in check.findings if f.name != "allocator"} == {Level.UNKNOWN}
    assert check.verdict is Level.OK


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_planted_busy_process_is_named_by_pid() -> None:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.1)  # past the interpreter's start, into the loop
        check = check_machine(sample_s=1.0)
        assert hog.pid in [b.pid for b in check.busy], check.busy
        assert f"PID {hog.pid} (" in check.finding("busy_processes").detail
        assert check.finding("busy_processes").level is not Level.OK
        assert check.verdict is not Level.OK
        assert os.getpid() not in [b.pid for b in check.busy]
        mine = next(b for b in check.busy if b.pid == hog.pid)
        assert BUSY_WARN < mine.cpu_share <= 1.05  # one thread: at most one core, within the tick rounding
    finally:
        hog.kill()
        hog.wait()


# ------------------------------------------------------------------------------------------------------- noise

A_S = 1 / 64
"""The fake's first per-execution time: above the 10 ms block, so calibration settles on 1 execution per block.
Powers of two keep every sum exact."""
B_S = A_S * 1.25
"""... and its time from the 66th call on: 25% slower."""


class SlowsDownHalfway:
    """Reports ``A_S`` per execution for its first 65 calls (1 calibration + 64 timed blocks: 1.0 s), then ``B_S``."""

    def __init__(self) -> None:
        self.calls = 0

    def time_block(self, n: int) -> float:
        self.calls += 1
        return n * (A_S if self.calls <= 65 else B_S)


def test_noise_of_a_timer_that_slows_down_halfway() -> None:
    heard: list[tuple[int, int]] = []
    noise = measure_noise(SlowsDownHalfway(), noise_s=2.0, config=NO_WARMUP,
                          progress=lambda what, done, total: heard.append((done, total)))
    # 64 blocks of 1/64 s make the first second; then blocks of 5/256 s until the sum reaches 2 s:
    # 1.0 / (5/256) = 51.2, so 52 more, ending at 1 + 52 * 5/256 = 2.015625 s
    assert noise.block_size == 1
    assert noise.times_s == (A_S,) * 64 + (B_S,) * 52
    assert noise.duration_s == 1 + 52 * B_S
    # two 1 s windows (the 0.016 s left over joins the second): all fast blocks start in [0, 1), all slow in [1, 2)
    assert noise.window_medians_s == (A_S, B_S)
    assert noise.window_spread == pytest.approx((B_S - A_S) / ((A_S + B_S) / 2))  # 0.25 / 1.125 = 2/9
    assert noise.median_s == A_S  # 64 of the 116 samples are fast
    assert noise.iqr_rel == pytest.approx((B_S - A_S) / A_S)  # Q1 at rank 28.75 is fast, Q3 at 86.25 slow
    assert heard == [(0, 2), (1, 2), (2, 2)]
    finding = noise_finding(noise)
    assert (finding.level, finding.value) == (Level.BAD, pytest.approx(2 / 9))  # 22% > 20%
    assert finding.detail == "median 15625 us per run, IQR 25%, window medians spread 22% over 2 windows"


def test_the_check_times_the_timer_it_is_given(tmp_path: Path) -> None:
    check = check_machine(SlowsDownHalfway(), noise_s=2.0, sample_s=0.01, root=tmp_path, noise_config=NO_WARMUP)
    assert check.noise is not None and check.noise.window_medians_s == (A_S, B_S)
    assert check.finding("noise").level is Level.BAD and check.verdict is Level.BAD
    assert check.to_dict()["noise"]["samples"] == 116


def test_a_short_noise_run_is_split_in_halves() -> None:
    # 0.6 s of blocks is under two 1 s windows: two windows of 0.3 s; blocks start at 0, 0.1, 0.2 and 0.4 s
    noise = noise_stats([0.1, 0.1, 0.2, 0.2], block_size=1)
    assert noise.window_medians_s == (pytest.approx(0.1), pytest.approx(0.2))
    assert noise.window_spread == pytest.approx((0.2 - 0.1) / 0.15)
    one = noise_stats([0.5], block_size=10)
    assert one.times_s == (0.05,) and one.window_spread is None and one.iqr_rel == 0.0
    assert noise_finding(one).level is Level.OK
    assert noise_finding(None).level is Level.UNKNOWN


class Broken:
    def time_block(self, n: int) -> float:
        return 0.0


def test_bad_settings_and_a_broken_timer_raise() -> None:
    with pytest.raises(MeasurementError, match="noise_s must be a positive number of seconds, got -1"):
        measure_noise(SlowsDownHalfway(), noise_s=-1)
    with pytest.raises(MeasurementError, match="sample_s"):
        check_machine(sample_s=0)
    with pytest.raises(MeasurementError, match="the timer reported 0.0 s"):
        measure_noise(Broken(), noise_s=1.0)
