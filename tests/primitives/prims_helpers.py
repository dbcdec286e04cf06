"""What the primitive tests share: every registered primitive, and one primitive checked against conv2d."""

from __future__ import annotations

import torch

from nnperf.primitives import ConvConfig, Primitive, all_primitives, from_layout, reference_conv2d, to_layout

PRIMITIVES = all_primitives()
NAMES = [p.name for p in PRIMITIVES]


def relative_error(primitive: Primitive, config: ConvConfig, seed: int = 0) -> float:
    """max |primitive - conv2d| / max |conv2d| on ``config``'s random operands, the input in the primitive's
    layout and the output read back from it."""
    x, w, b = config.random_operands(seed)
    with torch.inference_mode():
        ref = reference_conv2d(x, w, b, config)
        y = primitive.run(to_layout(x, primitive.input_layout), w, b, config)
        got = from_layout(y, primitive.output_layout, config.f)
    assert got.shape == ref.shape == config.output_shape()
    return float((got - ref).abs().max() / ref.abs().max().clamp_min(1e-12))
