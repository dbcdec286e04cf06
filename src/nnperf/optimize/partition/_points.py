"""Split points from per-layer numbers: a CNNergy layer table, or any IR network on any client.

A split point is where the client stops and sends what the rest of the network needs to the cloud.
From a layer table (the reference networks), the points follow its reporting layers; what is sent is
a parameter, since the reference does not say (docs/cnnergy.md section 8): the layer's own ofmap
before pooling ('ofmap'), the next layer's input after pooling ('next-input'), or both where they
differ ('both', the default: NeuPart's AlexNet points C1, P1, C2, P2, ...). From an IR network, a
split may follow any layer except inside a convolution's chain of batch norm and activation; what is
sent is every tensor computed on the client that a later layer reads, each RLC-coded with its own
sparsity. The client's per-layer energy and time come from CNNergy (an accelerator client) or from
an nnperf prediction or measurement (a CPU or GPU client, as Neurosurgeon partitions).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nnperf.accel import CHAIN_OPS, NetworkEnergy, blocks
from nnperf.ir import Network, numel
from nnperf.ir.metrics import layer_metrics
from nnperf.optimize.partition._split import SplitPoint
from nnperf.optimize.partition._transmit import PartitionInputError, jpeg_bits, rlc_bits

CLOUD_TOPS = 92.0
"""Google TPU's peak, NeuPart's cloud (VIII-A)."""
OPS_PER_MAC = 2
SEND_MODES = ("both", "ofmap", "next-input")
SAME_TENSOR_TOLERANCE = 0.01
"""'both' adds a post-pooling point only where its nonzeros differ from the ofmap's by more than this."""


def cloud_macs_per_s(tops: float = CLOUD_TOPS) -> float:
    """A cloud throughput given in tera-operations per second, as MACs per second (two operations per MAC)."""
    if not tops > 0:
        raise PartitionInputError(f"cloud throughput must be > 0 TOPS, got {tops}")
    return tops * 1e12 / OPS_PER_MAC


@dataclass(frozen=True)
class InputCoding:
    """How the input image is sent at the fully-cloud point: RLC-coded with a sparsity, or as a JPEG file."""

    sparsity: float | None = None
    jpeg_bytes: float | None = None

    def __post_init__(self) -> None:
        if (self.sparsity is None) == (self.jpeg_bytes is None):
            raise PartitionInputError("give the input image either a sparsity (RLC-coded) or a JPEG size, not both")

    def bits(self, values: float, rlc_factor: int) -> float:
        if self.jpeg_bytes is not None:
            return jpeg_bits(self.jpeg_bytes)
        assert self.sparsity is not None
        return rlc_bits(values, self.sparsity, rlc_factor)

    @property
    def label(self) -> str:
        if self.jpeg_bytes is not None:
            return f"JPEG of {self.jpeg_bytes:g} bytes"
        return f"RLC-coded, input sparsity {self.sparsity:.2%}"


def table_points(energy: NetworkEnergy, coding: InputCoding, send: str = "both",
                 cloud_rate_macs_per_s: float | None = None, input_values: float | None = None) -> list[SplitPoint]:
    """Split points after each reporting layer of a CNNergy layer table (NeuPart VII, Algorithm 2's inputs).

    ``input_values`` is the size of the image (default: the first row's padded ifmap, 227 x 227 x 3 for
    AlexNet). The client's time is MACs over the accelerator's throughput; the cloud's the remaining
    MACs over ``cloud_rate_macs_per_s`` (default 92 TOPS).
    """
    if send not in SEND_MODES:
        raise PartitionInputError(f"send must be one of {', '.join(SEND_MODES)}, got {send!r}")
    cloud = cloud_rate_macs_per_s or cloud_macs_per_s()
    spec, rows = energy.spec, [layer.layer for layer in energy.layers]
    groups = blocks(rows)
    total_macs = energy.macs
    first = rows[0]
    image = input_values if input_values is not None else first.ifmap_values
    points = [SplitPoint("input", 0.0, 0.0, total_macs / cloud, coding.bits(image, spec.rlc_factor))]
    done_j = done_macs = 0.0
    for position, (name, indices) in enumerate(groups):
        done_j += sum(energy.layers[i].energy_j for i in indices)
        done_macs += sum(energy.layers[i].macs for i in indices)
        client_s, cloud_s = done_macs / spec.throughput_macs_per_s, (total_macs - done_macs) / cloud
        if position == len(groups) - 1:
            points.append(SplitPoint(name, done_j, client_s, 0.0, 0.0))
            break
        ofmap_nz = sum(rows[i].ofmap_values * (1 - rows[i].ofmap_sparsity) for i in indices if rows[i].output)
        following = rows[groups[position + 1][1][0]]
        next_nz = following.ifmap_values * (1 - following.ifmap_sparsity)
        if send in ("both", "ofmap"):
            points.append(SplitPoint(name, done_j, client_s, cloud_s, rlc_bits(ofmap_nz, 0.0, spec.rlc_factor)))
        differs = abs(next_nz - ofmap_nz) > SAME_TENSOR_TOLERANCE * max(ofmap_nz, 1.0)
        if send == "next-input" or (send == "both" and differs):
            label = name if send == "next-input" else f"{name}+pool"
            points.append(SplitPoint(label, done_j, client_s, cloud_s, rlc_bits(next_nz, 0.0, spec.rlc_factor)))
    return points


def network_points(network: Network, layer_energy_j: Mapping[str, float], layer_latency_s: Mapping[str, float],
                   sparsity: Mapping[str, float], coding: InputCoding, rlc_factor: int,
                   cloud_rate_macs_per_s: float | None = None) -> list[SplitPoint]:
    """Split points after the layers of an IR network, for any client.

    ``layer_energy_j`` and ``layer_latency_s`` give each client layer's energy and time (layers left
    out cost nothing: pooling and the like on an accelerator); ``sparsity`` each tensor's zero fraction.
    """
    cloud = cloud_rate_macs_per_s or cloud_macs_per_s()
    layers = network.layers
    macs = [float(layer_metrics(layer).macs) for layer in layers]
    total_macs = sum(macs)
    consumers_after: dict[str, int] = {}
    for index, layer in enumerate(layers):
        for name in layer.inputs:
            consumers_after[name] = index  # the last reader of each tensor
    live = {spec.name: numel(spec.shape) for spec in network.inputs}
    image = sum(live.values())
    points = [SplitPoint("input", 0.0, 0.0, total_macs / cloud, coding.bits(image, rlc_factor))]
    energy_j = latency_s = done_macs = 0.0
    for index, layer in enumerate(layers):
        energy_j += layer_energy_j.get(layer.name, 0.0)
        latency_s += layer_latency_s.get(layer.name, 0.0)
        done_macs += macs[index]
        live[layer.name] = numel(layer.output_shape)
        live = {name: size for name, size in live.items() if consumers_after.get(name, -1) > index}
        if index == len(layers) - 1:
            points.append(SplitPoint(layer.name, energy_j, latency_s, 0.0, 0.0))
            break
        consumers = network.consumers(layer.name)
        if consumers and all(network.layer(c).op in CHAIN_OPS for c in consumers) and len(consumers) == 1:
            continue  # inside a convolution's activation chain
        bits = sum(rlc_bits(size, sparsity.get(name, 0.0), rlc_factor) for name, size in live.items())
        points.append(SplitPoint(layer.name, energy_j, latency_s, (total_macs - done_macs) / cloud, bits))
    return points
