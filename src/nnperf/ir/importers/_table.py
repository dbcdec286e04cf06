"""The entries of the importers' per-operator tables.

Each importer keeps one table from what the exporter or framework calls an
operator (an ONNX ``op_type``, a ``torch.nn`` class, a function) to an
:class:`ImportRule`: the handler that maps it, and the IR op types it can
produce, so the tests can check that every IR op can be imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nnperf.ir._ops import OpType

H = TypeVar("H")


@dataclass(frozen=True)
class ImportRule(Generic[H]):
    """One operator's handler, with the IR op types it returns when it maps the operator."""

    produces: frozenset[OpType]
    handler: H
    refusal: str = ""
    """How an unsupported node of this operator is named in the error ('' names the operator alone)."""


def rule(produces: Iterable[OpType], handler: H, refusal: str = "") -> ImportRule[H]:
    """An :class:`ImportRule`, ``produces`` given as any iterable of op types."""
    return ImportRule(frozenset(produces), handler, refusal)


def imported_ops(*tables: Mapping[Any, ImportRule[Any]]) -> frozenset[OpType]:
    """Every IR op type that some rule of ``tables`` can produce."""
    return frozenset(op for table in tables for entry in table.values() for op in entry.produces)
