"""A labelled image set this machine can make for itself: characters rendered from the fonts the system ships.

Inexact programs are judged by the top-1 accuracy they keep, which needs a network trained on real labelled data
and a held-out split large enough that a 1% budget is many answers. Nothing may be downloaded at run time, but
Debian installs TrueType fonts (DejaVu and Liberation come with Chromium; ``make fonts`` adds more): every
digit and capital letter (:data:`GLYPH_CLASSES`, 36 classes) drawn in each font, at a random size, offset and
slant, blurred by the downscale and with pixel noise, is a classification problem with real variation.

Fonts are split, not samples: :func:`split_fonts` holds whole fonts out, so the held-out accuracy says how a
network reads type it never saw. Everything is drawn from a seed, and the same seed gives the same images.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from nnperf.optimize.synthesize._errors import ValidationDataError

GLYPH_CLASSES = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""The classes: label i is the character ``GLYPH_CLASSES[i]``. Some pairs look alike in some fonts (0 and O,
1 and I), which caps the reachable accuracy below 100%."""

FONT_FOLDERS = ("/usr/share/fonts", "/usr/local/share/fonts")
"""Where :func:`font_files` looks (recursively) for ``.ttf`` and ``.otf`` files."""

SIZE_RANGE = (0.55, 0.85)
"""A glyph's em size as a fraction of the image side, drawn uniformly."""

SHIFT_FRACTION = 0.12
"""The largest offset of a glyph's centre from the image's, as a fraction of the side (each axis)."""

ROTATION_DEG = 12.0
"""The largest rotation either way."""

NOISE_SIGMA = 0.05
"""Standard deviation of the Gaussian pixel noise added to the [0, 1] image."""

SUPERSAMPLE = 3
"""Glyphs are drawn this many times larger and scaled down with antialiasing."""


def font_files(folders: Sequence[str | Path] = FONT_FOLDERS) -> list[Path]:
    """Every TrueType or OpenType font file under ``folders``, sorted by path (empty when there are none)."""
    found: set[Path] = set()
    for folder in folders:
        root = Path(folder)
        if root.is_dir():
            found.update(p for p in root.rglob("*") if p.suffix.lower() in {".ttf", ".otf"} and p.is_file())
    return sorted(found)


def split_fonts(fonts: Sequence[Path], held_out: float = 0.25, seed: int = 0) -> tuple[list[Path], list[Path]]:
    """(training fonts, held-out fonts): a seeded shuffle, ``held_out`` of them (at least one) held out."""
    if len(fonts) < 2:
        raise ValidationDataError(f"glyphs: splitting fonts needs at least 2 fonts, found {len(fonts)} (install "
                                  "some: make fonts)")
    order = [fonts[i] for i in np.random.default_rng(seed).permutation(len(fonts))]
    count = min(max(round(held_out * len(fonts)), 1), len(fonts) - 1)
    return sorted(order[count:]), sorted(order[:count])


@lru_cache(maxsize=512)
def _font(path: str, size_px: int):  # type: ignore[no-untyped-def]
    from PIL import ImageFont

    return ImageFont.load_default(size=size_px) if not path else ImageFont.truetype(path, size_px)


def render_glyph(character: str, font: Path | None, side_px: int, rng: np.random.Generator) -> np.ndarray:
    """One ``side_px`` x ``side_px`` float32 image in [0, 1] of ``character`` (white on black) in ``font``
    (None: Pillow's own scalable font), at a size, offset and rotation drawn from ``rng``, with pixel noise."""
    from PIL import Image, ImageDraw

    big = side_px * SUPERSAMPLE
    size = max(4, int(rng.uniform(*SIZE_RANGE) * big))
    image = Image.new("L", (big, big), 0)
    centre = (big / 2 + rng.uniform(-SHIFT_FRACTION, SHIFT_FRACTION) * big,
              big / 2 + rng.uniform(-SHIFT_FRACTION, SHIFT_FRACTION) * big)
    ImageDraw.Draw(image).text(centre, character, fill=255, font=_font(str(font or ""), size), anchor="mm")
    image = image.rotate(float(rng.uniform(-ROTATION_DEG, ROTATION_DEG)), resample=Image.Resampling.BILINEAR)
    small = np.asarray(image.resize((side_px, side_px), Image.Resampling.LANCZOS), dtype=np.float32) / 255.0
    return np.clip(small + rng.normal(0.0, NOISE_SIGMA, small.shape).astype(np.float32), 0.0, 1.0)


def glyph_arrays(count: int, side_px: int = 32, fonts: Sequence[Path] | None = None,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """``count`` glyph images ``(count, 1, side_px, side_px)`` float32 in [0, 1], their labels, and the number of
    fonts drawn from: the classes in turn (balanced to within one sample), each in a font drawn from ``fonts``
    (default: :func:`font_files`, else Pillow's own font), in a seeded random order. As a validation set:
    :func:`nnperf.optimize.synthesize._data.glyph_set`."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationDataError(f"glyphs: the count must be a positive integer, got {count!r}")
    if isinstance(side_px, bool) or not isinstance(side_px, int) or side_px < 8:
        raise ValidationDataError(f"glyphs: the image side must be an integer >= 8 pixels, got {side_px!r}")
    chosen: list[Path | None] = list(font_files() if fonts is None else fonts) or [None]
    rng = np.random.default_rng(seed)
    labels = np.arange(count) % len(GLYPH_CLASSES)
    images = np.stack([render_glyph(GLYPH_CLASSES[label], chosen[int(rng.integers(len(chosen)))], side_px, rng)
                       for label in labels])[:, None]
    order = rng.permutation(count)
    return images[order], labels[order], len(chosen)
