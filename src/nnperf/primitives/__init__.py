"""Convolution primitives: a library of algorithms and vendor kernels with their data layouts (Mulder et al.).

A :class:`Primitive` computes one :class:`ConvConfig` from an input in its input layout to an output in its
output layout, if it ``applies`` and is ``available`` here. The library holds the vendor kernels reachable
from Python (torch's own ``conv2d`` dispatch, the framework default; oneDNN in chw and hwc, NNPACK, ATen's
im2col, ONNX Runtime in chw and NCHWc, OpenCV DNN with Winograd on and off) and the algorithm families of Mulder
et al. 3.1 written on torch ops (direct, im2col and im2row in both GEMM orientations, kn2row/kn2col, Winograd
F(2,3), F(4,3), F(2,5), FFT, 1x1-as-GEMM, and MEC's mec-col and mec-row-partition). Activations are in one of
the layouts chw, hwc, hcw (the paper's three) or a blocked chw<B>c; :class:`LayoutTransform` objects move them
between layouts; :func:`time_primitive` and
:func:`time_transform` time them with the measurement harness (:func:`primitive_timer` and
:func:`transform_timer` build their timers, to time several together), :func:`time_layer` a layer other than a
convolution in a layout. :func:`conv_configs` and :func:`sample_configs` make the layer
configurations of the profiled dataset (:class:`PrimitiveDataset`). Primitives compute on the CPU, and those
written on torch ops and torch's own ``conv2d`` on a CUDA GPU too (:attr:`Primitive.devices`,
:meth:`Primitive.supports`; the timers take a ``device``, :func:`device_operands` makes operands there). Nothing is
imported until used.
"""

from nnperf.primitives._base import CPU_AND_CUDA, CPU_ONLY, ERROR_BOUNDS, Bound, Family, Primitive
from nnperf.primitives._config import ConvConfig, PrimitiveError, pad_input, reference_conv2d, unread_outputs
from nnperf.primitives._dataset import (
    GRID_KERNELS,
    GRID_STRIDES,
    IM_RANGE,
    MAX_CHANNELS,
    ConvSample,
    GridShape,
    PrimitiveDataset,
    TransformSample,
    config_from_dict,
    config_key,
    config_label,
    conv_configs,
    conv_layer_configs,
    grid_shapes,
    paper_grid,
    sample_configs,
)
from nnperf.primitives._device import (
    DEVICE_TYPES,
    device_availability,
    device_name,
    device_operands,
    device_type,
    ieee_float32,
    require_device,
    synchronizer,
)
from nnperf.primitives._layers import LAYER_LAYOUTS, layer_key, layer_layouts, layer_signature, time_layer
from nnperf.primitives._layout import (
    CHW,
    HCW,
    HWC,
    PLAIN_LAYOUTS,
    Layout,
    LayoutTransform,
    blocked,
    from_layout,
    layout_order,
    layout_transforms,
    parse_layout,
    to_layout,
)
from nnperf.primitives._registry import (
    PRIMITIVES,
    all_primitives,
    all_transforms,
    get_primitive,
    primitive_layouts,
    primitive_report,
)
from nnperf.primitives._timing import (
    Operands,
    SharedOperands,
    primitive_timer,
    time_primitive,
    time_transform,
    transform_timer,
)

__all__ = [
    "CHW", "CPU_AND_CUDA", "CPU_ONLY", "DEVICE_TYPES", "ERROR_BOUNDS", "GRID_KERNELS", "GRID_STRIDES", "HCW", "HWC",
    "IM_RANGE", "LAYER_LAYOUTS", "MAX_CHANNELS", "PLAIN_LAYOUTS", "PRIMITIVES", "Bound", "ConvConfig", "ConvSample",
    "Family", "GridShape", "Layout", "LayoutTransform", "Operands", "Primitive", "PrimitiveDataset", "PrimitiveError",
    "SharedOperands",
    "TransformSample", "all_primitives", "all_transforms", "blocked", "config_from_dict", "config_key", "config_label",
    "conv_configs", "conv_layer_configs", "device_availability", "device_name", "device_operands", "device_type",
    "from_layout", "get_primitive", "grid_shapes", "ieee_float32", "layer_key", "layer_layouts", "layer_signature",
    "layout_order", "layout_transforms", "pad_input", "paper_grid", "parse_layout", "primitive_layouts",
    "primitive_report", "primitive_timer", "reference_conv2d", "require_device", "sample_configs", "synchronizer",
    "time_layer", "time_primitive", "time_transform", "to_layout", "transform_timer", "unread_outputs",
]
