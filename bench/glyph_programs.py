"""What the benches that time whole programs of the trained glyph networks share: the networks, their sources
(calibrated on the first glyphs of the held-out fonts, judged on the rest), the command line and a ratio's cell."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from synthesize_networks import glyph_network

from nnperf.optimize.synthesize import ProgramSpec, Sources, ValidationSet, load_validation, make_sources

GLYPH_NETWORKS = ("glyphs-resnet18", "glyphs-mobilenet_v2", "glyphs-googlenet", "glyphs-squeezenet")
CALIBRATION = 32
"""Glyphs the int8 ranges are calibrated on; the others judge accuracy."""
ALL_INT8_NCHWC = ProgramSpec("onnxruntime", 1, layout="nchwc")
"""One thread, NCHWc: give it the layers (``with_(inexact=...)``) for the all-int8 program."""


def glyph_sources(network: str, cache: Path) -> tuple[ValidationSet, Any, Sources]:
    """The held-out glyphs, the trained ``network`` (``glyphs-FAMILY``) and its sources, calibrated on the first
    :data:`CALIBRATION` glyphs."""
    data = load_validation("glyphs", (1, 32, 32))
    calibration = ValidationSet("calibration", data.inputs[:CALIBRATION], data.labels[:CALIBRATION])
    module = glyph_network(network.removeprefix("glyphs-"), cache)
    return data, module, make_sources(module, None, calibration)


def arguments(description: str, budget_s: float) -> argparse.Namespace:
    """The command line of such a bench: ``--networks``, ``--budget-s`` (of interleaved rounds per network),
    ``--glyph-cache`` and ``--json``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--networks", nargs="+", default=list(GLYPH_NETWORKS))
    parser.add_argument("--budget-s", type=float, default=budget_s)
    parser.add_argument("--glyph-cache", type=Path, default=Path.home() / ".cache" / "nnperf" / "glyphs")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args()


def cell(ratio: dict[str, Any]) -> str:
    """A paired ratio's median and interval, three decimals."""
    return f"{ratio['median']:.3f} [{ratio['ci_low']:.3f}, {ratio['ci_high']:.3f}]"
