"""The prior that calibration by sampling draws from: the layer configurations real networks contain.

A synthetic grid of channel counts, maps and kernels (:data:`~nnperf.prediction.kernel.PRIOR`) spreads its
draws evenly over combinations no network uses (a 7x7 depthwise convolution of 16 channels at 7x7) and
rarely hits the ones every network does (a 3x3 convolution of 64 channels at 56x56). A :class:`LayerPrior`
instead holds the distinct convolution, pool and fully connected configurations of a set of source networks, as
:class:`ConvSample`, :class:`PoolSample` and :class:`LinearSample` (square maps and windows; a layer that is not
square, a global pool or a layer above :data:`MAX_MACS` is left out), and draws a kind's configurations
uniformly, so a configuration counts once however often its network repeats it.

Fully connected layers matter beyond classifiers: a transformer's and ConvNeXt's MLPs multiply thousands of rows
(tokens) by one weight, compute-bound GEMMs, where a classifier's one row is bound by reading the weight. The
calibration networks hold only one-row layers, whose operations and weights grow together, so a Ridge fitted on
them alone cannot tell what each costs (it predicted ConvNeXt-S's 73 MLP layers at 891 ms on torch, where the
whole network ran in 389 ms); the sampled layers of many rows join that Ridge.

**Held out.** The prior can exclude networks: every configuration found in one of them is removed from the
prior and refused as a neighbour or fallback draw (:meth:`LayerPrior.allows`), so a benchmark that judges
those networks never calibrates on one of their layers. What was excluded is part of the prior's
:attr:`~LayerPrior.fingerprint`, so a calibration sampled under one exclusion is never reused for another.

A kind none of the sources contains (grouped convolutions, in nnperf's zoo) is drawn from the synthetic grid,
as before, still within what the prior allows.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, Network, OpType, PoolAttrs
from nnperf.ir.metrics import layer_metrics
from nnperf.prediction.kernel._sampling import (
    MAX_MACS,
    MAX_POOL_INPUT,
    SAMPLED_KINDS,
    ConvSample,
    LinearSample,
    PoolSample,
    Sample,
    grid_draw,
    interleaved_draws,
)

DRAW_ATTEMPTS = 1000
"""Draws from the synthetic grid before giving up on finding one the prior allows."""


def layer_sample(layer: Layer) -> Sample | None:
    """The sampled configuration that ``layer`` is (a convolution or max/average pool over a square map with a
    square window and equal strides, or a fully connected layer, within the sampling bounds); None for any other
    layer."""
    shape = layer.input_shapes[0] if layer.input_shapes else ()
    if layer.op is OpType.LINEAR and len(shape) >= 2:
        linear = LinearSample(math.prod(shape[:-1]), shape[-1], layer.output_shape[-1])
        return linear if layer_metrics(linear.layer()).macs <= MAX_MACS else None
    if len(shape) != 4 or shape[2] != shape[3]:
        return None
    attrs = layer.attrs
    if layer.op is OpType.CONV and isinstance(attrs, ConvAttrs):
        if attrs.kernel[0] != attrs.kernel[1] or attrs.stride[0] != attrs.stride[1] or attrs.dilation != (1, 1):
            return None
        sample: Sample = ConvSample(shape[1], layer.output_shape[1], shape[2], attrs.kernel[0], attrs.stride[0],
                                    attrs.groups)
        fits = layer_metrics(sample.layer()).macs <= MAX_MACS
    elif layer.op in (OpType.MAX_POOL, OpType.AVG_POOL) and isinstance(attrs, PoolAttrs):
        pads = set(attrs.padding)
        if attrs.kernel[0] != attrs.kernel[1] or attrs.stride[0] != attrs.stride[1] or len(pads) != 1:
            return None
        sample = PoolSample("max" if layer.op is OpType.MAX_POOL else "avg", shape[1], shape[2],
                            attrs.kernel[0], attrs.stride[0], pads.pop(), bool(attrs.ceil_mode))
        fits = (shape[1] * shape[2] ** 2 <= MAX_POOL_INPUT and 2 * sample.padding <= sample.kernel
                and sample.kernel <= sample.map + 2 * sample.padding)
    else:
        return None
    return sample if fits and sample.kind in SAMPLED_KINDS else None


def network_samples(networks: Iterable[Network]) -> dict[Sample, None]:
    """The distinct sampled configurations of ``networks``' layers, in the order first met; a 1x1 convolution of
    stride 1 is also taken as the fully connected layer it computes over its map's positions (the zoo's
    transformer and ConvNeXt write their MLPs so)."""
    found: dict[Sample, None] = {}
    for network in networks:
        for layer in network.layers:
            sample = layer_sample(layer)
            if sample is not None:
                found.setdefault(sample)
            linear = _pointwise_as_linear(layer)
            if linear is not None:
                found.setdefault(linear)
    return found


def _pointwise_as_linear(layer: Layer) -> LinearSample | None:
    """The fully connected layer a 1x1 convolution of stride 1 in one group computes over its map's positions
    (whatever the map's shape), within the sampling bounds; None for any other layer."""
    attrs, shape = layer.attrs, layer.input_shapes[0] if layer.input_shapes else ()
    if (layer.op is not OpType.CONV or not isinstance(attrs, ConvAttrs) or len(shape) != 4
            or (attrs.kernel, attrs.stride, attrs.groups, sum(attrs.padding)) != ((1, 1), (1, 1), 1, 0)):
        return None
    linear = LinearSample(shape[2] * shape[3], shape[1], layer.output_shape[1])
    return linear if layer_metrics(linear.layer()).macs <= MAX_MACS else None


def samples_by_kind(samples: Sequence[Sample]) -> dict[str, tuple[Sample, ...]]:
    """``samples`` grouped by kernel kind, in their order (a sample's kind takes some work to find: a prior keeps
    the grouping)."""
    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(sample.kind, []).append(sample)
    return {kind: tuple(group) for kind, group in groups.items()}


@dataclass(frozen=True)
class LayerPrior:
    """The configurations sampling draws from: ``samples``, the distinct configurations of the ``sources``
    networks without those of the ``held_out`` networks, and ``excluded``, every configuration of the
    held-out networks (never drawn, never a neighbour)."""

    samples: tuple[Sample, ...]
    sources: tuple[str, ...]
    held_out: tuple[str, ...] = ()
    excluded: frozenset[Sample] = frozenset()

    @classmethod
    def from_networks(cls, sources: Sequence[Network], held_out: Sequence[Network] = ()) -> LayerPrior:
        """The prior of ``sources``' configurations, with every configuration of ``held_out`` removed."""
        excluded = frozenset(network_samples(held_out))
        kept = tuple(s for s in network_samples(sources) if s not in excluded)
        return cls(kept, tuple(n.name for n in sources), tuple(n.name for n in held_out), excluded)

    def of_kind(self, kind: str) -> tuple[Sample, ...]:
        """The prior's configurations of ``kind`` (a kernel kind of :data:`SAMPLED_KINDS`)."""
        return self._by_kind.get(kind, ())

    @functools.cached_property
    def _by_kind(self) -> dict[str, tuple[Sample, ...]]:
        return samples_by_kind(self.samples)

    kinds = SAMPLED_KINDS
    """Every sampled kind: one the sources lack is drawn from the synthetic grid."""

    def first_round(self, rng: np.random.Generator) -> list[Sample]:
        """:data:`~nnperf.prediction.kernel.FIRST_ROUND` draws of every kind, interleaved."""
        return interleaved_draws(self, rng)

    def allows(self, sample: Sample) -> bool:
        """Whether ``sample`` may be measured: it is no held-out network's configuration."""
        return sample not in self.excluded

    def draw(self, kind: str, rng: np.random.Generator) -> Sample:
        """One configuration of ``kind``: uniform over the prior's, else from the synthetic grid (a kind no source
        holds), never an excluded one."""
        if kind not in SAMPLED_KINDS:
            raise NnperfError(f"cannot sample {kind!r}; the sampled kinds are {', '.join(SAMPLED_KINDS)}")
        choices = self.of_kind(kind)
        if choices:
            return choices[int(rng.integers(len(choices)))]
        for _ in range(DRAW_ATTEMPTS):
            sample = grid_draw(kind, rng)
            if self.allows(sample):
                return sample
        raise NnperfError(f"the held-out networks exclude every {kind} configuration drawn; "
                          "hold out fewer networks or add sources that have this kind")

    @property
    def fingerprint(self) -> str:
        """A short hash of the configurations and exclusions: two priors alike draw alike."""
        text = "|".join([*(s.name for s in self.samples), "excluded", *sorted(s.name for s in self.excluded)])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def counts(self) -> dict[str, int]:
        """How many configurations of each sampled kind the prior holds."""
        return {kind: len(self.of_kind(kind)) for kind in SAMPLED_KINDS}


@functools.cache
def _zoo_networks() -> tuple[Network, ...]:
    """The IR of every reference zoo network (built once per process: some seconds)."""
    from nnperf.zoo import names, zoo_network

    return tuple(zoo_network(name) for name in names())


def zoo_prior(held_out: Sequence[Network] = ()) -> LayerPrior:
    """The default prior: the configurations of nnperf's reference zoo (its networks written from their papers,
    not the calibration networks), without those of ``held_out``."""
    return LayerPrior.from_networks(_zoo_networks(), held_out)
