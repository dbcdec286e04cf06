"""Calibration by sampling (nn-Meter's adaptive sampling): convolution and pooling configurations measured
alone, placed where the kernel models are weakest, within a time budget.

The calibration networks hold few depthwise and no grouped convolutions, their dense ones span a narrow range,
and their pools stop at 56x56 maps; real networks do not (a stem's max pool runs on 112x112). So calibration also
measures single layers drawn from a prior over the configurations real networks contain (a
:class:`~nnperf.prediction.kernel.LayerPrior`, by default that of nnperf's reference zoo), then adds samples
where the models err most:

1. a first round draws :data:`FIRST_ROUND` configurations of each kind (:data:`SAMPLED_KINDS`) from the prior;
2. each further round cross-validates each kind's power law and boosted trees, takes the kind whose better
   model errs most (that error over the square root of its sample count, so a kind with many samples yields
   to one with few), and measures neighbours (one choice moved one step on the grid :data:`PRIOR`) of the
   samples its power law predicts worst when they are left out of its fit, plus a few fresh draws from the
   prior;
3. it stops when the budget is spent.

The synthetic grid :data:`PRIOR` (channel counts 16-512 in the usual steps, maps 7-112, kernels 1-7, stride 1
or 2, and per kind its grouping: one channel per group for depthwise, 4-64 for grouped; max and average pools
of 2x2 or 3x3 windows, with or without padding and ceil mode; fully connected layers of 1 to 3136 rows) gives
the neighbours' steps, and the draws of a kind the prior's networks lack (:class:`GridPrior` draws from it
alone).

Measuring the samples is the campaign ``nnperf.campaign.sample_layers``: it asks :func:`next_round` where the
next samples go, and stores each sample under :meth:`ConvSample.name` / :meth:`PoolSample.name`
(:func:`sample_from_name` reads it back).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, LinearAttrs, OpType, PoolAttrs
from nnperf.ir.metrics import layer_metrics
from nnperf.prediction.kernel._kinds import CONV_KINDS, ConvKernel, kernel_features, kernel_kind
from nnperf.prediction.kernel._regressors import MIN_SAMPLES_TO_CHOOSE, Regressor, choose, fit

POOL_KINDS = (OpType.MAX_POOL.value, OpType.AVG_POOL.value)
"""The pooling kinds sampled (the kernel kinds of :func:`kernel_kind`, PreVIous' layer types)."""

LINEAR_KIND = OpType.LINEAR.value
"""The fully connected kind: a classifier's one row, or a transformer's or ConvNeXt's rows of tokens."""

SAMPLED_KINDS = (*CONV_KINDS, *POOL_KINDS, LINEAR_KIND)
"""Every kind sampling draws: the four convolution kinds, the two pools and fully connected layers."""

PRIOR = {
    "channels": (16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512),
    "map": (7, 14, 28, 56, 112),
    "kernel": (1, 3, 5, 7),
    "stride": (1, 2),
    "per_group": (4, 8, 16, 32, 64),
    "expansion": (0.25, 0.5, 1.0, 2.0, 4.0),
    "pool_kernel": (2, 3),
    "rows": (1, 49, 196, 784, 3136),
}
"""The choices each configuration is drawn from (see the module docstring)."""

MAX_MACS = 400_000_000
"""A drawn convolution above this many MACs is drawn again: one sample must not eat the budget."""

MAX_POOL_INPUT = 128 * 112 * 112
"""A drawn pool over more input elements than this is drawn again (a stem's pool is 64 x 112 x 112)."""

FIRST_ROUND = 6
"""Samples of each kind drawn from the prior before any is placed by error."""

ROUND = 8
"""Samples per later round: neighbours of the worst-predicted samples of the weakest kind, and fresh draws."""


@dataclass(frozen=True)
class ConvSample:
    """One sampled convolution: a square ``map`` x ``map`` input of ``c_in`` channels, ``c_out`` filters of a
    ``kernel`` x ``kernel`` window at ``stride``, in ``groups`` groups, padded to keep the map ('same')."""

    c_in: int
    c_out: int
    map: int
    kernel: int
    stride: int
    groups: int

    @property
    def name(self) -> str:
        return f"conv-c{self.c_in}-f{self.c_out}-m{self.map}-k{self.kernel}-s{self.stride}-g{self.groups}"

    @classmethod
    def from_name(cls, name: str) -> ConvSample:
        try:
            parts = {p[0]: int(p[1:]) for p in name.split("-")[1:]}
            return cls(parts["c"], parts["f"], parts["m"], parts["k"], parts["s"], parts["g"])
        except (KeyError, ValueError, IndexError) as exc:
            raise NnperfError(f"{name!r} does not name a sampled convolution") from exc

    def layer(self) -> Layer:
        pad = self.kernel // 2
        out = (self.map + 2 * pad - self.kernel) // self.stride + 1
        return Layer(self.name, OpType.CONV, ("x",), ((1, self.c_in, self.map, self.map),),
                     (1, self.c_out, out, out), ConvAttrs((self.kernel, self.kernel), (self.stride, self.stride),
                                                          (pad,) * 4, groups=self.groups))

    @property
    def kind(self) -> str:
        return kernel_kind(self.layer())


@dataclass(frozen=True)
class PoolSample:
    """One sampled pool: a ``op`` ('max' or 'avg') pool of a ``kernel`` x ``kernel`` window at ``stride`` over a
    square ``map`` x ``map`` input of ``channels`` channels, padded by ``padding`` on every side, its output size
    rounded up when ``ceil`` (PyTorch's ``ceil_mode``)."""

    op: str
    channels: int
    map: int
    kernel: int
    stride: int
    padding: int
    ceil: bool

    @property
    def name(self) -> str:
        return (f"pool-{self.op}-c{self.channels}-m{self.map}-k{self.kernel}-s{self.stride}-p{self.padding}"
                f"-e{int(self.ceil)}")

    @classmethod
    def from_name(cls, name: str) -> PoolSample:
        try:
            _, op, *rest = name.split("-")
            parts = {p[0]: int(p[1:]) for p in rest}
            if op not in ("max", "avg"):
                raise ValueError(op)
            return cls(op, parts["c"], parts["m"], parts["k"], parts["s"], parts["p"], bool(parts["e"]))
        except (KeyError, ValueError, IndexError) as exc:
            raise NnperfError(f"{name!r} does not name a sampled pool") from exc

    def layer(self) -> Layer:
        span = self.map + 2 * self.padding - self.kernel
        out = (-(-span // self.stride) if self.ceil else span // self.stride) + 1
        if self.ceil and (out - 1) * self.stride >= self.map + self.padding:
            out -= 1  # PyTorch's rule: the last window must start inside the input or its left padding
        op = OpType.MAX_POOL if self.op == "max" else OpType.AVG_POOL
        return Layer(self.name, op, ("x",), ((1, self.channels, self.map, self.map),),
                     (1, self.channels, out, out), PoolAttrs((self.kernel, self.kernel), (self.stride, self.stride),
                                                             (self.padding,) * 4, ceil_mode=self.ceil))

    @property
    def kind(self) -> str:
        return kernel_kind(self.layer())


@dataclass(frozen=True)
class LinearSample:
    """One sampled fully connected layer: ``rows`` rows of ``in_features`` (the tokens of a transformer or of
    ConvNeXt's pointwise MLPs; 1 for a classifier) times an ``in_features`` x ``out_features`` weight. One row is
    laid out (1, in) as a classifier's; more are (1, rows, in), as a network's tokens."""

    rows: int
    in_features: int
    out_features: int

    @property
    def name(self) -> str:
        return f"linear-r{self.rows}-i{self.in_features}-o{self.out_features}"

    @classmethod
    def from_name(cls, name: str) -> LinearSample:
        try:
            parts = {p[0]: int(p[1:]) for p in name.split("-")[1:]}
            return cls(parts["r"], parts["i"], parts["o"])
        except (KeyError, ValueError, IndexError) as exc:
            raise NnperfError(f"{name!r} does not name a sampled fully connected layer") from exc

    def layer(self) -> Layer:
        lead = (1,) if self.rows == 1 else (1, self.rows)
        return Layer(self.name, OpType.LINEAR, ("x",), ((*lead, self.in_features),), (*lead, self.out_features),
                     LinearAttrs())

    @property
    def kind(self) -> str:
        return kernel_kind(self.layer())


Sample = ConvSample | PoolSample | LinearSample
"""A sampled configuration of any kind."""


def sample_from_name(name: str) -> Sample:
    """The configuration a stored sample's name gives back (:meth:`ConvSample.name`, :meth:`PoolSample.name`,
    :meth:`LinearSample.name`)."""
    if name.startswith("pool-"):
        return PoolSample.from_name(name)
    return LinearSample.from_name(name) if name.startswith("linear-") else ConvSample.from_name(name)


def grid_draw(kind: str, rng: np.random.Generator) -> Sample:
    """A configuration of ``kind`` from the synthetic grid :data:`PRIOR`, at most :data:`MAX_MACS` (a convolution) or
    :data:`MAX_POOL_INPUT` (a pool)."""
    if kind not in SAMPLED_KINDS:
        raise NnperfError(f"cannot sample {kind!r}; the sampled kinds are {', '.join(SAMPLED_KINDS)}")
    if kind in POOL_KINDS:
        return _draw_pool(kind, rng)
    if kind == LINEAR_KIND:
        return _draw_linear(rng)
    while True:
        c_in = int(rng.choice(PRIOR["channels"]))
        size = int(rng.choice(PRIOR["map"]))
        stride = 2 if rng.random() < 0.25 else 1
        kernel = int(rng.choice(PRIOR["kernel"][1:]))
        if kind == ConvKernel.DEPTHWISE:
            sample = ConvSample(c_in, c_in, size, kernel, stride, c_in)
        elif kind == ConvKernel.GROUPED:
            per_group = int(rng.choice([g for g in PRIOR["per_group"] if g < c_in and c_in % g == 0] or [c_in // 2]))
            sample = ConvSample(c_in, c_in, size, 3, stride, c_in // per_group)
        else:
            c_out = _channels(c_in * float(rng.choice(PRIOR["expansion"])))
            sample = (ConvSample(c_in, c_out, size, 1, 1, 1) if kind == ConvKernel.POINTWISE
                      else ConvSample(c_in, c_out, size, kernel, stride, 1))
        if sample.kind == kind and layer_metrics(sample.layer()).macs <= MAX_MACS:
            return sample


def _draw_pool(kind: str, rng: np.random.Generator) -> PoolSample:
    while True:
        kernel = int(rng.choice(PRIOR["pool_kernel"]))
        stride = 2 if kernel == 2 or rng.random() < 0.7 else 1
        padding = int(rng.integers(0, (kernel - 1) // 2 + 1))  # 3x3: none or 1; 2x2: none
        sample = PoolSample("max" if kind == OpType.MAX_POOL.value else "avg", int(rng.choice(PRIOR["channels"])),
                            int(rng.choice(PRIOR["map"])), kernel, stride, padding, bool(rng.random() < 0.5))
        if _pool_fits(sample):
            return sample


def _draw_linear(rng: np.random.Generator) -> LinearSample:
    while True:
        c_in = int(rng.choice(PRIOR["channels"]))
        sample = LinearSample(int(rng.choice(PRIOR["rows"])), c_in, _channels(c_in * float(rng.choice(
            PRIOR["expansion"]))))
        if layer_metrics(sample.layer()).macs <= MAX_MACS:
            return sample


def _pool_fits(sample: PoolSample) -> bool:
    """Within :data:`MAX_POOL_INPUT`, a window no larger than the padded map, and padding at most half the
    window (PyTorch's own bound)."""
    return (sample.channels * sample.map ** 2 <= MAX_POOL_INPUT and sample.kernel <= sample.map + 2 * sample.padding
            and 2 * sample.padding <= sample.kernel)


def neighbours(sample: Sample) -> list[Sample]:
    """Configurations one step away in one choice of :data:`PRIOR` (channels, map, kernel, stride), same kind."""
    if isinstance(sample, LinearSample):
        linears = (replace(sample, **{name: value}) for name, choices in (
            ("rows", PRIOR["rows"]), ("in_features", PRIOR["channels"]), ("out_features", PRIOR["channels"]))
            for value in _adjacent(getattr(sample, name), choices))
        return [moved for moved in linears if layer_metrics(moved.layer()).macs <= MAX_MACS]
    if isinstance(sample, PoolSample):
        pools = (_moved_pool(sample, name, value) for name, choices in (
            ("channels", PRIOR["channels"]), ("map", PRIOR["map"]), ("kernel", PRIOR["pool_kernel"]),
            ("stride", PRIOR["stride"])) for value in _adjacent(getattr(sample, name), choices))
        return [moved for moved in pools if _pool_fits(moved)]
    convs = (_moved(sample, name, value) for name, choices in (
        ("c_in", PRIOR["channels"]), ("map", PRIOR["map"]), ("kernel", PRIOR["kernel"]),
        ("stride", PRIOR["stride"])) for value in _adjacent(getattr(sample, name), choices))
    return [moved for moved in convs
            if moved is not None and moved.kind == sample.kind and layer_metrics(moved.layer()).macs <= MAX_MACS]


def _adjacent(value: int, choices: Sequence[int]) -> list[int]:
    """The choices one step below and above the one nearest ``value`` (those that exist)."""
    index = min(range(len(choices)), key=lambda i: abs(choices[i] - value))
    return [int(choices[i]) for i in (index - 1, index + 1) if 0 <= i < len(choices)]


def _moved_pool(sample: PoolSample, field_name: str, value: int) -> PoolSample:
    moved = replace(sample, **{field_name: value})
    if field_name == "kernel":  # a 2x2 window takes no padding
        moved = replace(moved, padding=min(moved.padding, (moved.kernel - 1) // 2))
    return moved


def _moved(sample: ConvSample, field_name: str, value: int) -> ConvSample | None:
    values = {"c_in": sample.c_in, "c_out": sample.c_out, "map": sample.map, "kernel": sample.kernel,
              "stride": sample.stride, "groups": sample.groups, field_name: value}
    if field_name == "c_in":
        if sample.groups == sample.c_in:  # depthwise stays depthwise
            values.update(c_out=value, groups=value)
        elif sample.groups > 1:  # grouped keeps its channels per group
            per_group = sample.c_in // sample.groups
            if value % per_group:
                return None
            values.update(c_out=value, groups=value // per_group)
    if sample.kernel == 1 and sample.groups == 1 and field_name == "kernel":
        return None  # a pointwise convolution stays pointwise
    return ConvSample(**values)


def _channels(value: float) -> int:
    return int(min(PRIOR["channels"], key=lambda c: abs(c - value)))


class Drawer(Protocol):
    """Where sampling draws from: the kinds it samples, the first round, a configuration of a kind, and whether a
    configuration may be measured (:class:`~nnperf.prediction.kernel.LayerPrior` over real networks,
    :class:`GridPrior`, or :class:`~nnperf.prediction.kernel.AdaptedPrior` near a user's example networks)."""

    @property
    def fingerprint(self) -> str: ...

    @property
    def kinds(self) -> tuple[str, ...]: ...

    def first_round(self, rng: np.random.Generator) -> list[Sample]: ...

    def draw(self, kind: str, rng: np.random.Generator) -> Sample: ...

    def allows(self, sample: Sample) -> bool: ...


def interleaved_draws(prior: Drawer, rng: np.random.Generator, per_kind: int = FIRST_ROUND) -> list[Sample]:
    """``per_kind`` draws of each of ``prior``'s kinds, the kinds interleaved (so that a budget too short for the
    whole round still reaches every kind): the first round of the zoo's prior and of the grid."""
    return [prior.draw(kind, rng) for _ in range(per_kind) for kind in prior.kinds]


class GridPrior:
    """The synthetic grid :data:`PRIOR` as a :class:`Drawer`: every draw is :func:`grid_draw`, all allowed."""

    fingerprint = "grid"
    kinds = SAMPLED_KINDS

    def first_round(self, rng: np.random.Generator) -> list[Sample]:
        return interleaved_draws(self, rng)

    def draw(self, kind: str, rng: np.random.Generator) -> Sample:
        return grid_draw(kind, rng)

    def allows(self, sample: Sample) -> bool:
        return True


def next_round(measured: dict[Sample, float], rng: np.random.Generator, prior: Drawer | None = None,
               size: int = ROUND) -> list[Sample]:
    """About ``size`` samples: neighbours of the worst-predicted samples of the kind the models predict worst, and
    a quarter fresh draws from ``prior`` (default: the synthetic grid) of its kinds; nothing ``prior`` does not
    allow."""
    prior = prior or GridPrior()
    by_kind: dict[str, list[Sample]] = defaultdict(list)
    for sample in measured:
        by_kind[sample.kind].append(sample)
    weakest, worst = _weakest_kind(by_kind, measured, max(3, size // 8))
    fresh = [prior.draw(str(rng.choice(prior.kinds)), rng) for _ in range(max(size // 4, 1))]
    near = [n for s in worst for n in neighbours(s) if n not in measured and prior.allows(n)]
    rng.shuffle(near)  # type: ignore[arg-type]
    return [*near[:size - len(fresh)], *fresh] if weakest else [prior.draw(k, rng) for k in prior.kinds]


def _weakest_kind(by_kind: dict[str, list[Sample]], measured: dict[Sample, float], count: int = 3
                  ) -> tuple[str, Sequence[Sample]]:
    """The kind with the largest cross-validated error (over the square root of its samples) and the ``count``
    samples its power law predicts worst when they are left out of its fit."""
    best: tuple[float, str, Sequence[Sample]] = (-1.0, "", ())
    for kind, samples in by_kind.items():
        if len(samples) < MIN_SAMPLES_TO_CHOOSE:
            return kind, samples  # too few to judge: grow it first
        rows = np.array([kernel_features(s.layer(), layer_metrics(s.layer())) for s in samples])
        times = np.array([measured[s] for s in samples])
        _, scores = choose(rows, times, ("ridge", "boosting"), folds=4)
        errors = _out_of_fold_errors(rows[:, :3], times)  # n(W), #OPs, #memOPs: few enough for a small kind
        weight = min(scores.values()) / np.sqrt(len(samples))
        if weight > best[0]:
            order = np.argsort(errors)[::-1][:count]
            best = (weight, kind, [samples[i] for i in order])
    return best[1], best[2]


def _out_of_fold_errors(rows: np.ndarray, times: np.ndarray, folds: int = 4) -> np.ndarray:
    """Each sample's relative error under the power law fitted on the folds that leave it out."""
    from sklearn.model_selection import KFold

    errors = np.zeros(len(times))
    for train, test in KFold(n_splits=folds, shuffle=True, random_state=0).split(rows):
        predicted = fit(Regressor.RIDGE, rows[train], times[train]).predict_s(rows[test])
        errors[test] = np.abs(predicted - times[test]) / times[test]
    return errors
