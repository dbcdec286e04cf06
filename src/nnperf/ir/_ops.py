"""Operator types of the IR and their typed attribute classes.

Each op type's spec (:mod:`nnperf.ir._op_specs`) names its attribute class, so a
layer can never carry attributes of another op. :func:`uncovered_ops` is the
check the per-op tables kept outside the specs (the backends' builders) are held
to. Spatial tuples are (height, width); padding is (top, left, bottom, right), as
ONNX orders begins then ends.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class OpType(str, enum.Enum):
    """What a layer computes. The value is the stable name used in JSON."""

    CONV = "conv"
    LINEAR = "linear"
    MAX_POOL = "max_pool"
    AVG_POOL = "avg_pool"
    GLOBAL_AVG_POOL = "global_avg_pool"
    GLOBAL_MAX_POOL = "global_max_pool"
    BATCH_NORM = "batch_norm"
    SCALE = "scale"
    RELU = "relu"
    RELU6 = "relu6"
    LEAKY_RELU = "leaky_relu"
    SIGMOID = "sigmoid"
    TANH = "tanh"
    HARDSWISH = "hardswish"
    SILU = "silu"
    ADD = "add"
    MUL = "mul"
    MAX = "max"
    CONCAT = "concat"
    SOFTMAX = "softmax"
    LRN = "lrn"
    FLATTEN = "flatten"
    RESHAPE = "reshape"
    UPSAMPLE = "upsample"
    PAD = "pad"
    IDENTITY = "identity"
    DROPOUT = "dropout"
    # activations and data movement
    HARD_SIGMOID = "hard_sigmoid"
    CLIP = "clip"
    PRELU = "prelu"
    GELU = "gelu"
    SOFTPLUS = "softplus"
    MISH = "mish"
    EXP = "exp"
    LOG = "log"
    SLICE = "slice"
    TRANSPOSE = "transpose"
    CHANNEL_SHUFFLE = "channel_shuffle"
    GATHER = "gather"
    EXPAND = "expand"
    # resizing, normalisation and attention
    CONV_TRANSPOSE = "conv_transpose"
    LAYER_NORM = "layer_norm"
    GROUP_NORM = "group_norm"
    REDUCE_MEAN = "reduce_mean"
    REDUCE_MAX = "reduce_max"
    MATMUL = "matmul"
    SUB = "sub"
    DIV = "div"
    POW = "pow"
    CONSTANT = "constant"
    GENERIC = "generic"
    """An ONNX operator with no dedicated op type: kept as it is, measured by running it and predicted by the
    memory-bound model of the calibration (:class:`GenericAttrs`)."""


class ConvKind(str, enum.Enum):
    """The flavour of a convolution, derived from its attributes and shapes."""

    STANDARD = "standard"
    POINTWISE = "pointwise"
    DEPTHWISE = "depthwise"
    GROUPED = "grouped"


@dataclass(frozen=True)
class NoAttrs:
    """Attributes of ops that have none."""


@dataclass(frozen=True)
class ConvAttrs:
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = True


@dataclass(frozen=True)
class LinearAttrs:
    bias: bool = True


@dataclass(frozen=True)
class PoolAttrs:
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    ceil_mode: bool = False
    count_include_pad: bool = True


@dataclass(frozen=True)
class BatchNormAttrs:
    eps: float = 1e-5
    affine: bool = True
    """Whether the layer learns a scale and a shift (two parameters per channel)."""


@dataclass(frozen=True)
class ScaleAttrs:
    """A per-channel (or scalar) multiply, optionally followed by a bias add."""

    bias: bool = False
    per_channel: bool = True


@dataclass(frozen=True)
class LeakyReluAttrs:
    negative_slope: float = 0.01


@dataclass(frozen=True)
class AxisAttrs:
    """Concat, softmax and flatten act along one axis."""

    axis: int = 1


@dataclass(frozen=True)
class LrnAttrs:
    size: int = 5
    alpha: float = 1e-4
    beta: float = 0.75
    k: float = 1.0


@dataclass(frozen=True)
class UpsampleAttrs:
    mode: str = "nearest"
    """'nearest' or 'linear' (bilinear for 4-D tensors)."""


@dataclass(frozen=True)
class PadAttrs:
    mode: str = "constant"
    value: float = 0.0


# activations and data movement
@dataclass(frozen=True)
class HardSigmoidAttrs:
    """y = max(0, min(1, alpha*x + beta)); ONNX's defaults (torch's Hardsigmoid is alpha=1/6, beta=0.5)."""

    alpha: float = 0.2
    beta: float = 0.5


@dataclass(frozen=True)
class ClipAttrs:
    """y = min(max(x, low), high); clips to 0..6 are RELU6 layers, not CLIP."""

    low: float = float("-inf")
    high: float = float("inf")


@dataclass(frozen=True)
class PReluAttrs:
    """y = x if x >= 0 else slope*x, one learnt slope per channel or a single one."""

    per_channel: bool = True


@dataclass(frozen=True)
class SliceAttrs:
    """Elements start, start+step, ... (< end) of one axis; start and end within 0..size."""

    axis: int
    start: int
    end: int
    step: int = 1


@dataclass(frozen=True)
class TransposeAttrs:
    """Output axis i is input axis perm[i]."""

    perm: tuple[int, ...]


@dataclass(frozen=True)
class ChannelShuffleAttrs:
    """ShuffleNet's channel shuffle (Zhang et al. 2018, Fig. 1): reshape to (N, g, C/g, ...), swap, flatten back."""

    groups: int


