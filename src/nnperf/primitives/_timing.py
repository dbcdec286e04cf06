"""Timing a primitive or a layout transformation with the measurement harness (``nnperf.measure.measure``)."""

from __future__ import annotations

import functools

from nnperf.measure import HarnessConfig, Timing, measure
from nnperf.measure.backends import LoopTimer
from nnperf.primitives._base import Primitive
from nnperf.primitives._config import ConvConfig
from nnperf.primitives._layout import LayoutTransform, to_layout

DEFAULT_HARNESS = HarnessConfig()


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    try:
        import cv2
    except ImportError:
        return
    cv2.setNumThreads(threads)


def time_primitive(primitive: Primitive, config: ConvConfig, threads: int = 1,
                   harness: HarnessConfig = DEFAULT_HARNESS, seed: int = 0) -> Timing:
    """The time of one prepared ``primitive`` call on ``config`` (weights prepared beforehand, not timed), with
    ``threads`` threads (torch and OpenCV process-wide, ONNX Runtime per session)."""
    import torch

    primitive.check(config)
    _set_threads(threads)
    x, w, b = config.random_operands(seed)
    with torch.inference_mode():
        bound = primitive.prepare(w, b, config, threads)
        return measure(LoopTimer(functools.partial(bound, to_layout(x, primitive.input_layout))), harness)


def time_transform(transform: LayoutTransform, batch: int, c: int, im: tuple[int, int], threads: int = 1,
                   harness: HarnessConfig = DEFAULT_HARNESS, seed: int = 0) -> Timing:
    """The time of one layout transformation of a (batch, c, im) activation (Mulder et al. 3.2.2: (c, im) -> R)."""
    import torch

    _set_threads(threads)
    x = torch.randn((batch, c, *im), generator=torch.Generator().manual_seed(seed))
    with torch.inference_mode():
        src = to_layout(x, transform.src)
        return measure(LoopTimer(functools.partial(transform.run, src, c)), harness)
