"""Parameter sweeps on the fake backend: ranges, layer configurations, profiling networks, resume and surround."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from nnperf.campaign import find_surround, recorded_surround, run_sweep, surround_width
from nnperf.ir import ConvAttrs, Network, OpType
from nnperf.measure.backends._base import ProfileResult
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.measure.sweep import (
    SWEEP_HARNESS,
    UNDER_TEST,
    LayerConfig,
    SweepInputError,
    SweepSpec,
    choose_width,
    parse_fixed,
    parse_range,
    profiling_network,
)
from nnperf.prediction.steps import load_sweep, sweep_runs
from nnperf.store import Store

EXACT = CostModel(noise_sigma=0.0)
"""No noise: every profiled time is the cost model's, so each point converges in one round of 10 runs."""


def cost_of(config: LayerConfig, surround: int = 1, model: CostModel = EXACT) -> float:
    """The fake backend's modelled time of the layer under test."""
    return model.layer_cost_s(profiling_network(config, surround).layer(UNDER_TEST))


class CountingBackend(FakeBackend):
    """A fake backend that counts profile calls per network and can interrupt at the ``stop_at``-th network."""

    def __init__(self, stop_at: int | None = None, model: CostModel = EXACT) -> None:
        super().__init__(model=model)
        self.stop_at = stop_at
        self.calls: dict[str, int] = {}

    def profile(self, network: Network, runs: int) -> ProfileResult:
        if network.name not in self.calls and self.stop_at is not None and len(self.calls) + 1 >= self.stop_at:
            raise KeyboardInterrupt
        self.calls[network.name] = self.calls.get(network.name, 0) + 1
        return super().profile(network, runs)


class BurstBackend(CountingBackend):
    """A counting fake backend on which the profile calls numbered in ``slow_calls`` (from 1) run ``factor``
    times slower: a burst of contention on a shared machine."""

    def __init__(self, slow_calls: set[int], factor: float = 3.0, stop_at: int | None = None) -> None:
        super().__init__(stop_at=stop_at)
        self.slow_calls, self.factor, self.count = slow_calls, factor, 0

    def profile(self, network: Network, runs: int) -> ProfileResult:
        self.count += 1
        clean = self.model
        if self.count in self.slow_calls:
            self.model = replace(clean, overhead_s=clean.overhead_s * self.factor,
                                 s_per_mac=clean.s_per_mac * self.factor, s_per_op=clean.s_per_op * self.factor)
        try:
            return super().profile(network, runs)
        finally:
            self.model = clean


def channel_spec(values: tuple[int, ...] = tuple(range(4, 13)), rounds: int = 1) -> SweepSpec:
    return SweepSpec(LayerConfig.of("conv2d", {"size": 8, "channels": values[0]}), "channels", values, 1,
                     SWEEP_HARNESS, rounds)


# --- parse_range / parse_fixed ----------------------------------------------------------------------------------


def test_parse_range_includes_both_ends() -> None:
    values = parse_range("10:530:1")
    assert len(values) == 521
    assert (values[0], values[-1]) == (10, 530)
    assert values == tuple(range(10, 531))
    assert parse_range("10:20:5") == (10, 15, 20)
    assert parse_range(" 3 : 5 ") == (3, 4, 5)
    assert parse_range("7") == (7,)


def test_parse_range_refuses_what_it_cannot_sweep_in_one_line() -> None:
    # found by fuzzing: a bound of 5,000 digits raised int()'s ValueError, and 1:100000000000 built the range in
    # memory until a MemoryError
    with pytest.raises(SweepInputError, match="a bound has too many digits"):
        parse_range("9" * 5000 + ":1")
    with pytest.raises(SweepInputError, match=r"has 100,000,000,000 points, more than a sweep takes \(10,000\)"):
        parse_range("1:100000000000")
    assert len(parse_range("1:10000")) == 10_000  # the largest range a sweep takes


def test_parse_range_comma_list_is_sorted() -> None:
    assert parse_range("1,3,5") == (1, 3, 5)
    assert parse_range("5,1,3") == (1, 3, 5)


