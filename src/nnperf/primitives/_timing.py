"""Timing a primitive or a layout transformation with the measurement harness (``nnperf.measure.measure``).

:func:`primitive_timer` and :func:`transform_timer` build the timer of one prepared call (a
``nnperf.measure.Timer``) without timing it, so that a caller can time several of them together
(``nnperf.measure.measure_interleaved``); :func:`time_primitive` and :func:`time_transform` measure one such
timer to the harness's stopping rule. Each takes a ``device`` (default "cpu"; "cuda" or "cuda:N" for a CUDA GPU,
see ``_device``): the operands are made on the CPU from the seed and moved there, and a CUDA timer synchronizes the
device around each timed block.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from nnperf.measure import HarnessConfig, Timer, Timing, measure
from nnperf.measure.backends import LoopTimer, SyncedLoopTimer
from nnperf.primitives._base import Primitive
from nnperf.primitives._config import ConvConfig
from nnperf.primitives._device import device_operands, synchronizer, to_device
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
    that timers built now can be timed later, interleaved with others, as if inside one ``inference_mode``. With
    ``synchronize`` (a device's, :func:`~nnperf.primitives._device.synchronizer`) it is a :class:`SyncedLoopTimer`:
    the clock starts after, and stops after, a synchronization of the device."""

    def __init__(self, run: Callable[[], Any], synchronize: Callable[[], Any] | None = None) -> None:
        import torch

        self._inference_mode = torch.inference_mode
        self._loop: Timer = LoopTimer(run) if synchronize is None else SyncedLoopTimer(run, synchronize)

    def time_block(self, n: int) -> float:
        with self._inference_mode():
            return self._loop.time_block(n)


def primitive_timer(primitive: Primitive, config: ConvConfig, threads: int = 1, seed: int = 0,
                    device: str = "cpu") -> Timer:
    """The timer of one prepared ``primitive`` call on ``config``, with ``threads`` threads (torch and OpenCV
    process-wide, set now; ONNX Runtime per session), on ``device`` ("cpu", "cuda" or "cuda:N").

    The weights are prepared and the input is put in the primitive's input layout now, outside the timed region;
    a primitive that does not apply or does not run on ``device`` raises (``PrimitiveError``, ``UnavailableError``),
    as does a device that is not here; a library that refuses the shape may raise here or on the first timed call.
    The operands are the seed's on every device (made on the CPU, then moved).
    """
    import torch

    primitive.check(config, device)
    _set_threads(threads)
    x, w, b = device_operands(config, seed, device)
    with torch.inference_mode():
        bound = primitive.prepare(w, b, config, threads)
        return _InferenceTimer(functools.partial(bound, to_layout(x, primitive.input_layout)), synchronizer(device))


def transform_timer(transform: LayoutTransform, batch: int, c: int, im: tuple[int, int], threads: int = 1,
                    seed: int = 0, device: str = "cpu") -> Timer:
    """The timer of one layout transformation of a (batch, c, im) activation (Mulder et al. 3.2.2: (c, im) -> R)
    on ``device``, the source activation (made on the CPU from the seed, then moved) put in ``transform.src`` now,
    outside the timed region."""
    import torch

    _set_threads(threads)
    (x,) = to_device((torch.randn((batch, c, *im), generator=torch.Generator().manual_seed(seed)),), device)
    with torch.inference_mode():
        src = to_layout(x, transform.src)
    return _InferenceTimer(functools.partial(transform.run, src, c), synchronizer(device))


def time_primitive(primitive: Primitive, config: ConvConfig, threads: int = 1,
                   harness: HarnessConfig = DEFAULT_HARNESS, seed: int = 0, device: str = "cpu") -> Timing:
    """The time of one prepared ``primitive`` call on ``config`` (weights prepared beforehand, not timed), with
    ``threads`` threads (torch and OpenCV process-wide, ONNX Runtime per session), on ``device``."""
    return measure(primitive_timer(primitive, config, threads, seed, device), harness)


def time_transform(transform: LayoutTransform, batch: int, c: int, im: tuple[int, int], threads: int = 1,
                   harness: HarnessConfig = DEFAULT_HARNESS, seed: int = 0, device: str = "cpu") -> Timing:
    """The time of one layout transformation of a (batch, c, im) activation (Mulder et al. 3.2.2: (c, im) -> R) on
    ``device``."""
    return measure(transform_timer(transform, batch, c, im, threads, seed, device), harness)
