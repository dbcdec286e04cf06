"""Many networks predicted at once: the oracle an architecture search calls thousands of times.

Networks drawn from one search space repeat the same layers (the same convolution on the same shapes, block
after block and network after network), so :meth:`SystemModel.predict_many` (through :func:`batch_predict`) works per distinct layer, not per layer:

- a layer's identity for prediction is its :func:`layer_signature` (operator, attributes, input and output
  shapes; never its name);
- each distinct signature's metrics are computed once, and each per-layer model predicts all of its distinct
  signatures in one call;
- each network is then put together from its layers' predictions by the chosen network predictor, through
  :meth:`~nnperf.prediction.NetworkPredictor.predict_many` (which a predictor may batch, as the kernel-aware one
  does).

The numbers are those of :meth:`~nnperf.prediction.SystemModel.predict` one network at a time (the same models
on the same features; floating-point sums may differ in the last bits).
"""

from __future__ import annotations

import gc
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np

from nnperf.ir import Layer, Network
from nnperf.ir.metrics import LayerMetrics, NetworkMetrics, layer_metrics
from nnperf.prediction._base import NetworkInput, NetworkPredictor
from nnperf.prediction._features import layer_signature, metric_features, model_key
from nnperf.prediction._ridge import RidgeModel


def distinct_layers(networks: Sequence[Network]) -> tuple[list[Layer], list[list[int]]]:
    """One example layer per distinct :func:`layer_signature` in ``networks``, and for each network the index of
    each of its layers among them."""
    distinct: dict[Hashable, int] = {}
    signatures: list[list[int]] = []
    examples: list[Layer] = []
    for network in networks:
        indices = []
        for layer in network.layers:
            signature = layer_signature(layer)
            index = distinct.get(signature)
            if index is None:
                index = distinct[signature] = len(examples)
                examples.append(layer)
            indices.append(index)
        signatures.append(indices)
    return examples, signatures


def batch_predict(latency: Mapping[str, RidgeModel], predictor: NetworkPredictor, networks: Sequence[Network],
                  examples: Sequence[Layer], signatures: Sequence[Sequence[int]]) -> np.ndarray:
    """The latency in seconds of every network by ``predictor``, from the per-layer ``latency`` models (by
    layer-type key), working once per distinct layer (``examples`` and ``signatures`` from
    :func:`distinct_layers`; see the module docstring). The caller has checked that ``latency`` covers every
    example's layer type."""
    metrics = [layer_metrics(layer) for layer in examples]
    isolated = _layer_latencies(latency, examples, metrics).tolist()
    unnamed = [tuple(getattr(m, f.name) for f in fields(LayerMetrics)[1:]) for m in metrics]  # all but the name
    inputs = [_BatchInput(network, {layer.name: isolated[i] for layer, i in zip(network.layers, indices, strict=True)},
                          distinct=unnamed, indices=tuple(indices)) for network, indices in zip(networks, signatures,
                                                                                                strict=True)]
    collecting = gc.isenabled()
    gc.disable()  # a batch allocates many small objects and frees none: the collector would rescan them all
    try:
        return np.asarray(predictor.predict_many(inputs), dtype=float)
    finally:
        if collecting:
            gc.enable()


@dataclass(frozen=True)
class _BatchInput(NetworkInput):
    """A network's input to a network predictor, whose metrics come from the batch's distinct layers, built
    only when a predictor reads them."""

    distinct: Sequence[tuple[Any, ...]] = ()
    """The batch's distinct layers' metrics, each without its name (the fields of :class:`LayerMetrics` after
    ``name``)."""
    indices: tuple[int, ...] = ()

    @cached_property
    def metrics(self) -> NetworkMetrics:
        return NetworkMetrics(self.network.name, tuple(
            LayerMetrics(layer.name, *self.distinct[i]) for layer, i in zip(self.network.layers, self.indices,
                                                                             strict=True)))


def _layer_latencies(latency: Mapping[str, RidgeModel], layers: Sequence[Layer],
                     metrics: Sequence[LayerMetrics]) -> np.ndarray:
    """Each distinct layer's isolated latency (seconds), one model call per layer type."""
    keys = [model_key(layer) for layer in layers]
    rows = np.array([metric_features(m) for m in metrics]) if layers else np.zeros((0, 3))
    predicted = np.zeros(len(layers))
    for key in set(keys):
        index = [i for i, k in enumerate(keys) if k == key]
        predicted[index] = latency[key].predict(rows[index])
    return predicted