def test_parse_range_reversed_names_it() -> None:
    with pytest.raises(SweepInputError, match="reversed") as info:
        parse_range("8:4")
    assert "write 4:8" in str(info.value)


@pytest.mark.parametrize("text", ["5:5:0", "5:9:-1"])
def test_parse_range_step_must_be_positive(text: str) -> None:
    with pytest.raises(SweepInputError, match="step must be a positive integer"):
        parse_range(text)


@pytest.mark.parametrize("text", ["abc", "", "1:x", "1:2:3:4", "1,a"])
def test_parse_range_rejects_garbage(text: str) -> None:
    with pytest.raises(SweepInputError, match="range"):
        parse_range(text)


def test_parse_range_empty_and_repeated_lists() -> None:
    with pytest.raises(SweepInputError, match="empty"):
        parse_range(",")
    with pytest.raises(SweepInputError, match="repeats"):
        parse_range("1,2,1")


def test_parse_fixed() -> None:
    assert parse_fixed("filters=128,size=56") == {"filters": 128, "size": 56}
    assert parse_fixed(" filters = 64 , ") == {"filters": 64}
    assert parse_fixed("") == {}


@pytest.mark.parametrize("text,needle", [("filters", "expected NAME=INTEGER"), ("=5", "expected NAME=INTEGER"),
                                         ("size=x", "'x' is not an integer")])
def test_parse_fixed_rejects(text: str, needle: str) -> None:
    with pytest.raises(SweepInputError) as info:
        parse_fixed(text)
    assert needle in str(info.value)


# --- LayerConfig ----------------------------------------------------------------------------------------------------


def test_layer_config_fills_defaults_in_parameter_order() -> None:
    config = LayerConfig.of("conv2d", {"size": 8, "channels": 16})
    assert config.params == (("channels", 16), ("filters", 128), ("size", 8), ("kernel", 3), ("stride", 1))
    assert config.describe() == "conv2d(channels=16, filters=128, size=8, kernel=3, stride=1)"
    assert config.with_value("filters", 32)["filters"] == 32
    assert LayerConfig.of("fc").params == (("channels", 1024), ("filters", 1024))


def test_kernel_larger_than_padded_input_is_refused() -> None:
    # the check is against the *padded* input (padding (k - 1) // 2 per side): only an even kernel on a tiny
    # input can exceed it; an odd kernel always fits its padded input
    with pytest.raises(SweepInputError) as info:
        LayerConfig.of("conv2d", {"kernel": 4, "size": 1})
    assert "4x4 kernel is larger than the 1x1 input (padded to 3)" in str(info.value)
    with pytest.raises(SweepInputError, match="kernel is larger than"):
        LayerConfig.of("depthwise", {"kernel": 2, "size": 1})


def test_odd_kernel_larger_than_unpadded_input_is_a_valid_layer() -> None:
    # 7x7 on 3x3 with padding 3 is a real convolution (padded to 9): kept, output 3x3
    config = LayerConfig.of("conv2d", {"kernel": 7, "size": 3})
    assert config.output_size == 3


def test_stride_larger_than_input_is_refused() -> None:
    with pytest.raises(SweepInputError, match="stride 5 is larger than the 4x4 input"):
        LayerConfig.of("conv2d", {"stride": 5, "size": 4})


def test_unknown_kind_names_the_kinds() -> None:
    with pytest.raises(SweepInputError) as info:
        LayerConfig.of("conv3d", {})
    assert "'conv3d'" in str(info.value)
    assert "conv2d, depthwise, fc" in str(info.value)


def test_unknown_parameter_names_the_parameters() -> None:
    with pytest.raises(SweepInputError) as info:
        LayerConfig.of("fc", {"kernel": 3})
    assert "a fc layer has no parameter 'kernel'" in str(info.value)
    assert "channels, filters" in str(info.value)


@pytest.mark.parametrize("value", [0, -3, True, 2.5, "8"])
def test_values_must_be_positive_integers(value: object) -> None:
    with pytest.raises(SweepInputError, match="channels must be a positive integer"):
        LayerConfig.of("conv2d", {"channels": value})  # type: ignore[dict-item]


