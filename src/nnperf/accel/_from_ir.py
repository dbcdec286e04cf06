"""Layer rows for any network of the IR, with the sparsity of every tensor.

Convolutions map to rows as the reference maps them: H is the padded input, a grouped convolution
keeps C per group and M in all (as CNNergy treats AlexNet's two towers, so the MACs are exact), and
a fully connected layer is an R x R convolution over the map it flattens (AlexNet's FC6 is 6 x 6 x
256 -> 4096) or a 1 x 1 one. Pooling, activations, concatenation and the rest carry no energy
(reference section 7; ``NOT_MAPPED`` lists them) but change what a split after them would transmit.

Sparsity is kept per tensor (the zero fraction of each network input and layer output) and comes
from one of three sources: measured by running the network on images (``measure_sparsity``), a user
CSV ``tensor,sparsity`` (``read_sparsity``), or the shipped table of the same network
(``table_sparsity``). A row's s_if is its input's zeros in the padded volume and its s_of those of
the tensor the accelerator writes back: the end of the convolution's chain of batch norm, scale and
activation layers.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from nnperf.accel._layers import AccelLayer, LayerTableError
from nnperf.errors import NnperfError
from nnperf.ir import (
    ACTIVATIONS,
    ConvAttrs,
    ConvTransposeAttrs,
    Layer,
    Network,
    OpType,
    numel,
)

CHAIN_OPS = ACTIVATIONS | {OpType.BATCH_NORM, OpType.SCALE}
"""Layers an accelerator applies to a convolution's output before writing it back."""
PASS_THROUGH = frozenset({OpType.FLATTEN, OpType.RESHAPE, OpType.DROPOUT, OpType.IDENTITY})
"""Layers that keep their input's values, so a linear layer after them still sees the map they flatten."""

Geometry = tuple[int, int, int, int, int, int, int, int]
"""(R, M, H padded, C per group, U, E, groups, H unpadded) of an accelerator row."""


class AccelMappingError(NnperfError):
    """A network (or sparsity input) that cannot be mapped onto accelerator layer rows."""


@dataclass(frozen=True)
class IrMapping:
    """The accelerator rows of an IR network, with the IR layer behind each row."""

    network: Network
    rows: tuple[AccelLayer, ...]
    sources: tuple[str, ...]
    """the IR conv or linear layer of each row"""
    written: tuple[str, ...]
    """the tensor each row writes back (the end of its activation chain)"""


def energy_layers(network: Network) -> list[Layer]:
    """The conv and linear layers (those in ``ROW_GEOMETRY``), in topological order: the layers CNNergy gives energy to."""
    return [layer for layer in network.layers if layer.op in ROW_GEOMETRY]


def chain_end(network: Network, name: str) -> str:
    """The last layer of ``name``'s single-consumer chain of batch norm, scale and activation layers."""
    while True:
        consumers = network.consumers(name)
        if len(consumers) != 1 or network.layer(consumers[0]).op not in CHAIN_OPS:
            return name
        name = consumers[0]


def map_network(network: Network, sparsity: Mapping[str, float]) -> IrMapping:
    """The rows of ``network``; ``sparsity`` must cover every row's input and written tensor."""
    problems: dict[str, list[str]] = {}
    rows: list[AccelLayer] = []
    written: list[str] = []
    layers = energy_layers(network)
    if not layers:
        raise AccelMappingError(f"{network.name}: no convolution or fully connected layer to give energy to")
    for layer in layers:
        try:
            geometry = _geometry(network, layer)
        except AccelMappingError as exc:
            problems.setdefault(str(exc), []).append(layer.name)
            continue
        R, M, H, C, U, E, groups, unpadded = geometry
        end = chain_end(network, layer.name)
        missing = [t for t in (layer.inputs[0], end) if t not in sparsity]
        if missing:
            problems.setdefault("no sparsity for tensor(s) " + ", ".join(missing), []).append(layer.name)
            continue
        s_in = sparsity[layer.inputs[0]]
        padded_zeros = s_in * unpadded * unpadded + (H * H - unpadded * unpadded)
        try:
            rows.append(AccelLayer(name=layer.name, filter_size=R, filters=M, ifmap_size=H, channels=C, stride=U,
                                   ofmap_size=E, ifmap_sparsity=padded_zeros / (H * H),
                                   ofmap_sparsity=sparsity[end], groups=groups))
        except LayerTableError as exc:
            problems.setdefault(str(exc).split(": ", 1)[-1], []).append(layer.name)
            continue
        written.append(end)
    if problems:
        detail = "; ".join(f"{why} ({', '.join(names)})" for why, names in problems.items())
        raise AccelMappingError(f"{network.name}: cannot map onto the accelerator: {detail}")
    return IrMapping(network=network, rows=tuple(rows), sources=tuple(layer.name for layer in layers),
                     written=tuple(written))


