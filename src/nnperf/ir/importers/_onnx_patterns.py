"""ONNX exporter patterns fused back into one IR layer: GELU's Erf form and torch.export's softplus.

The Div and Mul handlers (``_onnx_elementwise``) try them first; they use only the converter's lookups (constant
values, producers and consumers) and mark the nodes they absorb.
"""

from __future__ import annotations

import math

import onnx

from nnperf.ir._ops import NoAttrs, OpType
from nnperf.ir.importers._common import one_value
from nnperf.ir.importers._onnx_converter import Converter, Node, Result


def _scalar(c: Converter, tensor: str) -> float | None:
    """A constant scalar, also one written by a later Constant node or cast by CastLike (torch.export does both)."""
    value = c.value_of(tensor)
    if value is None:
        producer = c.producer(tensor)
        if producer is not None and producer.op_type == "CastLike":
            return _scalar(c, producer.input[0])
        if producer is not None and producer.op_type == "Constant":
            c.record_constant(producer)
            value = c.value_of(tensor)
    return None if value is None else one_value(value)


def gelu_erf_pattern(c: Converter, n: Node) -> Result | None:
    """The exact GELU that torch's TorchScript exporter writes: Mul(Mul(x, 1 + Erf(Div(x, sqrt 2))), 0.5).

    The second Mul may come first (x * 0.5 times the sum); a Div outside this pattern is not supported.
    """
    x = n.x
    if len(n.consts) != 1 or n.proto.input[0] != x or not math.isclose(_scalar(c, n.consts[0]) or 0.0, math.sqrt(2),
                                                                      rel_tol=1e-6):
        return None
    erf = c.sole_consumer(n.out, "Erf")
    add = erf and c.sole_consumer(erf.output[0], "Add")
    if not add or [_scalar(c, t) for t in add.input if t != erf.output[0]] != [1.0]:
        return None
    first = c.sole_consumer(add.output[0], "Mul")
    second = first and c.sole_consumer(first.output[0], "Mul")
    if not first or not second:
        return None
    others = [t for t in first.input if t != add.output[0]] + [t for t in second.input if t != first.output[0]]
    if len(others) != 2 or x not in others or _scalar(c, others[1 - others.index(x)]) != 0.5:
        return None
    c.absorbed.update({id(erf), id(add), id(first), id(second)})
    return OpType.GELU, NoAttrs(), [x], second.output[0]


def softplus_pattern(c: Converter, n: Node) -> Result | None:
    """torch.export's softplus with beta and threshold, fused back into one SOFTPLUS layer (beta 1 only).

    Written as Where(Greater(x*beta, threshold), x, Softplus(x*beta) / beta).
    """
    if len(n.consts) != 1 or _scalar(c, n.consts[0]) != 1.0:
        return None

    def users(tensor: str) -> list[onnx.NodeProto]:  # a CastLike reading only the tensor's type is no user
        return [u for u in c.consumers.get(tensor, []) if u.op_type != "CastLike" or u.input[0] == tensor]

    scaled = users(n.out)
    soft = next((u for u in scaled if u.op_type == "Softplus"), None)
    greater = next((u for u in scaled if u.op_type == "Greater"), None)
    if len(scaled) != 2 or soft is None or greater is None or n.out in c.graph_outputs:
        return None
    div = next(iter(users(soft.output[0])), None)
    where = div and next(iter(users(div.output[0])), None)
    if div is None or div.op_type != "Div" or len(users(soft.output[0])) != 1 or where is None or \
            where.op_type != "Where" or len(users(div.output[0])) != 1:
        return None
    if not where or _scalar(c, div.input[1]) != 1.0 or c.consumers.get(greater.output[0], []) != [where] or \
            list(where.input) != [greater.output[0], n.x, div.output[0]]:
        return None
    c.absorbed.update({id(soft), id(greater), id(div), id(where)})
    return OpType.SOFTPLUS, NoAttrs(), [n.x], where.output[0]
