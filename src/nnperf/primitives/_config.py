"""The convolution configuration a primitive is asked to compute (Mulder et al. 3.2.1's (k, c, im, s, f))."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnperf.errors import NnperfError

if TYPE_CHECKING:
    import torch


class PrimitiveError(NnperfError):
    """A primitive asked for a configuration it does not compute, or a bad configuration or layout."""


def _pair(value: int | tuple[int, int]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


@dataclass(frozen=True)
class ConvConfig:
    """One 2-D convolution layer, float32.

    The names follow Mulder et al. where they have one: ``c`` input channels, ``f`` output channels
    (the paper's k, "number of kernels"), ``im`` the input size (h, w), ``k`` the kernel size (kh, kw),
    ``s`` the stride. ``padding`` is (top, left, bottom, right), ONNX's order; build one with
    :meth:`make` to give ints or pairs.
    """

    batch: int
    c: int
    f: int
    im: tuple[int, int]
    k: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    groups: int = 1
    dilation: tuple[int, int] = (1, 1)

    def __post_init__(self) -> None:
        positive = {"batch": self.batch, "c": self.c, "f": self.f, "groups": self.groups,
                    "im": min(self.im), "k": min(self.k), "stride": min(self.stride), "dilation": min(self.dilation)}
        for name, value in positive.items():
            if value < 1:
                raise PrimitiveError(f"convolution {name} must be positive, got {getattr(self, name)!r}")
        if min(self.padding) < 0:
            raise PrimitiveError(f"convolution padding must be non-negative, got {self.padding!r}")
        if self.c % self.groups or self.f % self.groups:
            raise PrimitiveError(f"channels c={self.c} and f={self.f} must both be multiples of groups={self.groups}")
        if min(self.out) < 1:
            raise PrimitiveError(f"the kernel {self.k} (dilation {self.dilation}) is larger than the padded input "
                                 f"{self.padded}")

    @classmethod
    def make(cls, batch: int = 1, c: int = 1, f: int = 1, im: int | tuple[int, int] = 1,
             k: int | tuple[int, int] = 1, stride: int | tuple[int, int] = 1,
             padding: int | tuple[int, int] | tuple[int, int, int, int] = 0, groups: int = 1,
             dilation: int | tuple[int, int] = 1) -> ConvConfig:
        """A config from ints or pairs; ``padding`` is one int, (vertical, horizontal) or (top, left, bottom, right)."""
        if isinstance(padding, int):
            pads = (padding,) * 4
        elif len(padding) == 2:
            pads = (padding[0], padding[1], padding[0], padding[1])
        else:
            pads = tuple(padding)  # type: ignore[assignment]
        return cls(batch, c, f, _pair(im), _pair(k), _pair(stride), pads,  # type: ignore[arg-type]
                   groups, _pair(dilation))

    @classmethod
    def carrier(cls, batch: int, c: int, im: tuple[int, int]) -> ConvConfig:
        """The configuration that carries an activation (batch, c, im) in a profile of its layout transformations
        alone: a 1x1 convolution c -> c, stride 1, no padding, whose input is that activation (a store keeps
        every time under a configuration)."""
        return cls(batch, c, c, (int(im[0]), int(im[1])), (1, 1))

    @property
    def padded(self) -> tuple[int, int]:
        """The input size (h, w) after padding."""
        top, left, bottom, right = self.padding
        return self.im[0] + top + bottom, self.im[1] + left + right

    @property
    def out(self) -> tuple[int, int]:
        """The output size (h, w)."""
        return tuple((p - d * (k - 1) - 1) // s + 1  # type: ignore[return-value]
                     for p, k, s, d in zip(self.padded, self.k, self.stride, self.dilation))

    @property
    def symmetric_padding(self) -> bool:
        """Top equals bottom and left equals right (what frameworks with two padding numbers can express)."""
        return self.padding[0] == self.padding[2] and self.padding[1] == self.padding[3]

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the direct algorithm."""
        return self.batch * self.f * self.out[0] * self.out[1] * (self.c // self.groups) * self.k[0] * self.k[1]

    def input_shape(self) -> tuple[int, int, int, int]:
        return self.batch, self.c, self.im[0], self.im[1]

    def weight_shape(self) -> tuple[int, int, int, int]:
        return self.f, self.c // self.groups, self.k[0], self.k[1]

    def output_shape(self) -> tuple[int, int, int, int]:
        return self.batch, self.f, self.out[0], self.out[1]

    def random_operands(self, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x, w, b) in NCHW: x standard normal, w and b uniform in +-1/sqrt(fan-in) (torch's default init)."""
        import torch

        gen = torch.Generator().manual_seed(seed)
        bound = (self.c // self.groups * self.k[0] * self.k[1]) ** -0.5
        x = torch.randn(self.input_shape(), generator=gen)
        w = (torch.rand(self.weight_shape(), generator=gen) * 2 - 1) * bound
        b = (torch.rand(self.f, generator=gen) * 2 - 1) * bound
        return x, w, b

    def to_dict(self) -> dict[str, object]:
        return {"batch": self.batch, "c": self.c, "f": self.f, "im": list(self.im), "k": list(self.k),
                "stride": list(self.stride), "padding": list(self.padding), "groups": self.groups,
                "dilation": list(self.dilation)}


def unread_outputs(configs: Sequence[ConvConfig]) -> list[tuple[int, int, tuple[int, int]]]:
    """The output activations (batch, f, (h, w)) of ``configs`` that none of them reads as its input, sorted: the
    activations a profile of the configurations leaves without layout transformation times."""
    inputs = {(c.batch, c.c, c.im) for c in configs}
    return sorted({(c.batch, c.f, c.out) for c in configs} - inputs)


def pad_input(x: torch.Tensor, config: ConvConfig) -> torch.Tensor:
    """``x`` (logical NCHW, any memory format) zero-padded by ``config.padding``."""
    import torch.nn.functional as F

    top, left, bottom, right = config.padding
    if not any(config.padding):
        return x
    return F.pad(x, (left, right, top, bottom))


def reference_conv2d(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig) -> torch.Tensor:
    """The reference result: ``torch.nn.functional.conv2d`` (asymmetric padding applied beforehand), NCHW."""
    import torch.nn.functional as F

    return F.conv2d(pad_input(x, config), w, b, config.stride, 0, config.dilation, config.groups)
