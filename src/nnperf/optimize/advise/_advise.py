"""The width advisor: where a small change of a layer's filters lowers the predicted latency (Osterwind 3.4).

"Sometimes a small change of input parameters can lead to up to 10%
reduction in latency for that layer." For every convolution and fully
connected layer whose output width can change alone, nnperf tries every
width within +/- ``tolerance`` and predicts the layer and the layers whose
input channels follow it (through activations, normalisation, pooling and
depthwise convolutions) with the system's composed step models.

Fewer filters always do less work, so a smaller width would always "win".
The advisor therefore ranks a change by its *step bonus*: the predicted saving
beyond what the same change saves along the trend, the straight line fitted
by least squares through the predicted times of every width in the tolerance
window. (A smooth composition with its own scale would not do: its slope is
not the stepped model's, and the difference, not the steps, would decide.) A
change is listed when it lowers the predicted latency and its bonus is at
least ``min_bonus`` of the affected layers' time: a step edge or an aligned
fast path the width lands on. Widths feeding an add, a concat, a reshape or the
network's output are coupled to other layers and are skipped, with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from nnperf.errors import NnperfError
from nnperf.ir import ACTIVATIONS, NOOPS, ConvAttrs, Layer, Network, OpType
from nnperf.measure.sweep import LayerConfig, SweepInputError
from nnperf.prediction.steps import ComposedModel

PASS_THROUGH = frozenset(ACTIVATIONS | NOOPS | {OpType.BATCH_NORM, OpType.SCALE, OpType.MAX_POOL, OpType.AVG_POOL,
                                                OpType.LRN, OpType.PAD, OpType.GLOBAL_AVG_POOL,
                                                OpType.GLOBAL_MAX_POOL})
"""Layers that keep the channel count: a width change passes through them."""

VERIFY_ROUNDS = 3
"""--verify measures both widths of every affected layer this many times, interleaved."""


class AdviceError(NnperfError):
    """Advice that cannot be given (no model for a layer kind, a bad tolerance)."""


def layer_config(layer: Layer) -> LayerConfig | str:
    """The sweep configuration of a conv or fc layer, or the reason it has none."""
    try:
        if layer.op is OpType.LINEAR:
            if len(layer.input_shape) != 2:
                return "fully connected layer on a tensor that is not N x features"
            return LayerConfig.of("fc", {"channels": layer.input_shape[1], "filters": layer.output_shape[1]})
        if layer.op is not OpType.CONV:
            return f"{layer.op.value} has no step model"
        attrs = layer.attrs
        assert isinstance(attrs, ConvAttrs)
        _, channels, height, width = layer.input_shape
        if height != width or attrs.kernel[0] != attrs.kernel[1] or attrs.stride[0] != attrs.stride[1]:
            return "non-square input, kernel or stride"
        if attrs.dilation != (1, 1):
            return "dilated convolution"
        values = {"channels": channels, "size": height, "kernel": attrs.kernel[0], "stride": attrs.stride[0]}
        if attrs.groups == 1:
            return LayerConfig.of("conv2d", {**values, "filters": layer.output_shape[1]})
        if attrs.groups == channels and layer.output_shape[1] == channels:
            return LayerConfig.of("depthwise", values)
        return "grouped convolution"
    except SweepInputError as exc:
        return str(exc)


@dataclass(frozen=True)
class Suggestion:
    """A width change and its predicted (and, with verify, measured) effect, in seconds.

    ``affected`` lists the layer and the layers whose input channels follow it;
    times are sums over them.
    """

    layer: str
    parameter: str
    current: int
    suggested: int
    affected: tuple[str, ...]
    current_s: float
    suggested_s: float
    trend_saving_s: float
    measured_current_s: float | None = None
    measured_suggested_s: float | None = None

    @property
    def saving_s(self) -> float:
        return self.current_s - self.suggested_s

    @property
    def saving(self) -> float:
        """Predicted saving over the affected layers' predicted time (a fraction)."""
        return self.saving_s / self.current_s

    @property
    def bonus_s(self) -> float:
        """The saving beyond the trend's for the same change (seconds)."""
        return self.saving_s - self.trend_saving_s

    @property
    def measured_saving(self) -> float | None:
        if self.measured_current_s is None or self.measured_suggested_s is None:
            return None
        return (self.measured_current_s - self.measured_suggested_s) / self.measured_current_s


