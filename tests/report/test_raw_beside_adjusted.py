"""The adjusted error is never reported without the raw one: every output that prints or writes a speed-adjusted
error (``nnperf evaluate``'s terminal summary, JSON and HTML report, ``nnperf predict --verify``'s lines and JSON,
the held-out benchmarks' Markdown and JSON), rendered from a small constructed result, holds the raw figure beside
it, the shares within +/-5% and +/-10% beside each MAPE, and the one line that says which error to read.

The constructed networks: measured 10 ms, predicted +3% and -6% off (raw MAPE 4.5%, 1 of 2 within +/-5%, 2 of 2
within +/-10%), +1% and -2% off their speed-adjusted times (adjusted MAPE 1.5%, 2 of 2 within both). Their drifts,
measured over adjusted less 1, are 1.01 / 1.03 - 1 = -1.9% and 0.98 / 0.94 - 1 = +4.3%: median +1.2%, within 5%,
so the raw error is the one to read.
"""

from __future__ import annotations

import importlib.util
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nnperf.measure import PairedRatio, SpeedReading
from nnperf.prediction import LayerPrediction, NetworkPrediction, Verification
from nnperf.prediction.evaluation import Evaluation, LayerComparison, NetworkComparison, method_label
from nnperf.report.evaluation import summary_lines
from nnperf.report.evaluation_html import report_html
from nnperf.report.predictions import verification_summary

BENCH = Path(__file__).resolve().parents[2] / "bench"
MEASURED_S = 0.010
RAW = {"a": 0.03, "b": -0.06}
ADJUSTED = {"a": 0.01, "b": -0.02}
ADVICE = "Which error to read: the raw one. The networks ran at a median 1.01x their time"


def _network(name: str) -> NetworkComparison:
    predicted = MEASURED_S * (1 + RAW[name])
    return NetworkComparison(
        network=name, macs=10**6, measured_s=MEASURED_S, measured_spread=0.01, measured_layer_sum_s=MEASURED_S,
        predicted_layer_sum_s=predicted, predicted_s={"composed": predicted},
        layers=(LayerComparison("conv", "conv", "conv", MEASURED_S, predicted),), prediction_time_s=1e-4,
        adjusted_s=predicted / (1 + ADJUSTED[name]))


EVALUATION = Evaluation("fake/cpu[threads=1]", (_network("a"), _network("b")), ("composed",), {})


def test_evaluate_prints_the_raw_mape_and_shares_beside_the_adjusted_ones() -> None:
    lines = summary_lines(EVALUATION)
    assert (f"{method_label('composed')}: network MAPE 4.5%, within +/-5% 50%, +/-10% 100% of 2 networks; against "
            "the speed-adjusted measurements MAPE 1.5%, within +/-5% 100%, +/-10% 100%") in lines
    [advice] = [line for line in lines if line.startswith("Which error to read")]
    assert advice.startswith(ADVICE) and "within +/-5%" in advice


def test_evaluate_json_writes_the_raw_figures_beside_the_adjusted_ones() -> None:
    document = EVALUATION.to_dict()
    summary = document["summary"]
    assert summary["mape"]["composed"] == pytest.approx(0.045)
    assert summary["adjusted_mape"]["composed"] == pytest.approx(0.015)
    assert (summary["within_5pct"]["composed"], summary["within_10pct"]["composed"]) == (0.5, 1.0)
    assert (summary["adjusted_within_5pct"]["composed"], summary["adjusted_within_10pct"]["composed"]) == (1.0, 1.0)
    assert summary["error_to_read"] == "raw" and summary["error_to_read_reason"].startswith(ADVICE)
    for network in document["networks"]:
        assert network["error"]["composed"] == pytest.approx(RAW[network["network"]])
        assert network["adjusted_error"]["composed"] == pytest.approx(ADJUSTED[network["network"]])


