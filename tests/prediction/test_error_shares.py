"""The shares of networks within +/-5% and +/-10% beside every MAPE, and which error (raw or speed-adjusted) a user
should read: hand-computed values."""

from __future__ import annotations

import math

import pytest

from nnperf.prediction.evaluation import (
    READ_ADJUSTED_DRIFT,
    Evaluation,
    LayerComparison,
    NetworkComparison,
    error_to_read,
    mape,
    reading_advice,
    share_key,
    share_within,
)


def test_shares_within_5_and_10_percent_are_counted_by_hand() -> None:
    errors = [0.03, -0.06, 0.12, 0.0]
    assert share_within(errors, 0.05) == 2 / 4  # +3% and 0%
    assert share_within(errors, 0.10) == 3 / 4  # and -6%
    assert mape(errors) == pytest.approx((3 + 6 + 12 + 0) / 4 / 100)


def test_an_error_on_the_bound_counts_as_within_and_none_gives_nan() -> None:
    assert 1.05 / 1 - 1 > 0.05  # the float is a hair above the bound it prints as
    assert share_within([1.05 / 1 - 1, 0.9 / 1 - 1], 0.05) == 0.5  # +5.0% within, -10.0% not
    assert share_within([-0.1000001], 0.10) == 0.0
    assert math.isnan(share_within([], 0.05)) and math.isnan(mape([]))
    assert (share_key(0.05), share_key(0.10, adjusted=True)) == ("within_5pct", "adjusted_within_10pct")


def _network(name: str, error: float, adjusted_error: float | None) -> NetworkComparison:
    """Measured 10 ms whole; predicted ``error`` off it; speed-adjusted time such that the prediction is
    ``adjusted_error`` off that."""
    predicted = 0.010 * (1 + error)
    adjusted = None if adjusted_error is None else predicted / (1 + adjusted_error)
    return NetworkComparison(network=name, macs=1, measured_s=0.010, measured_spread=0.01,
                             measured_layer_sum_s=0.010, predicted_layer_sum_s=0.010,
                             predicted_s={"composed": predicted},
                             layers=(LayerComparison("conv", "conv", "conv", 0.010, 0.010),), prediction_time_s=0.0,
                             adjusted_s=adjusted)


def test_an_evaluation_carries_raw_and_adjusted_shares_in_its_json() -> None:
    raw, adjusted = [0.03, -0.06, 0.12, 0.0], [0.01, 0.04, 0.09, -0.11]
    evaluation = Evaluation("sys", tuple(_network(f"n{i}", r, a) for i, (r, a) in enumerate(zip(raw, adjusted))),
                            ("composed",), {})
    assert evaluation.within("composed", 0.05) == 0.5 and evaluation.within("composed") == 0.75
    assert evaluation.adjusted_within("composed", 0.05) == 0.5  # +1% and +4%
    assert evaluation.adjusted_within("composed", 0.10) == 0.75  # and +9%; -11% is out
    summary = evaluation.to_dict()["summary"]
    assert summary["mape"]["composed"] == pytest.approx(0.0525)
    assert summary["adjusted_mape"]["composed"] == pytest.approx(0.0625)
    assert (summary["within_5pct"]["composed"], summary["within_10pct"]["composed"]) == (0.5, 0.75)
    assert summary["adjusted_within_5pct"]["composed"] == 0.5
    assert summary["adjusted_within_10pct"]["composed"] == 0.75
    # drifts (measured over adjusted, less 1) = (1 + adjusted error) / (1 + raw error) - 1: -1.9%, +10.6%, -2.7%,
    # -11%; median -2.3%, within 5%: the raw error is the one to read
    assert summary["error_to_read"] == "raw"
    assert "the raw one" in summary["error_to_read_reason"] and "median 0.98x" in summary["error_to_read_reason"]


def test_without_speed_adjusted_times_there_is_nothing_to_choose() -> None:
    evaluation = Evaluation("sys", (_network("a", 0.02, None),), ("composed",), {})
    summary = evaluation.to_dict()["summary"]
    assert summary["adjusted_within_5pct"] == {"composed": None} and summary["adjusted_mape"] == {"composed": None}
    assert summary["error_to_read"] is None and summary["error_to_read_reason"] is None
    assert summary["within_5pct"] == {"composed": 1.0}


@pytest.mark.parametrize(("drifts", "which"), [
    ([0.0], "raw"), ([0.049, -0.049], "raw"), ([READ_ADJUSTED_DRIFT + 0.001], "speed-adjusted"),
    ([-0.3], "speed-adjusted"), ([0.01, 0.2, 0.3], "speed-adjusted"), ([0.01, 0.02, 0.3], "raw"), ([], None)])
def test_the_error_to_read_follows_the_median_drift(drifts: list[float], which: str | None) -> None:
    assert error_to_read(drifts) == which


def test_the_advice_is_one_line_that_says_why() -> None:
    quiet, drifted = reading_advice([0.02]), reading_advice([0.30, 0.32])
    assert quiet is not None and drifted is not None
    assert quiet.startswith("Which error to read: the raw one. The network ran at 1.02x its time")
    assert "within +/-5%" in quiet
    assert drifted.startswith("Which error to read: the speed-adjusted one. The networks ran at a median 1.31x")
    assert "beyond +/-5%" in drifted
    assert "\n" not in quiet + drifted and reading_advice([]) is None
