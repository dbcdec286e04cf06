"""Number and shape formatting for display (SI inside the code, prefixes only here)."""

from __future__ import annotations

import sys

from rich.console import Console

from nnperf.ir import shape_text

__all__ = ["console", "shape_text", "si"]


def si(count: float, unit: str = "") -> str:
    """A count with an SI prefix: 1.81 G, 11.7 M, 832 k, 64."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(count) >= factor:
            return f"{count / factor:.3g} {prefix}{unit}"
    text = f"{int(count)}" if float(count).is_integer() else f"{count:.3g}"
    return f"{text} {unit}".rstrip()


def console() -> Console:
    """A console for stdout; wide when piped, so tables do not wrap in logs.

    Markup is off: names such as 'torch/cpu[threads=1]' print as they are.
    Styles go through ``rich.text.Text`` instead.
    """
    return Console(width=None if sys.stdout.isatty() else 200, soft_wrap=False, markup=False)