def test_missing_parameter_is_refused() -> None:
    with pytest.raises(SweepInputError, match="lacks filters"):
        LayerConfig("fc", (("channels", 4),))


@pytest.mark.parametrize("size,kernel,stride,out", [(56, 3, 2, 28), (56, 3, 1, 56), (8, 1, 1, 8), (8, 4, 1, 7),
                                                    (7, 5, 2, 4)])
def test_output_size(size: int, kernel: int, stride: int, out: int) -> None:
    assert LayerConfig.of("conv2d", {"size": size, "kernel": kernel, "stride": stride}).output_size == out
    assert LayerConfig.of("fc").output_size == 1


# --- profiling_network ----------------------------------------------------------------------------------------------


def test_conv2d_profiling_network() -> None:
    config = LayerConfig.of("conv2d", {"channels": 16, "filters": 32, "size": 8})
    net = profiling_network(config, surround=4)
    assert [layer.name for layer in net.layers] == ["input_layer", "under_test", "output_layer"]
    assert net.inputs[0].shape == (1, 4, 8, 8)
    assert net.outputs == ("output_layer",)
    first, middle, last = net.layers
    assert (first.input_shape, first.output_shape) == ((1, 4, 8, 8), (1, 16, 8, 8))
    assert (middle.input_shape, middle.output_shape) == ((1, 16, 8, 8), (1, 32, 8, 8))
    assert (last.input_shape, last.output_shape) == ((1, 32, 8, 8), (1, 4, 8, 8))
    assert middle.inputs == ("input_layer",) and last.inputs == ("under_test",)
    assert isinstance(middle.attrs, ConvAttrs)
    assert middle.attrs.kernel == (3, 3) and middle.attrs.padding == (1, 1, 1, 1) and middle.attrs.groups == 1
    assert first.attrs.kernel == (1, 1) and last.attrs.kernel == (1, 1)


def test_strided_conv2d_profiling_network_shrinks_the_output_layer() -> None:
    net = profiling_network(LayerConfig.of("conv2d", {"channels": 8, "filters": 8, "size": 8, "stride": 2}), 2)
    assert net.layer("under_test").output_shape == (1, 8, 4, 4)
    assert net.layer("output_layer").output_shape == (1, 2, 4, 4)


def test_fc_profiling_network() -> None:
    net = profiling_network(LayerConfig.of("fc", {"channels": 64, "filters": 10}), surround=4)
    first, middle, last = net.layers
    assert (first.name, middle.name, last.name) == ("input_layer", "under_test", "output_layer")
    assert net.inputs[0].shape == (1, 4)
    assert all(layer.op is OpType.LINEAR for layer in net.layers)
    assert [(layer.input_shape, layer.output_shape) for layer in net.layers] == [
        ((1, 4), (1, 64)), ((1, 64), (1, 10)), ((1, 10), (1, 4))]


def test_depthwise_profiling_network() -> None:
    net = profiling_network(LayerConfig.of("depthwise", {"channels": 24, "size": 8}), surround=2)
    middle = net.layer("under_test")
    assert isinstance(middle.attrs, ConvAttrs)
    assert middle.attrs.groups == 24
    assert (middle.input_shape, middle.output_shape) == ((1, 24, 8, 8), (1, 24, 8, 8))
    assert net.layer("output_layer").output_shape == (1, 2, 8, 8)


def test_profiling_network_refuses_a_zero_surround() -> None:
    from nnperf.measure._harness import MeasurementError

    with pytest.raises(MeasurementError, match="positive integer"):
        profiling_network(LayerConfig.of("fc"), 0)


# --- SweepSpec ------------------------------------------------------------------------------------------------------


