"""Profiling campaigns on the fake backend into a real SQLite store: resume, drift, energy, sum ratio."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness_presets import SHORT_HARNESS
from nnperf.campaign import SENTINEL, ProfileConfig, profile_network, profiler_chunk
from nnperf.ir import ConvAttrs, Layer, Network, OpType, PoolAttrs, TensorSpec
from nnperf.measure.backends import ProfileResult
from nnperf.measure.backends._fake import CostModel, FakeBackend, FakeClock
from nnperf.measure.power import PowerMeter
from nnperf.registry import Availability
from nnperf.store import Store


def small_net() -> Network:
    x = TensorSpec("x", (1, 3, 16, 16))
    return Network("small", (x,), (
        Layer("conv1", OpType.CONV, ("x",), ((1, 3, 16, 16),), (1, 8, 16, 16), ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("relu1", OpType.RELU, ("conv1",), ((1, 8, 16, 16),), (1, 8, 16, 16)),
        Layer("pool1", OpType.MAX_POOL, ("relu1",), ((1, 8, 16, 16),), (1, 8, 8, 8), PoolAttrs((2, 2), (2, 2))),
        Layer("conv2", OpType.CONV, ("pool1",), ((1, 8, 8, 8),), (1, 8, 8, 8), ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("add", OpType.ADD, ("conv2", "pool1"), ((1, 8, 8, 8), (1, 8, 8, 8)), (1, 8, 8, 8)),
    ), ("add",))


class StopAfter:
    """A progress callback that interrupts the campaign once ``n`` layers were started."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, what: str, done: int, total: int) -> None:
        if what != "layers" and done == self.n:
            raise KeyboardInterrupt


def test_campaign_stores_every_layer_and_the_sum_ratio(tmp_path: Path) -> None:
    backend = FakeBackend(model=CostModel(noise_sigma=0.0, network_factor=0.8))
    with Store(tmp_path / "m.db") as store:
        report = profile_network(small_net(), backend, store, ProfileConfig(harness=SHORT_HARNESS))
        assert [m.layer for m in report.layers] == ["conv1", "relu1", "pool1", "conv2", "add"]
        assert report.sum_ratio == pytest.approx(1 / 0.8)  # isolated layers sum to 1.25x the whole network
        assert not report.resumed and report.skipped == 0
        assert report.drift == pytest.approx(0.0)
        assert report.warnings == ()
        stored = store.layer_measurements(run_id=report.run_id)
        assert len(stored) == 5 and {r.method for r in stored} == {"isolated"}
        assert store.runs()[0].status == "done"
        assert len(store.network_measurements(run_id=report.run_id)) == 1


def test_an_interrupted_campaign_resumes_and_loses_nothing(tmp_path: Path) -> None:
    net, config = small_net(), ProfileConfig(harness=SHORT_HARNESS)
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(KeyboardInterrupt):
            profile_network(net, FakeBackend(seed=1), store, config, progress=StopAfter(3))
        first = {r.layer: r.times_s for r in store.layer_measurements()}
        assert sorted(first) == ["conv1", "pool1", "relu1"]
        assert store.runs()[0].status == "failed"
        report = profile_network(net, FakeBackend(seed=2), store, config)
        assert report.resumed and report.skipped == 3
        after = {r.layer: r.times_s for r in store.layer_measurements()}
        assert len(after) == 5 and all(after[k] == v for k, v in first.items())  # kept, not re-measured
        assert len(store.runs()) == 1 and store.runs()[0].status == "done"


class DriftingBackend(FakeBackend):
    """The machine slows down by 20% after the first sentinel measurement."""

    sentinels = 0

    def layer_timer(self, layer: Layer):  # type: ignore[no-untyped-def]
        timer = super().layer_timer(layer)
        if layer == SENTINEL:
            self.sentinels += 1
            if self.sentinels > 1:
                timer.cost_s *= 1.2
        return timer


