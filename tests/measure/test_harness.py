"""The timing harness on the fake backend: stopping rule, block-size calibration, outliers, statistics."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nnperf.ir import ConvAttrs, Layer, OpType
from nnperf.measure._harness import HarnessConfig, MeasurementError, calibrate_block_size, measure, warm_up
from nnperf.measure._stats import median_ci_ranks, summarize
from nnperf.measure.backends._fake import CostModel, FakeBackend, FakeClock

CONV = Layer("conv", OpType.CONV, ("x",), ((1, 8, 16, 16),), (1, 8, 16, 16), ConvAttrs(kernel=(3, 3), padding=(1,) * 4))
# 8*8*9*256 + 8*256 bias adds = 149,504 MACs -> 5 us + 14.95 us at 1e-10 s/MAC
CONV_COST_S = 5e-6 + 149_504 * 1e-10


def fake(model: CostModel, seed: int = 0) -> tuple[FakeBackend, FakeClock]:
    clock = FakeClock()
    return FakeBackend(seed=seed, model=model, clock=clock), clock


def test_fake_cost_model_is_the_documented_formula() -> None:
    assert CostModel().layer_cost_s(CONV) == pytest.approx(CONV_COST_S, rel=1e-12)


def test_summary_statistics_by_hand() -> None:
    stats = summarize([1, 2, 3, 4, 5, 6, 7, 8, 9, 100])
    assert (stats.median_s, stats.q1_s, stats.q3_s) == (5.5, 3.25, 7.75)
    # n=10 at 95%: the median lies between the 2nd and 9th order statistics (coverage 97.9%)
    assert (stats.ci_low_s, stats.ci_high_s) == (2.0, 9.0)
    assert stats.n_outliers == 1  # 100 > Q3 + 1.5 IQR = 14.5
    assert stats.min_s == 1 and stats.max_s == 100 and stats.mean_s == 14.5


@pytest.mark.parametrize(("n", "ranks"), [(5, None), (6, (0, 5)), (10, (1, 8)), (20, (5, 14)), (100, (39, 60))])
def test_median_confidence_ranks_match_the_binomial_tables(n: int, ranks: tuple[int, int] | None) -> None:
    assert median_ci_ranks(n) == ranks


def test_median_confidence_ranks_are_scipys() -> None:
    """The exact integer tail gives the ranks ``scipy.stats.binom`` gives, ties at dyadic tails included."""
    from scipy.stats import binom

    def scipy_ranks(n: int, confidence: float) -> tuple[int, int] | None:
        alpha = 1.0 - confidence
        k = int(binom.ppf(alpha / 2, n, 0.5))
        while k > 0 and binom.cdf(k - 1, n, 0.5) > alpha / 2:
            k -= 1
        return None if k < 1 else (k - 1, n - k)

    for confidence in (0.5, 0.9, 0.95, 0.99):  # 0.5: P(B <= 0) = 1/4 = alpha / 2 exactly at n = 2, refused by both
        for n in range(1, 400):
            assert median_ci_ranks(n, confidence) == scipy_ranks(n, confidence), (n, confidence)


# In a fresh interpreter, the finder below sees every import made while Recorder.timing is set: none is cached.
RECORD_IMPORTS = """
import sys
imported = []
class Recorder:
    timing = False
    def find_spec(self, name, path=None, target=None):
        if Recorder.timing:
            imported.append(name)
        return None
sys.meta_path.insert(0, Recorder())
"""

FIRST_MEASUREMENT = RECORD_IMPORTS + """
from nnperf.measure import HarnessConfig, measure
from nnperf.measure.backends._fake import CostModel, FakeBackend, FakeClock
from nnperf.ir import ConvAttrs, Layer, OpType


def wall_clock():  # measure reads it once as the timed window opens and once as it closes
    Recorder.timing = not Recorder.timing
    return 0.0

conv = Layer("conv", OpType.CONV, ("x",), ((1, 8, 16, 16),), (1, 8, 16, 16), ConvAttrs(kernel=(3, 3), padding=(1,) * 4))
clock = FakeClock()
timing = measure(FakeBackend(model=CostModel(noise_sigma=0.1), clock=clock).layer_timer(conv),
                 HarnessConfig(target_ci=0.0, max_samples=50), clock=clock, wall_clock=wall_clock)
