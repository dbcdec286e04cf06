"""Timing a primitive or a layout transformation with the measurement harness (``nnperf.measure.measure``).

:func:`primitive_timer` and :func:`transform_timer` build the timer of one prepared call (a
``nnperf.measure.Timer``) without timing it, so that a caller can time several of them together
(``nnperf.measure.measure_interleaved``); :func:`time_primitive` and :func:`time_transform` measure one such
timer to the harness's stopping rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from nnperf.measure import HarnessConfig, Timer, Timing, measure
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


class _InferenceTimer:
    """A :class:`LoopTimer` whose blocks run under ``torch.inference_mode`` (entered outside the timed loop), so
    that timers built now can be timed later, interleaved with others, as if inside one ``inference_mode``."""

    def __init__(self, run: Callable[[], Any]) -> None:
        import torch

        self._inference_mode = torch.inference_mode
        self._loop = LoopTimer(run)

    def time_block(self, n: int) -> float:
        with self._inference_mode():
            return self._loop.time_block(n)


def primitive_timer(primitive: Primitive, config: ConvConfig, threads: int = 1, seed: int = 0) -> Timer:
    """The timer of one prepared ``primitive`` call on ``config``, with ``threads`` threads (torch and OpenCV
    process-wide, set now; ONNX Runtime per session).

    The weights are prepared and the input is put in the primitive's input layout now, outside the timed region;
    a primitive that does not apply raises ``PrimitiveError``, a library that refuses the shape may raise here or
    on the first timed call.
    """
    import torch

    primitive.check(config)
    _set_threads(threads)
    x, w, b = config.random_operands(seed)
    with torch.inference_mode():
        bound = primitive.prepare(w, b, config, threads)
        return _InferenceTimer(functools.partial(bound, to_layout(x, primitive.input_layout)))


def transform_timer(transform: LayoutTransform, batch: int, c: int, im: tuple[int, int], threads: int = 1,
                    seed: int = 0) -> Timer:
    """The timer of one layout transformation of a (batch, c, im) activation (Mulder et al. 3.2.2: (c, im) -> R),
    the source activation put in ``transform.src`` now, outside the timed region."""
    import torch

    _set_threads(threads)
    x = torch.randn((batch, c, *im), generator=torch.Generator().manual_seed(seed))
    with torch.inference_mode():
        src = to_layout(x, transform.src)
    return _InferenceTimer(functools.partial(transform.run, src, c))


def time_primitive(primitive: Primitive, config: ConvConfig, threads: int = 1,
                   harness: HarnessConfig = DEFAULT_HARNESS, seed: int = 0) -> Timing:
    """The time of one prepared ``primitive`` call on ``config`` (weights prepared beforehand, not timed), with
    ``threads`` threads (torch and OpenCV process-wide, ONNX Runtime per session)."""
    return measure(primitive_timer(primitive, config, threads, seed), harness)


def time_transform(transform: LayoutTransform, batch: int, c: int, im: tuple[int, int], threads: int = 1,
                   harness: HarnessConfig = DEFAULT_HARNESS, seed: int = 0) -> Timing:
    """The time of one layout transformation of a (batch, c, im) activation (Mulder et al. 3.2.2: (c, im) -> R)."""
    return measure(transform_timer(transform, batch, c, im, threads, seed), harness)
