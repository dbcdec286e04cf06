"""Targets relative to a reference primitive, boosted trees, the ensemble, ``auto`` and the two-sided evaluation,
on synthetic times whose ratios are planted and whose rows drift together (as a shared machine's speed does)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cost_data import LAW, SEEDS, TEST_SHAPES, power_law_dataset

from nnperf.errors import NnperfError
from nnperf.prediction import Predictor
from nnperf.prediction.primitives import (
    EXTENDED_CONV_FEATURES,
    EXTENDED_TRANSFORM_FEATURES,
    BoostedTrees,
    BoostingSettings,
    PrimitiveCostModel,
    conv_features,
    evaluate,
    factor_corrected,
    mdrae,
    transform_features,
)
from nnperf.primitives import ConvConfig, ConvSample, PrimitiveDataset, TransformSample, sample_configs

TREES = {"n_trees": 60, "tree_depth": 3, "tree_learning_rate": 0.2}
"""Few, fast trees: about 0.1 s per column on 200 configurations."""

SMALL_NN = {"hidden": (32, 32), "max_iterations": 200, "patience": 50, "threads": 1}


def drifted(dataset: PrimitiveDataset, drift: float, ratio_noise: float, seed: int) -> PrimitiveDataset:
    """``dataset`` with every row's times multiplied by one factor exp(N(0, drift)) (the machine's speed while the
    row was timed) and each time by its own exp(N(0, ratio_noise)) (what pairing leaves)."""
    rng = np.random.default_rng(seed)

    def row(times: dict[str, float]) -> dict[str, float]:
        common = math.exp(rng.normal(0, drift))
        return {n: t * common * math.exp(rng.normal(0, ratio_noise)) for n, t in times.items()}

    return PrimitiveDataset(dataset.system_key, dataset.primitives, dataset.transforms,
                            tuple(ConvSample(s.config, row(dict(s.times_s))) for s in dataset.conv),
                            tuple(TransformSample(s.batch, s.c, s.im, row(dict(s.times_s))) for s in dataset.layout))


def stepped(n: int, seed: int) -> PrimitiveDataset:
    """Times that jump 4x where the input has more than 100 channels (a cache that stops fitting): no power law
    fits them, a tree does."""
    conv = []
    for c in sample_configs(SEEDS, n, seed=seed):
        jump = 4.0 if c.c > 100 else 1.0
        conv.append(ConvSample(c, {"direct": 2e-10 * c.macs * jump, "fft": 1e-8 * c.macs ** 0.75 * jump ** 0.5}))
    return PrimitiveDataset("stepped", ("direct", "fft"), (), tuple(conv), ())


@pytest.fixture(scope="module")
def noisy_train() -> PrimitiveDataset:
    return drifted(power_law_dataset(200, seed=1), drift=0.1, ratio_noise=0.005, seed=1)


@pytest.fixture(scope="module")
def clean_test() -> PrimitiveDataset:
    return power_law_dataset(60, seed=2, shapes=TEST_SHAPES)


# ---------------------------------------------------------------------------------------------- features

def test_feature_set_two_adds_bytes_gemm_sizes_depthwise_and_padding() -> None:
    # 32 -> 64 channels in 4 groups, 20x10 input, 3x1 kernel: out 11x10 (as in test_cost_features)
    config = ConvConfig(2, 32, 64, (20, 10), (3, 1), (2, 1), (1, 0, 2, 0), 4, (1, 2))
    row = conv_features([config], feature_set=2)[0]
    assert row.shape == (len(EXTENDED_CONV_FEATURES),) == (27,)
    np.testing.assert_array_equal(row[:16], conv_features([config])[0])
    extra = dict(zip(EXTENDED_CONV_FEATURES[16:], row[16:], strict=True))
    assert extra["depthwise"] == 0.0
    for name, value in (("log2_f_per_group", 64 // 4), ("log2_out_h", 11), ("log2_out_w", 10),
                        ("log2_kernel_area", 3 * 1), ("log2_gemm_k", 32 // 4 * 3),
                        ("log2_in_bytes", 4 * 2 * 32 * 20 * 10), ("log2_out_bytes", 4 * 2 * 64 * 11 * 10),
                        ("log2_weight_bytes", 4 * 64 * 8 * 3)):
        assert extra[name] == pytest.approx(math.log2(value), abs=1e-12), name
    assert extra["log2_c_pad16"] == pytest.approx(math.log2(32 / 32)) == 0.0
    depthwise = conv_features([ConvConfig.make(1, 24, 24, 14, 3, padding=1, groups=24)], feature_set=2)[0]
    named = dict(zip(EXTENDED_CONV_FEATURES, depthwise, strict=True))
    assert named["depthwise"] == 1.0 and named["log2_c_pad16"] == pytest.approx(math.log2(32 / 24))
    activation = transform_features([(1, 20, (7, 9))], feature_set=2)[0]
    assert activation.shape == (len(EXTENDED_TRANSFORM_FEATURES),) == (8,)
    np.testing.assert_allclose(activation[5:], [math.log2(63), math.log2(24 / 20), math.log2(32 / 20)], atol=1e-12)
    with pytest.raises(NnperfError, match="unknown feature set 3"):
        conv_features([config], feature_set=3)


# ------------------------------------------------------------------------------------------------- trees

def test_packed_trees_predict_what_scikit_learn_predicts() -> None:
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    x = rng.normal(size=(150, 4))
    z = np.column_stack([np.sin(x[:, 0]) + x[:, 1] ** 2, np.where(x[:, 2] > 0, 2.0, -1.0) + 0.1 * x[:, 3]])
    z[::5, 1] = np.nan  # column 1 is absent on every fifth row
    settings = BoostingSettings(n_trees=40, depth=3, learning_rate=0.1, min_leaf=3)
    trees = BoostedTrees.fit(x, z, settings)
    probe = rng.normal(size=(300, 4))
    for j in range(2):
        rows = ~np.isnan(z[:, j])
        reference = HistGradientBoostingRegressor(max_iter=40, max_depth=3, max_leaf_nodes=None, learning_rate=0.1,
                                                  min_samples_leaf=3, early_stopping=False).fit(x[rows], z[rows, j])
        np.testing.assert_allclose(trees.predict(probe)[:, j], reference.predict(probe), rtol=0, atol=1e-9)
    back = BoostedTrees.from_dict(json.loads(json.dumps(trees.to_dict())))
    np.testing.assert_array_equal(back.predict(probe), trees.predict(probe))


# ------------------------------------------------------------------------------------------ relative targets

def test_relative_targets_recover_the_planted_ratios_despite_row_drift(noisy_train: PrimitiveDataset,
                                                                       clean_test: PrimitiveDataset) -> None:
    # every row drifts by exp(N(0, 0.1)) together, each time by 0.5% alone: the ratios are known to ~0.7%.
    # Measured: GB on relative targets gets every primitive's ratio to direct within 0.4-0.9% (MdRAE), on
    # absolute targets within 1.9-11% (each column's trees fit the drift differently); the times themselves are
    # 5.0-6.4% and 4.4-14% off.
    relative = PrimitiveCostModel("gb", targets="relative", reference="direct", **TREES).fit(noisy_train)
    absolute = PrimitiveCostModel("gb", targets="absolute", **TREES).fit(noisy_train)
    assert relative.reference_ == "direct" and absolute.reference_ is None
    assert relative.conv_model_.reference == "direct" and relative.transform_model_.reference == "chw->hwc"
    rel, ab = evaluate(relative, clean_test, "direct"), evaluate(absolute, clean_test, "direct")
    assert rel.reference == ab.reference == "direct" and rel.columns["direct"].ratio is None
    others = [name for name in LAW if name != "direct"]
    assert max(rel.columns[n].ratio for n in others) < 0.025
    assert rel.median(others, ratio=True) < 0.5 * ab.median(others, ratio=True)
    # the absolute times carry the drift either way: both are a few percent off
    assert rel.median(rel.primitives) < 0.06 and ab.median(ab.primitives) < 0.08


def test_a_relative_model_predicts_reference_times_ratios(noisy_train: PrimitiveDataset) -> None:
    model = PrimitiveCostModel("lin", targets="relative", reference="fft").fit(noisy_train)
    configs = [s.config for s in noisy_train.conv[:20]]
    times = model.predict(configs, only_applicable=False)
    ref = model.conv_model_.columns.index("fft")
    encoded = model.conv_model_.encoded(model.conv_model_.features.transform(conv_features(configs, 2)))
    np.testing.assert_allclose(np.log(times[:, ref]), encoded[:, ref])
    for j in range(times.shape[1]):
        if j != ref:
            np.testing.assert_allclose(np.log(times[:, j] / times[:, ref]), encoded[:, j], atol=1e-9)


def test_rows_without_the_reference_are_left_out_of_the_ratios(noisy_train: PrimitiveDataset) -> None:
    # winograd-2x3 becomes the reference: a ratio exists only on the 3x3 stride-1 rows where it was timed
    model = PrimitiveCostModel("lin", targets="relative", reference="winograd-2x3").fit(noisy_train)
    counts = noisy_train.counts()
    paired = {name: sum(name in s.times_s and "winograd-2x3" in s.times_s for s in noisy_train.conv) for name in LAW}
    assert paired["winograd-2x3"] == counts["winograd-2x3"] < counts["direct"]
    assert paired["conv1x1-fhw"] == 0 and model.skipped_ == {"conv1x1-fhw": 0}  # never beside a 3x3 winograd
    assert dict(zip(model.conv_model_.columns, model.conv_model_.counts, strict=True)) == {
        name: paired[name] for name in LAW if name != "conv1x1-fhw"}
    with pytest.raises(NnperfError, match="reference primitive 'nope' is not among"):
        PrimitiveCostModel("lin", targets="relative", reference="nope").fit(noisy_train)


def test_without_a_named_reference_the_most_timed_primitive_is_it(noisy_train: PrimitiveDataset) -> None:
    model = PrimitiveCostModel("lin", targets="relative").fit(noisy_train)
    assert model.reference_ == "direct"  # timed on every row, and first of those in the dataset's order


def test_factor_correction_of_a_relative_model_scales_each_column(noisy_train: PrimitiveDataset,
                                                                   clean_test: PrimitiveDataset) -> None:
    exact = power_law_dataset(200, seed=1)
    model = PrimitiveCostModel("lin", targets="relative", reference="direct").fit(exact)
    factors = {"direct": 3.0, "im2col-fhw": 0.5, "fft": 2.0}
    target = PrimitiveDataset(exact.system_key, exact.primitives, exact.transforms,
                              tuple(ConvSample(s.config, {n: t * factors.get(n, 1.0) for n, t in s.times_s.items()})
                                    for s in exact.conv[:40]), exact.layout[:3])
    corrected = factor_corrected(model, target)
    configs = [s.config for s in clean_test.conv]
    before, after = (m.predict(configs, only_applicable=False) for m in (model, corrected))
    for j, name in enumerate(model.primitives_):
        np.testing.assert_allclose(after[:, j], before[:, j] * factors.get(name, 1.0), rtol=1e-9)


# ------------------------------------------------------------------------------------- ensemble and auto

def test_the_ensemble_is_the_mean_of_its_members_in_log_time(noisy_train: PrimitiveDataset) -> None:
    model = PrimitiveCostModel("ens", targets="relative", ensemble_networks=2, **SMALL_NN, **TREES).fit(noisy_train)
    members = model.conv_model_.members
    assert [m.kind.value for m in members] == ["nn2", "nn2", "gb"]
    xs = model.conv_model_.features.transform(conv_features([s.config for s in noisy_train.conv[:10]], 2))
    np.testing.assert_allclose(model.conv_model_.encoded(xs), np.mean([m.encoded(xs) for m in members], axis=0))
    back = Predictor.from_dict(json.loads(json.dumps(model.to_dict())))
    configs = [s.config for s in noisy_train.conv]
    np.testing.assert_array_equal(back.predict(configs, only_applicable=False),
                                  model.predict(configs, only_applicable=False))


def test_auto_keeps_the_power_law_where_the_data_is_one(clean_test: PrimitiveDataset) -> None:
    model = PrimitiveCostModel("auto", targets="auto", **SMALL_NN, **TREES).fit(power_law_dataset(150, seed=1))
    scores = model.selection_["primitives"]
    assert set(scores) == {f"{k}/{t}" for k in ("lin", "nn2", "gb", "ens") for t in ("absolute", "relative")}
    assert model.conv_model_.kind.value == "lin" and scores[min(scores, key=scores.get)] < 1e-9
    assert max(mdrae(model, clean_test).values()) < 1e-6
    assert set(model.selection_["transforms"]) == set(scores)


def test_auto_chooses_trees_where_the_times_jump() -> None:
    model = PrimitiveCostModel("auto", min_configs=10, **SMALL_NN, **TREES).fit(stepped(200, seed=1))
    scores = model.selection_["primitives"]
    best = min(scores, key=scores.get)
    assert best in ("gb/absolute", "ens/absolute") and model.conv_model_.kind.value == best.split("/")[0]
    assert scores["lin/absolute"] > 2 * scores[best]  # a power law cannot follow the 4x jump
    errors = mdrae(model, stepped(60, seed=2))
    assert max(errors.values()) < 0.1


def test_auto_is_stored_and_read_back_with_its_choice(noisy_train: PrimitiveDataset) -> None:
    model = PrimitiveCostModel("auto", targets="relative", **SMALL_NN, **TREES).fit(noisy_train)
    back = Predictor.from_dict(json.loads(json.dumps(model.to_dict())))
    assert back.selection_ == model.selection_ and back.conv_model_.kind == model.conv_model_.kind
    assert "relative to direct" in back.summary()


# ---------------------------------------------------------------------------------------------- evaluation

def test_evaluation_gives_the_time_and_the_ratio_error_of_each_column(clean_test: PrimitiveDataset) -> None:
    model = PrimitiveCostModel("lin").fit(power_law_dataset(150, seed=1))  # exact on the power law
    doubled = PrimitiveDataset(clean_test.system_key, clean_test.primitives, clean_test.transforms,
                               tuple(ConvSample(s.config, {n: 2 * t if n == "im2col-fhw" else t
                                                           for n, t in s.times_s.items()}) for s in clean_test.conv),
                               clean_test.layout)
    result = evaluate(model, doubled, reference="direct")
    assert result.reference == "direct" and result.transform_reference == "chw->hwc"
    im2col = result.columns["im2col-fhw"]
    assert im2col.count == im2col.ratio_count == len(clean_test.conv)
    assert im2col.absolute == pytest.approx(0.5) and im2col.ratio == pytest.approx(0.5)  # predicted half of both
    assert result.columns["fft"].absolute < 1e-9 and result.columns["fft"].ratio < 1e-9
    assert result.columns["direct"].ratio is None and result.columns["direct"].ratio_count == 0
    assert result.columns["hwc->chw"].ratio < 1e-9 and result.columns["chw->hwc"].ratio is None
    assert result.primitives == list(LAW) and result.transforms == ["chw->hwc", "hwc->chw"]
    assert result.median(ratio=True) == pytest.approx(0.0, abs=1e-9)  # 4 of the 5 ratios are exact
    assert result.median(["im2col-fhw"]) == pytest.approx(0.5)


# ------------------------------------------------------------------------------------------------ storage

def test_a_first_version_document_is_read_as_absolute_targets_on_feature_set_one(clean_test: PrimitiveDataset) -> None:
    model = PrimitiveCostModel("nn2", feature_set=1, **SMALL_NN).fit(power_law_dataset(100, seed=1))
    document = json.loads(json.dumps(model.to_dict()))
    document["state_version"] = 1
    del document["fitted"]["selection"]
    for part in ("primitives", "transforms"):
        for key in ("reference", "feature_set", "correction"):
            del document["fitted"][part][key]
    old = Predictor.from_dict(document)
    assert old.conv_model_.feature_set == 1 and old.reference_ is None and old.selection_ == {}
    configs = [s.config for s in clean_test.conv]
    np.testing.assert_array_equal(old.predict(configs, only_applicable=False),
                                  model.predict(configs, only_applicable=False))
