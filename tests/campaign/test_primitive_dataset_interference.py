"""The interleaved primitive dataset keeps a configuration's relative times when the machine's speed moves: the same
configurations profiled quietly and under a periodic slowdown on the measured core give the same ratios."""

from __future__ import annotations

import os
import statistics

import pytest

from nnperf.campaign import load_primitive_dataset, profile_primitives
from nnperf.measure import HarnessConfig, PeriodicSlowdown
from nnperf.primitives import ConvConfig, get_primitive
from nnperf.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.serial,
              pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="the injector pins its hog to a CPU")]

CONFIGS = [ConvConfig.make(1, 32, 32, 28, 3, 1, 1), ConvConfig.make(1, 64, 32, 14, 1, 1, 0)]
PRIMITIVES = ("im2col-fhw", "kn2row", "direct")
# The hog spins three quarters of each second: most rounds run at half speed, so the medians are slowed for sure
# (by 1.7-2.1x on this project's 2-vCPU VM; with half of each 0.2 s spinning, the median round fell either side of
# the change and the slowdown came out anywhere from 0.9x to 2x). At least 40% shows it acted.
SLOWDOWN = {"period_s": 1.0, "busy_fraction": 0.75, "max_s": 120.0}
MIN_SLOWDOWN = 1.4
# Two quiet profiles of these configurations on that VM already moved a ratio by up to 19%, their median over the
# four ratios by 2-5%; under the slowdown (1.6-2.3x) the median moved 2-11%, in eight tries.
MAX_MOVED = 0.12
# 15 to 25 rounds of blocks of at least 20 ms (a round of three primitives and the layout moves: about a tenth of the
# period)
HARNESS = HarnessConfig(warmup_s=0.02, warmup_runs=1, min_block_s=0.02, target_ci=0.01, min_samples=15,
                        max_samples=25, budget_s=1.0)


def _ratios(path: str, slowed: PeriodicSlowdown | None) -> tuple[dict[tuple[ConvConfig, str], float], list[float]]:
    """Each primitive's time over im2col-fhw's on each configuration, and im2col-fhw's own times."""
    primitives = [get_primitive(name) for name in PRIMITIVES]
    with Store(path) as store:
        if slowed is None:
            report = profile_primitives(store, CONFIGS, primitives=primitives, harness=HARNESS)
        else:
            with slowed:
                report = profile_primitives(store, CONFIGS, primitives=primitives, harness=HARNESS)
        dataset = load_primitive_dataset(store, report.system_id)
    ratios = {(s.config, name): s.times_s[name] / s.times_s["im2col-fhw"] for s in dataset.conv
              for name in PRIMITIVES[1:]}
    return ratios, [s.times_s["im2col-fhw"] for s in dataset.conv]


def test_a_periodic_slowdown_moves_absolute_times_but_not_the_interleaved_ratios(tmp_path) -> None:
    cpu = max(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    tries = []
    os.sched_setaffinity(0, {cpu})
    try:
        # other work on a shared machine can land on this core for a while: up to three tries, each judged whole
        for attempt in range(3):
            quiet, quiet_s = _ratios(str(tmp_path / f"quiet{attempt}.db"), None)
            slowed, slowed_s = _ratios(str(tmp_path / f"slowed{attempt}.db"),
                                       PeriodicSlowdown(cpus=(cpu,), **SLOWDOWN))
            moved = statistics.median(abs(slowed[key] / quiet[key] - 1) for key in quiet)
            slowdown = statistics.median(b / a for a, b in zip(quiet_s, slowed_s))
            tries.append((round(slowdown, 3), round(moved, 3)))
            if _held(slowdown, moved):
                break
    finally:
        os.sched_setaffinity(0, before)
    print("tries (slowdown, ratio moved):", tries)
    slowdown, moved = tries[-1]
    assert slowdown >= MIN_SLOWDOWN, tries  # the injector did slow the primitives down
    assert moved < MAX_MOVED, tries  # their ratios stayed where they were
    assert moved < (slowdown - 1) / 4, tries  # and moved less than a quarter as far as the times


def _held(slowdown: float, moved: float) -> bool:
    return slowdown >= MIN_SLOWDOWN and moved < min(MAX_MOVED, (slowdown - 1) / 4)
