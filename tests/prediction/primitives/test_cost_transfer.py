"""Moving a primitive cost model to another platform (Mulder et al. 4.4, 5.3): random subsamples, factor
correction, fine-tuning from the source weights and the from-scratch baseline, on synthetic power-law times
where the target platform is the source with per-primitive factors and, for some primitives, another exponent."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cost_data import LAW as SOURCE
from cost_data import TEST_SHAPES, power_law_dataset
from cost_data import TRANSFORM_LAW as TRANSFORMS

from nnperf.errors import NnperfError
from nnperf.prediction.primitives import (
    DatasetTooSmallError,
    NoSharedColumnsError,
    PrimitiveCostModel,
    correction_factors,
    factor_corrected,
    family_subset,
    fine_tuned,
    from_scratch,
    mdrae,
    subsample,
)
from nnperf.primitives import ConvSample, PrimitiveDataset, TransformSample

TARGET = {"direct": (3.0, 1.0), "im2col-fhw": (2.0, 1.08), "conv1x1-fhw": (4.0, 1.05),
          "winograd-2x3": (1.5, 0.9), "fft": (2.5, 0.75)}
"""The target platform: time_s = factor * a * MACs ** b' (a from LAW); im2col and winograd change
exponent, so no factor makes the source model right for them."""

TRANSFORM_FACTOR = 2.0
"""The target's layout transformations take twice as long (same exponent)."""

SMALL_NN = {"hidden": (32, 64, 32), "max_iterations": 300, "patience": 50, "threads": 1}
"""Short training of a narrow network: about 2.5 s for NN2 on 120 configurations on one thread."""


def platform(n: int, seed: int, target: dict[str, tuple[float, float]] | None = None,
             shapes: list | None = None) -> PrimitiveDataset:
    """``n`` configurations around the seeds timed on the source (``target`` None) or target platform."""
    return power_law_dataset(n, seed, shapes=shapes, target=target,
                             transform_factor=TRANSFORM_FACTOR if target is not None else 1.0)


def scaled(dataset: PrimitiveDataset, factors: dict[str, float]) -> PrimitiveDataset:
    """``dataset`` with every time of a name multiplied by its factor (1 for a name not given)."""
    return PrimitiveDataset(
        dataset.system_key, dataset.primitives, dataset.transforms,
        tuple(ConvSample(s.config, {n: t * factors.get(n, 1.0) for n, t in s.times_s.items()}) for s in dataset.conv),
        tuple(TransformSample(s.batch, s.c, s.im, {n: t * factors.get(n, 1.0) for n, t in s.times_s.items()})
              for s in dataset.layout))


def predictions(model: PrimitiveCostModel, test: PrimitiveDataset) -> tuple[np.ndarray, np.ndarray]:
    return (model.predict([s.config for s in test.conv], only_applicable=False),
            model.predict_transforms([(s.batch, s.c, s.im) for s in test.layout]))


@pytest.fixture(scope="module")
def source_train() -> PrimitiveDataset:
    return platform(120, seed=1)


@pytest.fixture(scope="module")
def target_train() -> PrimitiveDataset:
    return platform(200, seed=3, target=TARGET)


@pytest.fixture(scope="module")
def target_test() -> PrimitiveDataset:
    return platform(60, seed=2, target=TARGET, shapes=TEST_SHAPES)


@pytest.fixture(scope="module")
def lin(source_train: PrimitiveDataset) -> PrimitiveCostModel:
    return PrimitiveCostModel("lin").fit(source_train)


@pytest.fixture(scope="module")
def nn2(source_train: PrimitiveDataset) -> PrimitiveCostModel:
    return PrimitiveCostModel("nn2", **SMALL_NN).fit(source_train)


# ------------------------------------------------------------------------------------------------ subsample

