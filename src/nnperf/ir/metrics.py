"""Architectural metrics per layer and per network (PreVIous, section III).

Counts are pure functions of a layer's shapes and attributes: each op type's
spec (``OP_SPECS`` in :mod:`nnperf.ir._op_specs`) names the function that
counts its layers (in :mod:`nnperf.ir._op_counts`), and ``METRIC_HANDLERS``
is derived from the specs:

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
elements of its stored operands as n(W); a selecting one (Gather, Slice) reads
only the elements it keeps.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from nnperf.ir._layer_like import LayerLike, NetworkLike
from nnperf.ir._op_counts import MetricHandler, OpCounts
from nnperf.ir._op_specs import METRIC_HANDLERS
from nnperf.ir._ops import OpType
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


__all__ = [
    "METRIC_HANDLERS", "DType", "LayerMetrics", "MetricHandler", "NetworkMetrics", "OpCounts", "layer_metrics",
    "network_metrics",
]
