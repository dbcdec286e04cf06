"""Each op's counts: one function per kind of op, from a layer's shapes and attributes to its :class:`OpCounts`.

The op specs (:mod:`nnperf.ir._op_specs`) give each op type its function; :mod:`nnperf.ir.metrics` turns the
counts into a layer's metrics, and its docstring states the counting rules (PreVIous, section III).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nnperf.ir._layer_like import LayerLike
from nnperf.ir._ops import (
    BatchNormAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    GenericAttrs,
    GroupNormAttrs,
    LinearAttrs,
    LrnAttrs,
    MatmulAttrs,
    NormAttrs,
    PoolAttrs,
    PReluAttrs,
    ScaleAttrs,
    UpsampleAttrs,
)
from nnperf.ir._shapes import numel


@dataclass(frozen=True)
class OpCounts:
    """What one op's handler counts for a layer; n(I) and n(O) follow from the shapes alone."""

    macs: int = 0
    ops: int = 0
    """#OPs: equal to ``macs`` for MAC layers"""
    params: int = 0
    n_input_im2col: int | None = None
    """elements an im2col+GEMM reads, where that differs from n(I) (convolutions only)"""
    n_input: int | None = None
    """elements read, where that differs from the input shapes (a constant reads none of its input)"""


MetricHandler = Callable[[LayerLike], OpCounts]
"""What one op type counts for a layer."""


