"""What the primitive cost models read and predict: log features of a layer or an activation, and the
standardisation of both sides (Mulder et al. 3.3, "Data Point Normalization").

The paper feeds the layer shape (k, c, im, s, f) to the networks; here every size enters as its base-2
logarithm (times span orders of magnitude and grow as products of sizes, which a log turns into sums), with
the products a cost usually follows (MACs, output pixels, channels per group) added so that even a linear
model can express a power law. Each feature column is then standardised with the training rows' mean and
standard deviation, and each target column is z = log(time_s) standardised over its present training
entries: x~ = (z - mean(z)) / std(z).

Two feature sets exist, numbered as a fitted model stores them: set 1 (:data:`CONV_FEATURES`,
:data:`TRANSFORM_FEATURES`, the first models') and set 2 (:data:`EXTENDED_CONV_FEATURES`,
:data:`EXTENDED_TRANSFORM_FEATURES`), which adds what a tree cannot build from sums of logs and what the
blocked layouts pay: a depthwise flag, the bytes read and written (input, output, weights; float32), the GEMM
sizes of an im2col product, the output height and width, and how much padding the channels to a multiple of
8 or 16 costs (``log2(ceil(c / 16) * 16 / c)``; ONNX Runtime's NCHWc layout pads its blocks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nnperf.errors import NnperfError
from nnperf.primitives import ConvConfig

CONV_FEATURES = ("log2_c", "log2_f", "log2_im_h", "log2_im_w", "log2_k_h", "log2_k_w", "log2_stride_h",
                 "log2_stride_w", "log2_groups", "log2_dilation_h", "log2_dilation_w", "log2_batch",
                 "log2_1p_padding", "log2_macs", "log2_out_pixels", "log2_c_per_group")
"""The columns of :func:`conv_features`, in order (``log2_1p_padding`` is log2(1 + the four paddings' sum))."""

TRANSFORM_FEATURES = ("log2_batch", "log2_c", "log2_h", "log2_w", "log2_numel")
"""The columns of :func:`transform_features`, in order."""

EXTENDED_CONV_FEATURES = (*CONV_FEATURES, "depthwise", "log2_f_per_group", "log2_out_h", "log2_out_w",
                          "log2_kernel_area", "log2_gemm_k", "log2_in_bytes", "log2_out_bytes", "log2_weight_bytes",
                          "log2_c_pad16", "log2_f_pad16")
"""Feature set 2 of a convolution: set 1 and a depthwise flag (1.0 where every group has one input channel and
there are several groups, else 0.0), f / groups, the output height and width, the kernel's area, the GEMM's
inner size (c / groups * kernel area), the float32 bytes of the input, output and weights, and the padding of
c and f to a multiple of 16 (``log2(ceil(c / 16) * 16 / c)``, 0 for a multiple of 16)."""

EXTENDED_TRANSFORM_FEATURES = (*TRANSFORM_FEATURES, "log2_hw", "log2_c_pad8", "log2_c_pad16")
"""Feature set 2 of an activation: set 1 and the spatial size h * w and the padding of c to a multiple of 8 and
of 16 (the blocked layouts' blocks)."""

FEATURE_SETS = (1, 2)
"""The feature sets a model can be fitted on (the columns of :func:`conv_features` and :func:`transform_features`
for each); a stored model names its own, so one fitted on set 1 keeps predicting from set 1."""

BYTES_PER_ELEMENT = 4
"""float32 activations and weights."""

ActivationShape = tuple[int, int, tuple[int, int]]
"""An activation as (batch, c, (h, w)), the key of a layout transformation's time."""


def _conv_row(config: ConvConfig) -> list[float]:
    out_h, out_w = config.out
    sizes = (config.c, config.f, *config.im, *config.k, *config.stride, config.groups, *config.dilation,
             config.batch, 1 + sum(config.padding), config.macs, out_h * out_w, config.c // config.groups)
    return [math.log2(v) for v in sizes]


def _pad(n: int, block: int) -> float:
    """log2 of n rounded up to a multiple of ``block``, over n: what a blocked layout's padding costs."""
    return math.log2(-(-n // block) * block / n)


def _extended_conv_row(config: ConvConfig) -> list[float]:
    out_h, out_w = config.out
    kernel_area = config.k[0] * config.k[1]
    c_per_group = config.c // config.groups
    depthwise = 1.0 if config.groups > 1 and c_per_group == 1 else 0.0
    sizes = (config.f // config.groups, out_h, out_w, kernel_area, c_per_group * kernel_area,
             BYTES_PER_ELEMENT * config.batch * config.c * config.im[0] * config.im[1],
             BYTES_PER_ELEMENT * config.batch * config.f * out_h * out_w,
             BYTES_PER_ELEMENT * config.f * c_per_group * kernel_area)
    return [*_conv_row(config), depthwise, *(math.log2(v) for v in sizes), _pad(config.c, 16), _pad(config.f, 16)]


def _check_set(feature_set: int) -> None:
    if feature_set not in FEATURE_SETS:
        raise NnperfError(f"unknown feature set {feature_set!r}; known: {', '.join(map(str, FEATURE_SETS))}")


def conv_feature_names(feature_set: int = 1) -> tuple[str, ...]:
    """The columns of :func:`conv_features` for ``feature_set``."""
    _check_set(feature_set)
    return CONV_FEATURES if feature_set == 1 else EXTENDED_CONV_FEATURES


def transform_feature_names(feature_set: int = 1) -> tuple[str, ...]:
    """The columns of :func:`transform_features` for ``feature_set``."""
    _check_set(feature_set)
    return TRANSFORM_FEATURES if feature_set == 1 else EXTENDED_TRANSFORM_FEATURES


def conv_features(configs: Sequence[ConvConfig], feature_set: int = 1) -> np.ndarray:
    """The float64 matrix of feature set ``feature_set`` (1: the 16 :data:`CONV_FEATURES`; 2: the 27
    :data:`EXTENDED_CONV_FEATURES`), one row per configuration."""
    row = _conv_row if feature_set == 1 else _extended_conv_row
    width = len(conv_feature_names(feature_set))
    return np.array([row(c) for c in configs], dtype=float).reshape(len(configs), width)


def transform_features(shapes: Sequence[ActivationShape], feature_set: int = 1) -> np.ndarray:
    """The float64 matrix of feature set ``feature_set`` (1: the 5 :data:`TRANSFORM_FEATURES`; 2: the 8
    :data:`EXTENDED_TRANSFORM_FEATURES`) for activations (batch, c, (h, w))."""
    width = len(transform_feature_names(feature_set))
    rows = []
    for batch, c, (h, w) in shapes:
        if min(batch, c, h, w) < 1:
            raise NnperfError(f"an activation's sizes must be positive, got batch={batch}, c={c}, im=({h}, {w})")
        row = [math.log2(v) for v in (batch, c, h, w, batch * c * h * w)]
        if feature_set == 2:
            row += [math.log2(h * w), _pad(c, 8), _pad(c, 16)]
        rows.append(row)
    return np.array(rows, dtype=float).reshape(len(shapes), width)


@dataclass(frozen=True)
class Standardiser:
    """Per-column ``(x - mean) / std`` with the statistics of the rows it was fitted on (float64).

    A column that is constant over those rows (or has a single entry) gets std 1, as scikit-learn's
    StandardScaler does: it then only moves to zero. NaN entries (absent targets) are left out of the
    statistics and stay NaN.
    """

    mean: tuple[float, ...]
    std: tuple[float, ...]

    @classmethod
    def fit(cls, x: np.ndarray) -> Standardiser:
        """The statistics of every column of ``x`` over its non-NaN entries (a column without any gets 0 and 1)."""
        present = ~np.isnan(x)
        count = present.sum(axis=0)
        mean = np.where(count > 0, np.nansum(x, axis=0) / np.maximum(count, 1), 0.0)
        var = np.nansum((x - mean) ** 2, axis=0) / np.maximum(count, 1)
        std = np.sqrt(var)
        std = np.where((count > 1) & (std > 1e-12 * np.maximum(np.abs(mean), 1.0)), std, 1.0)
        return cls(tuple(map(float, mean)), tuple(map(float, std)))

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (x - np.asarray(self.mean)) / np.asarray(self.std)

    def inverse(self, x: np.ndarray) -> np.ndarray:
        return x * np.asarray(self.std) + np.asarray(self.mean)

    def to_dict(self) -> dict[str, list[float]]:
        return {"mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, data: dict[str, list[float]]) -> Standardiser:
        mean, std = tuple(map(float, data["mean"])), tuple(map(float, data["std"]))
        if len(mean) != len(std) or not all(s > 0 for s in std):
            raise ValueError(f"a stored standardisation needs as many positive stds as means, got {data!r}")
        return cls(mean, std)
