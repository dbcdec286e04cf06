"""What a mixed-precision program pays at the borders of its int8 regions, and a latency model that counts it.

A layer made int8 alone saves its own kernel time, but every tensor that crosses from an fp32 layer to an int8
one (or back) costs a QuantizeLinear (or DequantizeLinear) and, with ORT's NCHWc and NHWC transformers, a layout
change on top. Summing single-layer gains, as Cappuccino's search does, cannot see that. On the glyph
MobileNet v2 (54 layers, ORT NCHWc, 1 thread, this 2-core AMD EPYC) twelve random mixed programs measured 0 to
37% *slower* than fp32 while the summed profiler gains promised 14-48% faster; their excess over fp32 followed
the number of borders (about 9 µs each), not the number of int8 layers.

A border that passes through a max-pool costs far more. ORT moves a QuantizeLinear or DequantizeLinear across a
MaxPool (its QDQ propagation), so the pool runs on uint8; outside an int8 region its NHWC transformer leaves that
pool in NCHW, where ORT's uint8 MaxPool is a plain loop. On the glyph GoogLeNet (32x32 input) such pools took
100-340 µs each against about 10 µs for the fp32 NCHWc pool, and random mixed programs ran 1.3-2.7 times
slower than fp32 (ORT's profiler, 1 thread).

- :func:`int8_edges` reads the dataflow between quantizable layers from the ONNX graph: an :class:`Edge` from
  each layer (or the network input) to each layer that reads its output through layers int8 cannot run (ReLU,
  pooling, residual adds, concatenation), and from each to the network output; an edge knows whether its path
  crosses a max-pool.
- :class:`MixedCost` predicts a program's latency from the fp32 program's, the gains of its int8 layers (scaled by
  ``gain_scale``; synthesis gives the all-int8 program's measured saving shared by MACs), a cost per border
  (``border_s``) and one per border through a max-pool (``pool_border_s``):
  ``base_s - gain_scale * sum(gains) + border_s * borders + pool_border_s * pool_borders``.
- :func:`fit_mixed_cost` fits the three numbers to a few probe programs timed in paired rounds with fp32.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nnperf.optimize.synthesize._errors import SynthesisError

POOLING_OPS = frozenset({"MaxPool"})
"""Layers a border is dearer through: ORT runs them on uint8 in NCHW once a QuantizeLinear or DequantizeLinear is
moved across them (see the module docstring)."""


@dataclass(frozen=True)
class Edge:
    """A tensor from ``producer`` to ``consumer`` (layer names; None is the network's input or output) of
    ``elements`` values, ``pooled`` when its path crosses a max-pool. It is a border when exactly one of its two
    ends runs int8."""

    producer: str | None
    consumer: str | None
    elements: int
    pooled: bool = False

    def is_border(self, chosen: Collection[str]) -> bool:
        return (self.producer in chosen) != (self.consumer in chosen)


def int8_edges(path: Path, layers: Collection[str]) -> tuple[Edge, ...]:
    """The edges between ``layers`` (quantizable nodes of the ONNX model at ``path``, named as
    :func:`~nnperf.optimize.synthesize._onnx.named_model` names them) and the network's input and outputs, in graph
    order. A layer's activation is its first input; other nodes pass every non-constant input through. An edge is
    ``pooled`` when some path of it crosses one of :data:`POOLING_OPS`."""
    import onnx

    from nnperf.optimize.synthesize._onnx import named_model

    model = onnx.shape_inference.infer_shapes(named_model(onnx.load(str(path))))
    graph = model.graph
    constants = {tensor.name for tensor in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    sizes = {value.name: int(np.prod([d.dim_value or 1 for d in value.type.tensor_type.shape.dim]))
             for value in [*graph.input, *graph.value_info, *graph.output]}
    wanted = set(layers)

    def sources(tensor: str, pooled: bool, seen: set[str]) -> set[tuple[str | None, str, bool]]:
        """The layers (None: the network input) whose output reaches ``tensor``, with the tensor they write and
        whether the way crosses a max-pool."""
        node = producer.get(tensor)
        if node is None:
            return set() if tensor in constants else {(None, tensor, pooled)}
        if node.name in wanted:
            return {(node.name, tensor, pooled)}
        if node.name in seen:
            return set()
        seen.add(node.name)
        pooled = pooled or node.op_type in POOLING_OPS
        return set().union(*(sources(name, pooled, seen) for name in node.input if name and name not in constants))

    edges: dict[tuple[str | None, str | None], tuple[int, bool]] = {}

    def add(source: str | None, consumer: str | None, tensor: str, pooled: bool) -> None:
        pooled_before = edges.get((source, consumer), (0, False))[1]
        edges[(source, consumer)] = (sizes.get(tensor, 0), pooled or pooled_before)

    for node in graph.node:
        if node.name in wanted:
            for source, tensor, pooled in sorted(sources(node.input[0], False, set()), key=str):
                add(source, node.name, tensor, pooled)
    for output in graph.output:
        for source, tensor, pooled in sorted(sources(output.name, False, set()), key=str):
            add(source, None, tensor, pooled)
    return tuple(Edge(u, v, n, pooled) for (u, v), (n, pooled) in edges.items())


def border_count(edges: Sequence[Edge], chosen: Collection[str], pooled: bool | None = None) -> int:
    """How many of ``edges`` cross between int8 and fp32 when ``chosen`` run int8: all of them (``pooled`` None),
    or only those through a max-pool (True) or not (False)."""
    chosen = set(chosen)
    return sum(edge.is_border(chosen) for edge in edges if pooled is None or edge.pooled == pooled)


@dataclass(frozen=True)
class MixedCost:
    """A mixed program's latency: ``base_s`` (fp32) less ``gain_scale`` times the ``gains_s`` of its int8
    layers, plus ``border_s`` per border of its int8 regions and ``pool_border_s`` per border through a max-pool
    (see the module docstring). ``fitted_to`` holds the int8 layers of each program it was fitted to."""

    base_s: float
    gains_s: Mapping[str, float]
    edges: tuple[Edge, ...]
    gain_scale: float = 1.0
    border_s: float = 0.0
    pool_border_s: float = 0.0
    fitted_to: tuple[frozenset[str], ...] = ()

    @property
    def probes(self) -> int:
        """How many programs it was fitted to."""
        return len(self.fitted_to)

    def latency_s(self, chosen: Collection[str]) -> float:
        chosen = set(chosen)
        gain = sum(self.gains_s[name] for name in chosen)
        return self.base_s - self.gain_scale * gain + sum(self.edge_cost_s(edge) for edge in self.edges
                                                          if edge.is_border(chosen))

    def edge_cost_s(self, edge: Edge) -> float:
        """What ``edge`` costs when it is a border."""
        return self.pool_border_s if edge.pooled else self.border_s

    def ratio(self, chosen: Collection[str]) -> float:
        """The predicted latency of the program with ``chosen`` int8 over the fp32 program's."""
        return self.latency_s(chosen) / self.base_s

    def fitted(self, chosen: Collection[str]) -> bool:
        """Whether the model was fitted to the program with ``chosen`` int8 (its prediction is no test of it)."""
        return frozenset(chosen) in self.fitted_to

    def describe(self) -> str:
        pooled = sum(edge.pooled for edge in self.edges)
        through = f", {self.pool_border_s * 1e6:.1f} µs per border through a max-pool" if pooled else ""
        return (f"gains x {self.gain_scale:.2f}, {self.border_s * 1e6:.1f} µs per int8/fp32 border{through} "
                f"({len(self.edges)} edges, {pooled} through a max-pool; fitted to {self.probes} programs timed "
                "with fp32)")


def fit_mixed_cost(base_s: float, gains_s: Mapping[str, float], edges: Sequence[Edge],
                   probes: Sequence[tuple[Collection[str], float]]) -> MixedCost:
    """The :class:`MixedCost` whose gain scale and border costs (all >= 0, by non-negative least squares) best
    explain ``probes``: (layers int8, the program's time over the fp32 program's in paired rounds). A border kind
    that no probe has costs 0."""
    from scipy.optimize import nnls

    if not probes:
        raise SynthesisError("fitting the mixed-precision cost needs at least one probe program")
    rows, saved = [], []
    for chosen, ratio in probes:
        if not (np.isfinite(ratio) and ratio > 0):
            raise SynthesisError(f"a probe's time ratio to fp32 must be positive, got {ratio!r}")
        rows.append([sum(gains_s[name] for name in chosen), -float(border_count(edges, chosen, pooled=False)),
                     -float(border_count(edges, chosen, pooled=True))])
        saved.append(base_s * (1.0 - ratio))
    (scale, border, pool_border), _ = nnls(np.array(rows, dtype=float), np.array(saved))
    return MixedCost(base_s, dict(gains_s), tuple(edges), float(scale), float(border), float(pool_border),
                     tuple(frozenset(chosen) for chosen, _ in probes))