def test_subsample_takes_the_rounded_fraction_of_configurations_and_activations(target_train: PrimitiveDataset) -> None:
    assert (len(target_train.conv), len(target_train.layout)) == (200, 30)
    for fraction, conv, layout in ((0.1, 20, 3), (0.25, 50, 8), (0.025, 5, 1), (1.0, 200, 30), (0.0, 0, 0)):
        part = subsample(target_train, fraction, seed=0)
        assert (len(part.conv), len(part.layout)) == (conv, layout)  # round(200 * f), round(30 * f)
    every = {repr(s.config) for s in target_train.conv}
    part = subsample(target_train, 0.1, seed=0)
    assert {repr(s.config) for s in part.conv} <= every
    assert len({repr(s.config) for s in part.conv}) == 20  # drawn without replacement


def test_subsample_keeps_one_of_each_where_the_fraction_is_above_zero(target_train: PrimitiveDataset) -> None:
    part = subsample(target_train, 0.001, seed=5)  # the paper's 0.1 %: 0.2 configurations, 0.03 activations
    assert (len(part.conv), len(part.layout)) == (1, 1)
    assert set(part.transforms) == set(TRANSFORMS)
    assert set(part.primitives) == set(part.conv[0].times_s)  # only the columns that keep a time


def test_subsample_is_repeatable_for_a_seed_and_differs_across_seeds(target_train: PrimitiveDataset) -> None:
    first, again, other = (subsample(target_train, 0.1, seed=s) for s in (7, 7, 8))
    assert first == again
    assert [s.config for s in first.conv] != [s.config for s in other.conv]
    order = {repr(s.config): i for i, s in enumerate(target_train.conv)}
    assert [order[repr(s.config)] for s in first.conv] == sorted(order[repr(s.config)] for s in first.conv)


def test_subsample_refuses_a_fraction_outside_zero_to_one(target_train: PrimitiveDataset) -> None:
    for fraction in (-0.1, 1.5):
        with pytest.raises(NnperfError, match="between 0 and 1"):
            subsample(target_train, fraction)


def test_family_subset_keeps_one_family_and_no_transformations(target_train: PrimitiveDataset) -> None:
    part = family_subset(target_train, "winograd")
    assert part.primitives == ("winograd-2x3",) and part.layout == ()
    assert len(part.conv) == target_train.counts()["winograd-2x3"] > 0
    assert all(set(s.times_s) == {"winograd-2x3"} for s in part.conv)


# ------------------------------------------------------------------------------------------ factor correction

def test_factor_correction_recovers_the_per_primitive_factors_exactly(
        lin: PrimitiveCostModel, source_train: PrimitiveDataset) -> None:
    factors = {"direct": 3.0, "im2col-fhw": 0.5, "conv1x1-fhw": 4.0, "winograd-2x3": 1.5, "chw->hwc": 2.0,
               "hwc->chw": 0.25}  # fft is not in the target sample: its factor stays 1
    target = scaled(platform(60, seed=2, shapes=TEST_SHAPES), factors)
    sample = subsample(scaled(source_train, factors), 0.25, seed=0)
    sample = PrimitiveDataset(sample.system_key, sample.primitives, sample.transforms,
                              tuple(ConvSample(s.config, {n: t for n, t in s.times_s.items() if n != "fft"})
                                    for s in sample.conv), sample.layout)
    for statistic in ("median", "geometric-mean"):
        found = correction_factors(lin, sample, statistic)
        assert found.keys() == {*SOURCE, *TRANSFORMS}
        assert found["fft"] == 1.0
        for name, factor in factors.items():
            assert found[name] == pytest.approx(factor, rel=1e-9)
    corrected = factor_corrected(lin, sample)
    errors = mdrae(corrected, target)
    assert errors.keys() == {*SOURCE, *TRANSFORMS}
    assert max(errors.values()) < 1e-6  # Lin is exact on a power law; the factors make it exact on the target
    test_configs = [s.config for s in target.conv]
    np.testing.assert_array_equal(corrected.predict(test_configs, "fft", only_applicable=False),
                                  lin.predict(test_configs, "fft", only_applicable=False))


