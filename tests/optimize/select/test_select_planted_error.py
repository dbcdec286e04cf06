"""Selection from predicted costs follows the cost model's errors, and recovers once they are corrected: a source
platform's model that thinks im2col is 3x slower than it is on the target steers the selection away from it; the
residual correction fitted on a sample of the target's times brings the selection back to the target's optimum."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from nnperf.ir import ConvAttrs, Layer, Network, OpType, TensorSpec
from nnperf.optimize.select import PrimitiveCosts, network_cost_graph, predicted_costs, solve
from nnperf.optimize.select._costs import _layer_primitives, needed_transforms, network_convs
from nnperf.prediction.primitives import PrimitiveCostModel, residual_corrected

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "prediction" / "primitives"))
from cost_data import LAW, TRANSFORM_LAW, power_law_dataset

PLANTED = {name: (3.0 if name == "im2col-fhw" else 1.0, b) for name, (_, b) in LAW.items()}
"""The source platform: im2col-fhw 3x slower than on the target, everything else the same."""


def _chain() -> Network:
    """Three dense 3x3 convolutions of 10 to 120 million MACs in a row: under :data:`LAW` im2col-fhw is the fastest
    primitive on each, and 3x slower it is not (FFT or direct wins)."""
    shapes = [(1, 32, 56, 56), (1, 64, 56, 56), (1, 64, 28, 28), (1, 128, 28, 28)]
    layers = []
    source = "x"
    for i, (a, b) in enumerate(itertools.pairwise(shapes)):
        stride = a[2] // b[2]
        layers.append(Layer(f"conv{i}", OpType.CONV, (source,), (a,), b,
                            ConvAttrs((3, 3), stride=(stride, stride), padding=(1,) * 4)))
        source = f"conv{i}"
    return Network("chain", (TensorSpec("x", shapes[0]),), tuple(layers), (source,))


def _true_costs(network: Network) -> PrimitiveCosts:
    """The target's costs: :data:`LAW` and :data:`TRANSFORM_LAW` exactly."""
    convs = network_convs(network)
    conv_s = {c: {n: a * c.macs ** b for n, (a, b) in LAW.items() if n in ("direct", "im2col-fhw", "fft")}
              for c in convs.values()}
    transforms_s: dict = {}
    for shape, name in needed_transforms(network, _layer_primitives(convs, conv_s)):
        a, b = TRANSFORM_LAW[name]
        batch, c, (h, w) = shape
        transforms_s.setdefault(shape, {})[name] = a * (batch * c * h * w) ** b
    return PrimitiveCosts(conv_s, transforms_s, "the target's law")


def _chosen(network: Network, costs: PrimitiveCosts) -> dict[str, str]:
    selection = solve(network_cost_graph(network, costs), "pbqp")
    return {name: selection.chosen[name] for name in network_convs(network)}


@pytest.fixture(scope="module")
def source_model() -> PrimitiveCostModel:
    return PrimitiveCostModel("lin").fit(power_law_dataset(200, seed=1, target=PLANTED))


def test_the_planted_error_steers_the_selection_and_its_correction_brings_it_back(source_model) -> None:
    network = _chain()
    truth = _chosen(network, _true_costs(network))
    assert set(truth.values()) == {"im2col-fhw"}  # the target's optimum
    keep = {"direct", "im2col-fhw", "fft"}

    def restricted(costs: PrimitiveCosts) -> PrimitiveCosts:
        return PrimitiveCosts({c: {n: t for n, t in row.items() if n in keep} for c, row in costs.conv_s.items()},
                              costs.transforms_s, costs.source)

    planted = _chosen(network, restricted(predicted_costs(source_model, network)))
    assert "im2col-fhw" not in planted.values()  # the error moved every layer off the optimum

    target_sample = power_law_dataset(20, seed=5)  # 20 configurations timed on the target
    corrected_model = residual_corrected(source_model, target_sample)
    corrected = _chosen(network, restricted(predicted_costs(corrected_model, network)))
    assert corrected == truth
    # the correction found the factor: im2col-fhw's predicted time is within 25% of the target's on every layer
    costs = predicted_costs(corrected_model, network)
    for config in network_convs(network).values():
        a, b = LAW["im2col-fhw"]
        assert costs.conv_s[config]["im2col-fhw"] == pytest.approx(a * config.macs ** b, rel=0.25)