def test_sweep_spec_sorts_and_describes() -> None:
    spec = SweepSpec(LayerConfig.of("conv2d", {"size": 8}), "channels", (12, 4, 8), 2)
    assert spec.values == (4, 8, 12)
    assert spec.fixed == (("filters", 128), ("size", 8), ("kernel", 3), ("stride", 1))
    assert spec.label == "conv2d:channels[filters=128,size=8,kernel=3,stride=1]"
    assert spec.config_at(8)["channels"] == 8
    assert spec.key() == SweepSpec(LayerConfig.of("conv2d", {"size": 8}), "channels", (4, 8, 12), 2).key()
    assert spec.key() != SweepSpec(LayerConfig.of("conv2d", {"size": 8}), "channels", (4, 8, 12), 3).key()


def test_sweep_spec_refuses_an_empty_range() -> None:
    with pytest.raises(SweepInputError, match="empty"):
        SweepSpec(LayerConfig.of("conv2d"), "channels", (), 1)


def test_sweep_spec_refuses_a_parameter_of_another_kind() -> None:
    with pytest.raises(SweepInputError, match="a fc layer has no parameter 'size'"):
        SweepSpec(LayerConfig.of("fc"), "size", (1, 2), 1)


def test_sweep_spec_refuses_repeats_and_invalid_ends() -> None:
    with pytest.raises(SweepInputError, match="repeats"):
        SweepSpec(LayerConfig.of("conv2d"), "channels", (4, 4), 1)
    with pytest.raises(SweepInputError, match="stride 9 is larger"):
        SweepSpec(LayerConfig.of("conv2d", {"size": 8}), "stride", (1, 9), 1)


def test_sweep_spec_refuses_an_invalid_value_inside_the_range() -> None:
    with pytest.raises(SweepInputError, match="2x2 kernel is larger"):
        SweepSpec(LayerConfig.of("conv2d", {"size": 1, "kernel": 1}), "kernel", (1, 2, 3), 1)


# --- run_sweep ------------------------------------------------------------------------------------------------------


def test_run_sweep_measures_and_stores_every_point(tmp_path: Path) -> None:
    spec = channel_spec()
    seen: list[tuple[str, int, int]] = []
    with Store(tmp_path / "s.db") as store:
        sweep = run_sweep(FakeBackend(), store, spec, progress=lambda *a: seen.append(a))
        assert sweep.complete and not sweep.reused and not sweep.resumed
        assert len(sweep.timings) == 9
        assert sweep.x.tolist() == list(range(4, 13))
        stored = store.layer_measurements(run_id=sweep.run_id)
        assert [r.layer for r in stored] == [f"channels={c}" for c in range(4, 13)]
        assert {r.op for r in stored} == {"conv2d"} and {r.method.value for r in stored} == {"profiler"}
        assert {r.group for r in stored} == {UNDER_TEST}
        run = store.runs()[0]
        assert (run.status, run.campaign, run.model) == ("done", f"sweep|{spec.key()}", spec.label)
        assert [r.id for r in sweep_runs(store)] == [sweep.run_id]
    y = sweep.latency_s
    assert y[-1] > 2 * y[0]  # 12 vs 4 input channels: the MACs triple, the fixed overhead does not
    assert np.all(np.diff(y) > 0)
    expected = np.array([cost_of(spec.config_at(c), model=CostModel()) for c in range(4, 13)])
    np.testing.assert_allclose(y, expected, rtol=0.03)  # 2% log-normal noise, median of >= 10 runs
    assert seen[0] == ("channels=4", 1, 9) and seen[-1] == ("done", 9, 9)  # each point as it is stored


def test_run_sweep_point_is_the_middle_layers_exact_time(tmp_path: Path) -> None:
    spec = channel_spec((4, 8))
    backend = CountingBackend()
    with Store(tmp_path / "s.db") as store:
        sweep = run_sweep(backend, store, spec)
    # (4 * 3 * 3 + 1 bias) * 128 filters * 8 * 8 pixels MACs at 1e-10 s + 5 us overhead; the surrounding 1x1
    # layers are not counted
    assert sweep.latency_s[0] == pytest.approx(5e-6 + 1e-10 * (4 * 9 + 1) * 128 * 64, rel=1e-12)
    assert sweep.latency_s.tolist() == pytest.approx([cost_of(spec.config_at(4)), cost_of(spec.config_at(8))],
                                                     rel=1e-12)
    assert all(t.stop_reason == "converged" and t.stats.n == 10 for t in sweep.timings)
    assert sorted(backend.calls.values()) == [1, 1]  # one round of 10 runs per point


