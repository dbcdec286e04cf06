"""The network IR: layers, their shapes and attributes, metrics and versioned JSON.

Heavy importers (torch, onnx) live in :mod:`nnperf.ir.importers` and are not
imported here.
"""

from nnperf.ir._json import load_network_json, network_from_dict, network_to_dict, save_network
from nnperf.ir._limits import DEFAULT_SIZE_LIMITS, SIZE_LIMITS_ENV, SizeLimits, current_size_limits, size_limits
from nnperf.ir._network import Layer, Network, TensorSpec
from nnperf.ir._ops import (  # issue 17
    ACTIVATIONS,
    ATTRIBUTES_OF,
    DATA_MOVEMENT,
    ELTWISE,
    NO_ATTRIBUTES,
    NOOPS,
    Attributes,
    AxisAttrs,
    BatchNormAttrs,
    ChannelShuffleAttrs,
    ClipAttrs,
    ConvAttrs,
    ConvKind,
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
    uncovered_ops,
)
from nnperf.ir._shapes import Shape, conv_output_size, numel, pool_output_size, same_padding, shape_text
from nnperf.ir._transforms import (
    fuse_channel_shuffle,  # activations and data movement (issue 17)
    remove_noops,
)

__all__ = [
    "ACTIVATIONS",
    "ATTRIBUTES_OF",
    "DATA_MOVEMENT",
    "DEFAULT_SIZE_LIMITS",
    "ELTWISE",
    "NOOPS",
    "NO_ATTRIBUTES",
    "SIZE_LIMITS_ENV",
    "Attributes",
    "AxisAttrs",
    "BatchNormAttrs",
    "ChannelShuffleAttrs",
    "ClipAttrs",
    "ConvAttrs",
    "ConvKind",
    "GatherAttrs",
    "GenericAttrs",
    "HardSigmoidAttrs",
    "Layer",
    "LeakyReluAttrs",
    "LinearAttrs",
    "LrnAttrs",
    "Network",
    "NoAttrs",
    "OpType",
    "PReluAttrs",
    "PadAttrs",
    "PoolAttrs",
    "ScaleAttrs",
    "Shape",
    "SizeLimits",
    "SliceAttrs",
    "TensorSpec",
    "TransposeAttrs",
    "UpsampleAttrs",
    "conv_output_size",
    "current_size_limits",
    "fuse_channel_shuffle",
    "load_network_json",
    "network_from_dict",
    "network_to_dict",
    "numel",
    "pool_output_size",
    "remove_noops",
    "same_padding",
    "save_network",
    "shape_text",
    "size_limits",
    "uncovered_ops",
]
# resizing, normalisation and attention (issue 17)
__all__ += ["ConvTransposeAttrs", "GroupNormAttrs", "MatmulAttrs", "NormAttrs", "ReduceAttrs"]
