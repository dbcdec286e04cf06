"""Plausibility bounds on the sizes of a network, checked whenever a layer or a network is built.

A typo in an IR file or a corrupt ONNX shape (a million channels, a dimension
of 10^30) would otherwise be inspected without a word and crash a measurement
that tries to allocate it. The bounds are far above any network nnperf is made
for (embedded and edge inference): a tensor of 2^32 elements is 16 GiB in
float32, 2^32 parameters are more than 20 times VGG-16's, and 10^14 MACs are
about 25,000 ResNet-50 inferences.

A genuinely huge network is built with the bounds lifted, in a block
(:func:`size_limits`) or for a whole process (``NNPERF_SIZE_LIMITS=off``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from nnperf.errors import ImplausibleSizeError, NnperfError
from nnperf.ir._layer_like import LayerLike, NetworkLike
from nnperf.ir._shapes import Shape, numel
from nnperf.ir.metrics import layer_metrics, network_metrics

SIZE_LIMITS_ENV = "NNPERF_SIZE_LIMITS"
"""The environment variable that lifts the bounds for a process when set to ``off``."""


@dataclass(frozen=True)
class SizeLimits:
    """The largest sizes a network may have: elements of one tensor, parameters and MACs (of a layer and
    of the whole network)."""

    max_tensor_elements: int = 2**32
    max_params: int = 2**32
    max_macs: int = 10**14

    def __post_init__(self) -> None:
        for name in ("max_tensor_elements", "max_params", "max_macs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise NnperfError(f"size limit {name} must be a positive int, got {value!r}")


DEFAULT_SIZE_LIMITS = SizeLimits()

_LIMITS: ContextVar[SizeLimits | None] = ContextVar("nnperf_size_limits", default=DEFAULT_SIZE_LIMITS)


@contextmanager
def size_limits(limits: SizeLimits | None) -> Iterator[None]:
    """Build networks inside the block under ``limits`` (``None``: no bounds at all)."""
    token = _LIMITS.set(limits)
    try:
        yield
    finally:
        _LIMITS.reset(token)


def current_size_limits() -> SizeLimits | None:
    """The bounds in force here: those of the innermost :func:`size_limits` block, else the defaults, or
    None when ``NNPERF_SIZE_LIMITS=off``."""
    if os.environ.get(SIZE_LIMITS_ENV, "").strip().lower() == "off":
        return None
    return _LIMITS.get()


_HOW_TO_LIFT = f"if the network really is this large, set {SIZE_LIMITS_ENV}=off"


def _count_text(value: int) -> str:
    """A count in three significant digits; one beyond a float's range by its order of magnitude."""
    try:
        return f"{value:.3g}"
    except OverflowError:
        return f"about 10^{len(str(value)) - 1}"


def _fail(where: str, value: int, what: str, bound: int) -> None:
    raise ImplausibleSizeError(f"{where}: {_count_text(value)} {what}, more than the plausibility bound of {bound:.3g} "
                               f"(a wrong shape or channel count?); {_HOW_TO_LIFT}")


def check_layer_size(layer: LayerLike, where: str) -> None:
    """Refuse a layer whose tensors, parameters or MACs exceed the bounds in force."""
    limits = current_size_limits()
    if limits is None:
        return
    for i, shape in enumerate(layer.input_shapes):
        if numel(shape) > limits.max_tensor_elements:
            _fail(where, numel(shape), f"elements in input {i}", limits.max_tensor_elements)
    if numel(layer.output_shape) > limits.max_tensor_elements:
        _fail(where, numel(layer.output_shape), "elements in the output", limits.max_tensor_elements)
    metrics = layer_metrics(layer)
    if metrics.params > limits.max_params:
        _fail(where, metrics.params, "parameters", limits.max_params)
    if metrics.macs > limits.max_macs:
        _fail(where, metrics.macs, "MACs", limits.max_macs)


def check_network_size(network: NetworkLike) -> None:
    """Refuse a network whose total parameters or MACs exceed the bounds in force (its inputs and layers
    were checked when they were built)."""
    limits = current_size_limits()
    if limits is None:
        return
    metrics = network_metrics(network)
    where = f"network {network.name!r} ({len(network.layers)} layers)"
    if metrics.params > limits.max_params:
        _fail(where, metrics.params, "parameters", limits.max_params)
    if metrics.macs > limits.max_macs:
        _fail(where, metrics.macs, "MACs", limits.max_macs)


def check_tensor_size(shape: Shape, where: str) -> None:
    """Refuse a tensor (a network input) of more elements than the bounds allow."""
    limits = current_size_limits()
    if limits is None:
        return
    if numel(shape) > limits.max_tensor_elements:
        _fail(where, numel(shape), "elements", limits.max_tensor_elements)
