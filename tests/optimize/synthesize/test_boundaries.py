"""The borders of int8 regions: the edges read from an ONNX graph, the cost model fitted to probe programs, and the
ILP that counts borders against the one that sums single-layer gains."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from nnperf.ir.export import export_onnx
from nnperf.measure import PairedRatio
from nnperf.optimize.synthesize._boundaries import Edge, MixedCost, border_count, fit_mixed_cost, int8_edges
from nnperf.optimize.synthesize._errors import SynthesisError
from nnperf.optimize.synthesize._onnx import Int8Quantizer, OrtSettings, named_model, quantizable_nodes, slow_int8_pools
from nnperf.optimize.synthesize._program import ProgramSpec
from nnperf.optimize.synthesize._result import PredictionCheck, paired_winner
from nnperf.optimize.synthesize._search import LayerEffect, greedy_search, ilp_search


class _Residual(nn.Module):
    """conv a -> conv b -> conv c, c's output plus a's, pooled, then a linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        return self.fc((self.c(torch.relu(self.b(y))) + y).mean((2, 3)))


@pytest.fixture(scope="module")
def residual(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    return export_onnx(_Residual().eval(), torch.randn(1, 3, 16, 16), tmp_path_factory.mktemp("b") / "r.onnx")


def test_edges_follow_the_dataflow_through_layers_int8_cannot_run(residual: Path) -> None:
    import onnx

    a, b, c, fc = quantizable_nodes(named_model(onnx.load(str(residual))))
    edges = set(int8_edges(residual, [a, b, c, fc]))
    # the input (3x16x16) into a; a's 8x16x16 output into b and, through the residual add and the mean, into fc;
    # b into c through its ReLU; c into fc; fc's 4 outputs out
    assert edges == {Edge(None, a, 768), Edge(a, b, 2048), Edge(a, fc, 2048), Edge(b, c, 2048), Edge(c, fc, 2048),
                     Edge(fc, None, 4)}
    assert border_count(tuple(edges), []) == 0
    assert border_count(tuple(edges), [a, b, c, fc]) == 2  # only the input's and the output's
    assert border_count(tuple(edges), [b]) == 2
    assert border_count(tuple(edges), [a]) == 3  # in -> a, a -> b, a -> fc
    assert border_count(tuple(edges), [a, b]) == 3  # in -> a, a -> fc, b -> c: a -> b is inside the region


class _Pooled(nn.Module):
    """conv a -> ReLU -> max-pool -> conv b -> conv c, then global average pooling."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1), nn.Conv2d(16, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(self.b(nn.functional.max_pool2d(torch.relu(self.a(x)), 2))).mean((2, 3))


def test_ort_runs_a_max_pool_on_8_bit_data_in_nchw_where_an_int8_region_starts_after_it(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = export_onnx(_Pooled().eval(), torch.randn(1, 3, 16, 16), tmp_path / "p.onnx")
    quantizer = Int8Quantizer(path, np.random.default_rng(0).standard_normal((8, 3, 16, 16)).astype(np.float32),
                              tmp_path / "int8")
    a, b, c = quantizer.quantizable_
    nchwc, plain = OrtSettings(1, "sequential", "nchwc"), OrtSettings(1, "sequential", "plain")
    assert slow_int8_pools(path, nchwc) == 0  # fp32: the NCHWc pool
    assert slow_int8_pools(quantizer.quantize([a, b, c]), nchwc) == 0  # all int8: ORT's NHWC pool
    # b alone: ORT moves b's QuantizeLinear before the pool, which then runs on uint8, and in NCHW
    assert slow_int8_pools(quantizer.quantize([b]), nchwc) == 1
    assert slow_int8_pools(quantizer.quantize([a, b, c]), plain) == 1  # without the NHWC transformer, always


CHAIN = (Edge(None, "a", 10), Edge("a", "b", 10), Edge("b", "c", 10), Edge("c", None, 10))
GAINS = {"a": 10e-6, "b": -1e-6, "c": 10e-6}


def test_the_model_counts_gains_and_borders() -> None:
    cost = MixedCost(100e-6, GAINS, CHAIN, gain_scale=0.5, border_s=6e-6)
    assert cost.latency_s([]) == pytest.approx(100e-6)
    assert cost.latency_s(["a"]) == pytest.approx(100e-6 - 5e-6 + 12e-6)  # borders: in -> a, a -> b
    assert cost.latency_s(["a", "c"]) == pytest.approx(100e-6 - 10e-6 + 24e-6)
    assert cost.latency_s(["a", "b", "c"]) == pytest.approx(100e-6 - 9.5e-6 + 12e-6)


def test_the_fit_recovers_a_planted_scale_and_border_cost() -> None:
    planted = MixedCost(100e-6, GAINS, CHAIN, gain_scale=0.7, border_s=4e-6)
    probes = [(chosen, planted.latency_s(chosen) / 100e-6) for chosen in (["a"], ["a", "c"], ["a", "b", "c"])]
    fitted = fit_mixed_cost(100e-6, GAINS, CHAIN, probes)
    assert (fitted.gain_scale, fitted.border_s * 1e6, fitted.probes) == (pytest.approx(0.7), pytest.approx(4.0), 3)
    assert fitted.fitted(["c", "a"]) and not fitted.fitted(["c"])  # a program it was fitted to is no test of it
    assert fitted.ratio(["a"]) == pytest.approx((100e-6 - 0.7 * 10e-6 + 8e-6) / 100e-6)
    with pytest.raises(SynthesisError, match="at least one probe"):
        fit_mixed_cost(100e-6, GAINS, CHAIN, [])
    with pytest.raises(SynthesisError, match="must be positive"):
        fit_mixed_cost(100e-6, GAINS, CHAIN, [(["a"], 0.0)])


def test_the_fit_recovers_a_planted_cost_per_slow_pool() -> None:
    pools = {frozenset("a"): 0, frozenset("c"): 1, frozenset("ac"): 1, frozenset("abc"): 0}
    planted = MixedCost(100e-6, GAINS, CHAIN, gain_scale=0.7, border_s=4e-6, slow_pool_s=30e-6,
                        slow_pools=pools.__getitem__)
    assert planted.latency_s(["c"]) == pytest.approx(100e-6 - 7e-6 + 8e-6 + 30e-6)  # two borders, one slow pool
    probes = [(chosen, planted.latency_s(chosen) / 100e-6) for chosen in (["a"], ["c"], ["a", "c"], ["a", "b", "c"])]
    fitted = fit_mixed_cost(100e-6, GAINS, CHAIN, probes, slow_pools=pools.__getitem__)
    assert (fitted.gain_scale, fitted.border_s * 1e6, fitted.slow_pool_s * 1e6) == (
        pytest.approx(0.7), pytest.approx(4.0), pytest.approx(30.0))
    assert "30.0 µs per slow 8-bit max-pool" in fitted.describe()
    blind = fit_mixed_cost(100e-6, GAINS, CHAIN, probes)  # without the count the pools' time lands elsewhere
    assert blind.slow_pool_s == 0.0 and blind.ratio(["c"]) != pytest.approx(planted.ratio(["c"]))


def test_the_ilp_cuts_off_a_set_with_slow_pools_and_keeps_the_best_the_whole_model_sees() -> None:
    effects = tuple(LayerEffect(name, 0.0, gain) for name, gain in GAINS.items())

    def no_drop(_: frozenset[str]) -> float:
        return 0.0

    def pools(chosen: frozenset[str]) -> int:
        return 1 if chosen == frozenset("abc") else 0  # only the whole chain leaves a pool slow

    # borders at 2 µs: {a, b, c} saves 15 µs blind, but its slow pool costs 30; next, {a, c}: 20 saved, 8 paid
    cost = MixedCost(100e-6, GAINS, CHAIN, border_s=2e-6, slow_pool_s=30e-6, slow_pools=pools)
    found = ilp_search(effects, no_drop, budget=0.01, cost=cost)
    assert set(found.inexact) == {"a", "c"} and found.predicted_s == pytest.approx(100e-6 - 20e-6 + 8e-6)
    assert "1 set(s) with slow max-pools cut off" in found.status
    # borders at 6 µs: every other set costs more than it saves, so no layer is made inexact
    dearer = ilp_search(effects, no_drop, budget=0.01,
                        cost=MixedCost(100e-6, GAINS, CHAIN, border_s=6e-6, slow_pool_s=30e-6, slow_pools=pools))
    assert dearer.inexact == () and dearer.predicted_s == pytest.approx(100e-6)


def test_a_checked_prediction_is_judged_against_the_paired_ratio() -> None:
    measured = PairedRatio("ILP", "fp32", 0.80, 0.78, 0.83, 0.95, (), True)
    seven = tuple("abcdefg")
    check = PredictionCheck("greedy = ILP", ProgramSpec("onnxruntime", inexact=seven), 0.0, 0.90, measured,
                            fitted=False)
    assert check.error == pytest.approx(0.125)  # 0.90 predicted against 0.80 measured
    assert check.describe() == ("greedy = ILP (7 layers): 0.800 [0.780, 0.830] of fp32's time, predicted 0.900 "
                                "(+12.5%)")


def test_the_paired_check_keeps_the_fastest_program_within_the_budget() -> None:
    def check(name: str, drop: float, ratio: float) -> PredictionCheck:
        measured = PairedRatio(name, "fp32", ratio, ratio - 0.01, ratio + 0.01, 0.95, (), True)
        return PredictionCheck(name, ProgramSpec("onnxruntime", inexact=(name,)), drop, 1.0, measured, False)

    all_int8, greedy, ilp = check("all int8", 0.03, 0.70), check("greedy", 0.0, 0.95), check("ILP", 0.005, 0.85)
    assert paired_winner([all_int8, greedy, ilp], budget=0.01) is ilp  # all int8 is faster but over the budget
    assert paired_winner([all_int8, greedy, ilp], budget=0.05) is all_int8
    assert paired_winner([check("greedy", 0.0, 1.02)], budget=0.01) is None  # fp32 ran fastest
    assert paired_winner([], budget=0.01) is None


def test_the_ilp_joins_regions_when_borders_cost_and_splits_them_when_they_do_not() -> None:
    effects = tuple(LayerEffect(name, 0.0, gain) for name, gain in GAINS.items())

    def no_drop(_: frozenset[str]) -> float:
        return 0.0

    summed = ilp_search(effects, no_drop, budget=0.01)
    assert set(summed.inexact) == {"a", "c"} and summed.predicted_s is None  # b alone is slower: left out
    cost = MixedCost(100e-6, GAINS, CHAIN, border_s=6e-6)
    bordered = ilp_search(effects, no_drop, budget=0.01, cost=cost)
    # {a, c}: 20 µs saved, 4 borders (24 µs); {a, b, c}: 19 µs saved, 2 borders (12 µs): the only saving
    assert set(bordered.inexact) == {"a", "b", "c"}
    assert bordered.predicted_s == pytest.approx(100e-6 - 19e-6 + 12e-6)
    assert bordered.gain_s == pytest.approx(7e-6)
    expensive = ilp_search(effects, no_drop, budget=0.01, cost=MixedCost(100e-6, GAINS, CHAIN, border_s=20e-6))
    assert expensive.inexact == () and expensive.predicted_s == pytest.approx(100e-6)  # no region pays its borders
    greedy = greedy_search(effects, no_drop, budget=0.01, cost=cost)  # the paper's order; the model only judges it
    assert set(greedy.inexact) == {"a", "c"} and greedy.predicted_s == pytest.approx(100e-6 - 20e-6 + 24e-6)
