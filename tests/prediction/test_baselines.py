"""The MACs-proportional and roofline baselines against hand-computed values."""

from __future__ import annotations

import pytest

from networks import tiny_network
from nnperf.campaign import BANDWIDTH_PROBES, COMPUTE_PROBES, measure_roofline
from nnperf.errors import NnperfError
from nnperf.ir.metrics import layer_metrics
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction.baselines import MacsModel, RooflineModel, fit_macs_model, layer_bytes


def test_macs_model_is_the_slope_through_the_origin() -> None:
    net = tiny_network()
    macs = sum(layer_metrics(layer).macs for layer in net.layers)
    assert macs == 3 * 8 * 9 * 256 + 8 * 256 + 8 * 8 * 9 * 256 + 8 * 256 + 8 * 9 * 64 + 8 * 64 + 16 * 10
    model = fit_macs_model([net, net], [1e-3, 3e-3])  # sum(m*t) / sum(m*m) = 4e-3 m / 2 m^2
    assert model.seconds_per_mac_ == pytest.approx(2e-3 / macs)
    assert model.latency_s(net) == pytest.approx(2e-3)
    assert model.layer_latency_s(net.layer("relu1")) == 0.0  # no MACs, no time: the baseline's blind spot
    assert MacsModel.from_dict(model.to_dict()) == model


def test_roofline_takes_the_slower_of_compute_and_memory() -> None:
    net = tiny_network()
    roof = RooflineModel.from_peaks(1e9, 1e9)
    conv1 = net.layer("conv1")  # 57,344 MACs; (768 inputs + 224 weights + 2048 outputs) x 4 bytes
    assert layer_bytes(conv1) == (3 * 256 + 3 * 8 * 9 + 8 + 8 * 256) * 4
    assert roof.layer_latency_s(conv1) == pytest.approx(max(layer_metrics(conv1).ops, layer_bytes(conv1)) / 1e9)
    relu = net.layer("relu1")  # 2,048 ops, 16,384 bytes: memory-bound
    assert roof.layer_latency_s(relu) == pytest.approx(16384 / 1e9)
    assert roof.ridge_ops_per_byte == 1.0
    assert roof.latency_s(net) == pytest.approx(sum(roof.layer_latency_s(layer) for layer in net.layers))
    assert RooflineModel.from_dict(roof.to_dict()) == roof
    with pytest.raises(NnperfError, match="must be positive"):
        RooflineModel.from_peaks(0.0, 1e9)


def test_measured_peaks_are_the_best_probe() -> None:
    cost = CostModel(noise_sigma=0.0, overhead_s=0.0)
    roof = measure_roofline(FakeBackend(model=cost))
    # the fake runs a MAC in 1e-10 s and an element-wise op in 1e-9 s; the probes read that back
    assert roof.ops_per_s_ == pytest.approx(max(layer_metrics(p).ops / cost.layer_cost_s(p) for p in COMPUTE_PROBES))
    assert roof.ops_per_s_ == pytest.approx(1e10)
    add = BANDWIDTH_PROBES[0]
    assert roof.bytes_per_s_ == pytest.approx(layer_bytes(add) / cost.layer_cost_s(add))
    assert roof.bytes_per_s_ == pytest.approx(12e9)  # 3 elements of 4 bytes per 1e-9 s op
