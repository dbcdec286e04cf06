"""Calibration by adaptive sampling: configurations from the prior, neighbours, errors found, stored and resumed."""

from __future__ import annotations

import numpy as np
import pytest

from harness_presets import SHORT_HARNESS
from nnperf.errors import NnperfError
from nnperf.ir.metrics import layer_metrics
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction.kernel import CONV_KINDS, ConvSample, draw, neighbours, sample_layers
from nnperf.prediction.kernel._sampling import MAX_MACS, _next_round, _weakest_kind
from nnperf.store import Store


@pytest.mark.parametrize("kind", CONV_KINDS)
def test_draws_are_of_their_kind_and_bounded(kind: str) -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        sample = draw(kind, rng)
        assert sample.kind == kind and layer_metrics(sample.layer()).macs <= MAX_MACS
        assert ConvSample.from_name(sample.name) == sample  # a stored name gives the configuration back


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
            sample = draw(kind, rng)
            measured[sample] = cost.layer_cost_s(sample.layer())  # a smooth law the models learn
    for sample in [s for s in measured if s.kind == "conv:grouped"]:  # no law: a factor of 3 either way
        measured[sample] *= float(np.exp(rng.normal(0.0, 1.1)))
    by_kind: dict[str, list[ConvSample]] = {}
    for sample in measured:
        by_kind.setdefault(sample.kind, []).append(sample)
    weakest, worst = _weakest_kind(by_kind, measured)
    assert weakest == "conv:grouped" and len(worst) == 3 and all(s.kind == weakest for s in worst)
    placed = _next_round(measured, rng)
    assert sum(s.kind == "conv:grouped" for s in placed) >= len(placed) // 2
    assert all(s not in measured for s in placed)


def test_sampling_is_stored_as_taken_and_a_finished_one_is_read_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = FakeBackend(model=CostModel(noise_sigma=0.0))
    with Store(tmp_path / "m.db") as store:
        samples = sample_layers(backend, store, 1.0, SHORT_HARNESS)
        assert {layer.name.split("-")[0] for layer, _ in samples} == {"conv"}
        assert len(samples) >= 4 * 6 and all(seconds > 0 for _, seconds in samples)
        again = sample_layers(backend, store, 1.0, SHORT_HARNESS)  # finished: read back, nothing measured
        assert {layer.name for layer, _ in again} == {layer.name for layer, _ in samples}
        with pytest.raises(NnperfError, match="budget must be >= 0"):
            sample_layers(backend, store, -1.0, SHORT_HARNESS)
