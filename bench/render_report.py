"""Render an evaluation report (``nnperf evaluate --out DIR``) in headless Chromium and check its layout.

    python bench/render_report.py DIR/report.html [--width 900] [--shots OUT_DIR]

At each width (900 px by default, and 1400 px) it checks that the page does not scroll sideways (a long
heading wraps, a wide table scrolls inside its own box), that no heading is wider than the page, and that
every figure fits its column; with ``--shots`` it saves a full-page screenshot per width, with every
per-layer ``<details>`` opened. Needs playwright and its Chromium (``pip install playwright && playwright
install chromium``); without them it says so and exits 0, so that it can run anywhere.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CHECKS = """() => {
  const page = document.documentElement;
  const wide = [...document.querySelectorAll('h1, h2, p, dl, figure, details')]
    .filter(e => e.getBoundingClientRect().right > page.clientWidth + 1)
    .map(e => e.tagName + ': ' + e.textContent.slice(0, 60));
  const images = [...document.querySelectorAll('img')]
    .filter(i => i.getBoundingClientRect().width > i.parentElement.getBoundingClientRect().width + 1)
    .map(i => i.alt);
  return {scrollWidth: page.scrollWidth, clientWidth: page.clientWidth, wide, images};
}"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--width", type=int, action="append", help="viewport width(s) in px (default 900, 1400)")
    parser.add_argument("--shots", type=Path, help="folder for full-page screenshots")
    args = parser.parse_args(argv)
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        print("skipped: playwright is not installed (pip install playwright && playwright install chromium)")
        return 0
    failures = 0
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch()
        except Error as err:
            print(f"skipped: Chromium does not start ({str(err).splitlines()[0]}); run `playwright install chromium`")
            return 0
        for width in args.width or [900, 1400]:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(args.report.resolve().as_uri())
            page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            result = page.evaluate(CHECKS)
            ok = result["scrollWidth"] <= result["clientWidth"] and not result["wide"] and not result["images"]
            failures += not ok
            print(f"{width} px: {'ok' if ok else 'FAIL'} (page {result['scrollWidth']} px wide in "
                  f"{result['clientWidth']} px)" + "".join(f"\n  too wide: {w}" for w in result["wide"] +
                                                           result["images"]))
            if args.shots:
                args.shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.shots / f"report-{width}px.png"), full_page=True)
            page.close()
        browser.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
