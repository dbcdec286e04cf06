"""Error tracing: a network's prediction error split into each kernel kind's summed layer error and what
composing the layers adds, exactly; a bias planted on one kind is found there."""

from __future__ import annotations

import pytest

from nnperf.prediction.evaluation import (
    COMPOSITION_PART,
    Evaluation,
    LayerComparison,
    NetworkComparison,
    trace_error,
)


def _network(name: str, depthwise_bias: float, composition_s: float) -> NetworkComparison:
    """1 ms measured: three depthwise layers (0.1 ms each, predicted ``depthwise_bias`` off), two pointwise
    (0.25 ms each) and two ReLUs (0.1 ms each) predicted exactly; the network prediction adds
    ``composition_s`` to the summed layer predictions."""
    layers = ([LayerComparison(f"dw{i}", "conv", "conv", 1e-4, 1e-4 * (1 + depthwise_bias), kind="conv:depthwise")
               for i in range(3)]
              + [LayerComparison(f"pw{i}", "conv", "conv", 2.5e-4, 2.5e-4, kind="conv:pointwise") for i in range(2)]
              + [LayerComparison(f"relu{i}", "relu", "relu", 1e-4, 1e-4, kind="relu") for i in range(2)])
    predicted_sum = sum(c.predicted_s for c in layers)
    return NetworkComparison(name, 10**6, 1e-3, 0.01, 1e-3, predicted_sum,
                             {"composed": predicted_sum + composition_s, "previous": 1.5e-3}, tuple(layers), 1e-4)


def test_a_bias_planted_on_one_kind_is_found_there() -> None:
    network = _network("planted", depthwise_bias=0.5, composition_s=2e-5)
    parts = trace_error(network, "composed")
    assert parts[0].part == "conv:depthwise" and parts[0].layers == 3
    assert parts[0].error_s == pytest.approx(3 * 1e-4 * 0.5)  # 0.15 ms of the 0.17 ms error
    assert parts[0].share == pytest.approx(0.15 / 0.17)
    composition = next(p for p in parts if p.part == COMPOSITION_PART)
    assert composition.error_s == pytest.approx(2e-5) and composition.layers == 0
    assert {p.part: p.error_s for p in parts}["conv:pointwise"] == pytest.approx(0.0, abs=1e-15)
    assert sum(p.error_s for p in parts) == pytest.approx(network.predicted_s["composed"] - network.measured_s)
    assert sum(p.share for p in parts) == pytest.approx(1.0)


def test_a_method_that_scales_the_sum_shows_its_scaling_as_composition() -> None:
    network = _network("exact-layers", depthwise_bias=0.0, composition_s=0.0)
    parts = trace_error(network, "previous")  # 1.5 ms predicted from exact layers: all of it is composition
    assert parts[0].part == COMPOSITION_PART and parts[0].error_s == pytest.approx(5e-4)


def test_the_evaluation_traces_only_networks_beyond_the_tolerance() -> None:
    good, bad = _network("good", 0.1, 0.0), _network("bad", 1.0, 0.0)  # +3% and +30% on the network
    evaluation = Evaluation("fake", (good, bad), ("previous", "composed"), {})
    assert evaluation.primary_method == "composed"
    traced = evaluation.traced_errors()
    assert [n.network for n, _ in traced] == ["bad"] and traced[0][1][0].part == "conv:depthwise"
    assert evaluation.to_dict()["networks"][1]["error_parts"][0]["part"] == "conv:depthwise"
