"""Handlers of the ONNX operators that move data: joining, reshaping, resizing, padding, slicing,
transposing, gathering and expanding tensors."""

from __future__ import annotations

from nnperf.ir._ops import AxisAttrs, GatherAttrs, NoAttrs, OpType, PadAttrs, SliceAttrs, TransposeAttrs, UpsampleAttrs
from nnperf.ir.importers._common import one_value, reshape_op
from nnperf.ir.importers._onnx_converter import Converter, Node, Result, f32
from nnperf.ir.importers._onnx_normalisation import group_norm_pattern


def map_concat(c: Converter, n: Node) -> Result | None:
    """Concat of activations along its axis."""
    return OpType.CONCAT, AxisAttrs(axis=int(n.attrs["axis"]) % len(n.x_shape)), n.data_inputs, n.out


def map_flatten_or_reshape(c: Converter, n: Node) -> Result | None:
    """Flatten, Squeeze or Unsqueeze: a flatten when it folds all but the batch into one axis, else a reshape."""
    return n.single(reshape_op(n.x_shape, c.shape_of(n.out, "tensor")))


def map_reshape(c: Converter, n: Node) -> Result | None:
    """The exporter's group normalisation pattern, else a flatten or reshape."""
    return group_norm_pattern(c, n) or map_flatten_or_reshape(c, n)


def map_resize(c: Converter, n: Node) -> Result | None:
    """Resize or Upsample by nearest or linear interpolation."""
    mode = n.text("mode", "nearest")
    return n.single((OpType.UPSAMPLE, UpsampleAttrs(mode=mode))) if mode in ("nearest", "linear") else None


def map_pad(c: Converter, n: Node) -> Result | None:
    """Pad by a mode and one fill value (edge padding is replicate)."""
    mode = n.text("mode", "constant")
    mode = {"edge": "replicate"}.get(mode, mode)
    if c.opset < 11:  # the fill value was an attribute before opset 11, an input since
        value = n.attrs.get("value")
    else:
        value = c.value_of(n.proto.input[2]) if len(n.proto.input) > 2 and n.proto.input[2] else None
    fill = 0.0 if value is None else one_value(value)
    if fill is None:
        return None  # a fill of more than one value: not ONNX's Pad
    if not _split_as_the_ir_splits(c, n):
        return None  # kept as the node it is (a generic layer): the PAD layer would pad elsewhere
    return n.single((OpType.PAD, PadAttrs(mode=mode, value=f32(fill))))


def _split_as_the_ir_splits(c: Converter, n: Node) -> bool:
    """Whether the Pad's stored amounts split each axis's growth as a PAD layer does (half before, the odd one
    after: the IR keeps only the padded shape); Swin V2 pads its windows at the end only. Amounts that are not
    stored constants are taken to split so."""
    if c.opset < 11:
        pads = n.attrs.get("pads")
    else:
        value = c.value_of(n.proto.input[1]) if len(n.proto.input) > 1 else None
        pads = None if value is None else [int(v) for v in value.reshape(-1)]
    axes_value = c.value_of(n.proto.input[3]) if c.opset >= 18 and len(n.proto.input) > 3 else None
    rank = len(n.x_shape)
    axes = list(range(rank)) if axes_value is None else [int(a) % rank for a in axes_value.reshape(-1)]
    if pads is None or len(pads) != 2 * len(axes):
        return True
    for k in range(len(axes)):
        total = pads[k] + pads[len(axes) + k]
        if (pads[k], pads[len(axes) + k]) != (total // 2, total - total // 2):
            return False
    return True


def map_split(c: Converter, n: Node) -> list[Result] | None:
    """One SLICE layer per output of a Split (sizes from the inferred output shapes)."""
    rank = len(n.x_shape)
    axis = int(n.attrs.get("axis", 0)) % rank
    results: list[Result] = []
    start = 0
    for output in n.proto.output:
        shape = c.shape_of(output, "tensor")
        results.append((OpType.SLICE, SliceAttrs(axis=axis, start=start, end=start + shape[axis]), [n.x], output))
        start += shape[axis]
    return results if n.proto.input[0] == n.x else None


def map_slice(c: Converter, n: Node) -> Result | None:
    """Slice by constant starts, ends, axes and steps that select part of one axis."""
    if n.proto.input[0] != n.x or len(n.data_inputs) != 1:
        return None
    starts, ends, axes, steps = (c.value_of(t) for t in (list(n.proto.input) + [""] * 4)[1:5])
    if starts is None or ends is None:
        return None
    rank = len(n.x_shape)
    axes = list(range(len(starts))) if axes is None else [int(a) % rank for a in axes.tolist()]
    steps = [1] * len(axes) if steps is None else [int(s) for s in steps.tolist()]
    chosen = []
    for axis, begin, end, step in zip(axes, starts.tolist(), ends.tolist(), steps):
        first, last, stride = slice(int(begin), int(end), step).indices(n.x_shape[axis])
        if (first, last, stride) != (0, n.x_shape[axis], 1):
            chosen.append(SliceAttrs(axis=axis, start=first, end=last, step=stride))
    if len(chosen) != 1 or chosen[0].step < 1 or chosen[0].start >= chosen[0].end:
        return None
    return n.single((OpType.SLICE, chosen[0]))


def map_transpose(c: Converter, n: Node) -> Result | None:
    """Transpose by its permutation (the reversed axes when it has none)."""
    perm = n.attrs.get("perm", list(reversed(range(len(n.x_shape)))))
    return n.single((OpType.TRANSPOSE, TransposeAttrs(perm=tuple(int(p) for p in perm))))


def map_gather(c: Converter, n: Node) -> Result | None:
    """Gather by constant 1-D indices (a scalar index, which drops the axis, is not supported)."""
    indices = c.value_of(n.proto.input[1]) if len(n.proto.input) > 1 else None
    if indices is None or indices.ndim != 1 or n.proto.input[0] != n.x:
        return None
    axis = int(n.attrs.get("axis", 0)) % len(n.x_shape)
    return n.single((OpType.GATHER, GatherAttrs(axis=axis, indices=tuple(int(i) % n.x_shape[axis] for i in indices))))


def map_expand(c: Converter, n: Node) -> Result | None:
    """Expand of one activation to the output shape."""
    return n.single((OpType.EXPAND, NoAttrs())) if n.proto.input[0] == n.x and len(n.data_inputs) == 1 else None
