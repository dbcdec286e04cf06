"""The primitive-time dataset (Mulder et al. 3.2): layer configurations, where they come from, and their times.

A :class:`ConvSample` is one configuration with the median time of every primitive that was measured on it
(Mulder et al.'s (k, c, im, s, f) -> (R_1, ..., R_N), with R_i absent where primitive i does not apply or was
not measured); a :class:`TransformSample` is one activation shape with the time of every layout
transformation (3.2.2's (c, im) -> (R_ij)). :class:`PrimitiveDataset` holds both for one system. The
configurations come from networks (:func:`conv_configs`) and from random configurations sampled around
them (:func:`sample_configs`); profiling them into the store is ``nnperf.campaign.profile_primitives``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nnperf.ir import Network, OpType
from nnperf.primitives._config import ConvConfig, PrimitiveError

GRID_KERNELS = (1, 3, 5, 7, 9, 11)
"""The kernel sizes of Mulder et al.'s grid (Table 1: 1 to 11, odd)."""
GRID_STRIDES = (1, 2, 4)
"""The strides of Mulder et al.'s grid (Table 1)."""

MAX_CHANNELS = 2048
"""The largest c and f of a sampled configuration (Mulder et al. Table 1)."""
IM_RANGE = (7, 299)
"""The smallest and largest input size of a sampled configuration (Table 1)."""


