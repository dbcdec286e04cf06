"""Each op type declared in one place: its spec.

An :class:`OpSpec` names what the IR knows of an op type: its attribute class, its shape rule
(:mod:`nnperf.ir._shape_rules`), the function that counts its metrics (:mod:`nnperf.ir._op_counts`), its
category, whether it reads several operands, whether frameworks fold it into the layer before it, and the
operators the importers map to it whatever their attributes (ONNX ``op_type``, ``torch.nn`` class, torch
function or Tensor method, TFLite builtin). ``OP_SPECS`` holds one spec per op type, and the per-op tables
(``ATTRIBUTES_OF``, ``SHAPE_RULES``, ``METRIC_HANDLERS``, the category sets, the importers' plain rules and
measure's fusion roles) are derived from it. An operator that maps to the op only for some attributes keeps
a handler in its importer's table, and the graph builders stay with their backends.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from types import MappingProxyType

from nnperf.errors import InvalidNetworkError
from nnperf.ir._layer_like import LayerLike
from nnperf.ir._op_counts import (
    MetricHandler,
    batch_norm_counts,
    constant_counts,
    conv_counts,
    conv_transpose_counts,
    data_movement_counts,
    eltwise_counts,
    generic_counts,
    global_pool_counts,
    group_norm_counts,
    layer_norm_counts,
    linear_counts,
    lrn_counts,
    matmul_counts,
    one_per_output,
    pool_counts,
    prelu_counts,
    reduce_counts,
    scale_counts,
    softmax_counts,
    upsample_counts,
)
from nnperf.ir._ops import (
    AxisAttrs,
    BatchNormAttrs,
    ChannelShuffleAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvTransposeAttrs,
    GatherAttrs,
    GenericAttrs,
    GroupNormAttrs,
    HardSigmoidAttrs,
    LeakyReluAttrs,
    LinearAttrs,
    LrnAttrs,
    MatmulAttrs,
    NoAttrs,
    NormAttrs,
    OpType,
    PadAttrs,
    PoolAttrs,
    PReluAttrs,
    ReduceAttrs,
    ScaleAttrs,
    SliceAttrs,
    TransposeAttrs,
    UpsampleAttrs,
)
from nnperf.ir._shape_rules import (
    ShapeRule,
    any_shapes,
    channel_shuffle_problem,
    concat_problem,
    conv_transpose_problem,
    eltwise_problem,
    expand_problem,
    global_pool_problem,
    linear_problem,
    matmul_problem,
    normalisation_problem,
    pad_problem,
    reduce_problem,
    reshape_problem,
    same_shape_problem,
    same_shape_with_channels_problem,
    selection_problem,
    transpose_problem,
    upsample_problem,
    window_problem,
)
from nnperf.ir._shapes import shape_text


class OpCategory(str, enum.Enum):
    """The families of op types that other packages treat alike."""

    ACTIVATION = "activation"
    """an element-wise function of one operand"""
    ELTWISE = "eltwise"
    """element-wise arithmetic of two or more operands"""
    NOOP = "noop"
    """does nothing at inference; importers drop it unless asked to keep it"""
    DATA_MOVEMENT = "data_movement"
    """only moves or copies elements (no arithmetic): #OPs 0"""


@dataclass(frozen=True)
class OpSpec:
    """What the IR knows of one op type (the module docstring says where each part is used)."""

    op: OpType
    shape_rule: ShapeRule
    """what is wrong with a layer's shapes ('' when nothing)"""
    metrics: MetricHandler
    """a layer's counts: MACs, #OPs, n(W), the im2col input"""
    attributes: type = NoAttrs
    """the attribute class its layers carry"""
    _: KW_ONLY
    category: OpCategory | None = None
    many_operands: bool = False
    """reads any number of operands (every other op reads exactly one)"""
    fuses_into_producer: bool = False
    """frameworks fold it into the layer before it (a fused group's successor; otherwise it heads a group)"""
    onnx: tuple[str, ...] = ()
    """ONNX ``op_type`` that map to this op whatever their attributes"""
    torch_modules: tuple[str, ...] = ()
    """``torch.nn`` classes whose instances (of the class itself, not a subclass) map to this op"""
    torch_calls: tuple[str, ...] = ()
    """torch functions by their dotted path, Tensor methods by their bare name, that map to this op"""
    tflite: tuple[str, ...] = ()
    """TFLite builtin operators that map to this op whatever their options"""


_ACTIVATION, _ELTWISE = OpCategory.ACTIVATION, OpCategory.ELTWISE
_NOOP, _DATA_MOVEMENT = OpCategory.NOOP, OpCategory.DATA_MOVEMENT
_F = "torch.nn.functional."