def test_factor_correction_does_not_change_the_source(
        nn2: PrimitiveCostModel, target_train: PrimitiveDataset, target_test: PrimitiveDataset) -> None:
    before, state = predictions(nn2, target_test), json.dumps(nn2.to_dict())
    corrected = factor_corrected(nn2, subsample(target_train, 0.01, seed=0))
    assert corrected is not nn2 and corrected.get_params() == nn2.get_params()
    for old, new in zip(before, predictions(nn2, target_test)):
        np.testing.assert_array_equal(old, new)
    assert json.dumps(nn2.to_dict()) == state
    # the 1 % sample (2 configurations, 1 activation) cuts the median MdRAE on the target from 0.66 to 0.10
    direct, fixed = mdrae(nn2, target_test), mdrae(corrected, target_test)
    assert np.median(list(fixed.values())) < 0.25 * np.median(list(direct.values()))


# ------------------------------------------------------------------------------------------------ fine-tuning

@pytest.fixture(scope="module")
def tuned(nn2: PrimitiveCostModel, target_train: PrimitiveDataset, target_test: PrimitiveDataset
          ) -> tuple[PrimitiveCostModel, tuple[np.ndarray, np.ndarray], str]:
    """NN2 fine-tuned on 10 % of the target, with the source's predictions and document from before."""
    before, state = predictions(nn2, target_test), json.dumps(nn2.to_dict())
    model = fine_tuned(nn2, subsample(target_train, 0.1, seed=0), seed=0, max_iterations=1000, patience=200)
    return model, before, state


def test_fine_tuning_nn2_on_ten_percent_beats_the_source_model_on_the_target(
        nn2: PrimitiveCostModel, tuned: tuple, target_test: PrimitiveDataset) -> None:
    model = tuned[0]
    direct, after = mdrae(nn2, target_test), mdrae(model, target_test)
    assert after.keys() == direct.keys() == {*SOURCE, *TRANSFORMS}
    # measured (median MdRAE over the columns): the source model 0.66, fine-tuned 0.10 (0.16 and 0.20 on the
    # subsets of seeds 1 and 2); per column the fine-tuned error is 0.14-0.36 of the source model's
    assert np.median(list(after.values())) < 0.25 * np.median(list(direct.values()))
    assert all(after[name] < 0.5 * direct[name] for name in direct)
    assert model.learning_rate == pytest.approx(0.001 * 0.1)  # Table 3's NN2 rate, lowered 10x
    assert model.conv_model_.targets == nn2.conv_model_.targets  # the source's standardisation is kept
    assert model.conv_model_.log is not None and model.conv_model_.log.best_iteration[0] > 0


def test_fine_tuning_leaves_the_source_model_unchanged(nn2: PrimitiveCostModel, tuned: tuple,
                                                       target_test: PrimitiveDataset) -> None:
    _, before, state = tuned
    for old, new in zip(before, predictions(nn2, target_test)):
        np.testing.assert_array_equal(old, new)
    assert json.dumps(nn2.to_dict()) == state


def test_fine_tuning_is_repeatable_for_a_seed(lin: PrimitiveCostModel, source_train: PrimitiveDataset,
                                              target_train: PrimitiveDataset) -> None:
    nn1 = PrimitiveCostModel("nn1", hidden=(8, 8), max_iterations=100, patience=20).fit(source_train)
    sample = subsample(target_train, 0.05, seed=3)
    first, again = (fine_tuned(nn1, sample, seed=4, max_iterations=200) for _ in range(2))
    assert first == again
    assert fine_tuned(nn1, sample, seed=5, max_iterations=200) != first


def test_fine_tuning_nn1_on_one_family_keeps_the_other_networks(
        source_train: PrimitiveDataset, target_train: PrimitiveDataset) -> None:
    nn1 = PrimitiveCostModel("nn1", hidden=(8, 8), max_iterations=100, patience=20).fit(source_train)
    model = fine_tuned(nn1, family_subset(subsample(target_train, 0.25, seed=0), "winograd"), max_iterations=200)
    assert model.conv_model_.columns == nn1.conv_model_.columns
    j = nn1.conv_model_.columns.index("winograd-2x3")
    for new, old in zip(model.conv_model_.mlp.weights, nn1.conv_model_.mlp.weights):
        others = [i for i in range(len(nn1.conv_model_.columns)) if i != j]
        np.testing.assert_array_equal(new[others], old[others])
        assert not np.array_equal(new[j], old[j])
    assert model.transform_model_.to_dict() == nn1.transform_model_.to_dict()  # no layout times: kept


