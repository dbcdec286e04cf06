"""A zoo network as IR, without allocating its weights."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from nnperf.ir import Network

if TYPE_CHECKING:
    from nnperf.zoo._registry import ZooEntry


def zoo_network(name: str) -> Network:
    """The IR of a zoo network at its canonical input size.

    The module is built on PyTorch's meta device: shapes propagate without
    allocating or initialising weights, so even VGG-19 imports in a blink. Each
    entry is imported once per process (the IR is immutable).
    """
    from nnperf.zoo._registry import get

    return _imported(get(name))


@functools.cache
def _imported(entry: ZooEntry) -> Network:
    import torch

    from nnperf.ir.importers import from_torch

    with torch.device("meta"):
        module = entry.factory()
    return from_torch(module, torch.empty(entry.input_shape, device="meta"), name=entry.name)