class _Cells(HTMLParser):
    """The text of every cell of the table inside ``<figure id=ID>``, and of ``<p id=error-to-read>``."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.inside, self.cell = table_id, False, None
        self.cells: list[str] = []
        self.advice: str | None = None
        self._in_advice = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "figure":
            self.inside = dict(attrs).get("id") == self.table_id
        elif tag in ("td", "th") and self.inside:
            self.cell = ""
        elif tag == "p" and dict(attrs).get("id") == "error-to-read":
            self._in_advice, self.advice = True, ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.cells.append(self.cell)
            self.cell = None
        elif tag == "p":
            self._in_advice = False

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell += data
        if self._in_advice:
            self.advice = (self.advice or "") + data


def test_the_html_report_shows_raw_and_adjusted_columns_side_by_side() -> None:
    from nnperf.report.evaluation import report_figures

    cells = _Cells("methods")
    cells.feed(report_html(EVALUATION, report_figures(EVALUATION)))
    header, row = cells.cells[:6], cells.cells[7:]
    assert header == ["method", "what it is", "MAPE", "within +/-5% / +/-10%", "adjusted MAPE",
                      "adjusted within +/-5% / +/-10%"]
    assert row[2:6] == ["4.5%", "50% / 100%", "1.5%", "100% / 100%"]
    assert cells.advice is not None and cells.advice.startswith(ADVICE)


def _verification() -> Verification:
    """Measured 10 ms, predicted 11 ms (+10% raw); the network 2x the reference, which took 5.2 ms at calibration:
    10.4 ms at that speed (+5.8% adjusted); drift 10 / 10.4 - 1 = -3.8%."""
    prediction = NetworkPrediction("net", "fake/cpu[threads=1]", (LayerPrediction("conv", "conv", "conv", 0.011),),
                                   {"composed": 0.011})
    return Verification(prediction, 0.010, 0.010, {"conv": 0.010}, run_id=1, round_medians_s=(0.0098, 0.0102),
                        protocol="interleaved",
                        reference_ratio=PairedRatio("net", "reference", 2.0, 1.98, 2.02, 0.95, (2.0, 2.0), True),
                        speed=SpeedReading("resnet18@112", 0.0052, 0.0050))


def test_predict_verify_prints_and_writes_the_raw_error_beside_the_adjusted_one() -> None:
    check = _verification()
    lines = verification_summary(check)
    [speed] = [line for line in lines if line.startswith("machine speed")]
    assert speed.endswith("speed-adjusted error +5.8% beside the raw +10.0%")
    assert ("Which error to read: the raw one. The network ran at 0.96x its time at the calibration's speed"
            in lines[lines.index(speed) + 1])
    verify = check.to_dict()["verify"]
    assert verify["error"] == pytest.approx(0.10) and verify["adjusted_error"] == pytest.approx(0.011 / 0.0104 - 1)
    assert verify["speed_drift"] == pytest.approx(0.010 / 0.0104 - 1) and verify["error_to_read"] == "raw"


def _bench(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A bench script loaded as a module (its own folder first on the path, as when it runs)."""
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_the_heldout_corpus_bench_reports_raw_beside_adjusted(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench("heldout_corpus", monkeypatch)
    judged = []
    for name, raw in RAW.items():
        predicted = MEASURED_S * (1 + raw)
        adjusted = predicted / (1 + ADJUSTED[name])
        judged.append(bench.Judged(name, 1.0, {"composed": predicted}, "composed", [MEASURED_S] * 3,
                                   [1.0, 1.0, 1.0], [adjusted], [MEASURED_S / adjusted - 1]))
    meta: dict[str, Any] = {"label": "torch:1", "calibration_wall_s": 300.0, "sample_budget_s": 60.0,
                            "predict_many_s": 0.01, "primary": "composed", "failed": {}}
    text = bench.markdown(meta, judged)
    assert "| composed | 2 | 4.5% | 1/2 / 2/2 | 1.5% | 2/2 / 2/2 | 2/2 |" in text
    assert ADVICE in text
    summary = bench.summary(judged)
    assert summary["composed"]["mape"] == pytest.approx(0.045)
    assert summary["composed"]["adjusted_mape"] == pytest.approx(0.015)
    assert (summary["composed"]["within_5pct"], summary["composed"]["adjusted_within_5pct"]) == (0.5, 1.0)
    assert summary["error_to_read"] == "raw"


def test_the_heldout_prediction_bench_reports_raw_beside_adjusted(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench("heldout_prediction", monkeypatch)
    reference_s = 0.001
    networks = [bench.NetworkResult(name, [MEASURED_S, MEASURED_S], {"composed": MEASURED_S * (1 + RAW[name])}, 0.01,
                                    [reference_s * (1 + ADJUSTED[name]) / (1 + RAW[name])] * 2, reference_s)
                for name in RAW]
    result = bench.SystemResult("torch:1", 300.0, 1.0, networks)
    text = bench.markdown(result, 2)
    raw_at, adjusted_at = text.index("| composed | 2 | 4.5% |"), text.index("| composed | 2 | 1.5% |")
    assert raw_at < adjusted_at  # the raw table first, the one at the calibration's speed under it
    assert "| composed | 2 | 4.5% | 1/2 | 2/2 | 0/2 |" in text and "| composed | 2 | 1.5% | 2/2 | 2/2 | 0/2 |" in text
    assert ADVICE in text[adjusted_at:]
    document = result.as_dict()
    assert document["summary"]["composed"]["mape"] == pytest.approx(0.045)
    assert document["summary_at_reference_speed"]["composed"]["mape"] == pytest.approx(0.015)
    assert document["error_to_read"] == "raw"
