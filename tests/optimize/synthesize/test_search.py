"""The inexact-layer searches (Cappuccino IV.C): the paper's greedy order, the ILP's knapsack optimum, both held to
the budget by verified drops, on hand-made layer effects with known answers."""

from __future__ import annotations

import pytest

from nnperf.optimize.synthesize._errors import BudgetError, SynthesisError
from nnperf.optimize.synthesize._search import LayerEffect, check_budget, greedy_search, ilp_search

EFFECTS = (
    LayerEffect("a", drop=0.001, gain_s=1e-3),
    LayerEffect("b", drop=0.004, gain_s=5e-3),
    LayerEffect("c", drop=0.006, gain_s=6e-3),
    LayerEffect("d", drop=0.0, gain_s=-1e-4),  # slower inexact: never chosen
    LayerEffect("sensitive", drop=0.3, gain_s=9e-3),  # the planted sensitive layer
)


def additive(effects: tuple[LayerEffect, ...] = EFFECTS, calls: list[frozenset[str]] | None = None):  # type: ignore[no-untyped-def]
    """A drop that is the sum of the single-layer drops (what the ILP assumes)."""
    drops = {e.layer: e.drop for e in effects}

    def drop_of(layers: frozenset[str]) -> float:
        if calls is not None:
            calls.append(layers)
        return sum(drops[name] for name in layers)
    return drop_of


def test_greedy_adds_layers_in_order_of_least_harm_and_keeps_the_budget() -> None:
    calls: list[frozenset[str]] = []
    result = greedy_search(EFFECTS, additive(calls=calls), budget=0.01)
    # a (0.001), then b (0.005 in all), then c would make 0.011 > 0.01: left exact; sensitive alone breaks it
    assert result.inexact == ("a", "b")
    assert result.rejected == ("c", "sensitive")
    assert result.drop == pytest.approx(0.005)
    assert result.gain_s == pytest.approx(6e-3)
    assert calls == [frozenset("a"), frozenset("ab"), frozenset("abc")]  # sensitive never evaluated
    assert result.evaluations == 3


def test_the_ilp_finds_the_knapsack_optimum_the_greedy_order_misses() -> None:
    result = ilp_search(EFFECTS, additive(), budget=0.01)
    # a+b saves 6 ms at 0.005; a+c 7 ms at 0.007; b+c 11 ms at 0.010 (within); a+b+c is 0.011 (over)
    assert set(result.inexact) == {"b", "c"}
    assert result.drop == pytest.approx(0.010)
    assert result.gain_s == pytest.approx(11e-3)
    assert result.status.startswith("optimal") and result.evaluations == 1


def test_the_ilp_repairs_a_set_whose_verified_drop_exceeds_the_budget() -> None:
    def interacting(layers: frozenset[str]) -> float:  # b and c together hurt more than their sum
        return additive()(layers) + (0.01 if {"b", "c"} <= layers else 0.0)
    result = ilp_search(EFFECTS, interacting, budget=0.01)
    # b+c verifies at 0.02: c (the lower gain per drop: 1.0 against b's 1.25) goes back to exact
    assert result.inexact == ("b",) and result.drop == pytest.approx(0.004)
    assert "made exact again" in result.status and result.evaluations == 2


def test_a_zero_budget_keeps_only_harmless_layers() -> None:
    effects = (LayerEffect("x", 0.0, 1e-3), LayerEffect("y", 0.002, 1e-3))
    assert greedy_search(effects, additive(effects), 0.0).inexact == ("x",)
    assert ilp_search(effects, additive(effects), 0.0).inexact == ("x",)


@pytest.mark.parametrize("budget", [-0.01, 1.0, 5, float("nan"), "1%"])
def test_a_budget_outside_zero_to_one_is_refused(budget: object) -> None:
    with pytest.raises(BudgetError, match=r"negative accuracy budget|fraction in \[0, 1\)|must be a number"):
        check_budget(budget)  # type: ignore[arg-type]


def test_bad_effects_are_refused() -> None:
    with pytest.raises(SynthesisError, match="twice"):
        greedy_search((LayerEffect("a", 0, 1), LayerEffect("a", 0, 1)), additive(), 0.01)
    with pytest.raises(SynthesisError, match="finite"):
        ilp_search((LayerEffect("a", float("inf"), 1),), additive(), 0.01)
