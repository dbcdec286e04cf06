"""The evaluation report rendered in headless Chromium at a laptop's 1400 px and a phone's 420 px: no table
wider than the page, the page never scrolling sideways, no text under 9 px, figures' text included (as shown,
scaled). Skipped where no Chromium is installed (``make browser`` installs Debian's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_evaluation_report import LONG_SYSTEM, handmade

from nnperf.report.evaluation import write_report
from nnperf.report.page_check import MIN_TEXT_PX, check_page, chromium, screenshot

pytestmark = [pytest.mark.slow,  # Chromium starts in 5-10 s per page on 2 cores
              pytest.mark.skipif(chromium() is None, reason="no Chromium installed (make browser)")]

MANY = {f"{name}-{i}": error for i, (name, error) in enumerate(
    [("resnet18", -0.003), ("mobilenet_v2", 0.0), ("a-rather-long-network-name", 1.77), ("squeezenet1_1", -0.27)]
    * 3)}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    write_report(handmade(MANY, LONG_SYSTEM), out)
    return out / "report.html"


@pytest.mark.parametrize("width", [1400, 420])
def test_the_report_reads_at_laptop_and_phone_width(report: Path, width: int) -> None:
    check = check_page(report, width)
    assert check.problems == ()
    assert check.smallest_text_px >= MIN_TEXT_PX
    assert len(check.figures) == 2 and all(px >= MIN_TEXT_PX for _, px in check.figures)


def test_the_check_fails_a_table_wider_than_the_page_and_a_shrunken_figure(tmp_path: Path, report: Path) -> None:
    wide = " ".join(f"<td>{'value' * 8}-{i}</td>" for i in range(12))
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width"></head><body>'
                    f'<div class="scroll" style="overflow-x:auto"><table><tr>{wide}</tr></table></div>'
                    '<p style="font-size:7px">tiny</p></body></html>', encoding="utf-8")
    problems = check_page(page, 1400).problems
    assert any(p.startswith("table 0") for p in problems)
    assert any(p.startswith("text of 7.0 px") for p in problems)


def test_a_screenshot_is_written(report: Path, tmp_path: Path) -> None:
    shot = screenshot(report, 420, tmp_path / "phone.png", height_px=800)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
