"""Every op type has exactly one spec, and the per-op tables derived from the specs hold what the specs say."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from nnperf.errors import InvalidNetworkError
from nnperf.ir import (
    ACTIVATIONS,
    ATTRIBUTES_OF,
    DATA_MOVEMENT,
    ELTWISE,
    NO_ATTRIBUTES,
    NOOPS,
    OP_SPECS,
    SHAPE_RULES,
    ConvAttrs,
    Layer,
    NoAttrs,
    OpCategory,
    OpType,
    PoolAttrs,
    spec_of,
)
from nnperf.ir.importers import ONNX_IMPORTERS, TFLITE_IMPORTERS, TORCH_CALL_IMPORTERS, TORCH_MODULE_IMPORTERS
from nnperf.ir.metrics import METRIC_HANDLERS, layer_metrics
from nnperf.measure import FUSED_SUCCESSORS, FUSION_ROLES, FusionRole


def test_every_op_type_has_exactly_one_spec() -> None:
    counts = Counter(spec.op for spec in OP_SPECS)
    assert counts == Counter(set(OpType))
    assert len(OP_SPECS) == len(OpType) == 51
    assert all(spec_of(spec.op) is spec for spec in OP_SPECS)


def test_attribute_tables_are_the_specs() -> None:
    assert dict(ATTRIBUTES_OF) == {s.op: s.attributes for s in OP_SPECS if s.attributes is not NoAttrs}
    assert NO_ATTRIBUTES == {s.op for s in OP_SPECS if s.attributes is NoAttrs}
    assert (len(ATTRIBUTES_OF), len(NO_ATTRIBUTES)) == (27, 24)
    assert ATTRIBUTES_OF[OpType.CONV] is ConvAttrs and ATTRIBUTES_OF[OpType.AVG_POOL] is PoolAttrs
    assert OpType.RESHAPE in NO_ATTRIBUTES and OpType.RESHAPE not in ATTRIBUTES_OF


def test_shape_and_metric_tables_are_the_specs() -> None:
    assert dict(SHAPE_RULES) == {s.op: s.shape_rule for s in OP_SPECS}
    assert dict(METRIC_HANDLERS) == {s.op: s.metrics for s in OP_SPECS}


def test_categories_are_the_specs() -> None:
    for category, table in ((OpCategory.ACTIVATION, ACTIVATIONS), (OpCategory.ELTWISE, ELTWISE),
                            (OpCategory.NOOP, NOOPS), (OpCategory.DATA_MOVEMENT, DATA_MOVEMENT)):
        assert table == {s.op for s in OP_SPECS if s.category is category}
    # the sets as they were written out before the specs
    assert ELTWISE == {OpType.ADD, OpType.MUL, OpType.MAX, OpType.SUB, OpType.DIV, OpType.POW}
    assert NOOPS == {OpType.IDENTITY, OpType.DROPOUT}
    assert DATA_MOVEMENT == {OpType.SLICE, OpType.TRANSPOSE, OpType.CHANNEL_SHUFFLE, OpType.GATHER, OpType.EXPAND}
    assert len(ACTIVATIONS) == 15 and {OpType.RELU, OpType.PRELU, OpType.LOG} <= ACTIVATIONS


def test_fusion_roles_are_the_specs() -> None:
    assert dict(FUSION_ROLES) == {
        s.op: FusionRole.SUCCESSOR if s.fuses_into_producer else FusionRole.HEAD for s in OP_SPECS}
    # batch norm, scale, the activations and the element-wise ops fold into the layer before them
    assert FUSED_SUCCESSORS == ACTIVATIONS | ELTWISE | {OpType.BATCH_NORM, OpType.SCALE}


def test_many_operand_ops() -> None:
    many = {s.op for s in OP_SPECS if s.many_operands}
    assert many == ELTWISE | {OpType.CONCAT, OpType.MATMUL, OpType.GENERIC}


def _only(op: OpType) -> frozenset[OpType]:
    return frozenset({op})


def test_plain_import_rules_are_the_specs() -> None:
    for spec in OP_SPECS:
        for name in spec.onnx:
            assert ONNX_IMPORTERS[name].produces == _only(spec.op), name
        for name in spec.tflite:
            assert TFLITE_IMPORTERS[name].produces == _only(spec.op), name
        for name in spec.torch_modules:
            assert TORCH_MODULE_IMPORTERS[getattr(nn, name)].produces == _only(spec.op), name
    # the ones written out before the specs: 11 ONNX operators, 6 TFLite builtins, 9 module classes
    assert sum(len(s.onnx) for s in OP_SPECS) == 11
    assert sum(len(s.tflite) for s in OP_SPECS) == 6
    assert sum(len(s.torch_modules) for s in OP_SPECS) == 9
    assert ONNX_IMPORTERS["GlobalAveragePool"].produces == _only(OpType.GLOBAL_AVG_POOL)
    assert TORCH_MODULE_IMPORTERS[nn.Dropout2d].produces == _only(OpType.DROPOUT)


def test_torch_calls_name_functions_by_path_and_methods_by_name() -> None:
    assert TORCH_CALL_IMPORTERS[F.relu].produces == _only(OpType.RELU)
    assert TORCH_CALL_IMPORTERS[torch.relu_].produces == _only(OpType.RELU)
    assert TORCH_CALL_IMPORTERS["relu_"].produces == _only(OpType.RELU)
    assert TORCH_CALL_IMPORTERS[torch.exp].produces == _only(OpType.EXP)
    assert TORCH_CALL_IMPORTERS["clone"].produces == _only(OpType.IDENTITY)
    assert sum(len(s.torch_calls) for s in OP_SPECS) == 22


def test_a_layer_is_checked_and_counted_by_its_spec() -> None:
    x = (1, 8, 4, 4)
    with pytest.raises(InvalidNetworkError, match="takes one input, got 2"):
        Layer("r", OpType.RELU, ("a", "b"), (x, x), x)
    with pytest.raises(InvalidNetworkError, match="must keep the input shape"):
        Layer("r", OpType.RELU, ("a",), (x,), (1, 8, 4, 5))
    add = Layer("s", OpType.ADD, ("a", "b", "c"), (x, x, x), x)
    assert layer_metrics(add).ops == 2 * 128  # k-1 per output for k operands
    assert spec_of(OpType.ADD).metrics(add).ops == 256
