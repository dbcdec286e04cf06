"""Handlers of the ONNX normalisations (batch, local response, layer and instance normalisation) and the
exporters' decomposed layer and group normalisation, fused back into one layer (patterns the reduction and
reshape handlers try first)."""

from __future__ import annotations

import numpy as np
import onnx

from nnperf.ir._ops import BatchNormAttrs, GroupNormAttrs, LrnAttrs, NormAttrs, OpType
from nnperf.ir.importers._common import one_value, scale_kind
from nnperf.ir.importers._onnx_converter import Converter, Node, Result, f32


def map_batch_norm(c: Converter, n: Node) -> Result | None:
    """BatchNormalization with its epsilon (its scale and shift always learnt)."""
    return n.single((OpType.BATCH_NORM, BatchNormAttrs(eps=f32(n.attrs.get("epsilon", 1e-5)), affine=True)))


def map_lrn(c: Converter, n: Node) -> Result | None:
    """LRN with its size, alpha, beta and bias."""
    return n.single((OpType.LRN, LrnAttrs(size=int(n.attrs["size"]), alpha=f32(n.attrs.get("alpha", 1e-4)),
                                          beta=f32(n.attrs.get("beta", 0.75)), k=f32(n.attrs.get("bias", 1.0)))))


def map_layer_normalization(c: Converter, n: Node) -> Result | None:
    """LayerNormalization over the last axis."""
    rank = len(n.x_shape)
    axis = int(n.attrs.get("axis", -1)) % rank
    if axis != rank - 1 or len(n.data_inputs) != 1:
        return None
    # ONNX's scale (and shift) are inputs it always has: counted as learnt, whatever their values
    return n.single((OpType.LAYER_NORM, NormAttrs(axis=-1, eps=f32(n.attrs.get("epsilon", 1e-5)), affine=True)))


def map_instance_normalization(c: Converter, n: Node) -> Result | None:
    """Instance normalisation: group normalisation with one channel per group."""
    if len(n.data_inputs) != 1 or len(n.x_shape) < 3:
        return None
    return n.single((OpType.GROUP_NORM, GroupNormAttrs(groups=n.x_shape[1], eps=f32(n.attrs.get("epsilon", 1e-5)),
                                                       affine=True)))  # scale and shift are inputs it always has


def _constant_value(c: Converter, tensor: str) -> np.ndarray | None:
    """The value of a stored tensor or of a Constant node, also one later in the graph than the reader."""
    value = c.value_of(tensor)
    if value is None:
        for node in c.model.graph.node:
            if node.op_type == "Constant" and tensor in node.output:
                c.record_constant(node)
                return c.value_of(tensor)
    return value


def layer_norm_pattern(c: Converter, n: Node, axes: tuple[int, ...]) -> Result | None:
    """The exporter's decomposed layer norm, fused into one layer:
    ReduceMean(x) -> Sub(x, mean) -> Pow(., 2) -> ReduceMean -> Add(eps) -> Sqrt -> Div(sub, sqrt) [-> Mul(scale)
    -> Add(shift)], the mean over the last axis or the channels."""
    rank = len(n.x_shape)
    if axes not in ((rank - 1,), (1,)) or not n.attrs.get("keepdims", 1):
        return None
    sub = c.sole_consumer(n.out, "Sub")
    if sub is None or list(sub.input) != [n.x, n.out]:
        return None
    users = {u.op_type: u for u in c.consumers.get(sub.output[0], [])}
    pow_, div = users.get("Pow"), users.get("Div")
    if len(c.consumers.get(sub.output[0], [])) != 2 or pow_ is None or div is None:
        return None
    exponent = _constant_value(c, pow_.input[1])
    mean2 = c.sole_consumer(pow_.output[0], "ReduceMean")
    add = None if mean2 is None else c.sole_consumer(mean2.output[0], "Add")
    sqrt = None if add is None else c.sole_consumer(add.output[0], "Sqrt")
    eps = None if add is None else _constant_value(c, add.input[1])
    if exponent is None or one_value(exponent) != 2.0 or sqrt is None or eps is None or eps.size != 1 \
            or c.sole_consumer(sqrt.output[0], "Div") is not div or list(div.input) != [sub.output[0], sqrt.output[0]]:
        return None
    chain = [sub, pow_, mean2, add, sqrt, div]
    out, affine = div.output[0], False
    mul = c.sole_consumer(out, "Mul")
    if mul is not None and all(t in (out,) or (t not in n.data and t in c.initializers) for t in mul.input):
        shift = c.sole_consumer(mul.output[0], "Add")
        if shift is not None and all(t == mul.output[0] or (t not in n.data and t in c.initializers)
                                     for t in shift.input):
            chain += [mul, shift]
            out, affine = shift.output[0], True
    c.absorbed.update(id(node) for node in chain)
    return OpType.LAYER_NORM, NormAttrs(axis=1 if axes == (1,) else -1, eps=f32(one_value(eps)), affine=affine), \
        [n.x], out


def _stored_operand(c: Converter, node: onnx.NodeProto, tensor: str) -> tuple[str, onnx.NodeProto | None] | None:
    """The other operand of a binary ``node`` when it is stored (directly or through a CastLike of a stored
    tensor, as torch.onnx writes), with that CastLike; None when it is an activation."""
    others = [t for t in node.input if t != tensor]
    if len(others) != 1:
        return None
    if others[0] in c.initializers:
        return others[0], None
    cast = c.producer(others[0])
    if cast is not None and cast.op_type == "CastLike" and cast.input[0] in c.initializers:
        return cast.input[0], cast
    return None


def _sole_user(c: Converter, tensor: str, op_type: str) -> onnx.NodeProto | None:
    """As ``_sole_consumer``, not counting the CastLike nodes that read ``tensor`` only for its type."""
    users = [u for u in c.consumers.get(tensor, []) if not (u.op_type == "CastLike" and list(u.input)[1:] == [tensor])]
    if len(users) == 1 and users[0].op_type == op_type and tensor not in c.graph_outputs:
        return users[0]
    return None


def group_norm_pattern(c: Converter, n: Node) -> Result | None:
    """The exporter's group normalisation, fused into one layer: Reshape to (N, G, -1) -> InstanceNormalization
    (unit scale, zero shift) -> Reshape back [-> Mul by the per-channel scale -> Add of the shift]."""
    out_shape = c.shapes.get(n.out) or ()
    norm = c.sole_consumer(n.out, "InstanceNormalization")
    if len(n.x_shape) < 3 or len(out_shape) != 3 or out_shape[0] != n.x_shape[0] or norm is None:
        return None
    back = c.sole_consumer(norm.output[0], "Reshape")
    if back is None or c.shapes.get(back.output[0]) != n.x_shape:
        return None
    eps = next((onnx.helper.get_attribute_value(a) for a in norm.attribute if a.name == "epsilon"), 1e-5)
    chain, out, affine = [norm, back], back.output[0], False
    mul = _sole_user(c, out, "Mul")
    scale = None if mul is None else _stored_operand(c, mul, out)
    if mul is not None and scale is not None and scale_kind(c.shapes.get(scale[0]), n.x_shape) == "channel":
        add = _sole_user(c, mul.output[0], "Add")
        shift = None if add is None else _stored_operand(c, add, mul.output[0])
        if add is not None and shift is not None:
            chain += [mul, add] + [cast for _, cast in (scale, shift) if cast is not None]
            out, affine = add.output[0], True
    c.absorbed.update(id(node) for node in chain)
    return OpType.GROUP_NORM, GroupNormAttrs(groups=out_shape[1], eps=f32(eps), affine=affine), [n.x], out
