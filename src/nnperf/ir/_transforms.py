"""Graph rewrites on the IR."""

from __future__ import annotations

import dataclasses

from nnperf.ir._network import Layer, Network
from nnperf.ir._op_specs import NOOPS
from nnperf.ir._ops import ChannelShuffleAttrs, OpType, TransposeAttrs


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
    return Network(name=network.name, inputs=network.inputs, layers=tuple(kept), outputs=outputs,
                   int8_layers=network.int8_layers & {layer.name for layer in kept})


# activations and data movement
def fuse_channel_shuffle(network: Network) -> Network:
    """Each Reshape-Transpose-Reshape channel shuffle as one CHANNEL_SHUFFLE layer.

    The pattern is how ShuffleNet's shuffle (Zhang et al. 2018, section 3.1) is
    written in PyTorch and exported to ONNX: NxCxHxW reshaped to
    Nx g x C/g xHxW, axes 1 and 2 swapped, reshaped back to NxCxHxW, each layer
    the only reader of the one before. The importers call this after
    :func:`remove_noops` so both give the same layer; the fused layer keeps the
    name of the last reshape.
    """
    layers = list(network.layers)
    index = {layer.name: i for i, layer in enumerate(layers)}
    dropped: set[str] = set()
    for i, last in enumerate(layers):
        if last.op is not OpType.RESHAPE or len(last.inputs) != 1 or last.inputs[0] not in index:
            continue
        swap = layers[index[last.inputs[0]]]
        if swap.op is not OpType.TRANSPOSE or swap.inputs[0] not in index:
            continue
        first = layers[index[swap.inputs[0]]]
        groups = _shuffle_groups(first, swap, last)
        if groups is None or network.consumers(first.name) != (swap.name,) or \
                network.consumers(swap.name) != (last.name,) or {first.name, swap.name} & set(network.outputs):
            continue
        layers[i] = Layer(last.name, OpType.CHANNEL_SHUFFLE, first.inputs, first.input_shapes, last.output_shape,
                          ChannelShuffleAttrs(groups=groups))
        dropped.update((first.name, swap.name))
    if not dropped:
        return network
    kept = tuple(layer for layer in layers if layer.name not in dropped)
    return Network(name=network.name, inputs=network.inputs, layers=kept, outputs=network.outputs,
                   int8_layers=network.int8_layers & {layer.name for layer in kept})


def _shuffle_groups(first: Layer, swap: Layer, last: Layer) -> int | None:
    """g when reshape ``first``, transpose ``swap`` and reshape ``last`` are a channel shuffle into g groups."""
    if first.op is not OpType.RESHAPE or not isinstance(swap.attrs, TransposeAttrs):
        return None
    x, grouped = first.input_shape, first.output_shape
    if len(x) < 3 or last.output_shape != x or len(grouped) != len(x) + 1:
        return None
    if grouped[0] != x[0] or grouped[1] * grouped[2] != x[1] or grouped[3:] != x[2:]:
        return None
    perm = (0, 2, 1) + tuple(range(3, len(grouped)))
    return grouped[1] if swap.attrs.perm == perm else None
