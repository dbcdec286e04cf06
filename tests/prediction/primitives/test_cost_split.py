"""The 80/10/10 split of the profiled dataset (Mulder et al. 4.2): sizes, disjoint parts, columns, seeds."""

from __future__ import annotations

import pytest

from nnperf.errors import NnperfError
from nnperf.prediction.primitives import split_dataset
from nnperf.primitives import ConvConfig, ConvSample, PrimitiveDataset, TransformSample, sample_configs


@pytest.fixture(scope="module")
def dataset() -> PrimitiveDataset:
    """100 configurations (every fifth also timed with "rare") and 30 activations."""
    configs = sample_configs([ConvConfig.make(1, 64, 64, 56, 3, padding=1), ConvConfig.make(1, 32, 64, 28, 1)],
                             100, seed=4)
    assert len(configs) == 100
    conv = tuple(ConvSample(c, {"direct": 1e-10 * c.macs, **({"rare": 1e-3} if i % 5 == 0 else {})})
                 for i, c in enumerate(configs))
    layout = tuple(TransformSample(1, c, (h, h), {"chw->hwc": 1e-9 * c * h * h})
                   for c in (8, 16, 32, 64, 128, 256) for h in (7, 14, 28, 56, 112))
    return PrimitiveDataset("s", ("direct", "rare"), ("chw->hwc",), conv, layout)


def test_the_parts_have_the_fractions_and_share_nothing(dataset: PrimitiveDataset) -> None:
    train, validation, test = split_dataset(dataset)
    assert [len(p.conv) for p in (train, validation, test)] == [80, 10, 10]
    assert [len(p.layout) for p in (train, validation, test)] == [24, 3, 3]  # 0.8 * 30, 0.1 * 30
    configs = [s.config for p in (train, validation, test) for s in p.conv]
    assert sorted(map(repr, configs)) == sorted(repr(s.config) for s in dataset.conv)
    layouts = [(s.c, s.im) for p in (train, validation, test) for s in p.layout]
    assert sorted(layouts) == sorted((s.c, s.im) for s in dataset.layout)
    assert all(p.system_key == "s" and p.transforms == ("chw->hwc",) for p in (train, validation, test))
    for part in (train, validation, test):  # a part names a column only when it holds one of its times
        has_rare = any("rare" in s.times_s for s in part.conv)
        assert part.primitives == (("direct", "rare") if has_rare else ("direct",))


def test_the_configurations_are_shuffled_before_the_cut(dataset: PrimitiveDataset) -> None:
    train, _, _ = split_dataset(dataset)
    assert [s.config for s in train.conv] != [s.config for s in dataset.conv[:80]]


def test_the_same_seed_gives_the_same_split(dataset: PrimitiveDataset) -> None:
    assert split_dataset(dataset, seed=3) == split_dataset(dataset, seed=3)
    assert split_dataset(dataset, seed=3)[2] != split_dataset(dataset, seed=4)[2]


def test_other_fractions(dataset: PrimitiveDataset) -> None:
    train, validation, test = split_dataset(dataset, (0.5, 0.0, 0.5))
    assert (len(train.conv), len(validation.conv), len(test.conv)) == (50, 0, 50)
    assert validation.primitives == () and validation.layout == ()


@pytest.mark.parametrize("fractions", [(0.8, 0.1), (0.8, 0.3, 0.1), (1.2, -0.1, -0.1)])
def test_fractions_that_do_not_make_a_split_are_refused(dataset: PrimitiveDataset, fractions: tuple) -> None:
    with pytest.raises(NnperfError, match="three non-negative numbers that sum to 1"):
        split_dataset(dataset, fractions)
