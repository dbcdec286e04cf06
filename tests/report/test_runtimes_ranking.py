"""The ranking of a network across calibrated systems: Kendall's tau between the predicted and measured orders."""

from __future__ import annotations

import pytest

from nnperf.report.runtimes import RuntimeLatency, RuntimeRanking


def _ranking(*pairs: tuple[float, float | None]) -> RuntimeRanking:
    runtimes = tuple(RuntimeLatency(i, f"s{i}", "fake", p, m) for i, (p, m) in enumerate(pairs))
    return RuntimeRanking("net", runtimes, (), verified=True)


def test_tau_compares_the_predicted_order_with_the_measured_one() -> None:
    assert _ranking((1.0, 2.0), (2.0, 3.0), (3.0, 4.0)).kendall_tau == pytest.approx(1.0)
    assert _ranking((1.0, 4.0), (2.0, 3.0), (3.0, 2.0)).kendall_tau == pytest.approx(-1.0)
    assert _ranking((1.0, 1.0), (2.0, 3.0), (3.0, 2.0)).kendall_tau == pytest.approx(1 / 3)


def test_tau_is_none_where_fewer_than_two_were_measured_or_an_order_is_one_tie() -> None:
    assert _ranking((1.0, 2.0), (2.0, None)).kendall_tau is None
    assert _ranking((1.0, 2.0), (1.0, 3.0)).kendall_tau is None  # predicted alike: no predicted order
    assert _ranking((1.0, 2.0), (2.0, 2.0)).kendall_tau is None
