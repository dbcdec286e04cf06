"""What a per-layer model sees of a layer: its type key and its predictors (PreVIous IV-D).

PreVIous fits one model per layer type with three predictors: n(W) (learnt
weights), #OPs and #memOPs (Eq. 2). The type keys follow the paper's layer
types (one model for every convolution, one for every element-wise
operation), except that nnperf gives each kind of pooling its own model: a
max pool costs several times an average pool of the same #OPs in PyTorch's
NCHW kernels, and one shared model under-predicted the zoo's pooling time by
60% (bench/predict_accuracy.py). A layer normalisation over an axis other than
the last (NCHW channels) has its own model too (:data:`STRIDED_LAYER_NORM_KEY`), and so has a transpose that
keeps the innermost axis in place (:data:`ROW_TRANSPOSE_KEY`).
Op types the paper does not model keep their own key.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from nnperf.ir import ACTIVATIONS, DATA_MOVEMENT, ELTWISE, Layer, NormAttrs, OpType, TransposeAttrs
from nnperf.ir.metrics import LayerMetrics, layer_metrics
from nnperf.prediction._enums import TextEnum

FEATURES = ("n_weights", "ops", "mem_ops")
"""The predictors, in column order: n(W), #OPs, #memOPs."""


class SharedKey(TextEnum):
    """The layer-model keys that several op types share; every other op type's key is its own value."""

    ELTWISE = "eltwise"
    """Every element-wise operation (:data:`~nnperf.ir.ELTWISE`: add, mul, max)."""
    GENERIC = OpType.GENERIC.value
    """Generic layers (ONNX operators nnperf has no dedicated model of), fitted on every memory-bound layer."""


GENERIC_KEY: str = SharedKey.GENERIC.value

STRIDED_LAYER_NORM_KEY = f"{OpType.LAYER_NORM.value}:strided"
"""The model key of a layer normalisation over an axis other than the last (ConvNeXt's over NCHW channels), whose
normalised elements lie a map apart. On both backends it ran 3-4 times as long as one over the last axis of the
same elements (a transformer's over its features), and one model of the two predicted the transformer's 2-3 times
its time. A model without one (stored before the split) predicts both with its ``layer_norm`` model."""

ROW_TRANSPOSE_KEY = f"{OpType.TRANSPOSE.value}:rows"
"""The model key of a transpose that keeps the innermost axis (of more than one element) innermost: it copies whole
rows (a transformer's split into heads, a window partition), where one that moves the innermost axis gathers
single elements a row apart (an image's height and width swapped, tokens made channels). Timed alone on torch, the
row kind of Swin-T, ViT-B/32 and MaxViT-T ran at 0.40-0.48 of what one model of the two predicted (3.8 ms against
9.4 ms on Swin-T) and the element kind at 1.7-2.4 times it; the split models predicted both within 8-59%."""

SPLIT_KEYS: Mapping[str, str] = {STRIDED_LAYER_NORM_KEY: OpType.LAYER_NORM.value,
                                 ROW_TRANSPOSE_KEY: OpType.TRANSPOSE.value}
"""Each model key split off an op type's own, and that key: a model without the split one (stored before the
split, or calibrated on no such layer) predicts its layers with the op type's model, as before the split."""

MEMORY_BOUND_OPS = ACTIVATIONS | ELTWISE | DATA_MOVEMENT | {
    OpType.BATCH_NORM, OpType.CONCAT, OpType.SOFTMAX, OpType.PAD, OpType.UPSAMPLE, OpType.REDUCE_MEAN,
    OpType.REDUCE_MAX,
}
"""Layers that do no MACs and little arithmetic per element: the calibration's layers of these types also fit
the model of generic layers (``GENERIC_KEY``), one memory-bound Ridge over all of them."""


def model_keys(layer: Layer) -> tuple[str, ...]:
    """Every model a calibration layer helps fit: its own type's, and the generic layers' when it is
    memory-bound."""
    key = model_key(layer)
    return (key, GENERIC_KEY) if layer.op in MEMORY_BOUND_OPS else (key,)


def model_key(layer: Layer) -> str:
    """The layer type whose model predicts ``layer``: 'eltwise' for add/mul/max, 'layer_norm:strided' for a layer
    normalisation over an axis other than the last, 'transpose:rows' for a transpose that keeps the innermost axis,
    otherwise the op's own name."""
    if layer.op in ELTWISE:
        return SharedKey.ELTWISE.value
    if layer.op is OpType.LAYER_NORM and isinstance(layer.attrs, NormAttrs):
        axis, rank = layer.attrs.axis, len(layer.output_shape)
        return layer.op.value if axis in (-1, rank - 1) else STRIDED_LAYER_NORM_KEY
    if layer.op is OpType.TRANSPOSE and isinstance(layer.attrs, TransposeAttrs):
        return ROW_TRANSPOSE_KEY if keeps_innermost_axis(layer.input_shape, layer.attrs.perm) else layer.op.value
    return layer.op.value


def keeps_innermost_axis(shape: tuple[int, ...], perm: tuple[int, ...]) -> bool:
    """Whether permuting ``shape`` by ``perm`` (output axis i is input axis perm[i]) leaves its innermost axis of
    more than one element innermost among those of the output (axes of one element move no data)."""
    sized = [axis for axis in perm if shape[axis] > 1]
    return bool(sized) and sized[-1] == max(sized)


def features(layer: Layer) -> np.ndarray:
    """The predictors of ``layer`` as a float vector in ``FEATURES`` order."""
    return metric_features(layer_metrics(layer))


def layer_signature(layer: Layer) -> Hashable:
    """What a layer's prediction depends on: its operator, attributes, input shapes and output shape (never its
    name), so that layers alike share one prediction."""
    return (layer.op, layer.attrs, layer.input_shapes, layer.output_shape)


def metric_features(m: LayerMetrics) -> np.ndarray:
    """The predictors of a layer with metrics ``m``, in ``FEATURES`` order."""
    return np.array([m.params, m.ops, m.mem_ops], dtype=float)
