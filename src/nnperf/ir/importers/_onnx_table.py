"""The ONNX importer's table: each ``op_type`` and the rule that maps its nodes."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from nnperf.ir._op_specs import OP_SPECS
from nnperf.ir._ops import OpType
from nnperf.ir.importers._onnx_converter import OnnxHandler
from nnperf.ir.importers._onnx_elementwise import (
    map_binary,
    map_clip,
    map_div,
    map_eltwise,
    map_gelu,
    map_hard_sigmoid,
    map_leaky_relu,
    map_mul,
    map_prelu,
    map_sigmoid,
    map_softmax,
    plain_rule,
)
from nnperf.ir.importers._onnx_movement import (
    map_concat,
    map_expand,
    map_flatten_or_reshape,
    map_gather,
    map_pad,
    map_reshape,
    map_resize,
    map_slice,
    map_split,
    map_transpose,
)
from nnperf.ir.importers._onnx_normalisation import (
    map_batch_norm,
    map_instance_normalization,
    map_layer_normalization,
    map_lrn,
)
from nnperf.ir.importers._onnx_products import (
    map_conv,
    map_conv_transpose,
    map_gemm,
    map_matmul,
    map_pool,
    map_reduce,
)
from nnperf.ir.importers._table import ImportRule, rule

_RESHAPES = (OpType.FLATTEN, OpType.RESHAPE)


_REDUCE_OPS = {OpType.GLOBAL_AVG_POOL, OpType.GLOBAL_MAX_POOL, OpType.REDUCE_MEAN, OpType.REDUCE_MAX,
               OpType.LAYER_NORM}


ONNX_IMPORTERS: Mapping[str, ImportRule[OnnxHandler]] = MappingProxyType({
    "Conv": rule({OpType.CONV}, map_conv, "Conv (only 2-D)"),
    "Gemm": rule({OpType.LINEAR}, map_gemm),
    "MaxPool": rule({OpType.MAX_POOL}, map_pool, "MaxPool (only 2-D)"),
    "AveragePool": rule({OpType.AVG_POOL}, map_pool, "AveragePool (only 2-D)"),
    "BatchNormalization": rule({OpType.BATCH_NORM}, map_batch_norm),
    "Clip": rule({OpType.RELU, OpType.RELU6, OpType.CLIP}, map_clip, "Clip (bounds that are not constants)"),
    "LeakyRelu": rule({OpType.LEAKY_RELU}, map_leaky_relu),
    "Sigmoid": rule({OpType.SIGMOID, OpType.SILU}, map_sigmoid),
    "Add": rule({OpType.ADD}, map_eltwise(OpType.ADD)),
    "Sum": rule({OpType.ADD}, map_eltwise(OpType.ADD)),
    "Max": rule({OpType.MAX}, map_eltwise(OpType.MAX)),
    "Mul": rule({OpType.MUL, OpType.SCALE}, map_mul, "Mul by a constant that is neither a scalar nor per-channel"),
    "Concat": rule({OpType.CONCAT}, map_concat),
    "Softmax": rule({OpType.SOFTMAX}, map_softmax),
    "LRN": rule({OpType.LRN}, map_lrn),
    "Flatten": rule(_RESHAPES, map_flatten_or_reshape),
    "Squeeze": rule(_RESHAPES, map_flatten_or_reshape),
    "Unsqueeze": rule(_RESHAPES, map_flatten_or_reshape),
    "Resize": rule({OpType.UPSAMPLE}, map_resize),
    "Upsample": rule({OpType.UPSAMPLE}, map_resize),
    "Pad": rule({OpType.PAD}, map_pad),
    # activations and data movement
    "HardSigmoid": rule({OpType.HARD_SIGMOID}, map_hard_sigmoid),
    "PRelu": rule({OpType.PRELU}, map_prelu, "PRelu (slope neither per-channel nor a constant scalar)"),
    "Gelu": rule({OpType.GELU}, map_gelu, "Gelu (only approximate='none')"),
    "Split": rule({OpType.SLICE}, map_split),
    "Slice": rule({OpType.SLICE}, map_slice, "Slice (only constant bounds selecting along one axis)"),
    "Transpose": rule({OpType.TRANSPOSE, OpType.CHANNEL_SHUFFLE}, map_transpose),  # shuffle: fuse_channel_shuffle
    "Gather": rule({OpType.GATHER}, map_gather, "Gather (only by constant 1-D indices)"),
    "Expand": rule({OpType.EXPAND}, map_expand),
    # resizing, normalisation and attention
    "ConvTranspose": rule({OpType.CONV_TRANSPOSE}, map_conv_transpose, "ConvTranspose (only 2-D, without output_shape)"),
    "LayerNormalization": rule({OpType.LAYER_NORM}, map_layer_normalization,
                               "LayerNormalization (only over the last axis)"),
    "InstanceNormalization": rule({OpType.GROUP_NORM}, map_instance_normalization),
    "ReduceMean": rule(_REDUCE_OPS, map_reduce, "ReduceMean (axes not stored in the file)"),
    "ReduceMax": rule(_REDUCE_OPS, map_reduce, "ReduceMax (axes not stored in the file)"),
    "MatMul": rule({OpType.LINEAR, OpType.MATMUL}, map_matmul),
    "Sub": rule({OpType.SUB}, map_binary(OpType.SUB), "Sub of a constant that is not a stored tensor operand"),
    "Div": rule({OpType.DIV, OpType.SCALE, OpType.GELU}, map_div, "Div by a constant that is not per-channel"),
    "Pow": rule({OpType.POW}, map_binary(OpType.POW), "Pow with a constant (only of two activations)"),
    "Reshape": rule({*_RESHAPES, OpType.GROUP_NORM}, map_reshape),
    # the operators each op type's spec maps to it whatever their attributes (Relu, Identity, ...)
    **{name: plain_rule(spec.op) for spec in OP_SPECS for name in spec.onnx},
})
"""ONNX ``op_type`` -> the rule that maps its nodes (some only for some attributes and operands)."""


ONNX_NOT_IMPORTED: frozenset[OpType] = frozenset({OpType.CONSTANT, OpType.GENERIC})
"""IR ops no one ONNX operator maps to: CONSTANT, made of a stored tensor operand (see ``_constant_layers``), and
GENERIC, made of any node no rule maps (see ``_onnx_generic``); SiLU comes from the Sigmoid+Mul that exporters
write."""