def test_fine_tuning_lin_refits_the_columns_with_target_times(
        lin: PrimitiveCostModel, target_train: PrimitiveDataset, target_test: PrimitiveDataset) -> None:
    model = fine_tuned(lin, subsample(target_train, 0.25, seed=0))
    errors = mdrae(model, target_test)
    # the target is an exact power law and 50 configurations (8 activations) determine every column's fit
    assert errors.keys() == {*SOURCE, *TRANSFORMS} and max(errors.values()) < 1e-6
    assert mdrae(lin, target_test)["direct"] == pytest.approx(1 - 1 / 3, rel=1e-6)  # the source is 3x too fast


# -------------------------------------------------------------------------------------------------- storage

def test_transferred_models_round_trip_through_json(
        nn2: PrimitiveCostModel, tuned: tuple, target_train: PrimitiveDataset, target_test: PrimitiveDataset) -> None:
    corrected = factor_corrected(nn2, subsample(target_train, 0.01, seed=1))
    for model in (corrected, tuned[0]):
        back = PrimitiveCostModel.from_dict(json.loads(json.dumps(model.to_dict())))
        assert back == model
        for a, b in zip(predictions(model, target_test), predictions(back, target_test)):
            np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------------------- from scratch

def test_from_scratch_fits_a_sample_smaller_than_min_configs(target_train: PrimitiveDataset,
                                                             target_test: PrimitiveDataset) -> None:
    sample = subsample(target_train, 0.01, seed=0)  # 2 configurations, fit refuses fewer than 20
    with pytest.raises(DatasetTooSmallError):
        PrimitiveCostModel("lin").fit(sample)
    model = from_scratch("lin", sample)
    assert (model.min_configs, model.min_samples) == (2, 1)
    assert set(model.primitives_) == set(sample.primitives) and set(model.transforms_) == set(TRANSFORMS)
    assert set(mdrae(model, target_test)) == {*sample.primitives, *TRANSFORMS}
    big = from_scratch("lin", subsample(target_train, 0.25, seed=0))
    assert (big.min_configs, big.min_samples) == (20, 8)  # left alone where the sample is big enough


# ----------------------------------------------------------------------------------------------- errors

def test_an_empty_target_sample_is_refused(lin: PrimitiveCostModel, target_train: PrimitiveDataset) -> None:
    empty = subsample(target_train, 0.0)
    for transfer in (lambda: factor_corrected(lin, empty), lambda: fine_tuned(lin, empty),
                     lambda: from_scratch("lin", empty)):
        with pytest.raises(DatasetTooSmallError, match="holds no times"):
            transfer()


def test_a_target_sharing_no_column_with_the_source_is_refused(lin: PrimitiveCostModel,
                                                               target_train: PrimitiveDataset) -> None:
    renamed = PrimitiveDataset("other", ("kn2row",), (),
                               tuple(ConvSample(s.config, {"kn2row": 1e-3}) for s in target_train.conv[:5]), ())
    for transfer in (factor_corrected, fine_tuned):
        with pytest.raises(NoSharedColumnsError, match="it times: kn2row; the model predicts: direct"):
            transfer(lin, renamed)


def test_bad_settings_are_refused(lin: PrimitiveCostModel, target_train: PrimitiveDataset) -> None:
    sample = subsample(target_train, 0.1)
    with pytest.raises(NnperfError, match="learning_rate_factor must be a positive number"):
        fine_tuned(lin, sample, learning_rate_factor=0)
    with pytest.raises(NnperfError, match="unknown correction statistic 'mean'"):
        factor_corrected(lin, sample, statistic="mean")
