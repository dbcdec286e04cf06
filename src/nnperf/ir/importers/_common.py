"""Pieces shared by the importers: naming, shape-based op choices, error collection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnperf.errors import UnsupportedOperatorError
from nnperf.ir._ops import Attributes, AxisAttrs, NoAttrs, OpType, PoolAttrs
from nnperf.ir._shapes import Shape, numel


def one_value(value: Any) -> float | None:
    """The number a constant of one element holds, whatever its rank (a scalar, ``[x]`` or ``[[x]]``: exporters
    write all three); None for an empty or a larger constant."""
    array = np.asarray(value)
    return float(array.reshape(-1)[0]) if array.size == 1 else None


def reshape_op(in_shape: Shape, out_shape: Shape) -> tuple[OpType, Attributes]:
    """FLATTEN when the reshape keeps the batch and folds the rest into one axis, else RESHAPE.

    ``torch.flatten(x, 1)``, ``x.view(n, -1)``, ONNX Flatten, and the Reshape or
    Squeeze that exporters write for them all become the same IR layer.
    """
    if len(in_shape) > 2 and out_shape == (in_shape[0], numel(in_shape[1:])):
        return OpType.FLATTEN, AxisAttrs(axis=1)
    return OpType.RESHAPE, NoAttrs()


def adaptive_pool(in_hw: tuple[int, int], out_hw: tuple[int, int], is_max: bool) -> tuple[OpType, Attributes] | None:
    """An adaptive pool as a global or a fixed-window pool; None when windows would overlap unevenly."""
    if out_hw == (1, 1):
        return (OpType.GLOBAL_MAX_POOL if is_max else OpType.GLOBAL_AVG_POOL), NoAttrs()
    if in_hw[0] % out_hw[0] or in_hw[1] % out_hw[1]:
        return None
    stride = (in_hw[0] // out_hw[0], in_hw[1] // out_hw[1])
    return (OpType.MAX_POOL if is_max else OpType.AVG_POOL), PoolAttrs(kernel=stride, stride=stride)


def scale_kind(const_shape: Shape | None, x_shape: Shape) -> str | None:
    """'scalar' or 'channel' when multiplying ``x`` by a constant of this shape is a scale layer, else None.

    Per-channel means one value per channel broadcast over everything after it:
    (C,), (C, 1, 1) or (1, C, 1, 1) for NCHW input, (C,) or (1, C) for NxC input.
    """
    if const_shape is None:
        return None
    if numel(const_shape) == 1:
        return "scalar"
    if len(x_shape) < 2:
        return None
    trailing = (x_shape[1],) + (1,) * (len(x_shape) - 2)
    dims = tuple(const_shape)
    while len(dims) > len(trailing) and dims[0] == 1:
        dims = dims[1:]
    return "channel" if dims == trailing else None


@dataclass
class Unsupported:
    """Collects every unsupported operator so one error can list them all."""

    source: str
    found: dict[str, list[str]] = field(default_factory=dict)

    def add(self, operator: str, node: str) -> None:
        self.found.setdefault(operator, []).append(node)

    def nodes(self) -> set[str]:
        """Every node named so far."""
        return {node for nodes in self.found.values() for node in nodes}

    def raise_if_any(self) -> None:
        if self.found:
            raise UnsupportedOperatorError(self.source, self.found)


class NameTable:
    """Gives each layer a unique, readable name."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self._taken = set(taken or ())

    def unique(self, wanted: str) -> str:
        name = wanted.replace("/", ".").strip(".") or "layer"
        candidate, n = name, 1
        while candidate in self._taken:
            candidate = f"{name}_{n}"
            n += 1
        self._taken.add(candidate)
        return candidate

    def release(self, name: str) -> None:
        """Gives back a name :meth:`unique` returned for a layer that was not made."""
        self._taken.discard(name)
