"""The sampling prior drawn from real networks: which layers are configurations, and held-out networks that sampling
never measures a configuration of, from a file through the API to the stored samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from harness_presets import SHORT_HARNESS
from nnperf.api import load_model
from nnperf.campaign import sample_layers
from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, OpType, PoolAttrs
from nnperf.ir.export import export_onnx
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction.kernel import (
    SAMPLED_KINDS,
    ConvSample,
    GridPrior,
    LayerPrior,
    LinearSample,
    PoolSample,
    layer_sample,
    next_round,
    sample_from_name,
    zoo_prior,
)
from nnperf.store import Store
from nnperf.zoo import zoo_network


def _conv(c_in: int, c_out: int, side: int, kernel: tuple[int, int], stride: int = 1, groups: int = 1,
          dilation: int = 1) -> Layer:
    pad_h, pad_w = kernel[0] // 2 * dilation, kernel[1] // 2 * dilation  # 'same' at stride 1
    out_h = (side + 2 * pad_h - dilation * (kernel[0] - 1) - 1) // stride + 1
    out_w = (side + 2 * pad_w - dilation * (kernel[1] - 1) - 1) // stride + 1
    return Layer("c", OpType.CONV, ("x",), ((1, c_in, side, side),), (1, c_out, out_h, out_w),
                 ConvAttrs(kernel, (stride, stride), (pad_h, pad_w, pad_h, pad_w), (dilation, dilation), groups))


def test_a_square_convolution_or_pool_is_a_configuration_and_other_layers_are_not() -> None:
    assert layer_sample(_conv(64, 128, 56, (3, 3), 2)) == ConvSample(64, 128, 56, 3, 2, 1)
    assert layer_sample(_conv(96, 96, 14, (5, 5), 1, groups=96)) == ConvSample(96, 96, 14, 5, 1, 96)
    assert layer_sample(_conv(64, 64, 28, (1, 7))) is None  # Inception's 1x7 window is not square
    assert layer_sample(_conv(64, 64, 28, (3, 3), dilation=2)) is None
    pool = Layer("p", OpType.MAX_POOL, ("x",), ((1, 64, 112, 112),), (1, 64, 56, 56),
                 PoolAttrs((3, 3), (2, 2), (1, 1, 1, 1)))
    assert layer_sample(pool) == PoolSample("max", 64, 112, 3, 2, 1, False)
    relu = Layer("r", OpType.RELU, ("x",), ((1, 64, 56, 56),), (1, 64, 56, 56))
    assert layer_sample(relu) is None


def test_resnet18_gives_its_distinct_configurations_once_each() -> None:
    prior = LayerPrior.from_networks([zoo_network("resnet18")])
    # stem 7x7/2, 3x3 at 64/128/256/512 (with the stride-2 first of each stage), the 1x1/2 shortcuts, the stem pool
    assert ConvSample(3, 64, 224, 7, 2, 1) in prior.samples
    assert ConvSample(64, 64, 56, 3, 1, 1) in prior.samples and ConvSample(64, 128, 56, 1, 2, 1) in prior.samples
    assert PoolSample("max", 64, 112, 3, 2, 1, False) in prior.samples
    assert LinearSample(1, 512, 1000) in prior.samples  # the classifier; the 1x1 shortcuts have stride 2
    assert prior.counts() == {"conv:standard": 8, "conv:pointwise": 3, "conv:depthwise": 0, "conv:grouped": 0,
                              "max_pool": 1, "avg_pool": 0, "linear": 1}
    assert len(prior.samples) == len(set(prior.samples)) == 13


def test_a_transformers_1x1_convolutions_are_also_fully_connected_layers_of_many_rows() -> None:
    prior = LayerPrior.from_networks([zoo_network("vit_tiny")])
    rows = {s.rows for s in prior.of_kind("linear")}
    assert 197 in rows and 1 in rows  # the MLPs over 197 tokens (written as 1x1 convolutions) and the classifier
    linear = Layer("fc", OpType.LINEAR, ("x",), ((1, 56, 56, 96),), (1, 56, 56, 384))
    assert layer_sample(linear) == LinearSample(3136, 96, 384)  # ConvNeXt's MLP as an ONNX export has it


class _HeldOut(nn.Module):
    """A network sharing configurations with the zoo: ResNet's 3x3 at 64 channels on 56x56 and MobileNet v2's
    3x3 depthwise at 144 channels on 56x56, and a max pool as ResNet's stem has it."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.conv = nn.Conv2d(64, 64, 3, padding=1)
        self.expand = nn.Conv2d(64, 144, 1)
        self.depthwise = nn.Conv2d(144, 144, 3, padding=1, groups=144)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.depthwise(self.expand(self.conv(self.pool(x))))


@pytest.fixture(scope="module")
def held_out_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_onnx(_HeldOut(), torch.zeros(1, 64, 112, 112), tmp_path_factory.mktemp("held") / "held.onnx")


