"""The network IR: layers, their shapes and attributes, metrics and versioned JSON.

Heavy importers (torch, onnx) live in :mod:`nnperf.ir.importers` and are not
imported here.
"""

from nnperf.ir._json import load_network_json, network_from_dict, network_to_dict, save_network
from nnperf.ir._limits import DEFAULT_SIZE_LIMITS, SIZE_LIMITS_ENV, SizeLimits, current_size_limits, size_limits
from nnperf.ir._network import Layer, Network, Shape, TensorSpec, conv_output_size, numel, pool_output_size, shape_text
from nnperf.ir._ops import (  # issue 17
    ACTIVATIONS,
    ATTRIBUTES_OF,
    ELTWISE,
    NO_ATTRIBUTES,
    NOOPS,
    Attributes,
    AxisAttrs,
    BatchNormAttrs,
    ConvAttrs,
    ConvKind,
    ConvTransposeAttrs,
    GroupNormAttrs,
    LeakyReluAttrs,
    LinearAttrs,
    LrnAttrs,
    MatmulAttrs,
    NoAttrs,
    NormAttrs,
    OpType,
    PadAttrs,
    PoolAttrs,
    ReduceAttrs,
    ScaleAttrs,
    UpsampleAttrs,
    uncovered_ops,
)
from nnperf.ir._transforms import remove_noops

__all__ = [
    "ACTIVATIONS",
    "ATTRIBUTES_OF",
    "DEFAULT_SIZE_LIMITS",
    "ELTWISE",
    "NOOPS",
    "NO_ATTRIBUTES",
    "SIZE_LIMITS_ENV",
    "Attributes",
    "AxisAttrs",
    "BatchNormAttrs",
    "ConvAttrs",
    "ConvKind",
    "Layer",
    "LeakyReluAttrs",
    "LinearAttrs",
    "LrnAttrs",
    "Network",
    "NoAttrs",
    "OpType",
    "PadAttrs",
    "PoolAttrs",
    "ScaleAttrs",
    "Shape",
    "SizeLimits",
    "TensorSpec",
    "UpsampleAttrs",
    "conv_output_size",
    "current_size_limits",
    "load_network_json",
    "network_from_dict",
    "network_to_dict",
    "numel",
    "pool_output_size",
    "remove_noops",
    "save_network",
    "shape_text",
    "size_limits",
    "uncovered_ops",
]
# resizing, normalisation and attention (issue 17)
__all__ += ["ConvTransposeAttrs", "GroupNormAttrs", "MatmulAttrs", "NormAttrs", "ReduceAttrs"]
