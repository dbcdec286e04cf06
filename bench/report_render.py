"""Do nnperf's reports and figures read on a laptop and on a phone? Runs the commands a user runs, renders what
they write in headless Chromium at 1400 px and 420 px, screenshots every page, and fails (exit 1) on a table
wider than the page, a page that scrolls sideways, or text under 9 px, as measured in the page
(``nnperf.report.page_check``).

Run: .venv/bin/python bench/report_render.py --db CALIBRATED.db [--out bench/results/reports/render]
     [--json bench/results/reports/report_render.json]

- ``nnperf evaluate resnet18 mobilenet_v2 --out OUT/eval`` (the store must hold a torch calibration: ``nnperf
  calibrate --backend torch --db DB``; the networks' measurements are reused when stored): report.html.
- ``nnperf partition alexnet --bitrate 60Mbps --tx-power 0.5W --out OUT/part`` and ``nnperf accel sweep --network
  alexnet --glb 8,16,32,64,128 --pe 12x14,16x16 --plot OUT/glb.png``: PNG files, shown on one page each
  (``figure_page``) as a browser shows an image, never wider than itself. Their text is checked at 1400 px;
  at 420 px a phone shrinks a laptop-sized PNG, and the table reports how small its text gets there (the
  evaluation report switches to its phone rendering instead).

Needs Chromium (``make browser``). Stdout gets a table: page, width, what was measured, problems; the result
file keeps it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from _shared import print_table, result_path, table_rows, write_result

from nnperf.report.page_check import MIN_TEXT_PX, PageCheck, check_page, chromium, figure_page, screenshot

WIDTHS = (1400, 420)


def nnperf(*arguments: str) -> None:
    command = [sys.executable, "-m", "nnperf", *arguments]
    print(f"$ nnperf {' '.join(arguments)}", file=sys.stderr)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def row(check: PageCheck, screenshot_path: Path, enforced: bool) -> list[str]:
    figures = ", ".join(f"{px:.1f}" for _, px in check.figures) or "none"
    problems = "; ".join(check.problems) or "none"
    verdict = "pass" if not check.problems else ("FAIL" if enforced else "shown scaled (not enforced)")
    return [f"{Path(check.page).parent.name}/{Path(check.page).name}", str(check.width_px),
            f"{check.page_overflow_px:.0f}", str(len(check.overflowing_tables)), f"{check.smallest_text_px:.1f}",
            figures, f"{verdict}: {problems}", str(screenshot_path)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="a store with a torch calibration")
    parser.add_argument("--out", type=Path, default=Path("bench/results/reports/render"))
    parser.add_argument("--json", type=Path, default=result_path("reports", "report_render"))
    args = parser.parse_args()
    if chromium() is None:
        print("no Chromium: run `make browser` first", file=sys.stderr)
        return 2
    out = args.out
    nnperf("evaluate", "resnet18", "mobilenet_v2", "--backend", "torch", "--db", args.db, "--out", str(out / "eval"))
    nnperf("partition", "alexnet", "--bitrate", "60Mbps", "--tx-power", "0.5W", "--out", str(out / "part"))
    nnperf("accel", "sweep", "--network", "alexnet", "--glb", "8,16,32,64,128", "--pe", "12x14,16x16",
           "--plot", str(out / "glb" / "glb.png"))
    pages = [(out / "eval" / "report.html", True)]
    pages.append((figure_page(sorted((out / "part").glob("*.png")), out / "part" / "figures.html",
                              "nnperf partition alexnet --bitrate 60Mbps --tx-power 0.5W"), False))
    pages.append((figure_page([out / "glb" / "glb.png"], out / "glb" / "figures.html",
                              "nnperf accel sweep --network alexnet --glb 8,16,32,64,128 --pe 12x14,16x16"), False))
    headers = ["page", "width px", "page scrolls sideways px", "tables overflowing", "smallest text px",
               "figures' smallest text px as shown", f"verdict (limit {MIN_TEXT_PX:.0f} px)", "screenshot"]
    failed, rows, checks = False, [], []
    for page, is_report in pages:
        for width in WIDTHS:
            check = check_page(page, width)
            shot = screenshot(page, width, out / "screenshots" / f"{page.parent.name}-{width}px.png")
            enforced = is_report or width == WIDTHS[0]
            failed |= enforced and bool(check.problems)
            rows.append(row(check, shot, enforced))
            checks.append({**asdict(check), "problems": list(check.problems), "enforced": enforced})
    print_table(headers, rows)
    write_result(args.json, method="reports", concern="reports on a laptop and a phone", values={"checks": checks},
                 headline={"rows": table_rows(headers, rows)})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
