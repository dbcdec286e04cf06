"""The fusion-aware composition: candidates, learnt fusion rules, and the fit of a, b and delta."""

from __future__ import annotations

import pytest

from networks import tiny_network
from nnperf.errors import NnperfError
from nnperf.prediction._composition import Composition, FusionRules, fit_composition, fusion_candidates, learn_fusion


def test_fusion_candidates_follow_sole_consumer_chains_to_a_compute_layer() -> None:
    # conv1 -> bn1 -> relu1 is a chain; relu1 feeds conv2 and add, so add's sole producer is conv2;
    # pool, cat, gap, flatten and softmax are not element-wise successors of a compute layer
    assert fusion_candidates(tiny_network()) == {
        "bn1": ("conv1", "conv"), "relu1": ("bn1", "conv"), "add": ("conv2", "conv"),
    }


def test_fusion_rules_are_learnt_from_profiler_groups() -> None:
    net = tiny_network()
    fused = {layer.name: layer.name for layer in net.layers} | {"bn1": "conv1", "relu1": "conv1"}
    alone = {layer.name: layer.name for layer in net.layers}
    rules = learn_fusion([(net, fused), (net, alone), (net, fused)])
    assert rules.observed == {"conv>batch_norm": (2, 3), "conv>relu": (2, 3), "conv>add": (0, 3)}
    assert rules.fuses("conv", "relu") and not rules.fuses("conv", "add")
    assert rules.fused_pairs == ["conv>batch_norm", "conv>relu"]
    assert rules.fused_layers(net) == {"bn1", "relu1"}
    # a successor is only fused when the layer before it is: without conv>batch_norm, relu1 stays alone
    assert FusionRules({"conv>relu": (5, 5)}).fused_layers(net) == set()
    assert FusionRules.from_dict(rules.to_dict()) == rules


def test_composition_terms_and_latency() -> None:
    net = tiny_network()
    times = {layer.name: 1e-3 for layer in net.layers}
    composition = Composition.of(-1e-4, FusionRules({"conv>batch_norm": (1, 1), "conv>relu": (1, 1)}))
    assert composition.terms(net, times) == pytest.approx((10e-3, 10))  # bn1 and relu1 run inside conv1
    assert composition.latency_s(net, times) == pytest.approx(10e-3 - 10 * 1e-4)
    assert Composition.from_dict(composition.to_dict()) == composition
    assert Composition.of(-1.0).latency_s(net, times) == 0.0  # never negative


def test_fit_composition_recovers_a_known_per_call_difference() -> None:
    delta = -1.5e-5
    terms = [(1e-3, 10), (5e-3, 40), (2e-2, 25), (4e-3, 60)]
    fit = fit_composition(terms, [s + delta * n for s, n in terms], FusionRules())
    assert fit.delta_s == pytest.approx(delta, rel=1e-9)
    # with noise it is the weighted least-squares value: here two networks, y = (2, 4), S = (1, 1), N = (1, 1)
    # delta = sum(N/y (1 - S/y)) / sum((N/y)^2) = (0.5 * 0.5 + 0.25 * 0.75) / (0.25 + 0.0625) = 1.4
    assert fit_composition([(1.0, 1), (1.0, 1)], [2.0, 4.0], FusionRules()).delta_s == pytest.approx(1.4)
    with pytest.raises(NnperfError, match="at least two"):
        fit_composition(terms[:1], [1e-3], FusionRules())


@pytest.mark.parametrize("backend_name", ["onnxruntime", "torch"])
def test_fusion_rules_from_a_real_profiler(backend_name: str) -> None:
    from nnperf.measure.backends import BackendOptions, create_backend

    net = tiny_network()
    with create_backend(backend_name, BackendOptions(device="cpu")) as backend:
        result = backend.profile(net, runs=3)
    rules = learn_fusion([(net, {m.layer: m.group for m in result.layers})])
    if backend_name == "onnxruntime":  # folds BN into the convolution and fuses the ReLU (NCHWc Conv)
        assert {"conv>batch_norm", "conv>relu"} <= set(rules.fused_pairs)
        assert {"bn1", "relu1"} <= rules.fused_layers(net)
    else:  # eager PyTorch runs every module on its own
        assert rules.fused_pairs == [] and rules.fused_layers(net) == set()