def test_run_sweep_reuses_a_finished_sweep_unless_fresh(tmp_path: Path) -> None:
    spec = channel_spec()
    with Store(tmp_path / "s.db") as store:
        first = run_sweep(FakeBackend(), store, spec)
        again_backend = CountingBackend()
        again = run_sweep(again_backend, store, spec)
        assert again.reused and not again.resumed
        assert again.run_id == first.run_id
        assert again_backend.calls == {}  # nothing measured
        np.testing.assert_array_equal(again.latency_s, first.latency_s)
        fresh = run_sweep(FakeBackend(seed=1), store, spec, fresh=True)
        assert fresh.run_id != first.run_id and not fresh.reused and fresh.complete
        assert len(store.layer_measurements(run_id=fresh.run_id)) == 9
        assert len(store.layer_measurements(run_id=first.run_id)) == 9
        # a different surround is a different sweep
        other = run_sweep(FakeBackend(), store, SweepSpec(spec.base, "channels", spec.values, 2))
        assert other.run_id not in (first.run_id, fresh.run_id) and not other.reused


def test_an_interrupted_sweep_resumes_without_measuring_again(tmp_path: Path) -> None:
    spec = channel_spec()
    with Store(tmp_path / "s.db") as store:
        broken = CountingBackend(stop_at=4)
        with pytest.raises(KeyboardInterrupt):
            run_sweep(broken, store, spec)
        assert len(broken.calls) == 3
        run = store.runs()[0]
        assert run.status == "failed"
        partial = load_sweep(store, run.id)
        assert not partial.complete and partial.x.tolist() == [4, 5, 6]
        before = {r.layer: (r.id, r.created_at) for r in store.layer_measurements(run_id=run.id)}
        assert sorted(before) == ["channels=4", "channels=5", "channels=6"]

        backend = CountingBackend()
        sweep = run_sweep(backend, store, spec)
        assert sweep.resumed and not sweep.reused and sweep.complete
        assert sweep.run_id == run.id
        assert len(store.runs()) == 1 and store.runs()[0].status == "done"
        assert sweep.x.tolist() == list(range(4, 13))
        measured = sorted(int(name.split("channels=")[1].split(",")[0]) for name in backend.calls)
        assert measured == [7, 8, 9, 10, 11, 12]  # only the missing points
        assert sum(backend.calls.values()) == 6  # one converged round each
        after = {r.layer: (r.id, r.created_at) for r in store.layer_measurements(run_id=run.id)}
        assert {k: after[k] for k in before} == before  # the first three points were kept as stored
        assert len(after) == 9
    np.testing.assert_allclose(sweep.latency_s, [cost_of(spec.config_at(c)) for c in range(4, 13)], rtol=1e-12)


def test_sweep_rounds_pass_over_the_range_in_turn_and_take_the_median(tmp_path: Path) -> None:
    spec = channel_spec((4, 5, 6), rounds=3)
    # calls 2 and 4 are round 1's channels=5 and round 2's channels=4: each is slow in one round only
    backend = BurstBackend(slow_calls={2, 4})
    with Store(tmp_path / "s.db") as store:
        sweep = run_sweep(backend, store, spec)
        names = [r.layer for r in store.layer_measurements(run_id=sweep.run_id)]
    assert names == ["channels=4", "channels=5", "channels=6", "channels=4#2", "channels=5#2", "channels=6#2",
                     "channels=4#3", "channels=5#3", "channels=6#3"]
    clean = [cost_of(spec.config_at(c)) for c in (4, 5, 6)]
    np.testing.assert_allclose(sweep.latency_s, clean, rtol=1e-12)  # the bursts are voted out
    assert [len(r) for r in sweep.repeats] == [3, 3, 3]
    slow = [[t.stats.median_s / c for t in rounds] for rounds, c in zip(sweep.repeats, clean)]
    np.testing.assert_allclose(slow, [[1, 3, 1], [3, 1, 1], [1, 1, 1]], rtol=1e-12)
    assert sweep.complete


