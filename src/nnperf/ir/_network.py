"""The network IR: a DAG of layers with static tensor shapes (see :mod:`nnperf.ir._shapes`).

A layer has one output tensor, named after the layer; its ``inputs`` name the layers (or the network inputs)
that produce what it reads, in operand order. Layers and networks are checked when they are built: their shapes
against the op's rule (its spec, :mod:`nnperf.ir._op_specs`), their sizes against the plausibility bounds
(:mod:`nnperf.ir._limits`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from nnperf.errors import InvalidNetworkError
from nnperf.ir._limits import check_layer_size, check_network_size, check_tensor_size
from nnperf.ir._op_specs import attributes_class, check_layer_shapes
from nnperf.ir._ops import Attributes, ConvAttrs, ConvKind, NoAttrs, OpType
from nnperf.ir._shapes import Shape, shape_text


@dataclass(frozen=True)
class TensorSpec:
    """A network input: its name, shape (batch first) and element type."""

    name: str
    shape: Shape
    dtype: str = "float32"

    def __post_init__(self) -> None:
        _check_shape(self.shape, f"input {self.name!r}")
        check_tensor_size(self.shape, f"input {self.name!r}")


@dataclass(frozen=True)
class Layer:
    """One operator of the network.

    ``inputs`` are the names of the producers (layers or network inputs), one
    per operand; ``input_shapes`` gives each operand's shape in the same order.
    """

    name: str
    op: OpType
    inputs: tuple[str, ...]
    input_shapes: tuple[Shape, ...]
    output_shape: Shape
    attrs: Attributes = field(default_factory=NoAttrs)

    def __post_init__(self) -> None:
        where = f"layer {self.name!r} ({self.op.value})"
        if not self.name:
            raise InvalidNetworkError(f"a {self.op.value} layer has an empty name")
        if not isinstance(self.op, OpType):
            raise InvalidNetworkError(f"layer {self.name!r}: op must be an OpType, got {self.op!r}")
        expected = attributes_class(self.op)
        if isinstance(self.attrs, NoAttrs) and expected is not NoAttrs:
            try:  # attributes left out: the op's defaults, where it has them (not for conv or pooling)
                object.__setattr__(self, "attrs", expected())
            except TypeError:
                raise InvalidNetworkError(f"{where}: needs {expected.__name__} (kernel, stride, ...)") from None
        if not isinstance(self.attrs, expected):
            raise InvalidNetworkError(
                f"{where}: attributes must be {expected.__name__}, got {type(self.attrs).__name__}"
            )
        if len(self.inputs) != len(self.input_shapes):
            raise InvalidNetworkError(
                f"{where}: {len(self.inputs)} inputs but {len(self.input_shapes)} input shapes"
            )
        if not self.inputs:
            raise InvalidNetworkError(f"{where}: has no inputs")
        for i, shape in enumerate(self.input_shapes):
            _check_shape(shape, f"{where}, input {i}")
        _check_shape(self.output_shape, f"{where}, output")
        check_layer_shapes(self, where)
        check_layer_size(self, where)

    @property
    def input_shape(self) -> Shape:
        """Shape of the first operand (the only one for most layers)."""
        return self.input_shapes[0]

    @property
    def conv_kind(self) -> ConvKind | None:
        """Standard, pointwise, depthwise or grouped, for convolutions; else None."""
        if self.op is not OpType.CONV:
            return None
        assert isinstance(self.attrs, ConvAttrs)
        c_in, c_out, groups = self.input_shape[1], self.output_shape[1], self.attrs.groups
        if groups == 1:
            return ConvKind.POINTWISE if self.attrs.kernel == (1, 1) else ConvKind.STANDARD
        if groups == c_in and c_out % c_in == 0:
            return ConvKind.DEPTHWISE
        return ConvKind.GROUPED


@dataclass(frozen=True)
class SourceFile:
    """The model file a network was imported from, for the backend that runs such files as they are (LiteRT runs
    a .tflite file itself, not a program rebuilt from the IR). ``format`` is the file type ("tflite");
    ``sha256`` is the digest of the bytes imported, so a changed file is never run in the network's place."""

    path: str
    format: str
    sha256: str


