"""A zoo network as IR, without allocating its weights."""

from __future__ import annotations

from nnperf.ir import Network


def zoo_network(name: str) -> Network:
    """The IR of a zoo network at its canonical input size.

    The module is built on PyTorch's meta device: shapes propagate without
    allocating or initialising weights, so even VGG-19 imports in a blink.
    """
    import torch

    from nnperf.ir.importers import from_torch
    from nnperf.zoo._registry import get

    entry = get(name)
    with torch.device("meta"):
        module = entry.factory()
    return from_torch(module, torch.empty(entry.input_shape, device="meta"), name=entry.name)
