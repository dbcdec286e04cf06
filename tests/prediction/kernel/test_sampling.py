"""Calibration by adaptive sampling: configurations from the prior, neighbours, errors found, stored and resumed."""

from __future__ import annotations

import numpy as np
import pytest

from harness_presets import SHORT_HARNESS
from nnperf.campaign import sample_layers
from nnperf.errors import NnperfError
from nnperf.ir.metrics import layer_metrics
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction.kernel import (
    CONV_KINDS,
    SAMPLED_KINDS,
    ConvSample,
    LinearSample,
    PoolSample,
    grid_draw,
    neighbours,
    next_round,
    sample_from_name,
)
from nnperf.prediction.kernel._sampling import MAX_MACS, MAX_POOL_INPUT, _weakest_kind
from nnperf.store import Store


@pytest.mark.parametrize("kind", CONV_KINDS)
def test_draws_are_of_their_kind_and_bounded(kind: str) -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        sample = grid_draw(kind, rng)
        assert sample.kind == kind and layer_metrics(sample.layer()).macs <= MAX_MACS
        assert ConvSample.from_name(sample.name) == sample  # a stored name gives the configuration back


@pytest.mark.parametrize("kind", ["max_pool", "avg_pool"])
def test_pool_draws_are_of_their_kind_bounded_and_valid(kind: str) -> None:
    rng = np.random.default_rng(0)
    for _ in range(40):
        sample = grid_draw(kind, rng)
        assert isinstance(sample, PoolSample) and sample.kind == kind
        assert sample.channels * sample.map ** 2 <= MAX_POOL_INPUT and 2 * sample.padding < sample.kernel
        assert sample.stride == 2 or sample.kernel == 3  # a 2x2 window always moves by 2
        assert sample_from_name(sample.name) == sample  # a stored name gives the configuration back
        assert all(n.kind == kind for n in neighbours(sample))


@pytest.mark.parametrize(("sample", "out"), [
    (PoolSample("max", 64, 112, 3, 2, 0, True), 56),  # GoogLeNet's stem: ceil((112 - 3) / 2) + 1
    (PoolSample("max", 64, 112, 3, 2, 0, False), 55),  # floor((112 - 3) / 2) + 1
    (PoolSample("max", 64, 112, 3, 2, 1, False), 56),  # ResNet's stem: floor((112 + 2 - 3) / 2) + 1
    (PoolSample("avg", 16, 7, 2, 2, 0, True), 4),  # ceil((7 - 2) / 2) + 1
    (PoolSample("max", 16, 7, 3, 2, 1, True), 4),  # ceil(6 / 2) + 1 = 4; the window at 6 starts inside
    (PoolSample("max", 16, 6, 3, 2, 1, True), 4),  # ceil(5 / 2) + 1; the last window starts at 6, inside 6 + 1
    (PoolSample("avg", 32, 14, 3, 1, 1, False), 14),  # 'same'
])
def test_pool_output_sizes_follow_pytorch(sample: PoolSample, out: int) -> None:
    layer = sample.layer()
    assert layer.output_shape == (1, sample.channels, out, out) and layer.input_shapes == ((1, sample.channels,
                                                                                         sample.map, sample.map),)


def test_drawn_pools_have_the_output_size_torch_gives() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for kind in ("max_pool", "avg_pool"):
        for _ in range(15):
            sample = grid_draw(kind, rng)
            pool = (torch.nn.MaxPool2d if sample.op == "max" else torch.nn.AvgPool2d)(
                sample.kernel, sample.stride, sample.padding, ceil_mode=sample.ceil)
            x = torch.zeros(sample.layer().input_shapes[0])
            assert tuple(pool(x).shape) == sample.layer().output_shape, sample.name


def test_names_that_are_no_sample_are_refused() -> None:
    for name in ("pool-min-c16-m7-k2-s2-p0-e0", "pool-max-c16-m7", "conv-c16"):
        with pytest.raises(NnperfError, match="does not name a sampled"):
            sample_from_name(name)


