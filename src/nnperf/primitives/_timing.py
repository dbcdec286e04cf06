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
from typing import TYPE_CHECKING, Any

from nnperf.measure import HarnessConfig, Timer, Timing, measure
from nnperf.measure.backends import LoopTimer, SyncedLoopTimer
from nnperf.primitives._base import Primitive
from nnperf.primitives._config import ConvConfig
from nnperf.primitives._device import device_operands, synchronizer, to_device
from nnperf.primitives._layout import LayoutTransform, to_layout

if TYPE_CHECKING:
    import torch

DEFAULT_HARNESS = HarnessConfig()

Operands = Callable[[], "tuple[torch.Tensor, torch.Tensor, torch.Tensor]"]
"""What makes a primitive's (x, w, b) of a configuration on a device: :func:`device_operands`, or
:class:`SharedOperands`."""


class SharedOperands:
    """The operands (x, w, b) of one configuration, made once (random numbers for a large kernel take longer than
    preparing most primitives) and handed to each primitive of it as a copy of its own, so that no primitive finds
    another's input or weights in its caches and each reads what it would have made alone."""

    def __init__(self, config: ConvConfig, seed: int = 0, device: str = "cpu") -> None:
        self.config = config
        self.seed = seed
        self.device = device
        self.made = 0
        """How many times the operands were made (once, when the first primitive asked)."""
        self._operands: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def __call__(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self._operands is None:
            self._operands = device_operands(self.config, self.seed, self.device)
            self.made += 1
        x, w, b = (t.clone() for t in self._operands)
        return x, w, b


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
                    device: str = "cpu", operands: Operands | None = None) -> Timer:
    """The timer of one prepared ``primitive`` call on ``config``, with ``threads`` threads (torch and OpenCV
    process-wide, set now; ONNX Runtime per session), on ``device`` ("cpu", "cuda" or "cuda:N").

    The weights are prepared and the input is put in the primitive's input layout now, outside the timed region;
    a primitive that does not apply or does not run on ``device`` raises (``PrimitiveError``, ``UnavailableError``),
    as does a device that is not here; a library that refuses the shape may raise here or on the first timed call.
    The operands are the seed's on every device (made on the CPU, then moved), or ``operands``'s (a
    :class:`SharedOperands` of the configuration, which ``seed`` and ``device`` made).
    """
    import torch

    primitive.check(config, device)
    _set_threads(threads)
    x, w, b = operands() if operands is not None else device_operands(config, seed, device)
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
