"""Architectural metrics per layer and per network (PreVIous, section III).

Counts are pure functions of a layer's shapes and attributes, one handler per
op in ``METRIC_HANDLERS`` (adding an op type means adding its entry there):

- ``macs``: multiply-accumulates of convolution, fully connected and scale
  layers. Convolution: kh*kw*Cin/groups*Hout*Wout*Cout*batch, plus
  Hout*Wout*Cout*batch for the bias (PreVIous III-A). Fully connected:
  Nin*Nout per row, as the paper counts it (the bias add is not a MAC). Scale:
  one MAC per activation (the optional bias folds into the accumulate).
- ``ops``: the operation count PreVIous uses as the #OPs predictor. Equal to
  ``macs`` for MAC layers; otherwise pooling kh*kw*Hout*Wout*C*batch (a global
  pool's window is the whole input plane), batch normalisation 2 per
  activation, every element-wise activation 1 per activation (the cost of a
  sigmoid against a ReLU is left to the per-type models), element-wise
  add/mul/max (k-1) per output for k operands, softmax 3 per element (exp,
  accumulate, divide), LRN size+3 per element (window sum of squares, scale,
  power, divide), linear upsampling 4 per output (nearest: 0), and 0 for
  concat, flatten, reshape, pad, identity and dropout (data movement only).
- ``params`` n(W): weights plus biases, plus the two learnt parameters per
  channel of batch normalisation and the factor (and bias) of a scale layer.
- ``n_input``, ``n_output``: elements read and written; ``mem_ops`` is
  Eq. (2), n(I) + n(W) + n(O). ``mem_ops_im2col`` replaces a convolution's
  n(I) by the unrolled kh*kw*Cin*Hout*Wout*batch of im2col+GEMM (III-D).

Activations and data movement: hard sigmoid, clip, PReLU, GELU,
softplus, mish, exp and log count 1 #OP per activation like the other
element-wise activations, and no MACs (PReLU's slope multiply is as much a MAC
as leaky ReLU's, which counts none); PReLU's n(W) is its slopes, one per
channel (or one). Slice, transpose, channel shuffle, gather and expand move
data only: 0 #OPs; their n(I) is the whole input tensor, as for every layer,
even where a slice or gather reads part of it.

Resizing, normalisation and attention: a transposed convolution
counts kh*kw*Cin*Cout/groups MACs per input position (plus a bias MAC per
output); a matrix product of two activations K MACs per output element; layer,
group and instance normalisation 4 #OPs per element (6 with the learnt scale
and shift, which are their n(W)); a reduction one #OP per element read;
sub/div/pow count as the other element-wise ops; a constant (class token,
position embedding) has its elements as n(W), reads nothing and counts no #OPs.

A generic layer (an ONNX operator with no dedicated op type) counts one #OP per
element of its larger side, what it reads or what it writes, no MACs, and the
elements of its stored operands as n(W).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from nnperf.ir._layer_like import LayerLike, NetworkLike
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
    OpType,
    PoolAttrs,
    PReluAttrs,  # activations and data movement
    ScaleAttrs,
    UpsampleAttrs,
)
from nnperf.ir._shapes import numel


class DType(str, enum.Enum):
    """Element types, with their size in bytes."""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    INT8 = "int8"

    @property
    def itemsize(self) -> int:
        return {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1}[self.value]


@dataclass(frozen=True)
class LayerMetrics:
    """Counts for one layer; see the module docstring for the definitions."""

    name: str
    op: OpType
    macs: int
    ops: int
    params: int
    n_input: int
    n_output: int
    n_input_im2col: int

    @property
    def mem_ops(self) -> int:
        """#memOPs, Eq. (2) of PreVIous: n(I) + n(W) + n(O)."""
        return self.n_input + self.params + self.n_output

    @property
    def mem_ops_im2col(self) -> int:
        """#memOPs with a convolution's input unrolled by im2col (equal to mem_ops otherwise)."""
        return self.n_input_im2col + self.params + self.n_output

    def mem_bytes(self, dtype: DType = DType.FLOAT32, im2col: bool = False) -> int:
        """Bytes moved by the minimum memory operations at this element type."""
        return (self.mem_ops_im2col if im2col else self.mem_ops) * dtype.itemsize

    def param_bytes(self, dtype: DType = DType.FLOAT32) -> int:
        """Bytes of the layer's parameters at this element type."""
        return self.params * dtype.itemsize


