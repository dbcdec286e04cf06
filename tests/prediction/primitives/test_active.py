"""Active learning's pieces: the committee spread of an ensemble and the batch it picks."""

from __future__ import annotations

import numpy as np
import pytest

from nnperf.errors import NnperfError
from nnperf.prediction.primitives import (
    ColumnModel,
    CostModelKind,
    NotAnEnsembleError,
    Standardiser,
    committee_spread,
    most_uncertain,
)


def linear(coef: list[list[float]]) -> ColumnModel:
    """A Lin model of two columns on one feature, unit standardisations: targets = x * coef[0] + coef[1]."""
    unit = Standardiser((0.0,), (1.0,))
    return ColumnModel(CostModelKind.LIN, ("a", "b"), (1, 1), unit, Standardiser((0.0, 0.0), (1.0, 1.0)), 1, 0,
                       coef=np.array(coef, dtype=float))


def committee(*members: ColumnModel) -> ColumnModel:
    first = members[0]
    return ColumnModel(CostModelKind.ENS, first.columns, first.counts, first.features, first.targets, 1, 0,
                       members=members)


def test_spread_is_the_members_standard_deviation_averaged_over_columns() -> None:
    # at x = 2: member one predicts (2, 4), member two (2.4, 3.0); standard deviations 0.2 and 0.5
    model = committee(linear([[1.0, 2.0], [0.0, 0.0]]), linear([[1.0, 1.0], [0.4, 1.0]]))
    assert committee_spread(model, np.array([[2.0]])) == pytest.approx([0.35])
    # only the first column applies: 0.2; none applies: 0
    applies = np.array([[True, False], [False, False]])
    assert committee_spread(model, np.array([[2.0], [2.0]]), applies) == pytest.approx([0.2, 0.0])


def test_members_that_agree_have_no_spread() -> None:
    same = linear([[1.0, 2.0], [0.5, 0.0]])
    assert committee_spread(committee(same, same), np.array([[0.0], [3.0]])) == pytest.approx([0.0, 0.0])


def test_a_single_regressor_has_no_committee() -> None:
    with pytest.raises(NotAnEnsembleError, match="needs an ensemble"):
        committee_spread(linear([[1.0, 1.0], [0.0, 0.0]]), np.array([[1.0]]))


def test_the_largest_spreads_are_picked_first() -> None:
    assert most_uncertain(np.array([0.1, 0.5, 0.3]), 2) == [1, 2]
    assert most_uncertain(np.array([0.1, 0.5, 0.3]), 5) == [1, 2, 0]


def test_cost_turns_spread_into_spread_per_second() -> None:
    # per second: 0.1, 0.05, 0.3
    assert most_uncertain(np.array([0.1, 0.5, 0.3]), 2, cost_s=np.array([1.0, 10.0, 1.0])) == [2, 0]


def test_a_row_on_top_of_a_picked_one_is_not_picked_next() -> None:
    spread = np.array([0.2, 0.5, 0.45])
    features = np.array([[5.0], [0.0], [0.0]])  # row 2 sits on row 1
    assert most_uncertain(spread, 2) == [1, 2]
    assert most_uncertain(spread, 2, features=features) == [1, 0]


def test_bad_batch_inputs_are_refused() -> None:
    with pytest.raises(NnperfError, match="at least 0"):
        most_uncertain(np.array([0.1]), -1)
    with pytest.raises(NnperfError, match="positive profiling cost"):
        most_uncertain(np.array([0.1, 0.2]), 1, cost_s=np.array([1.0, 0.0]))
