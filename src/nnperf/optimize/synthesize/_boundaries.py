"""What a mixed-precision program pays at the borders of its int8 regions, and a latency model that counts it.

A layer made int8 alone saves its own kernel time, but every tensor that crosses from an fp32 layer to an int8
one (or back) costs a QuantizeLinear (or DequantizeLinear) and, with ORT's NCHWc and NHWC transformers, a layout
change on top. Summing single-layer gains, as Cappuccino's search does, cannot see that. On the glyph
MobileNet v2 (54 layers, ORT NCHWc, 1 thread, this 2-core AMD EPYC) twelve random mixed programs measured 0 to
37% *slower* than fp32 while the summed profiler gains promised 14-48% faster; their excess over fp32 followed
the number of borders (about 9 µs each), not the number of int8 layers.

Some programs pay far more than their borders. ORT moves a QuantizeLinear or DequantizeLinear across a MaxPool at
the edge of an int8 region, so the pool runs on 8-bit data, and its NHWC transformer leaves some of those pools
in NCHW, where ORT's 8-bit MaxPool is a plain loop. On the glyph GoogLeNet (32x32 input) such a pool took
100-340 µs against about 10 µs in fp32, and random mixed programs ran 1.3-2.7 times slower than fp32. Which pools
end up so is ORT's decision, not the graph's shape (a cost per border through a max-pool, read from the graph,
left GoogLeNet's errors as they were), so the model asks ORT:
:func:`~nnperf.optimize.synthesize._onnx.slow_int8_pools` counts them in the program's optimised graph.

- :func:`int8_edges` reads the dataflow between quantizable layers from the ONNX graph: an :class:`Edge` from
  each layer (or the network input) to each layer that reads its output through layers int8 cannot run (ReLU,
  pooling, residual adds, concatenation), and from each to the network output.
- :class:`MixedCost` predicts a program's latency from the fp32 program's, the gains of its int8 layers (scaled by
  ``gain_scale``; synthesis gives the all-int8 program's measured saving shared by MACs), a cost per border
  (``border_s``) and, given a way to count them, a cost per slow pool (``slow_pool_s``):
  ``base_s - gain_scale * sum(gains) + border_s * borders + slow_pool_s * slow_pools``.
- :func:`fit_mixed_cost` fits the numbers to a few probe programs timed in paired rounds with fp32.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nnperf.optimize.synthesize._errors import SynthesisError


@dataclass(frozen=True)
class Edge:
    """A tensor from ``producer`` to ``consumer`` (layer names; None is the network's input or output) of
    ``elements`` values. It is a border when exactly one of its two ends runs int8."""

    producer: str | None
    consumer: str | None
    elements: int

    def is_border(self, chosen: Collection[str]) -> bool:
        return (self.producer in chosen) != (self.consumer in chosen)


def int8_edges(path: Path, layers: Collection[str]) -> tuple[Edge, ...]:
    """The edges between ``layers`` (quantizable nodes of the ONNX model at ``path``, named as
    :func:`~nnperf.optimize.synthesize._onnx.named_model` names them) and the network's input and outputs, in graph
    order. A layer's activation is its first input; other nodes pass every non-constant input through."""
    import onnx

    from nnperf.optimize.synthesize._onnx import named_model

    model = onnx.shape_inference.infer_shapes(named_model(onnx.load(str(path))))
    graph = model.graph
    constants = {tensor.name for tensor in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    sizes = {value.name: int(np.prod([d.dim_value or 1 for d in value.type.tensor_type.shape.dim]))
             for value in [*graph.input, *graph.value_info, *graph.output]}
    wanted = set(layers)

    def sources(tensor: str, seen: set[str]) -> set[tuple[str | None, str]]:
        """The layers (None: the network input) whose output reaches ``tensor``, with the tensor they write."""
        node = producer.get(tensor)
        if node is None:
            return set() if tensor in constants else {(None, tensor)}
        if node.name in wanted:
            return {(node.name, tensor)}
        if node.name in seen:
            return set()
        seen.add(node.name)
        return set().union(*(sources(name, seen) for name in node.input if name and name not in constants))

    edges: dict[tuple[str | None, str | None], int] = {}
    for node in graph.node:
        if node.name in wanted:
            for source, tensor in sorted(sources(node.input[0], set()), key=str):
                edges[(source, node.name)] = sizes.get(tensor, 0)
    for output in graph.output:
        for source, tensor in sorted(sources(output.name, set()), key=str):
            edges[(source, None)] = sizes.get(tensor, 0)
    return tuple(Edge(u, v, n) for (u, v), n in edges.items())


def border_count(edges: Sequence[Edge], chosen: Collection[str]) -> int:
    """How many of ``edges`` cross between int8 and fp32 when ``chosen`` run int8."""
    chosen = set(chosen)
    return sum(edge.is_border(chosen) for edge in edges)


@dataclass(frozen=True)
class MixedCost:
    """A mixed program's latency: ``base_s`` (fp32) less ``gain_scale`` times the ``gains_s`` of its int8
    layers, plus ``border_s`` per border of its int8 regions and ``slow_pool_s`` per max-pool that ORT runs on
    8-bit data in NCHW, as ``slow_pools`` (the int8 layers -> how many) counts them (see the module docstring).
    ``fitted_to`` holds the int8 layers of each program it was fitted to."""

    base_s: float
    gains_s: Mapping[str, float]
    edges: tuple[Edge, ...]
    gain_scale: float = 1.0
    border_s: float = 0.0
    fitted_to: tuple[frozenset[str], ...] = ()
    slow_pool_s: float = 0.0
    slow_pools: Callable[[frozenset[str]], int] | None = field(default=None, compare=False, repr=False)

    @property
    def probes(self) -> int:
        """How many programs it was fitted to."""
        return len(self.fitted_to)

    def latency_s(self, chosen: Collection[str]) -> float:
        chosen = set(chosen)
        gain = sum(self.gains_s[name] for name in chosen)
        pools = self.slow_pools(frozenset(chosen)) if self.slow_pools is not None and self.slow_pool_s else 0
        return (self.base_s - self.gain_scale * gain + self.border_s * border_count(self.edges, chosen)
                + self.slow_pool_s * pools)

    def ratio(self, chosen: Collection[str]) -> float:
        """The predicted latency of the program with ``chosen`` int8 over the fp32 program's."""
        return self.latency_s(chosen) / self.base_s

    def fitted(self, chosen: Collection[str]) -> bool:
        """Whether the model was fitted to the program with ``chosen`` int8 (its prediction is no test of it)."""
        return frozenset(chosen) in self.fitted_to

    def describe(self) -> str:
        pools = "" if self.slow_pools is None else f", {self.slow_pool_s * 1e6:.1f} µs per slow 8-bit max-pool"
        return (f"gains x {self.gain_scale:.2f}, {self.border_s * 1e6:.1f} µs per int8/fp32 border{pools} "
                f"({len(self.edges)} edges; fitted to {self.probes} programs timed with fp32)")


def fit_mixed_cost(base_s: float, gains_s: Mapping[str, float], edges: Sequence[Edge],
                   probes: Sequence[tuple[Collection[str], float]],
                   slow_pools: Callable[[frozenset[str]], int] | None = None) -> MixedCost:
    """The :class:`MixedCost` whose gain scale and border cost (and, with ``slow_pools``, cost per slow pool; all
    >= 0, by non-negative least squares) best explain ``probes``: (layers int8, the program's time over the fp32
    program's in paired rounds)."""
    from scipy.optimize import nnls

    if not probes:
        raise SynthesisError("fitting the mixed-precision cost needs at least one probe program")
    rows, saved = [], []
    for chosen, ratio in probes:
        if not (np.isfinite(ratio) and ratio > 0):
            raise SynthesisError(f"a probe's time ratio to fp32 must be positive, got {ratio!r}")
        pools = [] if slow_pools is None else [-float(slow_pools(frozenset(chosen)))]
        rows.append([sum(gains_s[name] for name in chosen), -float(border_count(edges, chosen)), *pools])
        saved.append(base_s * (1.0 - ratio))
    solution, _ = nnls(np.array(rows, dtype=float), np.array(saved))
    return MixedCost(base_s, dict(gains_s), tuple(edges), float(solution[0]), float(solution[1]),
                     tuple(frozenset(chosen) for chosen, _ in probes),
                     float(solution[2]) if slow_pools is not None else 0.0, slow_pools)
