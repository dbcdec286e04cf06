"""Architectural metrics per layer and per network (PreVIous, section III).

Counts are pure functions of a layer's shapes and attributes:

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
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from nnperf.ir._network import Layer, Network, numel
from nnperf.ir._ops import (
    ACTIVATIONS,
    ELTWISE,
    BatchNormAttrs,
    ConvAttrs,
    LinearAttrs,
    LrnAttrs,
    OpType,
    PoolAttrs,
    ScaleAttrs,
    UpsampleAttrs,
)


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


def layer_metrics(layer: Layer) -> LayerMetrics:
    """The architectural metrics of one layer."""
    n_in = sum(numel(s) for s in layer.input_shapes)
    n_out = numel(layer.output_shape)
    macs = _macs(layer)
    ops = macs if macs else _non_mac_ops(layer, n_out)
    n_in_im2col = n_in
    if layer.op is OpType.CONV:
        assert isinstance(layer.attrs, ConvAttrs)
        kh, kw = layer.attrs.kernel
        batch, c_in = layer.input_shape[:2]
        _, _, h_out, w_out = layer.output_shape
        n_in_im2col = kh * kw * c_in * h_out * w_out * batch
    return LayerMetrics(
        name=layer.name,
        op=layer.op,
        macs=macs,
        ops=ops,
        params=_params(layer),
        n_input=n_in,
        n_output=n_out,
        n_input_im2col=n_in_im2col,
    )


def network_metrics(network: Network) -> NetworkMetrics:
    """Metrics of every layer of ``network`` and their totals."""
    return NetworkMetrics(name=network.name, layers=tuple(layer_metrics(layer) for layer in network.layers))


def _macs(layer: Layer) -> int:
    attrs = layer.attrs
    if layer.op is OpType.CONV:
        assert isinstance(attrs, ConvAttrs)
        kh, kw = attrs.kernel
        c_in = layer.input_shape[1]
        outputs = numel(layer.output_shape)  # batch * Cout * Hout * Wout
        return kh * kw * (c_in // attrs.groups) * outputs + (outputs if attrs.bias else 0)
    if layer.op is OpType.LINEAR:
        n_in, n_out = layer.input_shape[-1], layer.output_shape[-1]
        rows = numel(layer.input_shape[:-1])
        return n_in * n_out * rows
    if layer.op is OpType.SCALE:
        return numel(layer.output_shape)
    return 0


def _non_mac_ops(layer: Layer, n_out: int) -> int:
    op = layer.op
    if op in (OpType.MAX_POOL, OpType.AVG_POOL):
        assert isinstance(layer.attrs, PoolAttrs)
        kh, kw = layer.attrs.kernel
        return kh * kw * n_out
    if op in (OpType.GLOBAL_AVG_POOL, OpType.GLOBAL_MAX_POOL):
        return numel(layer.input_shape)
    if op is OpType.BATCH_NORM:
        return 2 * n_out
    if op in ACTIVATIONS:
        return n_out
    if op in ELTWISE:
        return (len(layer.input_shapes) - 1) * n_out
    if op is OpType.SOFTMAX:
        return 3 * n_out
    if op is OpType.LRN:
        assert isinstance(layer.attrs, LrnAttrs)
        return (layer.attrs.size + 3) * n_out
    if op is OpType.UPSAMPLE:
        assert isinstance(layer.attrs, UpsampleAttrs)
        return 4 * n_out if layer.attrs.mode == "linear" else 0
    return 0


def _params(layer: Layer) -> int:
    attrs = layer.attrs
    if layer.op is OpType.CONV:
        assert isinstance(attrs, ConvAttrs)
        kh, kw = attrs.kernel
        c_in, c_out = layer.input_shape[1], layer.output_shape[1]
        return kh * kw * (c_in // attrs.groups) * c_out + (c_out if attrs.bias else 0)
    if layer.op is OpType.LINEAR:
        assert isinstance(attrs, LinearAttrs)
        n_in, n_out = layer.input_shape[-1], layer.output_shape[-1]
        return n_in * n_out + (n_out if attrs.bias else 0)
    if layer.op is OpType.BATCH_NORM:
        assert isinstance(attrs, BatchNormAttrs)
        return 2 * layer.input_shape[1] if attrs.affine else 0
    if layer.op is OpType.SCALE:
        assert isinstance(attrs, ScaleAttrs)
        factors = layer.input_shape[1] if attrs.per_channel else 1
        return factors * (2 if attrs.bias else 1)
    return 0


__all__ = ["DType", "LayerMetrics", "NetworkMetrics", "layer_metrics", "network_metrics"]