@dataclass(frozen=True)
class NetworkMetrics:
    """Per-layer metrics in topological order plus the network totals."""

    name: str
    layers: tuple[LayerMetrics, ...]

    @property
    def macs(self) -> int:
        return sum(m.macs for m in self.layers)

    @property
    def ops(self) -> int:
        return sum(m.ops for m in self.layers)

    @property
    def params(self) -> int:
        return sum(m.params for m in self.layers)

    @property
    def mem_ops(self) -> int:
        return sum(m.mem_ops for m in self.layers)

    @property
    def mem_ops_im2col(self) -> int:
        return sum(m.mem_ops_im2col for m in self.layers)

    def mem_bytes(self, dtype: DType = DType.FLOAT32, im2col: bool = False) -> int:
        return sum(m.mem_bytes(dtype, im2col) for m in self.layers)

    def param_bytes(self, dtype: DType = DType.FLOAT32) -> int:
        return self.params * dtype.itemsize


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


def layer_metrics(layer: LayerLike) -> LayerMetrics:
    """The architectural metrics of one layer."""
    counts = METRIC_HANDLERS[layer.op](layer)
    n_in = sum(numel(s) for s in layer.input_shapes) if counts.n_input is None else counts.n_input
    return LayerMetrics(
        name=layer.name,
        op=layer.op,
        macs=counts.macs,
        ops=counts.ops,
        params=counts.params,
        n_input=n_in,
        n_output=numel(layer.output_shape),
        n_input_im2col=n_in if counts.n_input_im2col is None else counts.n_input_im2col,
    )


def network_metrics(network: NetworkLike) -> NetworkMetrics:
    """Metrics of every layer of ``network`` and their totals."""
    return NetworkMetrics(name=network.name, layers=tuple(layer_metrics(layer) for layer in network.layers))


