"""The prior of an adaptation to a user's search space: configurations near those of example networks.

A calibration samples layers from the configurations of nnperf's reference zoo, a prior over every network,
where a user's architecture search draws its networks from one space: MobileNetV3-like blocks at 160-224 px, or
a RegNet family's group widths. nn-Meter and LitePred adapt their kernel predictors to such a space by sampling
its own configurations. :class:`AdaptedPrior` is that prior, built from example networks of the space (or drawn
by the user's sampler function):

- its kinds are the sampled kinds (:data:`~nnperf.prediction.kernel.SAMPLED_KINDS`) the examples contain, no
  others;
- its first round is every distinct configuration of the examples, the kinds interleaved;
- a later draw of a kind takes one of the examples' configurations of that kind and, three times in four,
  perturbs it: each size (channels, map side, rows) moved by up to :data:`SIZE_STEP` either way (channel counts
  kept to a multiple of 8 where the example's was, the groups of a grouped or depthwise convolution kept), and
  each shape choice (kernel, stride, channels per group, a pool's padding) replaced by another the examples
  use, with probability :data:`CHOICE_SWAP`;
- it allows only configurations within the span of the examples' (each size within the least and the largest
  of the kind, each shape choice one of theirs) and none of a held-out (judged) network's: a configuration
  equal to a layer of a judged file is never measured, as with the zoo's prior (:class:`LayerPrior`);
- its ``anchors``, configurations of the calibration networks' own layers (:meth:`AdaptedPrior.with_anchors`),
  are spread over its first round: measured again beside the samples, against the times the calibration
  stored for them, they say how fast the machine runs each kind now (``nnperf.campaign``'s adaptation scales
  the samples by it).

Its :attr:`~AdaptedPrior.fingerprint` hashes the examples' configurations, the anchors and the exclusions, so a
sampling
stored for one set of examples is resumed for the same set, and never reused for another.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import Network
from nnperf.ir.metrics import layer_metrics
from nnperf.prediction.kernel._prior import layer_sample, network_samples, samples_by_kind
from nnperf.prediction.kernel._sampling import (
    MAX_MACS,
    SAMPLED_KINDS,
    ConvSample,
    LinearSample,
    PoolSample,
    Sample,
    _pool_fits,
)

SIZE_STEP = 0.5
"""A perturbed size is the example's times a factor drawn log-uniformly within 1 / (1 + this) and 1 + this."""

CHOICE_SWAP = 0.3
"""The probability that a perturbed configuration takes another of the examples' values of a shape choice."""

EXACT_SHARE = 0.25
"""The share of later draws that are one of the examples' configurations as it is."""

PERTURB_ATTEMPTS = 50
"""Perturbations tried before a draw falls back on the example's configuration as it is."""

SIZES = {ConvSample: ("c_in", "c_out", "map"), PoolSample: ("channels", "map"),
         LinearSample: ("rows", "in_features", "out_features")}
"""The fields of each configuration that are sizes: perturbed within the examples' least and largest."""

CHOICES = {ConvSample: ("kernel", "stride"), PoolSample: ("kernel", "stride", "padding", "ceil"), LinearSample: ()}
"""The fields that are shape choices: only the examples' values (a grouped convolution's ``per_group``, its input
channels per group, too)."""


def _choices(sample: Sample) -> tuple[str, ...]:
    """The shape choices of ``sample`` (:data:`CHOICES`, and ``per_group`` for a grouped convolution)."""
    grouped = isinstance(sample, ConvSample) and 1 < sample.groups < sample.c_in
    return (*CHOICES[type(sample)], "per_group") if grouped else CHOICES[type(sample)]


def _value(sample: Sample, name: str) -> int:
    """A size or shape choice of ``sample`` (``per_group``: a convolution's input channels per group)."""
    if name == "per_group" and isinstance(sample, ConvSample):
        return sample.c_in // sample.groups
    return int(getattr(sample, name))