@dataclass(frozen=True)
class Advice:
    """Every suggestion for a network, best bonus first, with the layers that were not considered and why."""

    network: str
    system: str
    tolerance: float
    suggestions: tuple[Suggestion, ...]
    skipped: Mapping[str, str] = field(default_factory=dict)
    considered: int = 0


def _followers(network: Network, name: str) -> tuple[list[str], str]:
    """The conv/fc layers whose input channels equal ``name``'s output width, or the reason it is coupled."""
    outputs = set(network.outputs)
    found: list[str] = []
    frontier = [name]
    while frontier:
        current = frontier.pop()
        if current in outputs:
            return [], "its width reaches the network output"
        for consumer_name in network.consumers(current):
            consumer = network.layer(consumer_name)
            if len(consumer.inputs) != 1:
                return [], f"its width feeds {consumer.op.value} {consumer_name!r} with other inputs"
            kind = consumer.conv_kind.value if consumer.conv_kind is not None else ""
            flat_vector = consumer.op is OpType.FLATTEN and consumer.input_shape[2:] == (1, 1)
            if consumer.op is OpType.LINEAR or kind in ("standard", "pointwise", "depthwise"):
                found.append(consumer_name)
                if kind == "depthwise":  # keeps the width: its followers change too
                    frontier.append(consumer_name)
            elif consumer.op in PASS_THROUGH or flat_vector:
                frontier.append(consumer_name)
            else:
                return [], f"its width feeds {consumer.op.value} {consumer_name!r}"
    return found, ""


def _with_width(config: LayerConfig, role: str, width: int) -> LayerConfig:
    """``config`` with its output (role 'out') or input (role 'in') width set; depthwise has one width."""
    if config.kind == "depthwise" or role == "in":
        return config.with_value("channels", width)
    return config.with_value("filters", width)


@dataclass(frozen=True)
class _Knob:
    """A layer whose output width can change alone: its configuration, and the layers whose input channels follow
    it (``followers``) with theirs."""

    layer: Layer
    config: LayerConfig
    followers: tuple[str, ...]
    follower_configs: tuple[LayerConfig, ...]

    def configs(self, width: int) -> list[LayerConfig]:
        """The layer with ``width`` outputs and its followers with ``width`` inputs."""
        return ([_with_width(self.config, "out", width)]
                + [_with_width(c, "in", width) for c in self.follower_configs])


def advise(network: Network, models: Mapping[str, ComposedModel], system: str, tolerance: float = 0.10,
           min_bonus: float = 0.01,
           measure: Callable[[LayerConfig], float] | None = None,
           progress: Callable[[str, int, int], None] | None = None) -> Advice:
    """Suggestions for ``network`` from composed step models per layer kind (``models``: kind -> model).

    ``measure`` (a configuration -> seconds) verifies each suggestion on the
    device: the layer and its followers at both widths.
    """
    if not 0 < tolerance < 1:
        raise AdviceError(f"the tolerance must be a fraction in (0, 1), got {tolerance}")
    skipped: dict[str, str] = {}
    suggestions = []
    knobs = [layer for layer in network.layers if layer.op in (OpType.CONV, OpType.LINEAR)]
    considered = 0
    for index, layer in enumerate(knobs):
        if progress is not None:
            progress(layer.name, index, len(knobs))
        knob = _knob(network, layer, models)
        if isinstance(knob, str):
            skipped[layer.name] = knob
            continue
        if knob is None:
            continue  # a depthwise width is its producer's: advised there
        considered += 1
        suggestion = _suggestion(knob, models, tolerance, min_bonus)
        if suggestion is None:
            continue
        if measure is not None:
            suggestion = _verified(suggestion, knob, measure)
        suggestions.append(suggestion)
    if progress is not None:
        progress("done", len(knobs), len(knobs))
    suggestions.sort(key=lambda s: -s.bonus_s)
    return Advice(network.name, system, tolerance, tuple(suggestions), skipped, considered)