OP_SPECS: tuple[OpSpec, ...] = (
    # windows and products
    OpSpec(OpType.CONV, window_problem, conv_counts, ConvAttrs),
    OpSpec(OpType.LINEAR, linear_problem, linear_counts, LinearAttrs),
    OpSpec(OpType.MAX_POOL, window_problem, pool_counts, PoolAttrs),
    OpSpec(OpType.AVG_POOL, window_problem, pool_counts, PoolAttrs),
    OpSpec(OpType.GLOBAL_AVG_POOL, global_pool_problem, global_pool_counts, onnx=("GlobalAveragePool",)),
    OpSpec(OpType.GLOBAL_MAX_POOL, global_pool_problem, global_pool_counts, onnx=("GlobalMaxPool",)),
    OpSpec(OpType.CONV_TRANSPOSE, conv_transpose_problem, conv_transpose_counts, ConvTransposeAttrs),
    OpSpec(OpType.MATMUL, matmul_problem, matmul_counts, MatmulAttrs, many_operands=True),
    # normalisation and reductions
    OpSpec(OpType.BATCH_NORM, same_shape_with_channels_problem, batch_norm_counts, BatchNormAttrs,
           fuses_into_producer=True),
    OpSpec(OpType.SCALE, same_shape_problem, scale_counts, ScaleAttrs, fuses_into_producer=True),
    OpSpec(OpType.SOFTMAX, same_shape_problem, softmax_counts, AxisAttrs),
    OpSpec(OpType.LRN, same_shape_with_channels_problem, lrn_counts, LrnAttrs),
    OpSpec(OpType.LAYER_NORM, normalisation_problem, layer_norm_counts, NormAttrs),
    OpSpec(OpType.GROUP_NORM, normalisation_problem, group_norm_counts, GroupNormAttrs),
    OpSpec(OpType.REDUCE_MEAN, reduce_problem, reduce_counts, ReduceAttrs),
    OpSpec(OpType.REDUCE_MAX, reduce_problem, reduce_counts, ReduceAttrs),
    # activations
    OpSpec(OpType.RELU, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           onnx=("Relu",), torch_modules=("ReLU",), tflite=("RELU",),
           torch_calls=(_F + "relu", "torch.relu", "torch.relu_", "relu", "relu_")),
    OpSpec(OpType.RELU6, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           torch_calls=(_F + "relu6",), tflite=("RELU6",)),
    OpSpec(OpType.LEAKY_RELU, same_shape_problem, one_per_output, LeakyReluAttrs, category=_ACTIVATION,
           fuses_into_producer=True),
    OpSpec(OpType.SIGMOID, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           torch_modules=("Sigmoid",), torch_calls=("torch.sigmoid", _F + "sigmoid", "sigmoid")),
    OpSpec(OpType.TANH, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           onnx=("Tanh",), torch_modules=("Tanh",), torch_calls=("torch.tanh", _F + "tanh", "tanh"),
           tflite=("TANH",)),
    OpSpec(OpType.HARDSWISH, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           onnx=("HardSwish",), torch_modules=("Hardswish",), torch_calls=(_F + "hardswish",),
           tflite=("HARD_SWISH",)),
    OpSpec(OpType.SILU, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           torch_modules=("SiLU",), torch_calls=(_F + "silu",)),
    OpSpec(OpType.HARD_SIGMOID, same_shape_problem, one_per_output, HardSigmoidAttrs, category=_ACTIVATION,
           fuses_into_producer=True),
    OpSpec(OpType.CLIP, same_shape_problem, one_per_output, ClipAttrs, category=_ACTIVATION, fuses_into_producer=True),
    OpSpec(OpType.PRELU, same_shape_problem, prelu_counts, PReluAttrs, category=_ACTIVATION, fuses_into_producer=True),
    OpSpec(OpType.GELU, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True),
    OpSpec(OpType.SOFTPLUS, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           onnx=("Softplus",)),
    OpSpec(OpType.MISH, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           onnx=("Mish",), torch_modules=("Mish",), torch_calls=(_F + "mish",)),
    OpSpec(OpType.EXP, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           onnx=("Exp",), torch_calls=("torch.exp", "exp"), tflite=("EXP",)),
    OpSpec(OpType.LOG, same_shape_problem, one_per_output, category=_ACTIVATION, fuses_into_producer=True,
           onnx=("Log",), torch_calls=("torch.log", "log"), tflite=("LOG",)),
    # element-wise arithmetic of several operands
    OpSpec(OpType.ADD, eltwise_problem, eltwise_counts, category=_ELTWISE, many_operands=True,
           fuses_into_producer=True),
    OpSpec(OpType.MUL, eltwise_problem, eltwise_counts, category=_ELTWISE, many_operands=True,
           fuses_into_producer=True),
    OpSpec(OpType.MAX, eltwise_problem, eltwise_counts, category=_ELTWISE, many_operands=True,
           fuses_into_producer=True),
    OpSpec(OpType.SUB, eltwise_problem, eltwise_counts, category=_ELTWISE, many_operands=True,
           fuses_into_producer=True),
    OpSpec(OpType.DIV, eltwise_problem, eltwise_counts, category=_ELTWISE, many_operands=True,
           fuses_into_producer=True),
    OpSpec(OpType.POW, eltwise_problem, eltwise_counts, category=_ELTWISE, many_operands=True,
           fuses_into_producer=True),
    # joining, reshaping, resizing and padding
    OpSpec(OpType.CONCAT, concat_problem, data_movement_counts, AxisAttrs, many_operands=True),
    OpSpec(OpType.FLATTEN, reshape_problem, data_movement_counts, AxisAttrs),
    OpSpec(OpType.RESHAPE, reshape_problem, data_movement_counts),
    OpSpec(OpType.UPSAMPLE, upsample_problem, upsample_counts, UpsampleAttrs),
    OpSpec(OpType.PAD, pad_problem, data_movement_counts, PadAttrs),
    # no-ops at inference
    OpSpec(OpType.IDENTITY, same_shape_problem, data_movement_counts, category=_NOOP, onnx=("Identity",),
           torch_modules=("Identity",), torch_calls=("contiguous", "clone")),
    OpSpec(OpType.DROPOUT, same_shape_problem, data_movement_counts, category=_NOOP, onnx=("Dropout",),
           torch_modules=("Dropout", "Dropout2d"), torch_calls=(_F + "dropout",)),
    # data movement
    OpSpec(OpType.SLICE, selection_problem, data_movement_counts, SliceAttrs, category=_DATA_MOVEMENT),
    OpSpec(OpType.TRANSPOSE, transpose_problem, data_movement_counts, TransposeAttrs, category=_DATA_MOVEMENT),
    OpSpec(OpType.CHANNEL_SHUFFLE, channel_shuffle_problem, data_movement_counts, ChannelShuffleAttrs,
           category=_DATA_MOVEMENT),
    OpSpec(OpType.GATHER, selection_problem, data_movement_counts, GatherAttrs, category=_DATA_MOVEMENT),
    OpSpec(OpType.EXPAND, expand_problem, data_movement_counts, category=_DATA_MOVEMENT),
    # stored tensors and operators kept as they are
    OpSpec(OpType.CONSTANT, any_shapes, constant_counts),
    OpSpec(OpType.GENERIC, any_shapes, generic_counts, GenericAttrs, many_operands=True),
)
"""One spec per op type (``tests/ir/test_op_specs.py`` checks that every op has exactly one)."""


