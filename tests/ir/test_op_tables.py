"""Every op type has a handler in each concern's table, or is listed there as not applicable.

Each concern keeps one table of per-op handlers (metrics, the two importers,
the two graph builders, weights, fusion attribution, CNNergy rows, the
attribute classes); an op type added to ``OpType`` without its entries makes
``test_every_op_is_covered`` fail, naming each (op, concern) pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
import torch

from nnperf.accel import NOT_MAPPED, ROW_GEOMETRY
from nnperf.ir import ATTRIBUTES_OF, NO_ATTRIBUTES, OpType, uncovered_ops
from nnperf.ir.importers import (
    ONNX_IMPORTERS,
    ONNX_NOT_IMPORTED,
    TORCH_CALL_IMPORTERS,
    TORCH_MODULE_IMPORTERS,
    TORCH_NOT_IMPORTED,
    imported_ops,
)
from nnperf.ir.metrics import METRIC_HANDLERS
from nnperf.measure._attribution import FUSED_SUCCESSORS, FUSION_ROLES, FusionRole
from nnperf.measure.backends._onnx_graph import ONNX_BUILDERS, ONNX_NOT_BUILT
from nnperf.measure.backends._torch_graph import TORCH_BUILDERS, TORCH_NOT_BUILT
from nnperf.measure.backends._weights import NO_WEIGHTS, WEIGHT_MAKERS

CONCERNS: dict[str, tuple[Iterable[OpType], frozenset[OpType]]] = {
    "attributes (ATTRIBUTES_OF, from the op specs)": (ATTRIBUTES_OF, NO_ATTRIBUTES),
    "metrics (METRIC_HANDLERS, from the op specs)": (METRIC_HANDLERS, frozenset()),
    "torch import (TORCH_MODULE_IMPORTERS, TORCH_CALL_IMPORTERS)":
        (imported_ops(TORCH_MODULE_IMPORTERS, TORCH_CALL_IMPORTERS), TORCH_NOT_IMPORTED),
    "ONNX import (ONNX_IMPORTERS)": (imported_ops(ONNX_IMPORTERS), ONNX_NOT_IMPORTED),
    "torch builder (TORCH_BUILDERS)": (TORCH_BUILDERS, TORCH_NOT_BUILT),
    "ONNX builder (ONNX_BUILDERS)": (ONNX_BUILDERS, ONNX_NOT_BUILT),
    "weights (WEIGHT_MAKERS)": (WEIGHT_MAKERS, NO_WEIGHTS),
    "attribution (FUSION_ROLES)": (FUSION_ROLES, frozenset()),
    "CNNergy rows (ROW_GEOMETRY)": (ROW_GEOMETRY, NOT_MAPPED),
}
"""concern -> (the ops its table handles, the ops it lists as not applicable)"""


def missing_pairs(concerns: Mapping[str, tuple[Iterable[OpType], frozenset[OpType]]]) -> list[tuple[str, str]]:
    """Every (op, concern) pair where the op has neither a handler nor a not-applicable entry."""
    return [(op.value, concern) for concern, (handled, not_applicable) in concerns.items()
            for op in uncovered_ops(handled, not_applicable)]


def test_every_op_is_covered() -> None:
    missing = missing_pairs(CONCERNS)
    assert not missing, "ops without a handler or a not-applicable entry: " + "; ".join(
        f"{op} in {concern}" for op, concern in missing)


@pytest.mark.parametrize("concern", sorted(CONCERNS))
def test_no_op_is_both_handled_and_not_applicable(concern: str) -> None:
    handled, not_applicable = CONCERNS[concern]
    assert not set(handled) & not_applicable


def _without(table: Mapping[Any, Any], key: Any) -> dict[Any, Any]:
    copy = dict(table)
    del copy[key]
    return copy


@pytest.mark.parametrize(("concern", "handled", "not_applicable", "op"), [
    ("metrics", _without(METRIC_HANDLERS, OpType.LRN), frozenset(), OpType.LRN),
    ("torch builder", _without(TORCH_BUILDERS, OpType.PAD), TORCH_NOT_BUILT, OpType.PAD),
    ("ONNX builder", _without(ONNX_BUILDERS, OpType.SILU), ONNX_NOT_BUILT, OpType.SILU),
    ("weights", _without(WEIGHT_MAKERS, OpType.SCALE), NO_WEIGHTS, OpType.SCALE),
    ("attribution", _without(FUSION_ROLES, OpType.CONCAT), frozenset(), OpType.CONCAT),
    ("CNNergy rows", _without(ROW_GEOMETRY, OpType.LINEAR), NOT_MAPPED, OpType.LINEAR),
    ("attributes", _without(ATTRIBUTES_OF, OpType.UPSAMPLE), NO_ATTRIBUTES, OpType.UPSAMPLE),
    ("ONNX import", imported_ops(_without(ONNX_IMPORTERS, "LRN")), ONNX_NOT_IMPORTED, OpType.LRN),
    ("torch import", imported_ops(_without(TORCH_MODULE_IMPORTERS, torch.nn.LocalResponseNorm),
                                  _without(TORCH_CALL_IMPORTERS, torch.nn.functional.local_response_norm)),
     TORCH_NOT_IMPORTED, OpType.LRN),
])
def test_a_deleted_entry_is_named(concern: str, handled: Iterable[OpType], not_applicable: frozenset[OpType],
                                  op: OpType) -> None:
    """The check can fail: a table with one entry removed is reported with exactly that op."""
    assert missing_pairs({concern: (handled, not_applicable)}) == [(op.value, concern)]


def test_an_op_removed_from_a_not_applicable_set_is_named() -> None:
    assert missing_pairs({"weights": (WEIGHT_MAKERS, NO_WEIGHTS - {OpType.RELU})}) == [("relu", "weights")]


def test_fused_successors_are_the_successor_roles() -> None:
    # BN, scale, activations and element-wise layers: the set predict's composition imports.
    expected = {OpType.BATCH_NORM, OpType.SCALE, OpType.RELU, OpType.RELU6, OpType.LEAKY_RELU, OpType.SIGMOID,
                OpType.TANH, OpType.HARDSWISH, OpType.SILU, OpType.ADD, OpType.MUL, OpType.MAX}
    # activations and data movement
    expected |= {OpType.HARD_SIGMOID, OpType.CLIP, OpType.PRELU, OpType.GELU, OpType.SOFTPLUS, OpType.MISH,
                 OpType.EXP, OpType.LOG}
    expected |= {OpType.SUB, OpType.DIV, OpType.POW, OpType.GELU}  # resizing, normalisation and attention
    assert FUSED_SUCCESSORS == expected
    assert {op for op, role in FUSION_ROLES.items() if role is FusionRole.HEAD} == set(OpType) - expected


def test_ops_with_parameters_have_weights() -> None:
    # Conv, linear, batch norm and scale count n(W) in the metrics; exactly those get weights.
    # PReLU's slopes, and the weights of transposed convolutions, norms and constants
    assert set(WEIGHT_MAKERS) == {OpType.CONV, OpType.LINEAR, OpType.BATCH_NORM, OpType.SCALE,
                                  OpType.PRELU} | NEWER_WEIGHTED_OPS
    assert set(ROW_GEOMETRY) == {OpType.CONV, OpType.LINEAR, OpType.CONV_TRANSPOSE}


# resizing, normalisation and attention
NEWER_WEIGHTED_OPS = {OpType.CONV_TRANSPOSE, OpType.LAYER_NORM, OpType.GROUP_NORM, OpType.CONSTANT}


def test_the_newer_ops_with_parameters_have_weights() -> None:
    assert NEWER_WEIGHTED_OPS <= set(WEIGHT_MAKERS)
    assert OpType.CONV_TRANSPOSE in ROW_GEOMETRY