def test_sweep_rounds_median_of_two_is_the_lower(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        sweep = run_sweep(BurstBackend(slow_calls={1}), store, channel_spec((4, 5), rounds=2))
    assert sweep.latency_s[0] == pytest.approx(cost_of(channel_spec().config_at(4)), rel=1e-12)


def test_an_interrupted_sweep_with_rounds_resumes_in_its_round(tmp_path: Path) -> None:
    spec = channel_spec((4, 5, 6), rounds=2)
    with Store(tmp_path / "s.db") as store:
        with pytest.raises(KeyboardInterrupt):  # stopped before round 2's channels=5
            run_sweep(CountingBackend(), store, spec, progress=_stop_after(4))
        partial = load_sweep(store, store.runs()[0].id)
        assert partial.x.tolist() == [4, 5, 6] and not partial.complete
        assert [len(r) for r in partial.repeats] == [2, 1, 1]
        backend = CountingBackend()
        sweep = run_sweep(backend, store, spec)
        assert sweep.resumed and sweep.complete
        assert sum(backend.calls.values()) == 2  # round 2 of channels 5 and 6 only
        assert [r.layer for r in store.layer_measurements(run_id=sweep.run_id)][-2:] == ["channels=5#2",
                                                                                          "channels=6#2"]


def _stop_after(points: int):  # type: ignore[no-untyped-def]
    """A progress callback that interrupts the sweep when it announces point number ``points`` + 1."""
    def progress(what: str, done: int, total: int) -> None:
        if done == points and what != "done":
            raise KeyboardInterrupt
    return progress


def test_sweep_spec_rounds() -> None:
    one = channel_spec((4, 5))
    assert one.rounds == 1 and "rounds" not in one.to_dict()  # one round keeps the keys of stored sweeps
    three = channel_spec((4, 5), rounds=3)
    assert three.to_dict()["rounds"] == 3 and three.key() != one.key()
    for bad in (0, -1, True, 2.0):
        with pytest.raises(SweepInputError, match="at least one round"):
            channel_spec((4, 5), rounds=bad)  # type: ignore[arg-type]


def test_load_sweep_refuses_a_run_that_is_not_a_sweep(tmp_path: Path) -> None:
    from nnperf.errors import NnperfError

    with Store(tmp_path / "s.db") as store:
        sweep = run_sweep(FakeBackend(), store, channel_spec((4, 5)))
        with pytest.raises(NnperfError, match=rf"run 99 is not a stored sweep \(sweeps: {sweep.run_id}\)"):
            load_sweep(store, 99)
        loaded = load_sweep(store, sweep.run_id)
        assert loaded.spec == sweep.spec
        assert loaded.spec.harness == SWEEP_HARNESS


# --- surround -------------------------------------------------------------------------------------------------------


def test_choose_width_picks_the_smallest_within_the_margin() -> None:
    assert choose_width((1, 2, 4, 8), (2.0, 1.5, 1.02, 1.0), 0.03) == (4, True)
    assert choose_width((1, 2, 4, 8), (1.0, 1.0, 1.0, 1.0), 0.03) == (1, True)


def test_choose_width_needs_every_wider_surround_within_the_margin() -> None:
    # width 1 is within 3% of the widest, but width 2 is not: 4 is the smallest from which all wider ones are
    assert choose_width((1, 2, 4, 8), (1.0, 1.5, 1.01, 1.0), 0.03) == (4, True)


def test_choose_width_not_converged_takes_the_widest() -> None:
    assert choose_width((1, 2, 4, 8), (4.0, 3.0, 2.0, 1.0), 0.03) == (8, False)
    # the last two differ by 5%, more than the margin
    assert choose_width((1, 2, 4, 8), (1.0, 1.0, 1.05, 1.0), 0.03) == (8, False)


def test_choose_width_needs_two_widths() -> None:
    with pytest.raises(SweepInputError, match="at least two widths"):
        choose_width((1,), (1.0,), 0.03)
    with pytest.raises(SweepInputError):
        choose_width((1, 2), (1.0,), 0.03)


def test_find_surround_records_its_choice(tmp_path: Path) -> None:
    config = LayerConfig.of("conv2d", {"channels": 8, "filters": 8, "size": 8})
    backend = CountingBackend()
    with Store(tmp_path / "s.db") as store:
        choice = find_surround(backend, store, config, widths=(8, 1, 4, 2))
        assert choice.widths == (1, 2, 4, 8)
        # the fake's middle layer costs the same whatever surrounds it: converged, the smallest width chosen
        assert choice.latency_s == pytest.approx((cost_of(config),) * 4, rel=1e-12)
        assert (choice.chosen, choice.converged) == (1, True)
        assert choice.convergence_s == choice.latency_s[-1]
        assert backend.calls == {name: 3 for name in backend.calls} and len(backend.calls) == 4  # three rounds
        system = store.systems()[0]
        recorded = recorded_surround(store, system.id, "conv2d")
        assert recorded == choice
        assert recorded_surround(store, system.id, "fc") is None
        stored = store.layer_measurements(run_id=store.runs()[0].id)
        assert [r.layer for r in stored] == [f"surround={w}{r}" for r in ("", "#2", "#3") for w in (1, 2, 4, 8)]
        assert store.runs()[0].campaign.startswith("surround|") and store.runs()[0].status == "done"
        assert sweep_runs(store) == []  # a surround sweep is not a parameter sweep


def test_find_surround_rounds_vote_out_a_burst_and_a_finished_sweep_is_reused(tmp_path: Path) -> None:
    config = LayerConfig.of("conv2d", {"channels": 8, "filters": 8, "size": 8})
    # round 1 of width 4 is 3x slow: with one round, width 8 would be chosen (4 is not within 3% of 8)
    with Store(tmp_path / "one.db") as store:
        single = find_surround(BurstBackend(slow_calls={3}), store, config, widths=(1, 2, 4, 8), rounds=1)
    assert single.chosen == 8
    with Store(tmp_path / "s.db") as store:
        choice = find_surround(BurstBackend(slow_calls={3}), store, config, widths=(1, 2, 4, 8))
        assert (choice.chosen, choice.converged) == (1, True)
        assert choice.latency_s == pytest.approx((cost_of(config),) * 4, rel=1e-12)
        again_backend = CountingBackend()
        again = find_surround(again_backend, store, config, widths=(1, 2, 4, 8))
        assert again_backend.calls == {} and again == choice  # reused: nothing measured
        assert len([r for r in store.runs() if r.campaign.startswith("surround|")]) == 1
        fresh_backend = CountingBackend()
        find_surround(fresh_backend, store, config, widths=(1, 2, 4, 8), fresh=True)
        assert sum(fresh_backend.calls.values()) == 12
        assert len(store.runs()) == 2
        with pytest.raises(SweepInputError, match="at least one round"):
            find_surround(FakeBackend(), store, config, rounds=0)


def test_surround_width_is_the_recorded_choice_or_one(tmp_path: Path) -> None:
    config = LayerConfig.of("conv2d", {"channels": 8, "filters": 8, "size": 8})
    with Store(tmp_path / "s.db") as store:
        system = store.add_system(FakeBackend().system())
        assert surround_width(store, system.id, "conv2d") == 1
        store.save_model(system.id, "steps-surround", {**find_surround(
            FakeBackend(), store, config, widths=(1, 2)).to_dict(), "chosen": 16})
        assert surround_width(store, system.id, "conv2d") == 16
        assert surround_width(store, system.id, "fc") == 1


def test_find_surround_refuses_a_bad_margin(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store, pytest.raises(SweepInputError, match="margin"):
        find_surround(FakeBackend(), store, LayerConfig.of("fc"), margin=1.5)