def config_key(config: ConvConfig) -> str:
    """A short stable identity of a configuration (the same for equal configurations, in any process)."""
    text = json.dumps(config.to_dict(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def config_label(config: ConvConfig) -> str:
    """A readable one-line name: ``c64 f64 56x56 k3x3 s1 p1 g1`` (only what differs from the plain case beyond)."""
    parts = [f"c{config.c}", f"f{config.f}", f"{config.im[0]}x{config.im[1]}", f"k{config.k[0]}x{config.k[1]}",
             f"s{config.stride[0]}" if config.stride[0] == config.stride[1] else f"s{config.stride[0]}x{config.stride[1]}"]
    pads = config.padding
    parts.append(f"p{pads[0]}" if len(set(pads)) == 1 else "p" + ",".join(map(str, pads)))
    if config.groups > 1:
        parts.append(f"g{config.groups}")
    if config.dilation != (1, 1):
        parts.append(f"d{config.dilation[0]}x{config.dilation[1]}")
    if config.batch != 1:
        parts.append(f"n{config.batch}")
    return " ".join(parts)


def config_from_dict(data: Mapping[str, object]) -> ConvConfig:
    """The configuration ``ConvConfig.to_dict`` wrote; a :class:`PrimitiveError` names a missing or bad field."""
    try:
        return ConvConfig(int(data["batch"]), int(data["c"]), int(data["f"]),  # type: ignore[call-overload]
                          _ints(data["im"], 2), _ints(data["k"], 2), _ints(data["stride"], 2),  # type: ignore[arg-type]
                          _ints(data["padding"], 4), int(data["groups"]),  # type: ignore[arg-type,call-overload]
                          _ints(data["dilation"], 2))  # type: ignore[arg-type]
    except KeyError as exc:
        raise PrimitiveError(f"a stored convolution configuration has no {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise PrimitiveError(f"a stored convolution configuration is malformed: {exc}") from None


def _ints(value: Iterable[object], n: int) -> tuple[int, ...]:
    out = tuple(int(v) for v in value)  # type: ignore[call-overload]
    if len(out) != n:
        raise ValueError(f"expected {n} numbers, got {list(out)}")
    return out


def conv_layer_configs(network: Network) -> dict[str, ConvConfig]:
    """Every 2-D convolution layer of ``network`` by name, in network order, with its configuration."""
    found: dict[str, ConvConfig] = {}
    for layer in network.layers:
        if layer.op != OpType.CONV or len(layer.input_shapes[0]) != 4:
            continue
        a = layer.attrs
        n, c, h, w = layer.input_shapes[0]
        found[layer.name] = ConvConfig(n, c, layer.output_shape[1], (h, w), a.kernel, a.stride,  # type: ignore[attr-defined]
                                       a.padding, a.groups, a.dilation)  # type: ignore[attr-defined]
    return found


def conv_configs(network: Network) -> list[ConvConfig]:
    """The distinct 2-D convolutions of ``network``, in network order, as configurations.

    A network without a 2-D convolution raises :class:`PrimitiveError` (there is nothing to choose a
    primitive for).
    """
    found = list(dict.fromkeys(conv_layer_configs(network).values()))
    if not found:
        raise PrimitiveError(f"network {network.name!r} has no 2-D convolution: there is no primitive to choose")
    return found


def _scale(value: int, rng: random.Random, low: float, high: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, round(value * 2 ** rng.uniform(low, high))))


def sample_configs(seeds: Sequence[ConvConfig], n: int, seed: int = 0) -> list[ConvConfig]:
    """``n`` random configurations around ``seeds`` (Mulder et al. 3.2.1: common ranges, impossible ones left out).

    Each takes a random seed configuration and keeps its kernel, stride, dilation and kind (dense, grouped,
    depthwise), scales its channels by 2^U(-1, 1) (to a multiple of 8 above 16, and of the groups) and its
    input size by 2^U(-1, 1), within :data:`MAX_CHANNELS` and :data:`IM_RANGE`, with "same" padding
    (k // 2 on each side) or none as the seed has it. Duplicates of each other and of the seeds are dropped,
    so fewer than ``n`` come back when the seeds leave little room.
    """
    if not seeds:
        raise PrimitiveError("sampling configurations needs at least one seed configuration")
    rng = random.Random(seed)
    seen = set(seeds)
    out: list[ConvConfig] = []
    for _ in range(20 * n):
        if len(out) >= n:
            break
        base = rng.choice(seeds)
        depthwise = base.groups > 1 and base.groups == base.c
        im = _scale(max(base.im), rng, -1.0, 1.0, max(IM_RANGE[0], *base.k), IM_RANGE[1])
        c = _channels(base.c, rng)
        if depthwise:
            groups, f = c, c * max(1, base.f // base.c)
        else:
            groups = base.groups if base.groups > 1 and c % base.groups == 0 else 1
            f = _channels(base.f, rng)
            f -= f % groups
            if f < groups:
                continue
        padding = tuple(k // 2 for k in base.k) if any(base.padding) else (0, 0)
        try:
            config = ConvConfig.make(base.batch, c, f, im, base.k, base.stride, padding, groups, base.dilation)
        except PrimitiveError:
            continue
        if config not in seen:
            seen.add(config)
            out.append(config)
    return out


@dataclass(frozen=True)
class GridShape:
    """One (c, f, im, groups) shape of a convolution in one of Mulder et al.'s Table 7 architectures, with the
    architectures it occurs in (``tables/table7_shapes.csv``, written by ``bench/grid_triplets.py``)."""

    c: int
    f: int
    im: int
    groups: int
    architectures: tuple[str, ...]


def grid_shapes() -> tuple[GridShape, ...]:
    """The shapes of the convolutions of Mulder et al.'s Table 7 architectures, DenseNet and ResNeXt left out
    (they are held out of the primitive selection benchmark): the first half of the paper's grid."""
    import csv
    import importlib.resources

    text = importlib.resources.files("nnperf.primitives").joinpath("tables/table7_shapes.csv").read_text()
    rows = list(csv.DictReader(text.splitlines()))
    return tuple(GridShape(int(r["c"]), int(r["f"]), int(r["im"]), int(r["groups"]), tuple(r["architectures"].split()))
                 for r in rows)


def paper_grid(kernels: Sequence[int] = GRID_KERNELS, strides: Sequence[int] = GRID_STRIDES,
               max_macs: int | None = None, seed: int | None = 0) -> list[ConvConfig]:
    """Mulder et al.'s grid (3.2.1): every :func:`grid_shapes` shape with every kernel size and stride, "same"
    padding (k // 2), batch 1; impossible ones (a kernel larger than the input) left out.

    ``max_macs`` leaves out configurations of more multiply-accumulates (a machine that cannot afford the
    largest); ``seed`` shuffles the list (seeded, the same order in every process) so that a profile stopped by
    its budget holds a uniform sample of the grid; ``None`` keeps the table's order.
    """
    if max_macs is not None and max_macs < 1:
        raise PrimitiveError(f"max_macs must be positive, got {max_macs}")
    out: list[ConvConfig] = []
    for shape in grid_shapes():
        for k in kernels:
            for s in strides:
                if k > shape.im:
                    continue
                config = ConvConfig.make(1, shape.c, shape.f, shape.im, k, s, k // 2, shape.groups)
                if max_macs is None or config.macs <= max_macs:
                    out.append(config)
    unique = list(dict.fromkeys(out))
    if seed is not None:
        random.Random(seed).shuffle(unique)
    return unique


def _channels(value: int, rng: random.Random) -> int:
    c = _scale(value, rng, -1.0, 1.0, 1, MAX_CHANNELS)
    return c if c <= 16 else c - c % 8


@dataclass(frozen=True)
class ConvSample:
    """One configuration and the time (seconds) of each primitive measured on it, by primitive name: its median,
    or for primitives timed together in interleaved rounds, their reference's median times their median
    per-round ratio to it (``nnperf.campaign.load_primitive_dataset``)."""

    config: ConvConfig
    times_s: Mapping[str, float]


@dataclass(frozen=True)
class TransformSample:
    """One activation (batch, c, im) and the median time (seconds) of each layout transformation, by name
    (``chw->hwc``); identities are never stored (they cost nothing)."""

    batch: int
    c: int
    im: tuple[int, int]
    times_s: Mapping[str, float]


@dataclass(frozen=True)
class PrimitiveDataset:
    """The profiled dataset of one system: ``primitives`` and ``transforms`` name the columns (every name that
    has at least one time), ``conv`` and ``layout`` the rows."""

    system_key: str
    primitives: tuple[str, ...]
    transforms: tuple[str, ...]
    conv: tuple[ConvSample, ...]
    layout: tuple[TransformSample, ...]

    def of_rows(self, conv: Sequence[ConvSample], layout: Sequence[TransformSample]) -> PrimitiveDataset:
        """The dataset of these rows (of this one's system); its columns are this one's that keep at least one
        time, in their order."""
        conv_names = {name for s in conv for name in s.times_s}
        layout_names = {name for s in layout for name in s.times_s}
        return PrimitiveDataset(self.system_key, tuple(p for p in self.primitives if p in conv_names),
                                tuple(t for t in self.transforms if t in layout_names), tuple(conv), tuple(layout))

    @property
    def n_samples(self) -> int:
        """Every stored time: (configuration, primitive) and (activation, transformation) pairs."""
        return sum(len(s.times_s) for s in self.conv) + sum(len(s.times_s) for s in self.layout)

    def counts(self) -> dict[str, int]:
        """How many configurations each primitive and transformation was measured on (Mulder et al. Table 2)."""
        counts = {name: 0 for name in (*self.primitives, *self.transforms)}
        for sample in self.conv:
            for name in sample.times_s:
                counts[name] += 1
        for t in self.layout:
            for name in t.times_s:
                counts[name] += 1
        return counts
