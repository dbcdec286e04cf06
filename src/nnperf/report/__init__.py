"""Reporting: terminal tables, JSON documents, figures.

The display helpers are exported here; the report modules (``tables``, ``measurements``, ...) are imported by
name, so that ``import nnperf.report`` loads neither rich nor matplotlib.
"""

from nnperf.report._format import console, pyplot, shape_text, si, write_bytes, write_csv, write_png

__all__ = ["console", "pyplot", "shape_text", "si", "write_bytes", "write_csv", "write_png"]
