"""Layer configurations a sweep varies: the layer kinds, their parameters, defaults and validity.

Kinds (Osterwind 3.3.1 sweeps Conv2D; nnperf adds depthwise and fully
connected layers):

- ``conv2d``: ``channels`` (input channels c), ``filters`` (output channels F),
  ``size`` (input height = width), ``kernel`` (k x k), ``stride``; padding
  (k - 1) // 2 ("same" for odd k);
- ``depthwise``: ``channels`` (= output channels), ``size``, ``kernel``, ``stride``;
- ``fc``: ``channels`` (input features), ``filters`` (output features).

Every parameter is a positive integer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, LinearAttrs, OpType, conv_output_size


class SweepInputError(NnperfError):
    """A sweep or layer configuration that cannot be measured: unknown kind or parameter, bad range or value."""


PARAMETERS: dict[str, tuple[str, ...]] = {
    "conv2d": ("channels", "filters", "size", "kernel", "stride"),
    "depthwise": ("channels", "size", "kernel", "stride"),
    "fc": ("channels", "filters"),
}
"""The parameters of each layer kind, in display order."""

DEFAULTS: dict[str, dict[str, int]] = {
    "conv2d": {"channels": 128, "filters": 128, "size": 56, "kernel": 3, "stride": 1},
    "depthwise": {"channels": 128, "size": 56, "kernel": 3, "stride": 1},
    "fc": {"channels": 1024, "filters": 1024},
}
"""Values of the parameters a sweep neither varies nor fixes."""

KINDS = tuple(PARAMETERS)


def check_kind(kind: str) -> str:
    if kind not in PARAMETERS:
        raise SweepInputError(f"unknown layer kind {kind!r}; use one of {', '.join(KINDS)}")
    return kind


def check_parameter(kind: str, parameter: str) -> str:
    check_kind(kind)
    if parameter not in PARAMETERS[kind]:
        raise SweepInputError(f"a {kind} layer has no parameter {parameter!r}; its parameters: "
                              f"{', '.join(PARAMETERS[kind])}")
    return parameter


@dataclass(frozen=True)
class LayerConfig:
    """One layer configuration: a kind and a value for every parameter of that kind.

    Raises :class:`SweepInputError` for an unknown kind or parameter, a value
    that is not a positive integer, or a combination that makes no layer (a
    kernel larger than the padded input).
    """

    kind: str
    params: tuple[tuple[str, int], ...]

    def __post_init__(self) -> None:
        check_kind(self.kind)
        given = dict(self.params)
        for name, value in given.items():
            check_parameter(self.kind, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SweepInputError(f"{self.kind} parameter {name} must be a positive integer, got {value!r}")
        missing = [p for p in PARAMETERS[self.kind] if p not in given]
        if missing:
            raise SweepInputError(f"{self.kind} configuration lacks {', '.join(missing)}")
        object.__setattr__(self, "params", tuple((p, given[p]) for p in PARAMETERS[self.kind]))
        if self.kind in ("conv2d", "depthwise"):
            size, kernel, stride = given["size"], given["kernel"], given["stride"]
            if kernel > size + 2 * padding_of(kernel):
                raise SweepInputError(f"{self.describe()}: the {kernel}x{kernel} kernel is larger than the "
                                      f"{size}x{size} input (padded to {size + 2 * padding_of(kernel)})")
            if stride > size:
                raise SweepInputError(f"{self.describe()}: stride {stride} is larger than the {size}x{size} input")

    @classmethod
    def of(cls, kind: str, values: Mapping[str, int] | None = None) -> LayerConfig:
        """The configuration of ``kind`` with ``values`` over the defaults."""
        check_kind(kind)
        return cls(kind, tuple({**DEFAULTS[kind], **dict(values or {})}.items()))

    def __getitem__(self, name: str) -> int:
        return dict(self.params)[name]

    def with_value(self, name: str, value: int) -> LayerConfig:
        return LayerConfig.of(self.kind, {**dict(self.params), name: value})

    def describe(self) -> str:
        return f"{self.kind}(" + ", ".join(f"{k}={v}" for k, v in self.params) + ")"

    @property
    def output_size(self) -> int:
        """Output height = width of a convolution (1 for fc)."""
        if self.kind == "fc":
            return 1
        kernel = self["kernel"]
        pad = padding_of(kernel)
        return conv_output_size(self["size"], kernel, self["stride"], pad, pad)

    @property
    def in_channels(self) -> int:
        return self["channels"]

    @property
    def out_channels(self) -> int:
        return self["channels"] if self.kind == "depthwise" else self["filters"]

    def layer(self, name: str, producer: str) -> Layer:
        """This configuration as an IR layer reading ``producer`` (batch 1)."""
        if self.kind == "fc":
            return Layer(name, OpType.LINEAR, (producer,), ((1, self["channels"]),), (1, self["filters"]),
                         LinearAttrs())
        kernel, stride, pad = self["kernel"], self["stride"], padding_of(self["kernel"])
        size, out = self["size"], self.output_size
        groups = self["channels"] if self.kind == "depthwise" else 1
        return Layer(name, OpType.CONV, (producer,), ((1, self.in_channels, size, size),),
                     (1, self.out_channels, out, out),
                     ConvAttrs(kernel=(kernel, kernel), stride=(stride, stride), padding=(pad, pad, pad, pad),
                               groups=groups))


def padding_of(kernel: int) -> int:
    """The padding on each side: (k - 1) // 2, which keeps the size for odd kernels at stride 1."""
    return (kernel - 1) // 2


