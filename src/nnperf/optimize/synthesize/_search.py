"""Choosing which layers run inexact under an accuracy budget (Cappuccino IV.C), greedily as the paper does and
exactly as an ILP.

Both searches read each layer's :class:`LayerEffect`: the accuracy drop measured on the validation set with that
layer alone inexact, and the time it saves. Accuracy drops are fractions (0.01 = one percentage point of top-1,
or 1% of the samples whose top-1 changed, see :mod:`._program`).

- :func:`greedy_search` follows the paper: layers are made inexact in order of least harm, each addition
  verified on the validation set; one that would take the drop of the whole set past the budget stays exact and
  the search goes on with the next (the paper's goal is as many inexact layers as the budget allows).
- :func:`ilp_search` maximises the time saved subject to the sum of the single-layer drops staying within the
  budget (a 0-1 knapsack, SciPy's HiGHS). Given a :class:`~nnperf.optimize.synthesize._boundaries.MixedCost`,
  the time saved is that model's: the scaled gains less a cost per border between int8 and fp32 layers (a
  variable per edge, at least the difference of its two ends), so that a region pays its borders once. Drops do
  not add up exactly, so its set is verified on the validation set; while the verified drop is over budget, the
  layer with the least time saved per unit of drop is made exact again. Slow max-pools (the model's count from a
  written program) are not linear in the layers: while the ILP's best set has some, that set is cut off and the
  ILP solved again (at most :data:`MAX_POOL_CUTS` times), and the set the whole model predicts fastest is kept,
  no layer inexact included.

Given the model, both searches also report the latency it predicts for the set they chose (``predicted_s``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from nnperf.optimize.synthesize._boundaries import MixedCost
from nnperf.optimize.synthesize._errors import BudgetError, SynthesisError

DropOf = Callable[[frozenset[str]], float]
"""The measured accuracy drop (fraction) of the program with exactly these layers inexact."""


def check_budget(budget: float) -> float:
    """``budget`` as a float in [0, 1); anything else raises :class:`BudgetError`."""
    try:
        value = float(budget)
    except (TypeError, ValueError):
        raise BudgetError(f"the accuracy budget must be a number (a fraction: 0.01 for 1%), got {budget!r}") from None
    if math.isnan(value) or value >= 1:
        raise BudgetError(f"the accuracy budget must be a fraction in [0, 1) (0.01 for 1%), got {budget!r}")
    if value < 0:
        raise BudgetError(f"no program can meet a negative accuracy budget ({budget!r}): the budget is the drop "
                          "allowed from fp32, a fraction in [0, 1) (0.01 for 1%)")
    return value


@dataclass(frozen=True)
class LayerEffect:
    """What making one layer inexact does, the others exact: ``drop`` the accuracy drop (fraction, may be
    negative: noise) and ``gain_s`` the time it saves (s, negative when the inexact layer is slower)."""

    layer: str
    drop: float
    gain_s: float


@dataclass(frozen=True)
class SearchResult:
    """The layers a search made inexact (in the order it added them), the verified drop of that set, the layers it
    tried and left exact, the accuracy evaluations it spent, its time and the time the chosen layers save (the
    sum of their gains, or the mixed-precision model's saving with its latency in ``predicted_s``)."""

    method: str
    inexact: tuple[str, ...]
    drop: float
    rejected: tuple[str, ...]
    evaluations: int
    search_s: float
    gain_s: float
    status: str = ""
    predicted_s: float | None = None


def _gain(effects: Sequence[LayerEffect], chosen: Sequence[str], cost: MixedCost | None = None
          ) -> tuple[float, float | None]:
    """The time ``chosen`` saves, and the latency ``cost`` predicts for them (None without a model)."""
    if cost is not None:
        predicted = cost.latency_s(chosen)
        return cost.base_s - predicted, predicted
    by_layer = {e.layer: e.gain_s for e in effects}
    return sum(by_layer[name] for name in chosen), None


def _check_effects(effects: Sequence[LayerEffect]) -> None:
    names = [e.layer for e in effects]
    if len(set(names)) != len(names):
        raise SynthesisError(f"layer effects name a layer twice: {sorted({n for n in names if names.count(n) > 1})}")
    for e in effects:
        if not (math.isfinite(e.drop) and math.isfinite(e.gain_s)):
            raise SynthesisError(f"layer {e.layer!r}: drop and gain must be finite, got {e.drop!r}, {e.gain_s!r}")


def greedy_search(effects: Sequence[LayerEffect], drop_of: DropOf, budget: float, cost: MixedCost | None = None
                  ) -> SearchResult:
    """Cappuccino's search: layers that save time, in order of least single-layer drop (ties: most time saved
    first), each added when the verified drop of the whole set stays within ``budget``, else left exact; ``cost``
    only judges the set it chose."""
    budget = check_budget(budget)
    _check_effects(effects)
    start = time.perf_counter()
    order = sorted((e for e in effects if e.gain_s > 0), key=lambda e: (e.drop, -e.gain_s, e.layer))
    chosen: list[str] = []
    rejected: list[str] = []
    drop = 0.0
    for effect in order:
        if effect.drop > budget:  # alone it already breaks the budget: no set with it can meet it (the others add)
            rejected.append(effect.layer)
            continue
        trial = drop_of(frozenset([*chosen, effect.layer]))
        if trial <= budget:
            chosen.append(effect.layer)
            drop = trial
        else:
            rejected.append(effect.layer)
    evaluations = len(order) - sum(1 for e in order if e.drop > budget)
    gain_s, predicted_s = _gain(effects, chosen, cost)
    return SearchResult("greedy", tuple(chosen), drop, tuple(rejected), evaluations, time.perf_counter() - start,
                        gain_s, f"{len(chosen)} of {len(effects)} layers inexact", predicted_s)


MAX_POOL_CUTS = 8
"""How many of the ILP's sets with slow max-pools are cut off before it settles for the best seen."""


def ilp_search(effects: Sequence[LayerEffect], drop_of: DropOf, budget: float, time_limit_s: float = 60.0,
               cost: MixedCost | None = None) -> SearchResult:
    """The exact formulation: maximise the time the inexact layers save (their summed gains, or ``cost``'s saving
    with its borders) with their summed single-layer drops (negative ones counted as 0) within ``budget`` (HiGHS
    through ``scipy.optimize.milp``), then verified and repaired as the module docstring says."""
    budget = check_budget(budget)
    _check_effects(effects)
    start = time.perf_counter()
    # with borders counted, a layer that saves nothing alone may still join two regions into one
    candidates = list(effects) if cost is not None else [e for e in effects if e.gain_s > 0]
    if not candidates:
        return SearchResult("ilp", (), 0.0, (), 0, time.perf_counter() - start, 0.0, "no layer saves time")
    picked, status = _solve_seeing_pools(candidates, budget, time_limit_s, cost)
    chosen = [e for e, x in zip(candidates, picked, strict=True) if x]
    evaluations = 1
    drop = drop_of(frozenset(e.layer for e in chosen)) if chosen else 0.0
    rejected: list[str] = [e.layer for e in candidates if e not in chosen]
    repaired = 0
    while chosen and drop > budget:  # the drops did not add up: make the least efficient layer exact again
        worst = min(chosen, key=lambda e: (e.gain_s / max(e.drop, 1e-12), e.layer))
        chosen.remove(worst)
        rejected.append(worst.layer)
        drop = drop_of(frozenset(e.layer for e in chosen)) if chosen else 0.0
        evaluations += 1
        repaired += 1
    if repaired:
        status += f"; {repaired} layer(s) made exact again: the verified drop exceeded the budget"
        if cost is not None and chosen and cost.latency_s([e.layer for e in chosen]) > cost.base_s:
            rejected += [e.layer for e in chosen]
            chosen, drop = [], 0.0
            status += ", and what was left was predicted slower than none"
    names = [e.layer for e in sorted(chosen, key=lambda e: (e.drop, -e.gain_s, e.layer))]
    gain_s, predicted_s = _gain(effects, names, cost)
    return SearchResult("ilp", tuple(names), drop, tuple(rejected), evaluations, time.perf_counter() - start,
                        gain_s, status, predicted_s)


def _solve_seeing_pools(candidates: Sequence[LayerEffect], budget: float, time_limit_s: float,
                        cost: MixedCost | None) -> tuple[list[bool], str]:
    """:func:`_solve`, then, while its set has slow max-pools by ``cost``, that set cut off and solved again; the
    set of those (or none) that ``cost`` predicts fastest, and the status."""
    picked, status = _solve(candidates, budget, time_limit_s, cost)
    if cost is None or cost.slow_pools is None or not cost.slow_pool_s:
        return picked, status

    def layers(choice: list[bool]) -> frozenset[str]:
        return frozenset(e.layer for e, x in zip(candidates, choice, strict=True) if x)

    tried = [picked]
    best, best_s = [False] * len(candidates), cost.base_s
    while True:
        chosen = layers(picked)
        latency_s = cost.latency_s(chosen)
        if latency_s < best_s:
            best, best_s = picked, latency_s
        if not cost.slow_pools(chosen) or len(tried) > MAX_POOL_CUTS:
            break
        try:
            picked, _ = _solve(candidates, budget, time_limit_s, cost, excluded=tried)
        except SynthesisError:  # every set within the budget was tried
            break
        tried.append(picked)
    if len(tried) > 1:
        status += f"; {len(tried) - 1} set(s) with slow max-pools cut off"
    return best, status


def _solve(candidates: Sequence[LayerEffect], budget: float, time_limit_s: float, cost: MixedCost | None,
           excluded: Sequence[list[bool]] = ()) -> tuple[list[bool], str]:
    """The ILP's choice for each candidate layer, and its status. Variables: one per layer (inexact or not), and
    with ``cost`` one per edge between them (1 when the edge is a border: at least |x_u - x_v|). Each choice in
    ``excluded`` is cut off (at least one layer differs)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = len(candidates)
    index = {e.layer: i for i, e in enumerate(candidates)}
    scale = cost.gain_scale if cost is not None else 1.0
    edges = [edge for edge in (cost.edges if cost is not None else ())
             if edge.producer in index or edge.consumer in index]
    gains = [cost.gains_s[e.layer] if cost is not None else e.gain_s for e in candidates]
    objective = np.concatenate([[-scale * gain for gain in gains],
                                np.full(len(edges), cost.border_s if cost is not None else 0.0)])
    rows = [np.concatenate([[max(e.drop, 0.0) for e in candidates], np.zeros(len(edges))])]
    lower, upper = [-np.inf], [budget]
    for k, edge in enumerate(edges):
        for sign in (1.0, -1.0):  # y_e >= sign * (x_u - x_v)
            row = np.zeros(n + len(edges))
            row[n + k] = 1.0
            if edge.producer in index:
                row[index[edge.producer]] -= sign
            if edge.consumer in index:
                row[index[edge.consumer]] += sign
            rows.append(row)
            lower.append(0.0)
            upper.append(np.inf)
    for choice in excluded:  # sum of the chosen x - sum of the others <= |chosen| - 1
        row = np.zeros(n + len(edges))
        row[:n] = [1.0 if x else -1.0 for x in choice]
        rows.append(row)
        lower.append(-np.inf)
        upper.append(sum(choice) - 1.0)
    result = milp(objective, integrality=np.ones(n + len(edges)), bounds=Bounds(0, 1),
                  constraints=LinearConstraint(np.array(rows), lower, upper), options={"time_limit": time_limit_s})
    if result.x is None:
        raise SynthesisError(f"the ILP found no selection: {result.message}")
    return [bool(x > 0.5) for x in result.x[:n]], ("optimal" if result.status == 0 else f"stopped: {result.message}")


SEARCHES: dict[str, Callable[..., SearchResult]] = {"greedy": greedy_search, "ilp": ilp_search}
