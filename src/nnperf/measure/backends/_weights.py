"""Deterministic random parameters for IR layers, and choices every graph builder shares.

The torch and ONNX builders take their weights from :func:`layer_weights`, so
a network built by both computes the same function and outputs can be
compared. Values are scaled so that activations stay of order one through
deep plain networks (VGG-19 without batch normalisation): convolution and
fully connected weights follow He et al. 2015 ("Delving deep into
rectifiers", Eq. 10), std = sqrt(2 / fan_in).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np

from nnperf.ir import (
    BatchNormAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    GroupNormAttrs,
    Layer,
    LinearAttrs,
    NormAttrs,
    OpType,
    PReluAttrs,
    ScaleAttrs,
)

_BIAS_STD = 0.05
"""Biases are small so that they do not dominate the signal of wide layers."""


def layer_rng(layer: Layer, seed: int = 0) -> np.random.Generator:
    """A generator seeded from ``seed`` and the layer's name (CRC-32, stable across processes).

    ``seed`` must be a non-negative integer.
    """
    return np.random.default_rng([seed, zlib.crc32(layer.name.encode("utf-8"))])


def layer_weights(layer: Layer, seed: int = 0) -> dict[str, np.ndarray]:
    """The float32 parameters of ``layer``, by name; empty for layers without parameters.

    - conv: ``weight`` (Cout, Cin/groups, kh, kw) and ``bias`` (Cout,) when ``attrs.bias``;
    - linear: ``weight`` (out, in) and ``bias`` (out,) when ``attrs.bias``;
    - batch_norm: ``mean``, ``var`` (positive), ``weight`` and ``bias`` (C,) each; near one
      and zero when affine, exactly one and zero when not;
    - scale: ``scale`` (C,), or (1,) when not per channel, and ``bias`` of the same shape when
      ``attrs.bias``.

    The same ``(layer.name, seed)`` always gives the same arrays.
    """
    if layer.op in NO_WEIGHTS:
        return {}
    return WEIGHT_MAKERS[layer.op](layer, layer_rng(layer, seed))


WeightMaker = Callable[[Layer, np.random.Generator], dict[str, np.ndarray]]
"""Draws one layer's float32 parameters, by name, from the layer's own generator."""


def _conv(layer: Layer, rng: np.random.Generator) -> dict[str, np.ndarray]:
    attrs = layer.attrs
    assert isinstance(attrs, ConvAttrs)
    c_in, c_out = layer.input_shape[1], layer.output_shape[1]
    shape = (c_out, c_in // attrs.groups, *attrs.kernel)
    fan_in = shape[1] * shape[2] * shape[3]
    out = {"weight": _normal(rng, shape, np.sqrt(2.0 / fan_in))}
    if attrs.bias:
        out["bias"] = _normal(rng, (c_out,), _BIAS_STD)
    return out


def _linear(layer: Layer, rng: np.random.Generator) -> dict[str, np.ndarray]:
    assert isinstance(layer.attrs, LinearAttrs)
    n_in, n_out = layer.input_shape[-1], layer.output_shape[-1]
    out = {"weight": _normal(rng, (n_out, n_in), np.sqrt(2.0 / n_in))}
    if layer.attrs.bias:
        out["bias"] = _normal(rng, (n_out,), _BIAS_STD)
    return out


def _batch_norm(layer: Layer, rng: np.random.Generator) -> dict[str, np.ndarray]:
    assert isinstance(layer.attrs, BatchNormAttrs)
    channels = layer.input_shape[1]
    out = {"mean": _normal(rng, (channels,), 0.1), "var": rng.uniform(0.5, 1.5, channels).astype(np.float32)}
    if layer.attrs.affine:
        out["weight"] = rng.uniform(0.5, 1.5, channels).astype(np.float32)
        out["bias"] = _normal(rng, (channels,), _BIAS_STD)
    else:
        out["weight"] = np.ones(channels, np.float32)
        out["bias"] = np.zeros(channels, np.float32)
    return out


def _scale(layer: Layer, rng: np.random.Generator) -> dict[str, np.ndarray]:
    assert isinstance(layer.attrs, ScaleAttrs)
    size = layer.input_shape[1] if layer.attrs.per_channel else 1
    out = {"scale": rng.uniform(0.5, 1.5, size).astype(np.float32)}
    if layer.attrs.bias:
        out["bias"] = _normal(rng, (size,), _BIAS_STD)
    return out


# activations and data movement
def _prelu(layer: Layer, rng: np.random.Generator) -> dict[str, np.ndarray]:
    assert isinstance(layer.attrs, PReluAttrs)
    size = layer.input_shape[1] if layer.attrs.per_channel else 1
    return {"slope": rng.uniform(0.05, 0.5, size).astype(np.float32)}


WEIGHT_MAKERS: Mapping[OpType, WeightMaker] = MappingProxyType({
    OpType.CONV: _conv,
    OpType.LINEAR: _linear,
    OpType.BATCH_NORM: _batch_norm,
    OpType.SCALE: _scale,
    # activations and data movement
    OpType.PRELU: _prelu,
    # resizing, normalisation and attention
    OpType.CONV_TRANSPOSE: lambda layer, rng: _conv_transpose(layer, rng),
    OpType.LAYER_NORM: lambda layer, rng: _norm(layer, rng),
    OpType.GROUP_NORM: lambda layer, rng: _norm(layer, rng),
    OpType.CONSTANT: lambda layer, rng: {"value": _normal(rng, layer.output_shape, 0.02)},
})
"""IR op -> the maker of its parameters; the draws' order is part of the contract (same seed, same arrays)."""