def test_drift_beyond_five_percent_is_reported(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        report = profile_network(small_net(), DriftingBackend(model=CostModel(noise_sigma=0.0)), store,
                                 ProfileConfig(harness=SHORT_HARNESS))
    assert report.drift == pytest.approx(0.2)
    assert len(report.warnings) == 1 and "+20.0%" in report.warnings[0]


class ClockMeter(PowerMeter):
    """A 10 W device: its energy counter is 10 J per second of fake-clock time."""

    name = "clock"
    sample_period_s = 1e-3

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def availability(self) -> Availability:
        return Availability.yes()

    def read_energy_j(self) -> float:
        return 10.0 * self.clock()


def test_counter_energy_is_per_execution(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = FakeBackend(model=CostModel(noise_sigma=0.0), clock=clock)
    with Store(tmp_path / "m.db") as store:
        report = profile_network(small_net(), backend, store, ProfileConfig(harness=SHORT_HARNESS),
                                 meter=ClockMeter(clock))
    for m in report.layers:
        assert m.power_meter == "clock"
        assert m.energy_j == pytest.approx(10.0 * m.timing.stats.median_s)
    assert report.network.energy_j == pytest.approx(10.0 * report.network.timing.stats.median_s)


def test_profiler_campaign_stores_profiler_times(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as store:
        report = profile_network(small_net(), FakeBackend(), store,
                                 ProfileConfig(per_layer="profiler", harness=SHORT_HARNESS, profiler_runs=7))
        assert report.method == "profiler"
        assert [m.timing.stats.n for m in report.layers] == [7] * 5
        assert {r.method for r in store.layer_measurements()} == {"profiler"}


def test_whole_network_only(tmp_path: Path) -> None:
    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    with Store(tmp_path / "m.db") as store:
        report = profile_network(small_net(), backend, store, ProfileConfig(per_layer="none", harness=SHORT_HARNESS))
        assert report.layers == () and store.layer_measurements() == []
        assert report.network.timing.stats.median_s == pytest.approx(backend.network_cost_s(small_net()))


class ChunkedFake(FakeBackend):
    """A fake backend that records the passes asked of each profiler call, reports an unattributed node (0.1 ms
    per run) and, with ``stop_at``, is interrupted on that call (1-based)."""

    def __init__(self, stop_at: int = 0) -> None:
        super().__init__(seed=3)
        self.calls: list[int] = []
        self.stop_at = stop_at

    def profile(self, network: Network, runs: int) -> ProfileResult:
        self.calls.append(runs)
        if len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        return replace(super().profile(network, runs), unattributed_s={"reorder": 1e-4})


def test_profiler_passes_run_and_are_stored_in_chunks(tmp_path: Path) -> None:
    config = ProfileConfig(per_layer="profiler", harness=SHORT_HARNESS, profiler_runs=12)
    assert profiler_chunk(12) == 5 and profiler_chunk(50) == 10 and profiler_chunk(2) == 5
    backend = ChunkedFake()
    with Store(tmp_path / "m.db") as store:
        report = profile_network(small_net(), backend, store, config)
        assert backend.calls == [5, 5, 2]
        assert [m.timing.stats.n for m in report.layers] == [12] * 5
        assert report.unattributed_s == pytest.approx({"reorder": 1e-4})


def test_a_profiler_campaign_killed_mid_pass_keeps_the_chunks_done_and_profiles_only_the_rest(
        tmp_path: Path) -> None:
    config = ProfileConfig(per_layer="profiler", harness=SHORT_HARNESS, profiler_runs=12)
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(KeyboardInterrupt):
            profile_network(small_net(), ChunkedFake(stop_at=3), store, config)  # killed in the third chunk
        before = {r.layer: r.times_s for r in store.layer_measurements()}
        assert sorted(before) == sorted(layer.name for layer in small_net().layers)
        assert {len(t) for t in before.values()} == {5 + 5}
        backend = ChunkedFake()
        report = profile_network(small_net(), backend, store, config)
        assert report.resumed and backend.calls == [12 - 10]
        assert [m.timing.stats.n for m in report.layers] == [12] * 5
        assert all(m.timing.times_s[:10] == before[m.layer] for m in report.layers)
        assert len(store.layer_measurements()) == 5  # replaced, never added twice
        assert report.unattributed_s == pytest.approx({"reorder": 1e-4})  # from the last chunk alone


class StopAtWhole:
    def __call__(self, what: str, done: int, total: int) -> None:
        if what == "whole network":
            raise KeyboardInterrupt


def test_a_resumed_profiler_campaign_with_every_pass_stored_profiles_one_chunk_for_unattributed_nodes(
        tmp_path: Path) -> None:
    config = ProfileConfig(per_layer="profiler", harness=SHORT_HARNESS, profiler_runs=12)
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(KeyboardInterrupt):
            profile_network(small_net(), ChunkedFake(), store, config, progress=StopAtWhole())
        before = {r.layer: r.times_s for r in store.layer_measurements()}
        backend = ChunkedFake()
        report = profile_network(small_net(), backend, store, config)
        assert report.resumed and backend.calls == [profiler_chunk(12)]
        assert {m.layer: m.timing.times_s for m in report.layers} == before  # the extra chunk is not stored
        assert report.unattributed_s == pytest.approx({"reorder": 1e-4})