def conv_counts(layer: LayerLike) -> OpCounts:
    attrs = layer.attrs
    assert isinstance(attrs, ConvAttrs)
    kh, kw = attrs.kernel
    batch, c_in = layer.input_shape[:2]
    _, c_out, h_out, w_out = layer.output_shape
    outputs = numel(layer.output_shape)  # batch * Cout * Hout * Wout
    macs = kh * kw * (c_in // attrs.groups) * outputs + (outputs if attrs.bias else 0)
    params = kh * kw * (c_in // attrs.groups) * c_out + (c_out if attrs.bias else 0)
    return OpCounts(macs=macs, ops=macs, params=params, n_input_im2col=kh * kw * c_in * h_out * w_out * batch)


def linear_counts(layer: LayerLike) -> OpCounts:
    attrs = layer.attrs
    assert isinstance(attrs, LinearAttrs)
    n_in, n_out = layer.input_shape[-1], layer.output_shape[-1]
    macs = n_in * n_out * numel(layer.input_shape[:-1])  # one row per leading index; the bias add is not a MAC
    return OpCounts(macs=macs, ops=macs, params=n_in * n_out + (n_out if attrs.bias else 0))


def scale_counts(layer: LayerLike) -> OpCounts:
    attrs = layer.attrs
    assert isinstance(attrs, ScaleAttrs)
    macs = numel(layer.output_shape)
    factors = layer.input_shape[1] if attrs.per_channel else 1
    return OpCounts(macs=macs, ops=macs, params=factors * (2 if attrs.bias else 1))


def pool_counts(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, PoolAttrs)
    kh, kw = layer.attrs.kernel
    return OpCounts(ops=kh * kw * numel(layer.output_shape))


def global_pool_counts(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=numel(layer.input_shape))  # the window is the whole input plane


def batch_norm_counts(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, BatchNormAttrs)
    return OpCounts(ops=2 * numel(layer.output_shape), params=2 * layer.input_shape[1] if layer.attrs.affine else 0)


def one_per_output(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=numel(layer.output_shape))


def eltwise_counts(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=(len(layer.input_shapes) - 1) * numel(layer.output_shape))  # k operands: k-1 per output


def softmax_counts(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=3 * numel(layer.output_shape))  # exp, accumulate, divide


def lrn_counts(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, LrnAttrs)
    return OpCounts(ops=(layer.attrs.size + 3) * numel(layer.output_shape))  # window sum, scale, power, divide


def upsample_counts(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, UpsampleAttrs)
    return OpCounts(ops=4 * numel(layer.output_shape) if layer.attrs.mode == "linear" else 0)


def data_movement_counts(layer: LayerLike) -> OpCounts:
    return OpCounts()


# activations and data movement
def prelu_counts(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, PReluAttrs)
    slopes = layer.input_shape[1] if layer.attrs.per_channel else 1
    return OpCounts(ops=numel(layer.output_shape), params=slopes)


# resizing, normalisation and attention
def conv_transpose_counts(layer: LayerLike) -> OpCounts:
    """Every input element times every tap of its group's kernel: kh*kw*Cin*(Cout/groups)*Hin*Win*batch,
    plus one per output for the bias. im2col reads the zero-inserted, padded input of the equivalent direct
    convolution: kh*kw*Cin*Hout*Wout*batch."""
    attrs = layer.attrs
    assert isinstance(attrs, ConvTransposeAttrs)
    kh, kw = attrs.kernel
    c_in, c_out = layer.input_shape[1], layer.output_shape[1]
    outputs = numel(layer.output_shape)
    macs = kh * kw * (c_out // attrs.groups) * numel(layer.input_shape) + (outputs if attrs.bias else 0)
    params = kh * kw * c_in * (c_out // attrs.groups) + (c_out if attrs.bias else 0)
    batch, _, h_out, w_out = layer.output_shape
    return OpCounts(macs=macs, ops=macs, params=params, n_input_im2col=kh * kw * c_in * h_out * w_out * batch)


def layer_norm_counts(layer: LayerLike) -> OpCounts:
    """4 per element (accumulate for the mean, subtract, square-accumulate, divide), 2 more when affine
    (multiply, add); n(W) the scale and shift of each normalised element (C, or the last axis)."""
    attrs = layer.attrs
    assert isinstance(attrs, NormAttrs)
    per_element = 6 if attrs.affine else 4
    size = layer.input_shape[attrs.axis]
    return OpCounts(ops=per_element * numel(layer.output_shape), params=2 * size if attrs.affine else 0)


def group_norm_counts(layer: LayerLike) -> OpCounts:
    """As layer normalisation (4 per element, 6 when affine); n(W) a scale and a shift per channel."""
    attrs = layer.attrs
    assert isinstance(attrs, GroupNormAttrs)
    per_element = 6 if attrs.affine else 4
    return OpCounts(ops=per_element * numel(layer.output_shape),
                    params=2 * layer.input_shape[1] if attrs.affine else 0)


def reduce_counts(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=numel(layer.input_shape))  # one accumulate (or compare) per element read


def matmul_counts(layer: LayerLike) -> OpCounts:
    """A product of two activations: K MACs per output element, (batch...)*M*N*K; no parameters."""
    attrs = layer.attrs
    assert isinstance(attrs, MatmulAttrs)
    macs = numel(layer.output_shape) * layer.input_shapes[0][-2 if attrs.transpose_a else -1]
    return OpCounts(macs=macs, ops=macs)


def constant_counts(layer: LayerLike) -> OpCounts:
    """A stored tensor (class token, position embedding): its elements are parameters; it reads nothing."""
    return OpCounts(params=numel(layer.output_shape), n_input=0)


SELECTING_OPERATORS = frozenset({"Gather", "Slice"})
"""ONNX operators that copy out part of their first operand: they touch what they keep, not the whole of it (Swin's
attention takes each of q, k and v out of one tensor by a Gather, which read as the whole tensor was predicted at
nine times its time on ONNX Runtime)."""


def generic_counts(layer: LayerLike) -> OpCounts:
    """An operator nnperf has no model of: one #OP per element of its larger side (what it reads or what it
    writes), no MACs, its stored operands as n(W). A selecting operator (:data:`SELECTING_OPERATORS`) reads from
    its first operand only the elements it writes."""
    attrs = layer.attrs
    assert isinstance(attrs, GenericAttrs)
    if attrs.operator in SELECTING_OPERATORS and layer.input_shapes:
        kept = numel(layer.output_shape)
        return OpCounts(ops=kept, params=attrs.stored_elements,
                        n_input=kept + sum(numel(s) for s in layer.input_shapes[1:]))
    reads = sum(numel(s) for s in layer.input_shapes)
    return OpCounts(ops=max(reads, numel(layer.output_shape)), params=attrs.stored_elements)
