"""What every convolution primitive is: a frozen description plus ``applies``, ``availability`` and ``run``."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from nnperf.primitives._config import ConvConfig, PrimitiveError
from nnperf.primitives._device import device_type
from nnperf.primitives._layout import Layout
from nnperf.registry import Availability, UnavailableError

if TYPE_CHECKING:
    import torch

Bound = Callable[["torch.Tensor"], "torch.Tensor"]
"""A primitive prepared for one layer's weights: input in its input layout -> output in its output layout."""


class Family(str, enum.Enum):
    """Algorithm families of Mulder et al. 3.1, plus FFT (which the paper left out) and the vendor libraries."""

    DIRECT = "direct"
    IM2 = "im2"
    KN2 = "kn2"
    WINOGRAD = "winograd"
    FFT = "fft"
    CONV_1X1 = "conv-1x1"
    MEC = "mec"
    VENDOR = "vendor"


ERROR_BOUNDS: dict[Family, float] = {
    Family.DIRECT: 1e-5,
    Family.IM2: 1e-5,
    Family.KN2: 1e-5,
    Family.CONV_1X1: 1e-5,
    Family.MEC: 1e-5,
    Family.VENDOR: 1e-5,
    Family.FFT: 3e-5,
    Family.WINOGRAD: 1e-4,
}
"""The largest error a family's float32 result may have against ``torch.nn.functional.conv2d``, relative to
the largest magnitude in the reference output: ``max|y - ref| <= bound * max|ref|`` (with the inputs of
:meth:`ConvConfig.random_operands`). GEMM-like families only reorder float32 sums; FFT rounds in the
frequency domain over the whole padded map; Winograd's transforms amplify rounding (F(4,3) and F(2,5) use
points up to +-2: 7e-6 was seen on a 64->64 3x3 layer). A vendor primitive that may pick a fast algorithm
(NNPACK: Winograd F(6,3) for 3x3; OpenCV with Winograd on) has the Winograd bound
(:attr:`Primitive.error_bound`)."""

CPU_ONLY: frozenset[str] = frozenset({"cpu"})
CPU_AND_CUDA: frozenset[str] = frozenset({"cpu", "cuda"})
"""The device types of a primitive written on torch ops (or torch's own dispatch): torch runs them on both."""


@dataclass(frozen=True)
class Primitive:
    """A convolution algorithm with its layouts (Mulder et al. 3.1 and Table 6).

    ``rule`` states ``applies`` in words (for ``nnperf primitives list`` and the README); ``library`` names
    the code that computes it ("torch ops" for the algorithms written here). Weight transformations
    (Winograd's G g G^T, the kernel FFT, a vendor's weight reordering) happen in :meth:`prepare`, once per
    layer, as in an inference deployment whose weights are constant; :meth:`prepare`'s result is what is timed.

    ``devices`` are the device types it computes on (:meth:`supports`): the CPU only unless a primitive says
    otherwise; those written on torch ops, and torch's own ``conv2d``, run on CUDA too, on CUDA operands.
    """

    devices: ClassVar[frozenset[str]] = CPU_ONLY

    name: str
    family: Family
    input_layout: Layout
    output_layout: Layout
    library: str
    rule: str

    @property
    def error_bound(self) -> float:
        """The largest relative error of its result (see :data:`ERROR_BOUNDS`)."""
        return ERROR_BOUNDS[self.family]

    def applies(self, config: ConvConfig) -> bool:
        """Whether this primitive computes ``config`` correctly (never claims one it computes wrongly)."""
        return True

    def error_bound_on(self, device: str) -> float:
        """The largest relative error of its result on ``device`` (:attr:`error_bound` unless a library picks
        other algorithms there)."""
        return self.error_bound

    def availability(self) -> Availability:
        """Whether it can run on this machine, and if not why."""
        return Availability.yes()

    def supports(self, device: str) -> Availability:
        """Whether it computes on ``device`` ("cpu", "cuda" or "cuda:N"), and if not why (whether that device is
        present here is :func:`~nnperf.primitives.device_availability`)."""
        kind = device_type(device)
        if kind in self.devices:
            return Availability.yes()
        where = " and ".join(d.upper() for d in sorted(self.devices))
        return Availability.no(f"{self.library} computes on the {where} only, not on {device}")

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        """The convolution with weights ``w`` (f, c/groups, kh, kw) and bias ``b`` (f,) bound in.

        ``threads`` matters to libraries whose thread count belongs to a session (ONNX Runtime); torch and
        OpenCV use their process-wide settings.
        """
        raise NotImplementedError

    def check(self, config: ConvConfig, device: str = "cpu") -> None:
        """Raise :class:`UnavailableError` or :class:`PrimitiveError` unless this primitive can compute ``config``
        on ``device``."""
        available = self.availability()
        if not available.ok:
            raise UnavailableError(f"primitive {self.name} is unavailable: {available.reason}")
        supported = self.supports(device)
        if not supported.ok:
            raise UnavailableError(f"primitive {self.name} cannot run on {device}: {supported.reason}")
        if not self.applies(config):
            raise PrimitiveError(f"primitive {self.name} does not apply to {config} ({self.rule})")

    def run(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig) -> torch.Tensor:
        """The convolution of ``x`` (in :attr:`input_layout`), in :attr:`output_layout`, on ``x``'s device (``w`` and
        ``b`` on the same one)."""
        self.check(config, x.device.type)
        return self.prepare(w, b, config)(x)