def test_neighbours_move_one_choice_one_step_and_keep_the_kind() -> None:
    grouped = ConvSample(128, 128, 28, 3, 1, 32)  # 4 channels per group
    found = neighbours(grouped)
    assert ConvSample(96, 96, 28, 3, 1, 24) in found and ConvSample(128, 128, 14, 3, 1, 32) in found
    assert all(n.kind == "conv:grouped" and n.c_in // n.groups == 4 for n in found)
    assert all(sum(a != b for a, b in zip(vars(n).values(), vars(grouped).values())) <= 3 for n in found)
    assert all(n.kernel == 1 for n in neighbours(ConvSample(64, 128, 28, 1, 1, 1)))  # pointwise stays 1x1


def test_the_next_round_goes_where_a_planted_error_is() -> None:
    rng = np.random.default_rng(1)
    cost = CostModel()
    measured = {}
    for kind in CONV_KINDS:
        for _ in range(16):
            sample = grid_draw(kind, rng)
            measured[sample] = cost.layer_cost_s(sample.layer())  # a smooth law the models learn
    for sample in [s for s in measured if s.kind == "conv:grouped"]:  # no law: a factor of 3 either way
        measured[sample] *= float(np.exp(rng.normal(0.0, 1.1)))
    by_kind: dict[str, list[ConvSample]] = {}
    for sample in measured:
        by_kind.setdefault(sample.kind, []).append(sample)
    weakest, worst = _weakest_kind(by_kind, measured)
    assert weakest == "conv:grouped" and len(worst) == 3 and all(s.kind == weakest for s in worst)
    placed = next_round(measured, rng)
    assert sum(s.kind == "conv:grouped" for s in placed) >= len(placed) // 2
    assert all(s not in measured for s in placed)


def test_sampling_is_stored_as_taken_and_a_finished_one_is_read_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    with Store(tmp_path / "m.db") as store:
        samples = sample_layers(backend, store, 2.5, SHORT_HARNESS)  # the first sentinel reading warms up 0.5 s
        # the first round interleaves the kinds, so even a slow machine's first few samples hold both
        assert {"conv", "pool"} <= {layer.name.split("-")[0] for layer, _ in samples} <= {"conv", "pool", "linear"}
        assert len(samples) >= len(SAMPLED_KINDS) and all(seconds > 0 for _, seconds in samples)
        again = sample_layers(backend, store, 2.5, SHORT_HARNESS)  # finished: read back, nothing measured
        assert {layer.name for layer, _ in again} == {layer.name for layer, _ in samples}
        with pytest.raises(NnperfError, match="budget must be >= 0"):
            sample_layers(backend, store, -1.0, SHORT_HARNESS)


def test_samples_are_scaled_to_the_calibrations_speed_by_the_sentinel(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nnperf.campaign import measure_sentinel
    from nnperf.campaign._sampling import SENTINEL_EVERY, SENTINEL_PREFIX, _at_reference_speed

    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    with Store(tmp_path / "m.db") as store:
        plain = {layer.name: t for layer, t in sample_layers(backend, store, 1.0, SHORT_HARNESS)}
        run = store.runs()[0]
        readings = [m.layer for m in store.layer_measurements(run_id=run.id) if m.layer.startswith(SENTINEL_PREFIX)]
        # before the first sample, every SENTINEL_EVERY samples, and after the last
        assert readings == [f"{SENTINEL_PREFIX}{k}" for k in sorted({*range(0, len(plain), SENTINEL_EVERY),
                                                                      len(plain)})]
        sentinel_s = measure_sentinel(backend, SHORT_HARNESS)  # no noise: every reading is this time
        # read back, at a reference speed twice as slow: every sample takes exactly twice as long
        doubled = sample_layers(backend, store, 1.0, SHORT_HARNESS, reference_s=2 * sentinel_s)
        assert {layer.name: t for layer, t in doubled} == pytest.approx({n: 2 * t for n, t in plain.items()})
        with pytest.raises(NnperfError, match="reference time must be positive"):
            sample_layers(backend, store, 1.0, SHORT_HARNESS, reference_s=0.0)
    # a machine that slowed from 1 to 3 ms of sentinel over 4 samples: each sample scaled by its interpolated speed
    a, b, c, d = (ConvSample(16, 16, 7, 3, 1, g) for g in (1, 2, 4, 8))
    scaled = _at_reference_speed({a: 1.0, b: 1.0, c: 1.0, d: 1.0}, {0: 1e-3, 4: 3e-3}, reference_s=1e-3)
    assert [t for _, t in scaled] == pytest.approx([1 / 1.25, 1 / 1.75, 1 / 2.25, 1 / 2.75])
    assert [t for _, t in _at_reference_speed({a: 1.0}, {}, reference_s=1e-3)] == [1.0]  # stored before: as is


def test_a_sampled_fully_connected_layer_is_laid_out_as_networks_have_it_and_named_back() -> None:
    classifier, tokens = LinearSample(1, 512, 1000), LinearSample(3136, 96, 384)
    assert classifier.layer().input_shapes == ((1, 512),) and classifier.layer().output_shape == (1, 1000)
    assert tokens.layer().input_shapes == ((1, 3136, 96),) and tokens.layer().output_shape == (1, 3136, 384)
    assert layer_metrics(tokens.layer()).macs == 3136 * 96 * 384
    for sample in (classifier, tokens):
        assert sample.kind == "linear" and sample_from_name(sample.name) == sample
    rng = np.random.default_rng(0)
    drawn = [grid_draw("linear", rng) for _ in range(30)]
    assert all(layer_metrics(s.layer()).macs <= MAX_MACS for s in drawn) and len({s.rows for s in drawn}) > 2
    assert LinearSample(784, 96, 384) in neighbours(tokens) and LinearSample(3136, 128, 384) in neighbours(tokens)
    with pytest.raises(NnperfError, match="does not name a sampled fully connected"):
        sample_from_name("linear-r3")