_RANGE = re.compile(r"^\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?$")


MAX_RANGE_POINTS = 10_000
"""The most points one sweep range may have (each point is timed for up to a second)."""


def parse_range(text: str) -> tuple[int, ...]:
    """``START:STOP[:STEP]``, both ends included (10:530:1 is 521 values); or a comma list ``8,16,24``."""
    if "," in text or text.strip().isdigit():
        try:
            values = tuple(int(v) for v in text.split(",") if v.strip())
        except ValueError:
            raise SweepInputError(f"range {text!r}: expected START:STOP[:STEP] or a comma list of integers") from None
        if not values:
            raise SweepInputError(f"range {text!r} is empty")
        if len(set(values)) != len(values):
            raise SweepInputError(f"range {text!r} repeats a value")
        return tuple(sorted(values))
    match = _RANGE.match(text)
    if not match:
        raise SweepInputError(f"range {text!r}: expected START:STOP[:STEP] with integers, e.g. 10:530:1")
    try:
        start, stop = int(match[1]), int(match[2])
        step = int(match[3]) if match[3] is not None else 1
    except ValueError:  # more digits than Python converts (4,300)
        raise SweepInputError(f"range {text!r}: a bound has too many digits") from None
    if step < 1:
        raise SweepInputError(f"range {text!r}: the step must be a positive integer, got {step}")
    if stop < start:
        raise SweepInputError(f"range {text!r} is reversed (stop {stop} < start {start}); write {stop}:{start}")
    points = (stop - start) // step + 1
    if points > MAX_RANGE_POINTS:
        raise SweepInputError(f"range {text!r} has {points:,} points, more than a sweep takes "
                              f"({MAX_RANGE_POINTS:,}); use a larger step")
    return tuple(range(start, stop + 1, step))


def parse_fixed(text: str) -> dict[str, int]:
    """``name=value,name=value`` into a dict of positive integers (names are checked by :class:`LayerConfig`)."""
    values: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise SweepInputError(f"fixed value {item!r}: expected NAME=INTEGER, e.g. filters=128")
        try:
            values[name.strip()] = int(value)
        except ValueError:
            raise SweepInputError(f"fixed value {item!r}: {value!r} is not an integer") from None
    return values