assert timing.stats.n == 50, timing.stats.n
print(sorted(set(imported)))
"""


def test_the_first_measurement_imports_nothing_inside_its_timed_window() -> None:
    """SciPy's first import took about 1 s inside the stopping rule and was charged to the first budget."""
    run = subprocess.run([sys.executable, "-c", FIRST_MEASUREMENT], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", f"imported inside the timed window: {run.stdout}"


# The same for a layer timed inside a network through the profiler (sweeps), from the first round on. Only SciPy is
# checked: a backend's profile may import on its first call (numpy 2.4's np.unique, under np.percentile, imports
# numpy.ma), which is the backend's own cost, not the stopping rule's.
FIRST_SWEEP_POINT = RECORD_IMPORTS + """
from nnperf.measure import HarnessConfig
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.measure.sweep import LayerConfig, profiling_network, time_in_context

class Backend(FakeBackend):
    def profile(self, network, runs):
        Recorder.timing = True
        return super().profile(network, runs)

network = profiling_network(LayerConfig.of("conv2d", {"channels": 8, "filters": 8, "size": 8}), 1)
timing = time_in_context(Backend(model=CostModel(noise_sigma=0.1)), network,
                         HarnessConfig(target_ci=0.0, max_samples=50, budget_s=60.0))
Recorder.timing = False
assert timing.stats.n == 50, timing.stats.n
print(sorted({name for name in imported if name.split(".")[0] == "scipy"}))
"""


def test_the_first_sweep_point_imports_nothing_inside_its_budget() -> None:
    run = subprocess.run([sys.executable, "-c", FIRST_SWEEP_POINT], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", f"SciPy imported inside the budget: {run.stdout}"


def test_block_size_grows_until_a_block_lasts_min_block() -> None:
    backend, _ = fake(CostModel(noise_sigma=0.0))
    timer = backend.layer_timer(CONV)
    n = calibrate_block_size(timer, HarnessConfig(min_block_s=2e-3))
    # 1 -> 10 -> 100 (growth capped at 10x) -> ceil(100 * 2.4 ms / 1.995 ms) = 121 blocks of 19.95 us >= 2 ms
    assert n * CONV_COST_S >= 2e-3
    assert n == 121


def test_quiet_device_converges_to_the_target() -> None:
    backend, clock = fake(CostModel(noise_sigma=0.005))
    timing = measure(backend.layer_timer(CONV), HarnessConfig(target_ci=0.02), clock=clock)
    assert timing.stop_reason == "converged"
    assert timing.stats.n == HarnessConfig().min_samples  # 0.5% noise converges at the first check
    assert timing.stats.ci_rel <= 0.02
    assert timing.stats.median_s == pytest.approx(CONV_COST_S, rel=0.01)
    assert len(timing.times_s) == timing.stats.n


def test_noisy_device_stops_at_the_budget() -> None:
    backend, clock = fake(CostModel(noise_sigma=0.8))
    config = HarnessConfig(target_ci=0.001, budget_s=0.5, max_samples=100_000)
    timing = measure(backend.layer_timer(CONV), config, clock=clock)
    assert timing.stop_reason == "budget"
    timed_s = sum(timing.times_s) * timing.block_size
    assert 0.5 <= timed_s < 0.5 + 3 * 0.003  # stops within a block or so of the budget
    assert timing.stats.ci_rel > 0.001


def test_max_samples_caps_repetition() -> None:
    backend, clock = fake(CostModel(noise_sigma=0.3))
    timing = measure(backend.layer_timer(CONV), HarnessConfig(target_ci=0.0, budget_s=1e9, max_samples=37),
                     clock=clock)
    assert timing.stop_reason == "max_samples" and timing.stats.n == 37


def test_outliers_are_counted_and_kept_but_do_not_move_the_median() -> None:
    backend, clock = fake(CostModel(noise_sigma=1e-4, outlier_p=0.1, outlier_factor=5.0), seed=3)
    config = HarnessConfig(min_block_s=1e-9, target_ci=1e-9, max_samples=400, budget_s=1e9)
    timing = measure(backend.layer_timer(CONV), config, clock=clock)
    assert timing.block_size == 1
    slow = sum(t > 2 * CONV_COST_S for t in timing.times_s)
    # every 5x execution is an outlier; the log-normal noise's own tails add about 0.7% (normal beyond 1.5 IQR)
    assert slow <= timing.stats.n_outliers <= slow + 8
    assert 20 <= slow <= 60  # about 10% of 400
    assert timing.stats.median_s == pytest.approx(CONV_COST_S, rel=0.01)
    assert timing.stats.mean_s > 1.3 * CONV_COST_S


def test_warmup_runs_before_timing_in_doubling_blocks_that_stop_near_its_time() -> None:
    backend, clock = fake(CostModel(noise_sigma=0.0))
    timer = backend.layer_timer(CONV)
    runs = warm_up(timer, HarnessConfig(warmup_s=0.01), clock)
    warmups = 0.01 / CONV_COST_S  # 500 executions of 20 us
    assert runs == timer.runs and warmups <= runs <= warmups + 1
    assert timer.calls == 9  # blocks of 1, 2, 4, ..., 128, then the 247 left
    assert clock() == pytest.approx(runs * CONV_COST_S)


def test_warmup_runs_at_least_its_executions() -> None:
    backend, clock = fake(CostModel(noise_sigma=0.0))
    timer = backend.layer_timer(CONV)
    assert warm_up(timer, HarnessConfig(warmup_s=0.0, warmup_runs=5), clock) == 5
    assert timer.calls == 3  # blocks of 1, 2 and 2


class ZeroTimer:
    def time_block(self, n: int) -> float:
        return 0.0


def test_a_timer_that_reports_no_time_is_an_error() -> None:
    with pytest.raises(MeasurementError, match="reported 0.0 s"):
        measure(ZeroTimer(), HarnessConfig(warmup_s=0, max_block_size=4))


@pytest.mark.parametrize(("field", "value", "message"), [
    ("target_ci", -0.1, "target_ci"), ("min_block_s", 0.0, "min_block_s"), ("confidence", 1.5, "confidence"),
    ("min_samples", 1, "min_samples"), ("budget_s", float("nan"), "budget_s"),
])
def test_bad_harness_settings_are_refused(field: str, value: float, message: str) -> None:
    with pytest.raises(MeasurementError, match=message):
        HarnessConfig(**{field: value})
