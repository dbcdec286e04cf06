"""What the primitive cost models read and predict: log features of a layer or an activation, and the
standardisation of both sides (Mulder et al. 3.3, "Data Point Normalization").

The paper feeds the layer shape (k, c, im, s, f) to the networks; here every size enters as its base-2
logarithm (times span orders of magnitude and grow as products of sizes, which a log turns into sums), with
the products a cost usually follows (MACs, output pixels, channels per group) added so that even a linear
model can express a power law. Each feature column is then standardised with the training rows' mean and
standard deviation, and each target column is z = log(time_s) standardised over its present training
entries: x~ = (z - mean(z)) / std(z).
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

ActivationShape = tuple[int, int, tuple[int, int]]
"""An activation as (batch, c, (h, w)), the key of a layout transformation's time."""


def _conv_row(config: ConvConfig) -> list[float]:
    out_h, out_w = config.out
    sizes = (config.c, config.f, *config.im, *config.k, *config.stride, config.groups, *config.dilation,
             config.batch, 1 + sum(config.padding), config.macs, out_h * out_w, config.c // config.groups)
    return [math.log2(v) for v in sizes]


def conv_features(configs: Sequence[ConvConfig]) -> np.ndarray:
    """The (len(configs), 16) float64 matrix of :data:`CONV_FEATURES`, one row per configuration."""
    return np.array([_conv_row(c) for c in configs], dtype=float).reshape(len(configs), len(CONV_FEATURES))


def transform_features(shapes: Sequence[ActivationShape]) -> np.ndarray:
    """The (len(shapes), 5) float64 matrix of :data:`TRANSFORM_FEATURES` for activations (batch, c, (h, w))."""
    rows = []
    for batch, c, (h, w) in shapes:
        if min(batch, c, h, w) < 1:
            raise NnperfError(f"an activation's sizes must be positive, got batch={batch}, c={c}, im=({h}, {w})")
        rows.append([math.log2(v) for v in (batch, c, h, w, batch * c * h * w)])
    return np.array(rows, dtype=float).reshape(len(shapes), len(TRANSFORM_FEATURES))


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