# ---------------------------------------------------------------------- one handler per op (module docstring)
def _conv(layer: LayerLike) -> OpCounts:
    attrs = layer.attrs
    assert isinstance(attrs, ConvAttrs)
    kh, kw = attrs.kernel
    batch, c_in = layer.input_shape[:2]
    _, c_out, h_out, w_out = layer.output_shape
    outputs = numel(layer.output_shape)  # batch * Cout * Hout * Wout
    macs = kh * kw * (c_in // attrs.groups) * outputs + (outputs if attrs.bias else 0)
    params = kh * kw * (c_in // attrs.groups) * c_out + (c_out if attrs.bias else 0)
    return OpCounts(macs=macs, ops=macs, params=params, n_input_im2col=kh * kw * c_in * h_out * w_out * batch)


def _linear(layer: LayerLike) -> OpCounts:
    attrs = layer.attrs
    assert isinstance(attrs, LinearAttrs)
    n_in, n_out = layer.input_shape[-1], layer.output_shape[-1]
    macs = n_in * n_out * numel(layer.input_shape[:-1])  # one row per leading index; the bias add is not a MAC
    return OpCounts(macs=macs, ops=macs, params=n_in * n_out + (n_out if attrs.bias else 0))


def _scale(layer: LayerLike) -> OpCounts:
    attrs = layer.attrs
    assert isinstance(attrs, ScaleAttrs)
    macs = numel(layer.output_shape)
    factors = layer.input_shape[1] if attrs.per_channel else 1
    return OpCounts(macs=macs, ops=macs, params=factors * (2 if attrs.bias else 1))


def _pool(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, PoolAttrs)
    kh, kw = layer.attrs.kernel
    return OpCounts(ops=kh * kw * numel(layer.output_shape))


def _global_pool(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=numel(layer.input_shape))  # the window is the whole input plane


def _batch_norm(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, BatchNormAttrs)
    return OpCounts(ops=2 * numel(layer.output_shape), params=2 * layer.input_shape[1] if layer.attrs.affine else 0)


def _one_per_output(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=numel(layer.output_shape))


def _eltwise(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=(len(layer.input_shapes) - 1) * numel(layer.output_shape))  # k operands: k-1 per output


def _softmax(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=3 * numel(layer.output_shape))  # exp, accumulate, divide


def _lrn(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, LrnAttrs)
    return OpCounts(ops=(layer.attrs.size + 3) * numel(layer.output_shape))  # window sum, scale, power, divide


def _upsample(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, UpsampleAttrs)
    return OpCounts(ops=4 * numel(layer.output_shape) if layer.attrs.mode == "linear" else 0)


def _data_movement(layer: LayerLike) -> OpCounts:
    return OpCounts()


# activations and data movement
def _prelu(layer: LayerLike) -> OpCounts:
    assert isinstance(layer.attrs, PReluAttrs)
    slopes = layer.input_shape[1] if layer.attrs.per_channel else 1
    return OpCounts(ops=numel(layer.output_shape), params=slopes)


# resizing, normalisation and attention
def _conv_transpose(layer: LayerLike) -> OpCounts:
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


def _layer_norm(layer: LayerLike) -> OpCounts:
    """4 per element (accumulate for the mean, subtract, square-accumulate, divide), 2 more when affine
    (multiply, add); n(W) the scale and shift of each normalised element (C, or the last axis)."""
    attrs = layer.attrs
    assert isinstance(attrs, NormAttrs)
    per_element = 6 if attrs.affine else 4
    size = layer.input_shape[attrs.axis]
    return OpCounts(ops=per_element * numel(layer.output_shape), params=2 * size if attrs.affine else 0)


def _group_norm(layer: LayerLike) -> OpCounts:
    """As layer normalisation (4 per element, 6 when affine); n(W) a scale and a shift per channel."""
    attrs = layer.attrs
    assert isinstance(attrs, GroupNormAttrs)
    per_element = 6 if attrs.affine else 4
    return OpCounts(ops=per_element * numel(layer.output_shape),
                    params=2 * layer.input_shape[1] if attrs.affine else 0)


def _reduce(layer: LayerLike) -> OpCounts:
    return OpCounts(ops=numel(layer.input_shape))  # one accumulate (or compare) per element read


def _matmul(layer: LayerLike) -> OpCounts:
    """A product of two activations: K MACs per output element, (batch...)*M*N*K; no parameters."""
    attrs = layer.attrs
    assert isinstance(attrs, MatmulAttrs)
    macs = numel(layer.output_shape) * layer.input_shapes[0][-2 if attrs.transpose_a else -1]
    return OpCounts(macs=macs, ops=macs)


def _constant(layer: LayerLike) -> OpCounts:
    """A stored tensor (class token, position embedding): its elements are parameters; it reads nothing."""
    return OpCounts(params=numel(layer.output_shape), n_input=0)


def _generic(layer: LayerLike) -> OpCounts:
    """An operator nnperf has no model of: one #OP per element of its larger side (what it reads or what it
    writes), no MACs, its stored operands as n(W)."""
    attrs = layer.attrs
    assert isinstance(attrs, GenericAttrs)
    reads = sum(numel(s) for s in layer.input_shapes)
    return OpCounts(ops=max(reads, numel(layer.output_shape)), params=attrs.stored_elements)


METRIC_HANDLERS: Mapping[OpType, MetricHandler] = MappingProxyType({
    OpType.CONV: _conv,
    OpType.LINEAR: _linear,
    OpType.MAX_POOL: _pool,
    OpType.AVG_POOL: _pool,
    OpType.GLOBAL_AVG_POOL: _global_pool,
    OpType.GLOBAL_MAX_POOL: _global_pool,
    OpType.BATCH_NORM: _batch_norm,
    OpType.SCALE: _scale,
    OpType.RELU: _one_per_output,
    OpType.RELU6: _one_per_output,
    OpType.LEAKY_RELU: _one_per_output,
    OpType.SIGMOID: _one_per_output,
    OpType.TANH: _one_per_output,
    OpType.HARDSWISH: _one_per_output,
    OpType.SILU: _one_per_output,
    OpType.ADD: _eltwise,
    OpType.MUL: _eltwise,
    OpType.MAX: _eltwise,
    OpType.CONCAT: _data_movement,
    OpType.SOFTMAX: _softmax,
    OpType.LRN: _lrn,
    OpType.FLATTEN: _data_movement,
    OpType.RESHAPE: _data_movement,
    OpType.UPSAMPLE: _upsample,
    OpType.PAD: _data_movement,
    OpType.IDENTITY: _data_movement,
    OpType.DROPOUT: _data_movement,
    # activations and data movement
    OpType.HARD_SIGMOID: _one_per_output,
    OpType.CLIP: _one_per_output,
    OpType.PRELU: _prelu,
    OpType.GELU: _one_per_output,
    OpType.SOFTPLUS: _one_per_output,
    OpType.MISH: _one_per_output,
    OpType.EXP: _one_per_output,
    OpType.LOG: _one_per_output,
    OpType.SLICE: _data_movement,
    OpType.TRANSPOSE: _data_movement,
    OpType.CHANNEL_SHUFFLE: _data_movement,
    OpType.GATHER: _data_movement,
    OpType.EXPAND: _data_movement,
    # resizing, normalisation and attention
    OpType.CONV_TRANSPOSE: _conv_transpose,
    OpType.LAYER_NORM: _layer_norm,
    OpType.GROUP_NORM: _group_norm,
    OpType.REDUCE_MEAN: _reduce,
    OpType.REDUCE_MAX: _reduce,
    OpType.MATMUL: _matmul,
    OpType.SUB: _eltwise,
    OpType.DIV: _eltwise,
    OpType.POW: _eltwise,
    OpType.CONSTANT: _constant,
    OpType.GENERIC: _generic,
})
"""Each op's counts (MACs, #OPs, n(W), im2col input); every op has one, data movement counting zero."""


__all__ = [
    "METRIC_HANDLERS", "DType", "LayerMetrics", "MetricHandler", "NetworkMetrics", "OpCounts", "layer_metrics",
    "network_metrics",
]