_SPEC_OF: Mapping[OpType, OpSpec] = MappingProxyType({spec.op: spec for spec in OP_SPECS})


def spec_of(op: OpType) -> OpSpec:
    """The spec of op type ``op``."""
    return _SPEC_OF[op]


def _in_category(category: OpCategory) -> frozenset[OpType]:
    return frozenset(spec.op for spec in OP_SPECS if spec.category is category)


ACTIVATIONS = _in_category(OpCategory.ACTIVATION)
ELTWISE = _in_category(OpCategory.ELTWISE)
NOOPS = _in_category(OpCategory.NOOP)
"""Layers that do nothing at inference; importers drop them unless asked to keep them."""
DATA_MOVEMENT = _in_category(OpCategory.DATA_MOVEMENT)
"""Layers that only move or copy elements (no arithmetic): #OPs 0."""

ATTRIBUTES_OF: Mapping[OpType, type] = MappingProxyType(
    {spec.op: spec.attributes for spec in OP_SPECS if spec.attributes is not NoAttrs})
"""Op type -> its attribute class, for the ops that have attributes."""
NO_ATTRIBUTES = frozenset(spec.op for spec in OP_SPECS if spec.attributes is NoAttrs)
"""Ops whose layers carry :class:`NoAttrs`: their shapes say everything (a reshape's or an expand's target is its
output shape)."""
SHAPE_RULES: Mapping[OpType, ShapeRule] = MappingProxyType({spec.op: spec.shape_rule for spec in OP_SPECS})
"""Op type -> its shape rule; every op has one (constants and generic layers the rule that allows any shapes)."""
METRIC_HANDLERS: Mapping[OpType, MetricHandler] = MappingProxyType({spec.op: spec.metrics for spec in OP_SPECS})
"""Each op's counts (MACs, #OPs, n(W), im2col input); every op has one, data movement counting zero."""


def attributes_class(op: OpType) -> type:
    """The attribute class a layer of type ``op`` must carry."""
    return _SPEC_OF[op].attributes


def check_layer_shapes(layer: LayerLike, where: str) -> None:
    """Checks that the output shape follows from the inputs and attributes by the op's rule (a generic layer's
    shapes are ONNX shape inference's: there is no rule of nnperf's to check them against)."""
    ins, out = layer.input_shapes, layer.output_shape
    spec = _SPEC_OF[layer.op]
    if not spec.many_operands and len(ins) != 1:
        raise InvalidNetworkError(f"{where}: takes one input, got {len(ins)}")
    problem = spec.shape_rule(layer)
    if problem:
        raise InvalidNetworkError(
            f"{where}: {problem} (input {', '.join(map(shape_text, ins))}, output {shape_text(out)})")