def _knob(network: Network, layer: Layer, models: Mapping[str, ComposedModel]) -> _Knob | str | None:
    """``layer`` as a knob, or the reason it is not considered, or None for a depthwise convolution (its width is
    its producer's)."""
    config = layer_config(layer)
    if isinstance(config, str):
        return config
    if config.kind == "depthwise":
        return None
    followers, reason = _followers(network, layer.name)
    if reason:
        return reason
    follower_configs = []
    for name in followers:
        follower = layer_config(network.layer(name))
        if isinstance(follower, str):
            reason = f"follower {name!r}: {follower}"
            break
        follower_configs.append(follower)
    missing = sorted({c.kind for c in [config, *follower_configs]} - set(models))
    if reason or missing:
        return reason or f"no step model for {', '.join(missing)} on this system"
    return _Knob(layer, config, tuple(followers), tuple(follower_configs))


def _suggestion(knob: _Knob, models: Mapping[str, ComposedModel], tolerance: float,
                min_bonus: float) -> Suggestion | None:
    """The width within ``tolerance`` of the best step bonus, when it lowers the predicted latency and its bonus
    is at least ``min_bonus`` of the affected layers' time; None otherwise (or with under three widths)."""
    config = knob.config
    width = config.out_channels
    low, high = max(1, math.ceil(width * (1 - tolerance))), math.floor(width * (1 + tolerance))
    widths = np.arange(low, high + 1)
    if len(widths) < 3:
        return None  # no trend to step off
    predicted = np.array([_total(models, knob, int(w)) for w in widths])
    trend = np.polyval(np.polyfit(widths, predicted, 1), widths)
    at = int(np.flatnonzero(widths == width)[0])
    now, saving, trend_saving = predicted[at], predicted[at] - predicted, trend[at] - trend
    bonus = np.where((widths != width) & (saving > 0), saving - trend_saving, -np.inf)
    best = int(np.argmax(bonus))
    if bonus[best] < min_bonus * now:
        return None
    return Suggestion(knob.layer.name, "filters" if config.kind != "depthwise" else "channels", width,
                      int(widths[best]), (knob.layer.name, *knob.followers), float(now), float(predicted[best]),
                      float(trend_saving[best]))


def _verified(suggestion: Suggestion, knob: _Knob, measure: Callable[[LayerConfig], float]) -> Suggestion:
    """``suggestion`` with the affected layers measured at both widths."""
    now_s, then_s = _measured(measure, [knob.config, *knob.follower_configs], knob.configs(suggestion.suggested))
    return replace(suggestion, measured_current_s=now_s, measured_suggested_s=then_s)


def _measured(measure: Callable[[LayerConfig], float], now: list[LayerConfig],
              then: list[LayerConfig]) -> tuple[float, float]:
    """The summed time of ``now`` and of ``then``: each configuration measured in ``VERIFY_ROUNDS`` interleaved
    rounds (now, then, now, then, ...) and its median taken, so that drift between the two does not decide."""
    times: list[list[float]] = [[] for _ in now + then]
    for _ in range(VERIFY_ROUNDS):
        for i, config in enumerate(now + then):
            times[i].append(measure(config))
    medians = [float(np.median(t)) for t in times]
    return sum(medians[:len(now)]), sum(medians[len(now):])


def _total(models: Mapping[str, ComposedModel], knob: _Knob, width: int) -> float:
    """Predicted time of the layer with ``width`` outputs and of its followers with ``width`` inputs."""
    return sum(models[c.kind].predict(c) for c in knob.configs(width))
