"""The device a primitive computes on: this CPU ("cpu") or a CUDA GPU ("cuda", "cuda:N").

A primitive's operands are made on the CPU from a seed (:meth:`ConvConfig.random_operands`), so that the same seed
gives the same values on every device, and then moved to the device (:func:`device_operands`). On CUDA the
primitives compute in IEEE float32, as on the CPU: torch lets cuDNN round float32 convolutions to TF32 by default
(10-bit mantissa, about 1e-3 relative error, far above :data:`~nnperf.primitives.ERROR_BOUNDS`), so moving operands
to a CUDA device turns TF32 off for cuDNN and cuBLAS (process-wide, as the thread count is). A CUDA call returns
before the GPU is done: its timer synchronizes the device around each timed block (:func:`synchronizer`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from nnperf.primitives._config import ConvConfig, PrimitiveError
from nnperf.registry import Availability, UnavailableError

if TYPE_CHECKING:
    import torch

DEVICE_TYPES = ("cpu", "cuda")
"""The device types primitives run on."""


def device_type(device: str) -> str:
    """"cpu" for "cpu", "cuda" for "cuda" and "cuda:N"; anything else is a :class:`PrimitiveError`."""
    if device == "cpu":
        return "cpu"
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        return "cuda"
    raise PrimitiveError(f"unknown device {device!r}; use cpu, cuda or cuda:N")


def device_availability(device: str) -> Availability:
    """Whether ``device`` can compute here, and if not why (no CUDA in this torch build or machine, no such GPU)."""
    if device_type(device) == "cpu":
        return Availability.yes()
    import torch

    if not torch.cuda.is_available():
        return Availability.no(f"torch.cuda.is_available() is False on this machine (torch {torch.__version__}, "
                               f"built with CUDA {torch.version.cuda or 'none'})")
    index = int(device[5:]) if ":" in device else 0
    count = torch.cuda.device_count()
    if index >= count:
        return Availability.no(f"there is no CUDA device {index} on this machine ({count} device(s))")
    return Availability.yes()


def require_device(device: str) -> None:
    """Raise :class:`UnavailableError` (naming ``device`` and why) unless ``device`` can compute here."""
    available = device_availability(device)
    if not available.ok:
        raise UnavailableError(f"device {device}: {available.reason}")


def device_name(device: str) -> str:
    """The GPU's name (``torch.cuda.get_device_name``) of a CUDA ``device``, which must be available."""
    import torch

    require_device(device)
    if device_type(device) != "cuda":
        raise PrimitiveError(f"device_name names a CUDA device, not {device!r}")
    return str(torch.cuda.get_device_name(torch.device(device)))


def ieee_float32(device: str) -> None:
    """On a CUDA ``device``, turn TF32 off for cuDNN convolutions and cuBLAS matrix products (process-wide), so
    that float32 primitives compute in float32 there as on the CPU; nothing on the CPU."""
    if device_type(device) != "cuda":
        return
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def to_device(tensors: tuple[torch.Tensor, ...], device: str) -> tuple[torch.Tensor, ...]:
    """``tensors`` (made on the CPU) on ``device``, which must be available; on CUDA, float32 made IEEE
    (:func:`ieee_float32`)."""
    if device_type(device) == "cpu":
        return tensors
    require_device(device)
    ieee_float32(device)
    return tuple(t.to(device) for t in tensors)


def device_operands(config: ConvConfig, seed: int = 0, device: str = "cpu"
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x, w, b) of :meth:`ConvConfig.random_operands` ``(seed)``, made on the CPU (the same values on every device)
    and moved to ``device``."""
    x, w, b = to_device(config.random_operands(seed), device)
    return x, w, b


def synchronizer(device: str) -> Callable[[], None] | None:
    """What waits for ``device`` to finish the work queued on it: ``torch.cuda.synchronize(device)`` on CUDA, None
    on the CPU (a call returns when it is done)."""
    if device_type(device) == "cpu":
        return None
    import torch

    return functools.partial(torch.cuda.synchronize, torch.device(device))
