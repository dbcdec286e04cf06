"""Does a report page read at a given width? Render it in headless Chromium and measure, in the page, what
overflows and how small its smallest text is.

:func:`check_page` loads a copy of the page with a measuring script added, lets Chromium lay it out at the
window width asked for (``--dump-dom`` returns the document after its scripts ran) and reads back:

- ``page_overflow_px``: how far the page itself scrolls sideways;
- ``tables``: every visible table whose box is wider than the page or that scrolls sideways inside its box;
- ``smallest_text``: the smallest computed font size of any visible text, and the smallest text of every
  figure as shown: the pixel height of its smallest text at its own size (``data-min-text-px`` of the
  ``<source>`` or ``<img>`` the browser chose, which nnperf's report and :func:`figure_page` write) times its
  shown width over its own width.

:func:`screenshot` writes what a reader sees. Chromium is found as ``chromium``, ``chromium-browser``,
``google-chrome`` or ``$CHROMIUM``; Debian's package ``chromium`` provides it (``make browser``).
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nnperf.errors import NnperfError

MIN_TEXT_PX = 9.0
"""The smallest text a page may show: 9 px."""

_MARK = "nnperf-page-check"

_SCRIPT = """
<script>
window.addEventListener('load', () => {
  const width = document.documentElement.clientWidth;
  const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const result = {width: width, page_overflow_px: document.documentElement.scrollWidth - width,
                  tables: [], texts: [], figures: []};
  document.querySelectorAll('table').forEach((table, i) => {
    if (!visible(table)) return;
    const box = table.closest('.scroll') || table.parentElement;
    const r = table.getBoundingClientRect();
    const scrolls = box.scrollWidth - box.clientWidth;
    if (r.right > width + 1 || scrolls > 1) {
      const head = table.querySelector('th, td');
      result.tables.push({index: i, first_cell: head ? head.textContent : '', right_px: r.right,
                          scrolls_px: scrolls});
    }
  });
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let smallest = {px: 1e9, text: ''};
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.trim() || !node.parentElement) continue;
    const el = node.parentElement;
    if (el.closest('script, style') || !visible(el)) continue;
    const px = parseFloat(getComputedStyle(el).fontSize);
    if (px < smallest.px) smallest = {px: px, text: node.textContent.trim().slice(0, 60)};
  }
  result.texts.push(smallest);
  document.querySelectorAll('img').forEach((img, i) => {
    if (!visible(img) || !img.naturalWidth) return;
    const picture = img.closest('picture');
    let declared = parseFloat(img.dataset.minTextPx || 'NaN');
    if (picture) {
      picture.querySelectorAll('source').forEach((source) => {
        if (img.currentSrc && img.currentSrc === source.srcset) declared = parseFloat(source.dataset.minTextPx);
      });
    }
    result.figures.push({index: i, alt: img.alt, natural_px: img.naturalWidth, shown_px: img.clientWidth,
                         min_text_px: declared * img.clientWidth / img.naturalWidth});
  });
  const out = document.createElement('pre');
  out.id = 'MARK';
  out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
});
</script>
""".replace("MARK", _MARK)


@dataclass(frozen=True)
class PageCheck:
    """What Chromium measured of one page at one window width (pixels)."""

    page: str
    width_px: int
    page_overflow_px: float
    overflowing_tables: tuple[str, ...]
    """Each as 'table N (first cell ...): ...' for a table wider than the page or scrolling inside its box."""
    smallest_text_px: float
    smallest_text: str
    figures: tuple[tuple[str, float], ...]
    """(alt text, pixel height of the figure's smallest text as shown), for every visible figure."""

    @property
    def problems(self) -> tuple[str, ...]:
        """Everything that fails the page at this width, in words (none: the page reads)."""
        found = list(self.overflowing_tables)
        if self.page_overflow_px > 1:
            found.append(f"the page scrolls sideways by {self.page_overflow_px:.0f} px")
        if self.smallest_text_px < MIN_TEXT_PX:
            found.append(f"text of {self.smallest_text_px:.1f} px: {self.smallest_text!r}")
        found += [f"figure {alt!r}: smallest text {px:.1f} px as shown" if math.isfinite(px) else
                  f"figure {alt!r}: its smallest text is unknown (no data-min-text-px)" for alt, px in self.figures
                  if not px >= MIN_TEXT_PX]
        return tuple(found)


def chromium() -> str | None:
    """The path of a Chromium-like browser, or None."""
    candidates = [os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"]
    for name in filter(None, candidates):
        found = shutil.which(name)
        if found:
            return found
    return None


def _browser() -> str:
    found = chromium()
    if found is None:
        raise NnperfError("no Chromium found: install Debian's package chromium (make browser) or set $CHROMIUM")
    return found


def _run(arguments: Sequence[str], timeout_s: float) -> str:
    command = [_browser(), "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--disable-dev-shm-usage", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise NnperfError(f"Chromium failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return done.stdout


def check_page(page: Path, width_px: int, height_px: int = 2000, timeout_s: float = 90.0) -> PageCheck:
    """Lays ``page`` out at ``width_px`` in headless Chromium and measures it (see the module docstring)."""
    text = page.read_text(encoding="utf-8")
    body_end = text.rfind("</body>")
    if body_end < 0:
        raise NnperfError(f"{page} is not an HTML page with a <body>")
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / page.name
        copy.write_text(text[:body_end] + _SCRIPT + text[body_end:], encoding="utf-8")
        dom = _run([f"--window-size={width_px},{height_px}", "--virtual-time-budget=5000", "--dump-dom",
                    copy.as_uri()], timeout_s)
    start = dom.find(f'<pre id="{_MARK}">')
    if start < 0:
        raise NnperfError(f"Chromium returned no measurement of {page}")
    result = json.loads(html.unescape(dom[start + len(f'<pre id="{_MARK}">'):dom.index("</pre>", start)]))
    tables = tuple(f"table {t['index']} (first cell {t['first_cell']!r}): right edge {t['right_px']:.0f} px, "
                   f"scrolls {t['scrolls_px']:.0f} px in its box" for t in result["tables"])
    [smallest] = result["texts"]
    return PageCheck(str(page), width_px, float(result["page_overflow_px"]), tables, float(smallest["px"]),
                     smallest["text"], tuple((f["alt"], math.nan if f["min_text_px"] is None else float(f["min_text_px"]))
                                                  for f in result["figures"]))


def screenshot(page: Path, width_px: int, path: Path, height_px: int = 2400, timeout_s: float = 90.0) -> Path:
    """A PNG of the first ``height_px`` of ``page`` at ``width_px`` as Chromium draws it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _run([f"--window-size={width_px},{height_px}", "--virtual-time-budget=5000", f"--screenshot={path}",
          page.resolve().as_uri()], timeout_s)
    return path


def figure_page(pngs: Sequence[Path], path: Path, title: str) -> Path:
    """A page showing ``pngs`` one under another, as wide as the page allows (never wider than themselves),
    each ``<img>`` carrying the smallest-text height its PNG metadata records (see
    :func:`nnperf.report._format.png_bytes`): how a reader sees figures that nnperf wrote as files."""
    from PIL import Image

    from nnperf.report._format import SMALLEST_TEXT_KEY

    items = []
    for png in pngs:
        with Image.open(png) as image:
            declared = getattr(image, "text", {}).get(SMALLEST_TEXT_KEY, "nan")
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        items.append(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(png.name)}" '
                     f'data-min-text-px="{html.escape(declared)}"><figcaption>{html.escape(png.name)}</figcaption>'
                     "</figure>")
    path.write_text(
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
        f'content="width=device-width, initial-scale=1"><title>{html.escape(title)}</title><style>body '
        "{ font-family: sans-serif; margin: 1em; font-size: 16px; } img { max-width: 100%; height: auto; } "
        f"figure {{ margin: 0 0 1.5em; }}</style></head><body><h1>{html.escape(title)}</h1>{''.join(items)}"
        "</body></html>", encoding="utf-8")
    return path
