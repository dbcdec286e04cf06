"""Graph rewrites on the IR."""

from __future__ import annotations

import dataclasses

from nnperf.ir._network import Network
from nnperf.ir._ops import NOOPS


def remove_noops(network: Network) -> Network:
    """The network without identity and dropout layers, their readers rewired.

    Both are no-ops at inference and every deployment framework drops them, so
    the importers call this by default to make a PyTorch module and its ONNX
    export import to the same layers.
    """
    alias: dict[str, str] = {}
    kept = []
    for layer in network.layers:
        inputs = tuple(alias.get(name, name) for name in layer.inputs)
        if layer.op in NOOPS:
            alias[layer.name] = inputs[0]
            continue
        kept.append(dataclasses.replace(layer, inputs=inputs) if inputs != layer.inputs else layer)
    if not alias:
        return network
    outputs = tuple(alias.get(name, name) for name in network.outputs)
    return Network(name=network.name, inputs=network.inputs, layers=tuple(kept), outputs=outputs)
