"""Map a framework profiler's per-node times back to IR layers, following fusions.

Frameworks fuse layers (ONNX Runtime: Conv+BN+Add+Relu in its NCHWc layout;
OpenCV: Conv+BN+ReLU), so their profilers report fewer nodes than the IR has
layers, and a fused node is named after one of its members: ONNX Runtime
often after the last (the tensor the group outputs), OpenCV after the first.
A fused group is a compute layer (convolution, fully connected) followed by
a chain of element-wise successors (BN, scale, activations, eltwise; each
op's part is in ``FUSION_ROLES``, from its spec's ``fuses_into_producer``),
each the only consumer of the one before. So a node claims the layer it is named
after and, when that is an element-wise layer, walks upstream through
producers no node is named after and that feed only the group; it claims
them only if the walk ends at a compute layer no node is named after (so a
ReLU6 that runs alone after a named convolution claims nothing). Layers still
unclaimed join the group of the producer whose only
consumer they are (or their latest producer's), and layers with no claimed
producer join their first consumer's group. Every member carries the whole
group's time; reports say the group's size so nothing is counted twice.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from nnperf.ir import OP_SPECS, Layer, Network, OpType
from nnperf.measure._stats import fixed_timing
from nnperf.measure._types import LayerMeasurement, Method


class FusionRole(str, enum.Enum):
    """The part a layer of an op type plays in a framework's fused group."""

    HEAD = "head"
    """starts a group: a compute layer (convolution, fully connected), or any layer not folded backwards"""
    SUCCESSOR = "successor"
    """folded into the layer before it: batch norm, scale, activations, element-wise"""


FUSION_ROLES: Mapping[OpType, FusionRole] = MappingProxyType({
    spec.op: FusionRole.SUCCESSOR if spec.fuses_into_producer else FusionRole.HEAD for spec in OP_SPECS})
"""Each op's role in a fused group, from its spec (``fuses_into_producer``)."""

FUSED_SUCCESSORS = frozenset(op for op, role in FUSION_ROLES.items() if role is FusionRole.SUCCESSOR)
"""Layer types that frameworks fold into the compute layer before them."""


@dataclass(frozen=True)
class Attribution:
    """Which IR layers each framework node's time belongs to.

    ``owner`` maps every IR layer to the layer that names its group;
    ``node_group`` maps each framework node to that group (absent for nodes
    that belong to no layer, such as layout reorders).
    """

    owner: Mapping[str, str]
    node_group: Mapping[str, str]

    def members(self, group: str) -> list[str]:
        return [layer for layer, g in self.owner.items() if g == group]

    @property
    def group_sizes(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for group in self.owner.values():
            sizes[group] = sizes.get(group, 0) + 1
        return sizes


def attribute(network: Network, node_layer: Mapping[str, str | None]) -> Attribution:
    """Groups for ``network`` given which IR layer each executed framework node is named after.

    ``node_layer`` maps framework node -> IR layer name, or None for nodes that
    belong to no layer. A group is named after its first member in topological order.
    """
    layers = {layer.name: layer for layer in network.layers}
    named = {layer for layer in node_layer.values() if layer is not None and layer in layers}
    consumers = {name: network.consumers(name) for name in layers}
    claim: dict[str, str] = {name: name for name in named}  # layer -> the named layer of its group
    for anchor in sorted(named, key=_order(network)):
        chain = _unnamed_chain(anchor, layers, consumers, claim) if layers[anchor].op in FUSED_SUCCESSORS else []
        for member in chain:
            claim[member] = anchor
    pending: list[str] = []
    for layer in network.layers:
        if layer.name in claim:
            continue
        producers = [p for p in layer.inputs if p in claim]
        sole = [p for p in producers if len(consumers[p]) == 1]
        chosen = sole[-1] if sole else (max(producers, key=_order(network)) if producers else None)
        if chosen is None:
            pending.append(layer.name)
        else:
            claim[layer.name] = claim[chosen]
    for name in reversed(pending):  # no producer ran: fused into the first consumer that did
        claim[name] = next((claim[c] for c in consumers[name] if c in claim), name)
    head: dict[str, str] = {}
    for layer in network.layers:  # topological order: the first member names the group
        head.setdefault(claim[layer.name], layer.name)
    owner = {name: head[claim[name]] for name in layers}
    node_group = {node: owner[layer] for node, layer in node_layer.items() if layer is not None and layer in layers}
    return Attribution(owner, node_group)


def _unnamed_chain(anchor: str, layers: Mapping[str, Layer], consumers: Mapping[str, tuple[str, ...]],
                   claim: Mapping[str, str]) -> list[str]:
    """The unnamed layers a tail-named node fused: up through element-wise layers to an unnamed compute layer.

    Empty unless the walk ends at a compute layer no node is named after: when
    the compute layer has its own node (OpenCV keeps the convolution's name and
    runs a ReLU6 after it alone), the element-wise layers between belong to it.
    """
    chain: list[str] = []
    current = anchor
    while True:
        producers = [p for p in layers[current].inputs
                     if p in layers and p not in claim and p not in chain and len(consumers[p]) == 1]
        if not producers:
            return []
        producer = producers[-1]
        chain.append(producer)
        if layers[producer].op not in FUSED_SUCCESSORS:
            return chain
        current = producer


def _order(network: Network):  # type: ignore[no-untyped-def]
    index = {layer.name: i for i, layer in enumerate(network.layers)}
    return lambda name: index.get(name, -1)


def match_node(node: str, layer_of: Mapping[str, str], suffixes: Sequence[str] = ("_nchwc",),
               prefixes: Sequence[str] = ("onnx_node!",)) -> str | None:
    """The IR layer a framework node name refers to, or None.

    Frameworks decorate the names they keep: ONNX Runtime appends '_nchwc' to
    nodes it moved to its blocked layout (naming them after their output
    tensor), OpenCV prefixes 'onnx_node!'. ``layer_of`` maps ONNX node (and
    output tensor) names of the model the framework ran to IR layers.
    """
    candidates = [node]
    for prefix in prefixes:
        if node.startswith(prefix):
            candidates.append(node[len(prefix):])
    for cand in list(candidates):
        for suffix in suffixes:
            if cand.endswith(suffix):
                candidates.append(cand[: -len(suffix)])
    for cand in candidates:
        if cand in layer_of:
            return layer_of[cand]
    return None


def grouped_layers(network: Network, groups: Attribution, node_times_s: Mapping[str, Sequence[float]]
                   ) -> tuple[tuple[LayerMeasurement, ...], dict[str, float]]:
    """A profiler's per-run node times (seconds, one per profiled run) summed by the group each node belongs to,
    every member of a group carrying its group's times; and the nodes of no group by name, each its median per run
    (what ``ProfileResult.unattributed_s`` holds)."""
    group_times: dict[str, np.ndarray] = {}
    unattributed: dict[str, float] = {}
    for node, times in node_times_s.items():
        group = groups.node_group.get(node)
        if group is None:
            unattributed[node] = float(np.median(times))
        else:
            group_times[group] = group_times.get(group, 0.0) + np.asarray(times, dtype=float)
    sizes = groups.group_sizes
    layers = tuple(LayerMeasurement(layer.name, layer.op.value, Method.PROFILER, fixed_timing(list(group_times[group])),
                                    group, sizes[group])
                   for layer in network.layers if (group := groups.owner[layer.name]) in group_times)
    return layers, unattributed
