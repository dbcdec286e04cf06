"""Parsing of shape arguments such as ``1x3x224x224`` or ``input=1x3x224x224``."""

from __future__ import annotations

import argparse

Shape = tuple[int, ...]
"""A tensor's shape, as :func:`nnperf.api.load_model` takes it."""


def parse_shape(text: str) -> Shape:
    """'1x3x224x224' -> (1, 3, 224, 224); argparse turns the ValueError into a usage error."""
    try:
        shape = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad shape {text!r}: expected sizes joined by 'x', e.g. 1x3x224x224") from None
    if not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(f"bad shape {text!r}: every size must be a positive integer")
    return shape


def parse_input_shape(text: str) -> tuple[str, Shape]:
    """'NAME=1x3x224x224' or '1x3x224x224' (for the only input, name filled in later as '')."""
    name, _, shape = text.rpartition("=")
    return name, parse_shape(shape)
