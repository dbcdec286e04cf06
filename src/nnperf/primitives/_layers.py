"""Layers other than convolutions in a layout: which layouts they run in, their key and their time there.

Primitive selection gives every layer a layout (Mulder et al. 2.1: a pooling or element-wise layer runs in
either). torch takes a logical NCHW tensor in either memory format, chw (contiguous) or hwc
(``torch.channels_last``), and an op's speed depends on it: a concatenation along channels copies strided rows
in hwc, a flatten of an hwc tensor copies it. :func:`time_layer` times a layer the way a selected network runs
it (its inputs in the layout, its output kept there), so the cost graph can charge each layout what it costs.
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING

from nnperf.ir import Layer
from nnperf.measure import HarnessConfig, Timing, measure
from nnperf.primitives._layout import CHW, HWC, Layout, to_layout

if TYPE_CHECKING:
    import torch

LAYER_LAYOUTS: tuple[Layout, ...] = (CHW, HWC)
"""The layouts a layer other than a convolution may run in: torch takes a logical NCHW tensor in either memory
format (hwc is ``torch.channels_last``), so every torch op runs in both."""


def layer_layouts(layer: Layer) -> tuple[Layout, ...]:
    """The layouts ``layer`` (not a convolution) can run in: chw and hwc when it reads or writes a 4-D tensor, chw
    alone otherwise (a tensor of another rank has one layout)."""
    ranks = {len(s) for s in layer.input_shapes} | {len(layer.output_shape)}
    return LAYER_LAYOUTS if 4 in ranks else (CHW,)


def layer_signature(layer: Layer) -> str:
    """What decides a layer's time, as text: its op, input and output shapes and attributes (not its name, nor
    its producers): two layers with the same signature cost the same."""
    shapes = ",".join("x".join(map(str, s)) for s in layer.input_shapes)
    out = "x".join(map(str, layer.output_shape))
    return f"{layer.op.value} {shapes} -> {out} {layer.attrs!r}"


def layer_key(layer: Layer) -> str:
    """A short stable key of :func:`layer_signature` (16 hex digits of its SHA-256)."""
    return hashlib.sha256(layer_signature(layer).encode()).hexdigest()[:16]


def time_layer(layer: Layer, layout: Layout, threads: int = 1, harness: HarnessConfig | None = None,
               seed: int = 0) -> Timing:
    """The time of one call of ``layer`` (torch, :func:`~nnperf.measure.backends.layer_module`'s module) with its
    4-D inputs in ``layout`` and its 4-D output moved to ``layout`` (free when the op keeps the memory format, as
    torch's ops mostly do), as a selected network runs it, on ``threads`` threads. A layout the layer cannot
    run in (:func:`layer_layouts`) raises ``ValueError``."""
    import torch

    from nnperf.measure.backends import LoopTimer, layer_module, random_inputs

    if layout not in layer_layouts(layer):
        raise ValueError(f"layer {layer.name!r} ({layer.op.value}) cannot run in {layout}; "
                         f"its layouts: {', '.join(map(str, layer_layouts(layer)))}")
    torch.set_num_threads(threads)
    module = layer_module(layer, seed)
    inputs = [torch.from_numpy(x) for x in random_inputs([tuple(s) for s in layer.input_shapes], seed)]
    inputs = [to_layout(x, layout) if x.dim() == 4 else x for x in inputs]
    with torch.inference_mode():
        return measure(LoopTimer(functools.partial(_run, module, inputs, layout)), harness or HarnessConfig())


def _run(module: torch.nn.Module, inputs: list[torch.Tensor], layout: Layout) -> torch.Tensor:
    y = module(*inputs)
    return to_layout(y, layout) if y.dim() == 4 else y