@dataclass(frozen=True)
class GatherAttrs:
    """The entries ``indices`` (constants, each within 0..size-1) of one axis, in that order."""

    axis: int
    indices: tuple[int, ...]
# resizing, normalisation and attention
@dataclass(frozen=True)
class ConvTransposeAttrs:
    """A transposed convolution (PyTorch's ConvTranspose2d, ONNX's ConvTranspose).

    ``padding`` (top, left, bottom, right) is removed from the full output and ``output_padding`` (height, width)
    added at its end, so an output side is (in - 1) * stride - pad_begin - pad_end + dilation * (kernel - 1)
    + output_padding + 1.
    """

    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    output_padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = True


@dataclass(frozen=True)
class NormAttrs:
    """Layer normalisation over the last axis (``axis=-1``) or over the channels of NCHW (``axis=1``)."""

    axis: int = -1
    eps: float = 1e-5
    affine: bool = True
    """whether it learns a scale and a shift per normalised element"""


@dataclass(frozen=True)
class GroupNormAttrs:
    """Group normalisation over ``groups`` groups of channels; instance normalisation is ``groups`` = C."""

    groups: int = 1
    eps: float = 1e-5
    affine: bool = True
    """whether it learns a scale and a shift per channel"""


@dataclass(frozen=True)
class ReduceAttrs:
    """A mean or max over ``axes`` (non-negative, sorted), keeping them as size 1 when ``keepdims``."""

    axes: tuple[int, ...] = (1,)
    keepdims: bool = True


@dataclass(frozen=True)
class MatmulAttrs:
    """A matrix product of two activations over their last two axes, either operand read transposed
    (as BLAS and ONNX's Gemm do), the leading axes broadcast as batch."""

    transpose_a: bool = False
    transpose_b: bool = False


@dataclass(frozen=True)
class GenericAttrs:
    """An ONNX operator kept as it is: ``node`` is the base64 text of a serialised ONNX ``GraphProto`` holding the
    one node, its stored operands as initializers, its activation inputs named ``in0``, ``in1``, ... and its
    outputs ``out0``, ``out1``, ...; the layer is output ``output_index`` of that node, stated at ``opset``. ``input_types`` and
    ``output_type`` are ONNX element types (1 is float32, 7 int64, 9 bool), ``stored_elements`` the elements of
    its stored operands (its n(W)). The IR never reads ``node``: the backends that run the layer do."""

    operator: str
    """the ONNX operator, prefixed by its domain outside the default one (``com.microsoft.FusedGemm``)"""
    node: str
    input_types: tuple[int, ...]
    output_type: int = 1
    output_index: int = 0
    stored_elements: int = 0
    opset: int = 17
    """the default-domain opset ``node`` is stated at: 17, or the file's where the node is newer"""


Attributes = (
    NoAttrs
    | ConvAttrs
    | LinearAttrs
    | PoolAttrs
    | BatchNormAttrs
    | ScaleAttrs
    | LeakyReluAttrs
    | AxisAttrs
    | LrnAttrs
    | UpsampleAttrs
    | PadAttrs
    | HardSigmoidAttrs
    | ClipAttrs
    | PReluAttrs
    | SliceAttrs
    | TransposeAttrs
    | ChannelShuffleAttrs
    | GatherAttrs
    | ConvTransposeAttrs
    | NormAttrs
    | GroupNormAttrs
    | ReduceAttrs
    | MatmulAttrs
    | GenericAttrs
)


def uncovered_ops(handled: Iterable[OpType], not_applicable: Iterable[OpType] = ()) -> list[OpType]:
    """The op types, in declaration order, that have neither a handler nor a place in ``not_applicable``.

    Each concern outside the op specs (importers, graph builders, weights, ...)
    keeps one table of per-op handlers and, where an op does not apply to it, a
    named frozenset saying so; this is the check that every op is one or the other.
    """
    covered = set(handled) | set(not_applicable)
    return [op for op in OpType if op not in covered]


UPSAMPLE_MODES = ("nearest", "linear")
PAD_MODES = ("constant", "reflect", "replicate")