def _geometry(network: Network, layer: Layer) -> Geometry:
    """(R, M, H padded, C per group, U, E, groups, H unpadded) of a conv or linear layer."""
    return ROW_GEOMETRY[layer.op](network, layer)


def _require_square(square: bool, dilation: tuple[int, int]) -> None:
    """CNNergy's rows are square: refuse a layer whose maps, filters or strides are not (``square`` False),
    or that is dilated."""
    if not square:
        raise AccelMappingError("CNNergy models square maps, filters and strides only")
    if dilation != (1, 1):
        raise AccelMappingError("dilated convolutions are not modelled")


def _conv_geometry(network: Network, layer: Layer) -> Geometry:
    attrs = layer.attrs
    assert isinstance(attrs, ConvAttrs)
    _, c_in, h, w = layer.input_shape
    _, c_out, e_h, e_w = layer.output_shape
    top, left, bottom, right = attrs.padding
    _require_square(h == w and e_h == e_w and attrs.kernel[0] == attrs.kernel[1] and attrs.stride[0] == attrs.stride[1]
                    and (top + bottom) == (left + right), attrs.dilation)
    return (attrs.kernel[0], c_out, h + top + bottom, c_in // attrs.groups, attrs.stride[0], e_h, attrs.groups, h)


def _linear_geometry(network: Network, layer: Layer) -> Geometry:
    """An R x R convolution over the square map the input was flattened from, else a 1 x 1 one."""
    features = layer.input_shape[-1]
    spatial = _flattened_map(network, layer)
    if spatial is not None:
        channels, size = spatial
        return size, layer.output_shape[-1], size, channels, 1, 1, 1, size
    return 1, layer.output_shape[-1], 1, features, 1, 1, 1, 1


# resizing, normalisation and attention
def _conv_transpose_geometry(network: Network, layer: Layer) -> Geometry:
    """The equivalent direct convolution: stride 1 over the input with stride - 1 zeros inserted between
    samples and dilation*(kernel-1) - padding zeros around it (output padding at the end). The row-stationary
    dataflow then runs it as any convolution; the inserted zeros count as input sparsity (unpadded = Hin), so
    zero gating skips their MACs as CNNergy skips those of zero activations."""
    attrs = layer.attrs
    assert isinstance(attrs, ConvTransposeAttrs)
    _, c_in, h, w = layer.input_shape
    _, c_out, e_h, e_w = layer.output_shape
    top, left, bottom, right = attrs.padding
    _require_square(h == w and e_h == e_w and attrs.kernel[0] == attrs.kernel[1] and attrs.stride[0] == attrs.stride[1]
                    and (top, bottom) == (left, right) and attrs.output_padding[0] == attrs.output_padding[1],
                    attrs.dilation)
    k, s = attrs.kernel[0], attrs.stride[0]
    if max(top, bottom) > k - 1:
        raise AccelMappingError("a transposed convolution cropping more than kernel - 1 is not modelled")
    size = (h - 1) * s + 1 + (k - 1 - top) + (k - 1 - bottom) + attrs.output_padding[0]
    return (k, c_out, size, c_in // attrs.groups, 1, e_h, attrs.groups, h)


ROW_GEOMETRY: Mapping[OpType, Callable[[Network, Layer], Geometry]] = MappingProxyType({
    OpType.CONV: _conv_geometry,
    OpType.LINEAR: _linear_geometry,
    OpType.CONV_TRANSPOSE: _conv_transpose_geometry,
})
"""IR op -> the geometry of the accelerator row it becomes: the layers CNNergy gives energy to."""

NOT_MAPPED = frozenset({
    OpType.MAX_POOL, OpType.AVG_POOL, OpType.GLOBAL_AVG_POOL, OpType.GLOBAL_MAX_POOL, OpType.BATCH_NORM,
    OpType.SCALE, OpType.RELU, OpType.RELU6, OpType.LEAKY_RELU, OpType.SIGMOID, OpType.TANH, OpType.HARDSWISH,
    OpType.SILU, OpType.ADD, OpType.MUL, OpType.MAX, OpType.CONCAT, OpType.SOFTMAX, OpType.LRN, OpType.FLATTEN,
    OpType.RESHAPE, OpType.UPSAMPLE, OpType.PAD, OpType.IDENTITY, OpType.DROPOUT,
    # resizing, normalisation and attention: normalisation, reductions and element-wise ops carry no
    # energy as the other non-MAC layers; a MATMUL of two activations has no stationary filter for the rows
    OpType.LAYER_NORM, OpType.GROUP_NORM, OpType.REDUCE_MEAN, OpType.REDUCE_MAX, OpType.MATMUL, OpType.SUB,
    OpType.DIV, OpType.POW, OpType.GELU, OpType.CONSTANT,
})
# activations and data movement
NOT_MAPPED = NOT_MAPPED | {
    OpType.HARD_SIGMOID, OpType.CLIP, OpType.PRELU, OpType.GELU, OpType.SOFTPLUS, OpType.MISH, OpType.EXP, OpType.LOG,
    OpType.SLICE, OpType.TRANSPOSE, OpType.CHANNEL_SHUFFLE, OpType.GATHER, OpType.EXPAND, OpType.GENERIC,
}
"""Ops that become no row: they carry no energy in CNNergy (reference section 7), only change what a split sends."""


def _flattened_map(network: Network, layer: Layer) -> tuple[int, int] | None:
    """(C, H) of the square map a linear layer's input was flattened from, if it was one."""
    name = layer.inputs[0]
    known = {spec.name: spec.shape for spec in network.inputs}
    while name not in known:
        producer = network.layer(name)
        passes = producer.op in PASS_THROUGH
        shape = producer.input_shape if passes else producer.output_shape
        if len(shape) == 4 and shape[2] == shape[3] and shape[2] > 1:
            return shape[1], shape[2]
        if not passes:
            return None
        name = producer.inputs[0]
    return None


def propagate(network: Network, known: Mapping[str, float], input_sparsity: float = 0.0) -> dict[str, float]:
    """Every tensor's sparsity, filling the gaps of ``known``.

    Network inputs take ``input_sparsity``; a conv or linear output not given is taken as dense
    (pre-activation values are rarely zero); any other layer takes its inputs' zero fraction,
    weighted by their sizes (pooling, concatenation, flatten pass zeros through).
    """
    out = {spec.name: known.get(spec.name, input_sparsity) for spec in network.inputs}
    for layer in network.layers:
        if layer.name in known:
            out[layer.name] = known[layer.name]
        elif layer.op in ROW_GEOMETRY:
            out[layer.name] = 0.0
        else:
            sizes = [numel(shape) for shape in layer.input_shapes]
            out[layer.name] = sum(out[n] * s for n, s in zip(layer.inputs, sizes, strict=True)) / sum(sizes)
    return out


def table_sparsity(network: Network, table: Sequence[AccelLayer]) -> dict[str, float]:
    """Tensor sparsities borrowed from a layer table whose rows match the network's conv/linear layers in order.

    Each row gives its IR layer's input (s_if, unpadded again) and its written tensor (s_of).
    """
    layers = energy_layers(network)
    if len(layers) != len(table):
        raise AccelMappingError(f"{network.name}: {len(layers)} conv/linear layers but the table has "
                                f"{len(table)} rows; a table can lend its sparsities only row for row")
    known: dict[str, float] = {}
    for layer, row in zip(layers, table, strict=True):
        _, _, H, _, _, _, _, unpadded = _geometry(network, layer)
        zeros = row.ifmap_sparsity * H * H - (H * H - unpadded * unpadded)
        known.setdefault(layer.inputs[0], min(max(zeros / (unpadded * unpadded), 0.0), 0.999999))
        known[chain_end(network, layer.name)] = row.ofmap_sparsity
    return propagate(network, known)


def read_sparsity(path: str | Path, network: Network) -> dict[str, float]:
    """A user's sparsities: a CSV with columns ``tensor,sparsity`` (a network input or layer name, zeros in [0, 1))."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise AccelMappingError(f"{path}: cannot read the sparsity file: {exc.strerror or exc}") from None
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or not {"tensor", "sparsity"} <= {f.strip() for f in reader.fieldnames}:
        raise AccelMappingError(f"{path}: expected a header 'tensor,sparsity'")
    names = {spec.name for spec in network.inputs} | {layer.name for layer in network.layers}
    known: dict[str, float] = {}
    for line, raw in enumerate(reader, start=2):
        cells = {(k or "").strip(): (v or "").strip() for k, v in raw.items()}
        tensor, cell = cells.get("tensor", ""), cells.get("sparsity", "")
        if tensor not in names:
            raise AccelMappingError(f"{path}, row {line}: {tensor!r} is not a tensor of {network.name}")
        try:
            value = float(cell)
        except ValueError:
            raise AccelMappingError(f"{path}, row {line}, column sparsity: {cell!r} is not a number") from None
        if not math.isfinite(value) or not 0 <= value < 1:
            raise AccelMappingError(f"{path}, row {line}: sparsity must be in [0, 1), got {value}")
        known[tensor] = value
    return propagate(network, known)