NO_WEIGHTS = frozenset({
    OpType.MAX_POOL, OpType.AVG_POOL, OpType.GLOBAL_AVG_POOL, OpType.GLOBAL_MAX_POOL, OpType.RELU, OpType.RELU6,
    OpType.LEAKY_RELU, OpType.SIGMOID, OpType.TANH, OpType.HARDSWISH, OpType.SILU, OpType.ADD, OpType.MUL, OpType.MAX,
    OpType.CONCAT, OpType.SOFTMAX, OpType.LRN, OpType.FLATTEN, OpType.RESHAPE, OpType.UPSAMPLE, OpType.PAD,
    OpType.IDENTITY, OpType.DROPOUT,
    # resizing, normalisation and attention
    OpType.REDUCE_MEAN, OpType.REDUCE_MAX, OpType.MATMUL, OpType.SUB, OpType.DIV, OpType.POW, OpType.GELU,
})
# activations and data movement
NO_WEIGHTS = NO_WEIGHTS | {
    OpType.HARD_SIGMOID, OpType.CLIP, OpType.GELU, OpType.SOFTPLUS, OpType.MISH, OpType.EXP, OpType.LOG, OpType.SLICE,
    OpType.TRANSPOSE, OpType.CHANNEL_SHUFFLE, OpType.GATHER, OpType.EXPAND, OpType.GENERIC,
}
"""Ops without parameters (n(W) = 0 in the metrics): :func:`layer_weights` gives them an empty dict. A generic
layer's stored operands travel inside its node (:class:`~nnperf.ir.GenericAttrs`), not here."""


def pad_amounts(layer: Layer) -> tuple[tuple[int, int], ...]:
    """(begin, end) padding of every axis of a PAD layer.

    The IR keeps only the padded shape, so each axis's growth is split in two
    with the odd element at the end (TensorFlow's 'SAME' convention; a
    ``ZeroPad2d((0, 1, 0, 1))`` gets back its own split).
    """
    return tuple(((o - i) // 2, (o - i) - (o - i) // 2) for i, o in zip(layer.input_shape, layer.output_shape))


# resizing, normalisation and attention
def _conv_transpose(layer: Layer, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``weight`` (Cin, Cout/groups, kh, kw), PyTorch's and ONNX's layout, and ``bias`` (Cout,)."""
    attrs = layer.attrs
    assert isinstance(attrs, ConvTransposeAttrs)
    c_in, c_out = layer.input_shape[1], layer.output_shape[1]
    shape = (c_in, c_out // attrs.groups, *attrs.kernel)
    # each output sums about Cin/groups * kh*kw / stride^2 products
    fan_in = max(1, (c_in // attrs.groups) * attrs.kernel[0] * attrs.kernel[1] // (attrs.stride[0] * attrs.stride[1]))
    out = {"weight": _normal(rng, shape, np.sqrt(2.0 / fan_in))}
    if attrs.bias:
        out["bias"] = _normal(rng, (c_out,), _BIAS_STD)
    return out


def _norm(layer: Layer, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``weight`` near one and ``bias`` near zero per normalised element (layer norm) or channel (group norm);
    exactly one and zero when not affine."""
    attrs = layer.attrs
    assert isinstance(attrs, (NormAttrs, GroupNormAttrs))
    size = layer.input_shape[attrs.axis] if isinstance(attrs, NormAttrs) else layer.input_shape[1]
    if not attrs.affine:
        return {"weight": np.ones(size, np.float32), "bias": np.zeros(size, np.float32)}
    return {"weight": rng.uniform(0.5, 1.5, size).astype(np.float32), "bias": _normal(rng, (size,), _BIAS_STD)}


_NORMAL_CHUNK = 1 << 22
"""Values drawn at a time (in float64, 32 MiB): a large layer's weights never exist in float64 at once."""


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> np.ndarray:
    """``(rng.standard_normal(shape) * std).astype(np.float32)``, the same values, drawn a chunk at a time."""
    out = np.empty(shape, np.float32)
    flat = out.reshape(-1)
    for start in range(0, flat.size, _NORMAL_CHUNK):
        stop = min(start + _NORMAL_CHUNK, flat.size)
        flat[start:stop] = rng.standard_normal(stop - start) * std
    return out