@dataclass(frozen=True)
class Network:
    """A DAG of layers in topological order, with named inputs and outputs.

    ``int8_layers`` names the layers the model file runs in int8 (a quantised model's convolutions and matrix
    products, between its QuantizeLinear and DequantizeLinear nodes); every other layer computes in float.
    ``source`` is the file the network was imported from, where a backend can run that file as it is; a network
    derived from another (layers cut or changed) has none. It takes no part in equality.
    """

    name: str
    inputs: tuple[TensorSpec, ...]
    layers: tuple[Layer, ...]
    outputs: tuple[str, ...]
    int8_layers: frozenset[str] = frozenset()
    source: SourceFile | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.inputs:
            raise InvalidNetworkError(f"network {self.name!r} has no inputs")
        if not self.layers:
            raise InvalidNetworkError(f"network {self.name!r} has no layers")
        shapes: dict[str, Shape] = {}
        for spec in self.inputs:
            if spec.name in shapes:
                raise InvalidNetworkError(f"network {self.name!r}: duplicate input name {spec.name!r}")
            shapes[spec.name] = spec.shape
        for layer in self.layers:
            if layer.name in shapes:
                raise InvalidNetworkError(f"network {self.name!r}: duplicate name {layer.name!r}")
            for producer, shape in zip(layer.inputs, layer.input_shapes):
                if producer not in shapes:
                    raise InvalidNetworkError(
                        f"layer {layer.name!r} reads {producer!r}, which is not a network input "
                        "or an earlier layer (layers must be in topological order)"
                    )
                if shapes[producer] != shape:
                    raise InvalidNetworkError(
                        f"layer {layer.name!r} expects {producer!r} of shape {shape_text(shape)}, "
                        f"but it has shape {shape_text(shapes[producer])}"
                    )
            shapes[layer.name] = layer.output_shape
        if not self.outputs:
            raise InvalidNetworkError(f"network {self.name!r} has no outputs")
        strangers = sorted(self.int8_layers - shapes.keys())
        if strangers:
            raise InvalidNetworkError(f"network {self.name!r}: int8 layer(s) {', '.join(strangers)} are not layers")
        for out in self.outputs:
            if out not in shapes:
                raise InvalidNetworkError(f"network {self.name!r}: output {out!r} is not a layer or input")
        check_network_size(self)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)

    @cached_property
    def _by_name(self) -> dict[str, Layer]:
        return {layer.name: layer for layer in self.layers}

    @cached_property
    def _consumers(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {spec.name: [] for spec in self.inputs}
        for layer in self.layers:
            found[layer.name] = []
            for producer in dict.fromkeys(layer.inputs):
                found[producer].append(layer.name)
        return {name: tuple(users) for name, users in found.items()}

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; KeyError naming it if there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"network {self.name!r} has no layer {name!r}") from None

    def producers(self, name: str) -> tuple[str, ...]:
        """Names of the layers or inputs that ``name`` reads."""
        return self.layer(name).inputs

    def consumers(self, name: str) -> tuple[str, ...]:
        """Names of the layers that read the output of ``name`` (a layer or an input)."""
        try:
            return self._consumers[name]
        except KeyError:
            raise KeyError(f"network {self.name!r} has no layer or input {name!r}") from None

    def op_counts(self) -> dict[OpType, int]:
        """How many layers of each op type the network has."""
        counts: dict[OpType, int] = {}
        for layer in self.layers:
            counts[layer.op] = counts.get(layer.op, 0) + 1
        return counts


def _check_shape(shape: Shape, where: str) -> None:
    if not isinstance(shape, tuple) or not shape:
        raise InvalidNetworkError(f"{where}: shape must be a non-empty tuple of ints, got {shape!r}")
    for d in shape:
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise InvalidNetworkError(f"{where}: every dimension must be a positive int, got shape {shape!r}")