def test_the_sampler_never_draws_a_configuration_of_a_held_out_file(held_out_file: Path) -> None:
    held = load_model(held_out_file)
    excluded = {ConvSample(64, 64, 56, 3, 1, 1), ConvSample(144, 144, 56, 3, 1, 144),
                PoolSample("max", 64, 112, 3, 2, 1, False), ConvSample(64, 144, 56, 1, 1, 1),
                LinearSample(56 * 56, 64, 144)}
    full, prior = zoo_prior(), zoo_prior([held])
    assert prior.excluded == excluded and prior.held_out == (held.name,)
    assert excluded & set(full.samples)  # the zoo holds some of them: excluding removes something
    assert not excluded & set(prior.samples) and prior.fingerprint != full.fingerprint
    rng = np.random.default_rng(0)
    drawn = {prior.draw(kind, rng) for kind in SAMPLED_KINDS for _ in range(300)}
    assert not drawn & excluded
    assert {s.kind for s in drawn} == set(SAMPLED_KINDS)  # grouped, which the zoo lacks, comes from the grid
    # the later rounds: neighbours of measured samples that would land on a held-out configuration are refused
    cost = CostModel()
    measured = {s: cost.layer_cost_s(s.layer()) for s in (ConvSample(64, 64, 28, 3, 1, 1), ConvSample(
        48, 64, 56, 3, 1, 1), ConvSample(64, 64, 56, 5, 1, 1), ConvSample(96, 96, 56, 3, 1, 1))}
    for seed in range(20):
        grid = next_round(measured, np.random.default_rng(seed), GridPrior())
        held_back = next_round(measured, np.random.default_rng(seed), prior)
        assert not set(held_back) & excluded
        if set(grid) & excluded:
            break
    else:
        pytest.fail("the grid never placed a held-out configuration: the test would not see a leak")


def test_samples_stored_by_a_calibration_with_held_out_networks_hold_none_of_theirs(
        tmp_path: Path, held_out_file: Path) -> None:
    prior = zoo_prior([load_model(held_out_file)])
    with Store(tmp_path / "m.db") as store:
        samples = sample_layers(FakeBackend(model=CostModel(noise_sigma=0.0)), store, 1.5, SHORT_HARNESS,
                                prior=prior)
    assert samples and not {sample_from_name(layer.name) for layer, _ in samples} & prior.excluded


def test_the_api_records_the_held_out_networks_and_refuses_a_missing_one(tmp_path: Path, held_out_file: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from networks import residual_conv_net
    from nnperf import api

    monkeypatch.setattr("nnperf.campaign._calibration.calibration_networks",
                        lambda: [residual_conv_net("cal", 8, 8)])
    model = api.calibrate("fake", tmp_path / "m.db", budget_s=0.01, target_ci=0.5, sample_budget_s=1.0,
                          held_out=[held_out_file], check=False)
    assert model.calibration["prior"]["held_out"] == [load_model(held_out_file).name]
    assert model.calibration["prior"]["configurations"]["conv:standard"] > 0
    same = api.calibrate("fake", tmp_path / "m.db", if_needed=True, held_out=[held_out_file], check=False)
    assert same.calibration == model.calibration  # held out alike: the stored calibration is the one
    none_held = api.calibrate("fake", tmp_path / "m.db", budget_s=0.01, target_ci=0.5, sample_budget_s=1.0,
                              if_needed=True, held_out=["resnet18"], check=False)
    assert none_held.calibration["prior"]["held_out"] == ["resnet18"]  # others held out: calibrated again
    with pytest.raises(NnperfError, match="no such file"):
        api.calibrate("fake", tmp_path / "m.db", sample_budget_s=1.0, held_out=[tmp_path / "gone.onnx"],
                      check=False)


def test_a_prior_that_excludes_every_grid_draw_of_a_kind_says_so() -> None:
    everything = frozenset(ConvSample(c, c, m, 3, s, c // g) for c in (16, 24, 32, 48, 64, 96, 128, 160, 192, 256,
                                                                       320, 384, 512)
                           for m in (7, 14, 28, 56, 112) for s in (1, 2) for g in (4, 8, 16, 32, 64) if c % g == 0
                           and c // g > 1)
    prior = LayerPrior((), ("none",), ("all",), everything)
    with pytest.raises(NnperfError, match="exclude every conv:grouped"):
        prior.draw("conv:grouped", np.random.default_rng(0))


def test_sampled_fully_connected_layers_of_many_rows_let_the_ridge_tell_operations_from_weights() -> None:
    """A layer that costs 1 ns per weight read and 0.01 ns per multiply-accumulate: the calibration's one-row
    layers alone make operations and weights collinear, and a token-batched layer comes out far off; with
    sampled layers of many rows in the linear Ridge it comes out right."""
    from nnperf.ir.metrics import layer_metrics
    from nnperf.prediction._calibrate import RIDGE_SAMPLED_TYPES, _LayerRows
    from nnperf.prediction._features import features

    def seconds(sample: LinearSample) -> float:
        m = layer_metrics(sample.layer())
        return 1e-9 * m.params + 1e-11 * m.macs

    one_row = [LinearSample(1, i, o) for i in (256, 512, 1024, 2048, 4096) for o in (10, 256, 1000, 2048)]
    many_rows = [LinearSample(r, i, o) for r, i, o in ((49, 768, 3072), (196, 384, 1536), (784, 192, 768),
                                                        (3136, 96, 384), (197, 192, 768))]
    judged = LinearSample(3136, 384, 96)
    assert "linear" in RIDGE_SAMPLED_TYPES
    errors = []
    for samples in ([], many_rows):
        rows = _LayerRows()
        for s in one_row:
            rows.add("linear", features(s.layer()), seconds(s))
        rows.add_samples([(s.layer(), seconds(s)) for s in samples], RIDGE_SAMPLED_TYPES)
        model = rows.fit_latency(alpha=1e-6)["linear"]
        errors.append(float(model.predict(features(judged.layer()))[0]) / seconds(judged) - 1)
    without, with_samples = errors
    assert abs(without) > 1.0 and abs(with_samples) < 0.05, errors
