"""Calibration adapted to a search space: the prior near example networks, judged files never sampled, a planted
per-kind bias found and corrected by the refit, and clear refusals (the fake backend is a harness, not a figure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from harness_presets import SHORT_HARNESS
from nnperf.campaign import ProfileConfig, calibrate, sample_layers
from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, ConvKind, Layer, Network, OpType, TensorSpec
from nnperf.ir.metrics import layer_metrics
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction import SystemModel, load_system_model
from nnperf.prediction.kernel import AdaptedModel, AdaptedPrior, ConvSample, adapt_prior, next_round, sample_from_name
from nnperf.store import Store

Stage = tuple[int, int, int, int]
"""A block: (expanded channels, depthwise kernel, output channels, depthwise stride)."""


def mobile_net(name: str, side: int, stages: Sequence[Stage], c_in: int = 16) -> Network:
    """Inverted residual blocks without their skips: a 1x1 expansion, a k x k depthwise convolution, a ReLU and a
    1x1 projection each, on a ``c_in`` x ``side`` x ``side`` input."""
    layers, last, shape = [], "x", (1, c_in, side, side)
    for i, (expanded, kernel, c_out, stride) in enumerate(stages):
        wide = (1, expanded, shape[2], shape[3])
        out = (shape[2] + 2 * (kernel // 2) - kernel) // stride + 1
        narrow = (1, expanded, out, out)
        layers += [
            Layer(f"expand{i}", OpType.CONV, (last,), (shape,), wide, ConvAttrs((1, 1))),
            Layer(f"dw{i}", OpType.CONV, (f"expand{i}",), (wide,), narrow,
                  ConvAttrs((kernel, kernel), (stride, stride), (kernel // 2,) * 4, groups=expanded)),
            Layer(f"relu{i}", OpType.RELU, (f"dw{i}",), (narrow,), narrow),
            Layer(f"project{i}", OpType.CONV, (f"relu{i}",), (narrow,), (1, c_out, out, out), ConvAttrs((1, 1))),
        ]
        last, shape = f"project{i}", (1, c_out, out, out)
    return Network(name, (TensorSpec("x", (1, c_in, side, side)),), tuple(layers), (last,))


EXAMPLES = (
    mobile_net("space-a", 56, [(64, 5, 24, 1), (96, 5, 32, 2), (128, 3, 32, 1)]),
    mobile_net("space-b", 48, [(96, 3, 24, 1), (64, 5, 40, 1), (160, 5, 40, 2)]),
    mobile_net("space-c", 40, [(128, 5, 32, 2), (96, 5, 48, 1), (192, 3, 48, 1)]),
)
"""Examples of a space of 3x3 and 5x5 depthwise blocks, 64 to 192 channels wide, on 40 to 56 px maps."""

JUDGED = mobile_net("judged", 48, [(96, 3, 24, 1), (128, 5, 40, 1), (112, 5, 40, 2), (80, 5, 40, 1)])
"""A network of the space the tests judge: its first block is space-b's, then 5x5 depthwise convolutions at widths
no example has."""


def _is_depthwise_5x5(layer: Layer) -> bool:
    return layer.conv_kind is ConvKind.DEPTHWISE and isinstance(layer.attrs, ConvAttrs) and layer.attrs.kernel == (5, 5)


@dataclass(frozen=True)
class PlantedBias(CostModel):
    """The fake machine's cost model, but every 5x5 depthwise convolution takes twice its MACs' time, and every
    depthwise and pointwise one ``slower`` times (a machine slower for them, not for the drift sentinel's dense
    3x3 convolution, than when it was calibrated)."""

    slower: float = 1.0

    def layer_cost_s(self, layer: Layer) -> float:
        slower = self.slower if layer.conv_kind in (ConvKind.DEPTHWISE, ConvKind.POINTWISE) else 1.0
        return (2.0 if _is_depthwise_5x5(layer) else 1.0) * slower * super().layer_cost_s(layer)


class SpaceMachine(FakeBackend):
    """The fake machine on which a network with 5x5 depthwise convolutions runs a fifth slower whole than its
    layers alone (the calibration networks and the machine-speed reference have none)."""

    def network_cost_s(self, network: Network) -> float:
        slower = 1.2 if any(_is_depthwise_5x5(layer) for layer in network.layers) else 1.0
        return slower * super().network_cost_s(network)


CALIBRATION = [mobile_net(f"cal{c}", side, [(2 * c, 3, c, 1), (4 * c, 3, c, 2)], c_in=c)
               for c in (8, 16, 32) for side in (16, 32)]
"""Calibration networks of 3x3 depthwise blocks only: nothing in them shows what a 5x5 one costs."""


def test_the_prior_draws_the_examples_kinds_within_their_span() -> None:
    prior = adapt_prior(EXAMPLES)
    assert prior.kinds == ("conv:pointwise", "conv:depthwise")
    assert prior.counts() == {"conv:pointwise": 18, "conv:depthwise": 9}  # 9 blocks, one expansion and projection
    assert set(prior.first_round(np.random.default_rng(0))) == set(prior.samples)  # every configuration once
    rng = np.random.default_rng(1)
    drawn = [prior.draw("conv:depthwise", rng) for _ in range(300)]
    assert {s.kernel for s in drawn} == {3, 5} and {s.stride for s in drawn} == {1, 2}
    assert all(s.groups == s.c_in == s.c_out and 64 <= s.c_in <= 192 and 20 <= s.map <= 56 for s in drawn)
    assert len(set(drawn) - set(prior.samples)) > 100  # most are perturbed, new configurations
    assert not prior.allows(ConvSample(64, 64, 28, 7, 1, 64))  # no example has a 7x7 window
    assert not prior.allows(ConvSample(256, 256, 28, 3, 1, 256))  # wider than any example
    with pytest.raises(NnperfError, match="hold no conv:standard layer to sample; they hold conv:pointwise"):
        prior.draw("conv:standard", rng)


def _judged_file(tmp_path: Path) -> Path:
    from nnperf.ir import save_network

    path = tmp_path / "judged.json"
    save_network(JUDGED, path)
    return path


def test_adaptation_never_samples_a_configuration_of_a_judged_file(tmp_path: Path) -> None:
    from nnperf.api import load_model

    judged = load_model(_judged_file(tmp_path))
    free, prior = adapt_prior(EXAMPLES), adapt_prior(EXAMPLES, [judged])
    excluded = prior.excluded
    assert ConvSample(128, 128, 48, 5, 1, 128) in excluded and prior.held_out == ("judged",)
    assert ConvSample(96, 96, 48, 3, 1, 96) in set(free.samples) & excluded  # space-b's block is the judged one's
    assert not excluded & set(prior.samples) and prior.fingerprint != free.fingerprint
    rng, free_rng = np.random.default_rng(0), np.random.default_rng(0)
    assert not {prior.draw(k, rng) for k in prior.kinds for _ in range(1000)} & excluded
    assert {free.draw(k, free_rng) for k in free.kinds for _ in range(1000)} & excluded  # else the test sees nothing
    cost = CostModel()
    measured = {s: cost.layer_cost_s(s.layer()) for s in prior.samples}
    for seed in range(10):
        assert not set(next_round(measured, np.random.default_rng(seed), prior, 64)) & excluded
    with Store(tmp_path / "m.db") as store:
        samples = sample_layers(FakeBackend(model=CostModel(noise_sigma=0.0)), store, 1.0, SHORT_HARNESS,
                                prior=prior)
    assert len(samples) >= len(prior.samples) and not {sample_from_name(l.name) for l, _ in samples} & excluded


@pytest.mark.slow
def test_the_api_adapts_a_calibration_without_sampling_a_judged_file(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from nnperf import api

    monkeypatch.setattr("nnperf.campaign._calibration.calibration_networks", lambda: CALIBRATION[:3])
    judged_file = _judged_file(tmp_path)

    def adapted(**options: object) -> SystemModel:
        return api.adapt(EXAMPLES[:1], "fake", tmp_path / "m.db", sampler=lambda rng: EXAMPLES[1 + int(rng.integers(
            2))], sampled=3, budget_s=2.0, held_out=[judged_file], check=False, sample_budget_s=0.0, **options)

    model = adapted()
    assert adapted(if_needed=True).calibration == model.calibration  # adapted alike: the stored one, not refitted
    record = model.calibration["adapted"]
    assert record["held_out"] == ["judged"] and record["sources"][0] == "space-a" and len(record["sources"]) == 4
    assert record["samples"] > 0 and record["budget_s"] == 2.0 and model.predict(JUDGED).method == "adapted"
    excluded = adapt_prior(EXAMPLES, [JUDGED]).excluded
    with Store(tmp_path / "m.db") as store:
        stored = {sample_from_name(m.layer) for run in store.runs() if run.campaign.startswith("kernel-samples")
                  for m in store.layer_measurements(run_id=run.id) if not m.layer.startswith("sentinel@")}
        assert record["anchors"] > 0 and record["samples"] <= len(stored) <= record["samples"] + record["anchors"]
        assert not stored & excluded
        again = load_system_model(store, model.system_key, model.system_label)
    assert again.predict(JUDGED).latency_s == pytest.approx(model.predict(JUDGED).latency_s)


@pytest.mark.slow
def test_a_planted_per_kind_bias_is_found_and_corrected_by_the_refit(tmp_path: Path) -> None:
    backend = SpaceMachine(model=PlantedBias(noise_sigma=0.0))
    config = ProfileConfig(harness=SHORT_HARNESS)
    with Store(tmp_path / "m.db") as store:
        before = calibrate(backend, store, CALIBRATION, config)
        # adapted later, on the machine grown half as slow again for depthwise and pointwise kernels
        later = SpaceMachine(model=PlantedBias(noise_sigma=0.0, slower=1.5))
        after = calibrate(later, store, CALIBRATION, config, adapt=adapt_prior(EXAMPLES, [JUDGED]),
                          adapt_budget_s=4.0)
    assert "adapted" not in before.predictors and after.predict(JUDGED).method == "adapted"
    speed = after.calibration["adapted"]["speed"]  # the anchors (calibration layers measured again) see it
    assert speed["conv:depthwise"] == pytest.approx(1.5, rel=0.02) and speed["conv:pointwise"] == pytest.approx(1.5,
                                                                                                           rel=0.02)
    adapted = after.predictors["adapted"]
    assert isinstance(adapted, AdaptedModel)
    errors = adapted.errors_["conv:depthwise"]  # found: the depthwise samples corrected, and well
    assert "conv:depthwise" in adapted.corrections_ and errors["corrected"] < min(0.05, errors["ridge"])
    truth = {layer.name: backend.model.layer_cost_s(layer) for layer in JUDGED.layers}
    base = {p.layer: p.latency_s for p in after.predict_layers(JUDGED)}
    corrected = adapted.layer_latency_s(JUDGED, base)
    planted = [layer.name for layer in JUDGED.layers if _is_depthwise_5x5(layer)]
    assert len(planted) == 3
    for name in planted:  # the 5x5 depthwise layers take twice what the calibration predicts, and no more after
        assert truth[name] / base[name] == pytest.approx(2.0, rel=0.15), name
        assert corrected[name] / truth[name] == pytest.approx(1.0, abs=0.1), name
    # whole, the network runs 1.2 x its layers, 28% of them in the 5x5 ones: predicted at 0.86 / 1.2 = 0.72
    whole_s = backend.network_cost_s(JUDGED)
    errors = [model.predict(JUDGED).latency_s / whole_s - 1 for model in (before, after)]
    assert errors[0] < -0.25 and abs(errors[1]) < 0.03, errors
    assert adapted.scale_ == pytest.approx(1.2, rel=0.03)  # from the examples timed whole
    outside = CALIBRATION[0]  # a network outside the space's boxes keeps the composition's prediction
    assert after.predict(outside).latency_s == pytest.approx(after.predict(outside).network_latency_s["composed"],
                                                             rel=0.03)
    assert after.predict_many([JUDGED])[0] == pytest.approx(after.predict(JUDGED).latency_s)


def test_bad_inputs_are_refused_with_one_line(tmp_path: Path) -> None:
    from networks import relu_network
    from nnperf import api

    with pytest.raises(NnperfError, match="needs at least one example network"):
        adapt_prior([])
    with pytest.raises(NnperfError, match="hold no layer nnperf samples"):
        adapt_prior([relu_network()])
    with pytest.raises(NnperfError, match="every layer configuration of the example networks is one of a held-out"):
        AdaptedPrior.from_networks([EXAMPLES[0]], [EXAMPLES[0]])
    for budget_s in (0.0, -5.0, float("nan")):
        with pytest.raises(NnperfError, match="adaptation budget must be a positive number of seconds"):
            api.adapt(EXAMPLES, "fake", tmp_path / "m.db", budget_s=budget_s)
    with pytest.raises(NnperfError, match="needs at least one example network"):
        api.adapt((), "fake", tmp_path / "m.db", budget_s=1.0)
    with pytest.raises(NnperfError, match="a sampler is a function"):
        api.adapt((), "fake", tmp_path / "m.db", sampler=3, budget_s=1.0)  # type: ignore[arg-type]
    assert not (tmp_path / "m.db").exists()  # refused before anything is measured


def test_the_command_line_refuses_a_budget_that_is_no_duration(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from cli_helpers import assert_error, run_cli

    db = str(tmp_path / "m.db")
    for budget, needle in (("0", "the duration must be positive"), ("soon", "is not a duration")):
        code, _, err = run_cli(capsys, "calibrate", "--backend", "fake", "--adapt", "resnet18", "--adapt-budget",
                               budget, "--db", db)
        assert_error(code, err, "--adapt-budget", needle)
    code, _, err = run_cli(capsys, "calibrate", "--backend", "fake", "--adapt-budget", "5m", "--db", db)
    assert_error(code, err, "--adapt-budget is the budget of --adapt")
    code, _, err = run_cli(capsys, "calibrate", "--backend", "fake", "--adapt", "gone.onnx", "--db", db)
    assert_error(code, err, "gone.onnx")


def test_a_sampled_depthwise_layer_keeps_its_groups_when_perturbed() -> None:
    prior = adapt_prior(EXAMPLES)
    rng = np.random.default_rng(2)
    for _ in range(200):
        sample = prior.draw("conv:pointwise", rng)
        assert sample.groups == 1 and sample.kernel == 1 and layer_metrics(sample.layer()).macs > 0
