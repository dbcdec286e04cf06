"""Quantised ONNX models: the float operator each quantised one stands for.

ONNX Runtime's quantiser writes two formats. In QDQ, float operators sit between DequantizeLinear and
QuantizeLinear nodes; the importer reads those pairs as the activations they convert, and a Conv, Gemm or MatMul
whose activation comes through a DequantizeLinear is an int8 layer. In QOperator, the operators are quantised
themselves (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, and ONNX Runtime's QLinearAdd, QGemm,
QLinearGlobalAveragePool, ...): :func:`float_form` rewrites each as the float operator it computes, reading the
same activation and weight (scales and zero points dropped), which the importer then maps as usual; its
convolutions and matrix products are int8 layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import onnx

QUANTIZED_FORMS: Mapping[str, tuple[str, tuple[int, ...]]] = MappingProxyType({
    "QLinearConv": ("Conv", (0, 3, 8)),
    "ConvInteger": ("Conv", (0, 1)),
    "QLinearMatMul": ("MatMul", (0, 3)),
    "MatMulInteger": ("MatMul", (0, 1)),
    "QGemm": ("Gemm", (0, 3, 6)),
    "QLinearAdd": ("Add", (0, 3)),
    "QLinearMul": ("Mul", (0, 3)),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", (0,)),
    "QLinearAveragePool": ("AveragePool", (0,)),
    "QLinearSigmoid": ("Sigmoid", (0,)),
    "QLinearLeakyRelu": ("LeakyRelu", (0,)),
    "QLinearConcat": ("Concat", ()),
})
"""Quantised operator -> (the float operator it computes, the positions of its inputs that operator reads; none
listed: QLinearConcat's, every third input from the third, after its output's scale and zero point)."""

def float_form(node: onnx.NodeProto) -> onnx.NodeProto:
    """The float node ``node`` (a key of :data:`QUANTIZED_FORMS`) computes: same name, output and attributes
    (but for the quantised ones' own), the activation and weight inputs only."""
    op_type, positions = QUANTIZED_FORMS[node.op_type]
    form = onnx.NodeProto()
    form.CopyFrom(node)
    form.op_type, form.domain = op_type, ""
    del form.input[:]
    form.input.extend(node.input[i] for i in (positions or range(2, len(node.input), 3)) if i < len(node.input))
    keep = [a for a in node.attribute if a.name != "channels_last"]  # ONNX Runtime's layout flag: not Conv's
    del form.attribute[:]
    form.attribute.extend(keep)
    return form
