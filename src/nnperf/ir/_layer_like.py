"""What the per-op counts and checks read of a layer and of a network, as protocols.

The metrics, the size bounds and the shape rules are pure functions of a layer's op, attributes and shapes.
They take any object with these fields (:class:`~nnperf.ir.Layer` and :class:`~nnperf.ir.Network` are the ones
nnperf builds), so that the classes can run them while they are built without the functions knowing the classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from nnperf.ir._ops import Attributes, OpType
from nnperf.ir._shapes import Shape


class LayerLike(Protocol):
    """A layer as the counts and checks read it: its name, op, attributes and shapes."""

    @property
    def name(self) -> str: ...

    @property
    def op(self) -> OpType: ...

    @property
    def attrs(self) -> Attributes: ...

    @property
    def input_shapes(self) -> tuple[Shape, ...]: ...

    @property
    def output_shape(self) -> Shape: ...

    @property
    def input_shape(self) -> Shape:
        """Shape of the first operand."""
        ...


class NetworkLike(Protocol):
    """A network as the counts read it: its name and its layers in topological order."""

    @property
    def name(self) -> str: ...

    @property
    def layers(self) -> Sequence[LayerLike]: ...