@dataclass(frozen=True)
class AdaptedPrior:
    """The configurations of example networks and their neighbourhood (see the module docstring):
    ``samples``, the examples' distinct configurations without those of the ``held_out`` networks,
    ``excluded``, every configuration of the held-out networks, ``anchors``, configurations measured in the
    first round besides (none of them excluded), and the ``examples`` themselves (timed whole by an adaptation)."""

    samples: tuple[Sample, ...]
    sources: tuple[str, ...]
    held_out: tuple[str, ...] = ()
    excluded: frozenset[Sample] = frozenset()
    anchors: tuple[Sample, ...] = ()
    examples: tuple[Network, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.samples:
            raise NnperfError("an adapted prior needs at least one configuration of its example networks")
        if set(self.anchors) & self.excluded:
            raise NnperfError("an anchor of an adapted prior is a held-out network's configuration")

    @classmethod
    def from_networks(cls, examples: Sequence[Network], held_out: Sequence[Network] = ()) -> AdaptedPrior:
        """The prior of ``examples``' configurations, with every configuration of ``held_out`` removed and
        refused; raises :class:`NnperfError` when no example is given or none holds a configuration left."""
        if not examples:
            raise NnperfError("adapting to a search space needs at least one example network (or a sampler)")
        excluded = frozenset(network_samples(held_out))
        found = {s: None for network in examples for layer in network.layers
                 if (s := layer_sample(layer)) is not None}
        if not found:
            raise NnperfError(f"the example networks ({', '.join(n.name for n in examples[:3])}"
                              f"{', ...' if len(examples) > 3 else ''}) hold no layer nnperf samples (square "
                              "convolutions, max and average pools, fully connected layers)")
        kept = tuple(s for s in found if s not in excluded)
        if not kept:
            raise NnperfError("every layer configuration of the example networks is one of a held-out network's: "
                              "give examples that differ from the judged networks")
        return cls(kept, tuple(n.name for n in examples), tuple(n.name for n in held_out), excluded,
                   examples=tuple(examples))

    @functools.cached_property
    def kinds(self) -> tuple[str, ...]:
        """The sampled kinds the examples contain, in :data:`SAMPLED_KINDS` order."""
        present = {s.kind for s in self.samples}
        return tuple(kind for kind in SAMPLED_KINDS if kind in present)

    def of_kind(self, kind: str) -> tuple[Sample, ...]:
        """The examples' configurations of ``kind``."""
        return self._by_kind.get(kind, ())

    @functools.cached_property
    def _by_kind(self) -> dict[str, tuple[Sample, ...]]:
        return samples_by_kind(self.samples)

    @functools.cached_property
    def _spans(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """Per kind, each size's (least, largest) and each shape choice's values, over the examples."""
        spans: dict[str, dict[str, tuple[int, ...]]] = {}
        for kind, group in self._by_kind.items():
            klass = type(group[0])
            span = {name: (min(_value(s, name) for s in group), max(_value(s, name) for s in group))
                    for name in SIZES[klass]}
            span.update({name: tuple(sorted({_value(s, name) for s in group})) for name in _choices(group[0])})
            spans[kind] = span
        return spans

    def allows(self, sample: Sample) -> bool:
        """Whether ``sample`` may be measured: of one of the examples' kinds, within their span, and no held-out
        network's configuration."""
        if sample in self.excluded or sample.kind not in self._spans:
            return False
        span = self._spans[sample.kind]
        klass = type(sample)
        return (all(span[n][0] <= _value(sample, n) <= span[n][1] for n in SIZES[klass])
                and all(_value(sample, n) in span[n] for n in _choices(sample)))

    def with_anchors(self, anchors: Sequence[Sample]) -> AdaptedPrior:
        """This prior with ``anchors`` (those no held-out network has) measured in its first round too."""
        return replace(self, anchors=tuple(dict.fromkeys(a for a in anchors if a not in self.excluded)))

    def first_round(self, rng: np.random.Generator) -> list[Sample]:
        """Every configuration of the examples once, each kind's in a random order, the kinds interleaved, with
        the anchors spread evenly among them."""
        groups = [list(self.of_kind(kind)) for kind in self.kinds]
        for group in groups:
            rng.shuffle(group)  # type: ignore[arg-type]
        longest = max(len(group) for group in groups)
        drawn = [group[i] for i in range(longest) for group in groups if i < len(group)]
        every = len(drawn) / max(len(self.anchors), 1)
        spread = [((i + 0.5) * every, 1, anchor) for i, anchor in enumerate(self.anchors)]
        return [s for _, _, s in sorted([*((float(i), 0, s) for i, s in enumerate(drawn)), *spread],
                                        key=lambda t: t[:2])]

    def draw(self, kind: str, rng: np.random.Generator) -> Sample:
        """One configuration of ``kind`` near the examples' (see the module docstring)."""
        if kind not in self.kinds:
            raise NnperfError(f"the example networks hold no {kind} layer to sample; they hold "
                              f"{', '.join(self.kinds)}")
        choices = self.of_kind(kind)
        example = choices[int(rng.integers(len(choices)))]
        if rng.random() < EXACT_SHARE:
            return example
        span = self._spans[kind]
        for _ in range(PERTURB_ATTEMPTS):
            moved = _perturbed(example, span, rng)
            if moved is not None and moved != example and moved.kind == kind and self.allows(moved):
                return moved
        return example

    @property
    def fingerprint(self) -> str:
        """A short hash of the examples' configurations, the exclusions and the perturbation's settings."""
        text = "|".join(["adapted", f"{SIZE_STEP}:{CHOICE_SWAP}:{EXACT_SHARE}", *(s.name for s in self.samples),
                         "excluded", *sorted(s.name for s in self.excluded), "anchors",
                         *(s.name for s in self.anchors)])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def counts(self) -> dict[str, int]:
        """How many of the examples' configurations each of their kinds holds."""
        return {kind: len(self.of_kind(kind)) for kind in self.kinds}


def adapt_prior(examples: Sequence[Network], held_out: Sequence[Network] = ()) -> AdaptedPrior:
    """The prior of an adaptation to the search space of ``examples`` (:meth:`AdaptedPrior.from_networks`)."""
    return AdaptedPrior.from_networks(examples, held_out)


def _perturbed(example: Sample, span: dict[str, tuple[int, ...]], rng: np.random.Generator) -> Sample | None:
    """``example`` with its sizes moved and its shape choices swapped (see the module docstring); None where the
    result is no valid configuration (too many operations, a pool window larger than its map)."""
    klass = type(example)
    values = {f.name: getattr(example, f.name) for f in fields(example)}
    for name in SIZES[klass]:
        if rng.random() < 0.5:
            low, high = span[name]
            values[name] = _moved_size(values[name], low, high, rng)
    swapped = {name: int(rng.choice(span[name])) for name in _choices(example)
               if len(span[name]) > 1 and rng.random() < CHOICE_SWAP}
    if isinstance(example, ConvSample):
        return _conv(example, values, swapped)
    if isinstance(example, PoolSample):
        pool = replace(example, **{**values, **{k: (bool(v) if k == "ceil" else v) for k, v in swapped.items()}})
        return pool if _pool_fits(pool) else None
    linear = replace(example, **values)
    return linear if layer_metrics(linear.layer()).macs <= MAX_MACS else None


def _moved_size(value: int, low: int, high: int, rng: np.random.Generator) -> int:
    """``value`` times a log-uniform factor within 1 / (1 + :data:`SIZE_STEP`) and 1 + it, kept to a multiple of 8
    where ``value`` is one, within ``low`` and ``high``."""
    step = math.log1p(SIZE_STEP)
    moved = value * math.exp(rng.uniform(-step, step))
    moved = 8 * round(moved / 8) if value % 8 == 0 and value >= 8 else round(moved)
    return int(min(max(moved, low), high))


def _conv(example: ConvSample, values: dict[str, int], swapped: dict[str, int]) -> ConvSample | None:
    """The perturbed convolution, of the example's kind: a depthwise one keeps one channel per group, a grouped
    one its (or a swapped) channels per group, a pointwise one its 1x1 window."""
    kernel = swapped.get("kernel", example.kernel) if example.kernel > 1 else 1
    stride = swapped.get("stride", example.stride)
    c_in, c_out, side = values["c_in"], values["c_out"], values["map"]
    if example.groups == example.c_in:  # depthwise: as many groups as channels
        moved = ConvSample(c_in, c_in * (example.c_out // example.c_in), side, kernel, stride, c_in)
    elif example.groups > 1:
        per_group = swapped.get("per_group", example.c_in // example.groups)
        groups = max(round(c_in / per_group), 2)
        out_per_group = max(round(c_out / groups), 1)
        moved = ConvSample(per_group * groups, out_per_group * groups, side, kernel, stride, groups)
    else:
        moved = ConvSample(c_in, c_out, side, kernel, stride, 1)
    return moved if layer_metrics(moved.layer()).macs <= MAX_MACS else None
