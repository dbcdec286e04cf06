"""Which kernel runs a layer, and the features that tell kernels of one kind apart.

One PreVIous model per layer type sees a convolution as n(W), #OPs and #memOPs, and cannot tell a dense 3x3
convolution from a grouped or depthwise one of the same counts, whose kernels run at a fraction of the dense
rate (on networks it never saw, ResNeXt-50's grouped convolutions were under-predicted by 30%). nn-Meter splits
by kernel; so does this module:

- ``conv:standard``: groups 1, a kernel larger than 1x1;
- ``conv:pointwise``: groups 1, a 1x1 kernel (a matrix product);
- ``conv:depthwise``: one input channel per group (groups = input channels);
- ``conv:grouped``: every other convolution with groups > 1;
- every other layer: its PreVIous layer type (``model_key``).

The convolution kinds are the IR's own (:attr:`nnperf.ir.Layer.conv_kind`), as :class:`ConvKernel`.

A convolution's features describe how its kernel runs: n(W), #OPs, #memOPs, input and output channels, groups,
input channels per group, kernel area, stride, dilation, output and input map sizes and total padding. Other
layers get n(W), #OPs, #memOPs, input and output elements.
"""

from __future__ import annotations

import numpy as np

from nnperf.ir import ConvAttrs, ConvKind, Layer, OpType
from nnperf.ir.metrics import LayerMetrics
from nnperf.prediction._enums import TextEnum
from nnperf.prediction._features import model_key


class ConvKernel(TextEnum):
    """The kernel kind of a convolution: ``conv:`` and the IR's :class:`~nnperf.ir.ConvKind`."""

    STANDARD = f"conv:{ConvKind.STANDARD.value}"
    POINTWISE = f"conv:{ConvKind.POINTWISE.value}"
    DEPTHWISE = f"conv:{ConvKind.DEPTHWISE.value}"
    GROUPED = f"conv:{ConvKind.GROUPED.value}"

    @classmethod
    def of(cls, kind: ConvKind) -> ConvKernel:
        """The kernel kind of a convolution of the IR's ``kind``."""
        return cls(f"conv:{kind.value}")


CONV_KINDS = tuple(ConvKernel.of(kind).value for kind in ConvKind)
"""The convolution kernel kinds' keys, in the IR's order of :class:`~nnperf.ir.ConvKind`."""

CONV_FEATURES = ("n_weights", "ops", "mem_ops", "in_channels", "out_channels", "groups", "channels_per_group",
                 "kernel_area", "stride", "dilation", "out_map", "in_map", "padding")
LAYER_FEATURES = ("n_weights", "ops", "mem_ops", "n_input", "n_output")


def kernel_kind(layer: Layer) -> str:
    """The kernel kind that runs ``layer`` (see the module docstring)."""
    kind = layer.conv_kind
    return model_key(layer) if kind is None else ConvKernel.of(kind).value


def kernel_features(layer: Layer, metrics: LayerMetrics) -> np.ndarray:
    """The feature row of ``layer`` (:data:`CONV_FEATURES` for a convolution, else :data:`LAYER_FEATURES`)."""
    counts = [metrics.params, metrics.ops, metrics.mem_ops]
    if layer.op is not OpType.CONV or not isinstance(layer.attrs, ConvAttrs):
        return np.array([*counts, metrics.n_input, metrics.n_output], dtype=float)
    attrs = layer.attrs
    in_shape, out_shape = layer.input_shapes[0], layer.output_shape
    in_channels, out_channels = in_shape[1], out_shape[1]
    return np.array([*counts, in_channels, out_channels, attrs.groups, in_channels / attrs.groups,
                     attrs.kernel[0] * attrs.kernel[1], attrs.stride[0] * attrs.stride[1],
                     attrs.dilation[0] * attrs.dilation[1], int(np.prod(out_shape[2:])), int(np.prod(in_shape[2:])),
                     sum(attrs.padding)], dtype=float)
