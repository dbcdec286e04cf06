"""Weights given to the graph builders instead of the seeded random ones (a file's own, to verify a rebuilt
network against the file).

The builders take every parameter through :func:`weights_of`: the arrays :func:`given_weights` holds for the
layer's name, in :func:`~nnperf.measure.backends._weights.layer_weights`' layout and names (a generic layer's
shape-only operands by their names ``w0``, ``w1``, ...), else the seeded random ones. The weights are held for
the duration of a ``with given_weights(...)`` block (a context variable: a build in another thread or task
does not see them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from nnperf.ir import Layer
from nnperf.measure.backends._weights import layer_weights

LayerWeights = Mapping[str, Mapping[str, np.ndarray]]
"""Layer name -> parameter name -> array (float32 for float parameters)."""

_GIVEN: ContextVar[LayerWeights | None] = ContextVar("nnperf_given_weights", default=None)


@contextmanager
def given_weights(weights: LayerWeights | None) -> Iterator[None]:
    """The builders inside this block take the arrays ``weights`` holds for a layer instead of its random ones."""
    token = _GIVEN.set(weights)
    try:
        yield
    finally:
        _GIVEN.reset(token)


def weights_of(layer: Layer, seed: int = 0) -> dict[str, np.ndarray]:
    """The parameters of ``layer``: the given ones where :func:`given_weights` holds them, else
    :func:`layer_weights` (``seed``)."""
    given = (_GIVEN.get() or {}).get(layer.name)
    if given is None:
        return layer_weights(layer, seed)
    arrays = {name: np.asarray(value) for name, value in given.items()}
    return {name: a if a.flags.writeable else a.copy() for name, a in arrays.items()}  # torch takes writable ones


def given_operands(layer: Layer) -> Mapping[str, np.ndarray]:
    """The given values of a generic layer's shape-only operands (``w0``, ...), by name; empty when none."""
    return (_GIVEN.get() or {}).get(layer.name, {})
