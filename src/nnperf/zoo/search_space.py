"""A MobileNetV3-like search space, for an architecture search's latency oracle.

Once-for-All's space around MobileNetV3-Large (Cai et al., 2020): the stem and first bottleneck are fixed; then
five stages, each of 2 to 4 bottlenecks, each bottleneck with its own depthwise kernel (3, 5 or 7) and expansion
ratio (3, 4 or 6); each stage's width is 0.75, 1 or 1.25 times MobileNetV3-Large's (rounded to a multiple of 8);
the input is 160 to 224 px square. Strides, squeeze-and-excitation and activations per stage are
MobileNetV3-Large's. That is 5 x (3 x (9^2 + 9^3 + 9^4))^5, about 3 x 10^22 networks; a draw of 1,000 spans
83 to 521 MMACs and 138 to 264 layers.

:class:`MobileNetV3Space` draws :class:`SpaceSample` s from a seed and builds each as a PyTorch module or, on
PyTorch's meta device without allocating weights, as an IR :class:`~nnperf.ir.Network`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnperf.ir import Network

KERNELS = (3, 5, 7)
EXPANSIONS = (3, 4, 6)
DEPTHS = (2, 3, 4)
WIDTH_MULTIPLIERS = (0.75, 1.0, 1.25)
RESOLUTIONS = (160, 176, 192, 208, 224)
STAGES: tuple[tuple[int, int, bool, str], ...] = (
    (24, 2, False, "relu"), (40, 2, True, "relu"), (80, 2, False, "hardswish"), (112, 1, True, "hardswish"),
    (160, 2, True, "hardswish"),
)
"""Each stage's MobileNetV3-Large width, first stride, squeeze-and-excitation and activation."""


@dataclass(frozen=True)
class SpaceSample:
    """One network of the space: the input size, each stage's width and, per stage, each bottleneck's
    (kernel, expansion ratio)."""

    resolution: int
    widths: tuple[int, ...]
    blocks: tuple[tuple[tuple[int, int], ...], ...]

    @property
    def name(self) -> str:
        """A short unique name: resolution, then per stage its width and its blocks' kernels and expansions."""
        stages = "-".join(f"{w}:" + ".".join(f"{k}{e}" for k, e in stage)
                          for w, stage in zip(self.widths, self.blocks, strict=True))
        return f"mbv3s-r{self.resolution}-{stages}"


class MobileNetV3Space:
    """The space of the module docstring; :meth:`sample` draws from it reproducibly."""

    def sample(self, rng: np.random.Generator) -> SpaceSample:
        """One network drawn uniformly per choice."""
        from nnperf.zoo.mobilenet_v3 import make_divisible

        widths = tuple(make_divisible(base * float(rng.choice(WIDTH_MULTIPLIERS))) for base, *_ in STAGES)
        blocks = tuple(tuple((int(rng.choice(KERNELS)), int(rng.choice(EXPANSIONS)))
                             for _ in range(int(rng.choice(DEPTHS)))) for _ in STAGES)
        return SpaceSample(int(rng.choice(RESOLUTIONS)), widths, blocks)

    def samples(self, count: int, seed: int = 0) -> list[SpaceSample]:
        """``count`` networks drawn from ``seed``, without repeats."""
        rng = np.random.default_rng(seed)
        drawn: dict[SpaceSample, None] = {}
        while len(drawn) < count:
            drawn.setdefault(self.sample(rng))
        return list(drawn)

    def module(self, sample: SpaceSample):  # type: ignore[no-untyped-def]
        """The network as a PyTorch module (random weights)."""
        from torch import nn

        from nnperf.zoo.mobilenet_v3 import MobileNetV3Large, make_divisible

        activation = {"relu": nn.ReLU, "hardswish": nn.Hardswish}
        settings = [(16, 3, 16, 16, False, nn.ReLU, 1)]
        channels = 16
        for (_, stride, se, act), width, stage in zip(STAGES, sample.widths, sample.blocks, strict=True):
            for i, (kernel, ratio) in enumerate(stage):
                settings.append((channels, kernel, make_divisible(channels * ratio), width, se, activation[act],
                                 stride if i == 0 else 1))
                channels = width
        return MobileNetV3Large(settings=settings, last=make_divisible(sample.widths[-1] * 6))

    def network(self, sample: SpaceSample) -> Network:
        """The network as IR, built on PyTorch's meta device (no weights allocated)."""
        import torch

        from nnperf.ir.importers import from_torch

        with torch.device("meta"):
            module = self.module(sample)
        return from_torch(module, torch.empty((1, 3, sample.resolution, sample.resolution), device="meta"),
                          name=sample.name)
