"""The costs primitive selection reads: primitive times per convolution and layout transformation times per
activation (Mulder et al. 4.3: predicted by the cost model, or profiled).

:class:`PrimitiveCosts` is a table of seconds: for every convolution configuration of a network, the time of
each primitive that may compute it, and for every activation (batch, c, (h, w)) the transformations between
layouts (``"chw->hwc"``) the network can need. :func:`predicted_costs` fills it from a fitted
:class:`~nnperf.prediction.primitives.PrimitiveCostModel` in one batched pass, :func:`profiled_costs` from the
medians of a profiled :class:`~nnperf.primitives.PrimitiveDataset`.

This module also says which layouts a network's layers read and write (:func:`layer_layouts`) and which
transformations a network can need (:func:`needed_transforms`): both the constructors here and the cost graph
(``_network.py``) read them, so that a table built for a network holds every number its graph asks for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnperf.campaign import DATASET_HARNESS
from nnperf.ir import Layer, Network, Shape
from nnperf.measure import HarnessConfig
from nnperf.optimize.select._graph import CostGraphError, SelectionError
from nnperf.prediction.primitives import ActivationShape, PrimitiveCostModel
from nnperf.primitives import (
    CHW,
    ConvConfig,
    Layout,
    LayoutTransform,
    Primitive,
    PrimitiveDataset,
    all_primitives,
    config_label,
    conv_layer_configs,
    get_primitive,
    layer_key,
    layer_layouts,
    parse_layout,
    time_primitive,
    time_transform,
)


class MissingCostError(SelectionError):
    """A time the costs do not hold: a convolution configuration, a transformation on an activation, or a
    convolution layer left with no primitive to run it."""


class NoConvolutionError(SelectionError):
    """A network without a 2-D convolution: there is no primitive to select."""


def network_convs(network: Network) -> dict[str, ConvConfig]:
    """Every 2-D convolution layer of ``network`` with its configuration, in network order; none raises
    :class:`NoConvolutionError`."""
    convs = conv_layer_configs(network)
    if not convs:
        raise NoConvolutionError(f"network {network.name!r} has no 2-D convolution: there is no primitive to select")
    return convs


def transform_name(src: Layout, dst: Layout) -> str:
    """``"chw->hwc"``: the name a transformation has in datasets and cost models."""
    return f"{src}->{dst}"


def activation_key(shape: Shape | ActivationShape) -> ActivationShape:
    """The (batch, c, (h, w)) key of a 4-D shape, or of a key given as (batch, c, (h, w))."""
    try:
        if len(shape) == 4:
            n, c, h, w = shape
        else:
            n, c, (h, w) = shape
        return int(n), int(c), (int(h), int(w))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise CostGraphError(f"{shape!r} is not an activation: (batch, c, h, w) or (batch, c, (h, w))") from None


def same_bytes(shape: ActivationShape, src: Layout, dst: Layout) -> bool:
    """Whether moving an activation from ``src`` to ``dst`` copies nothing: the identity, or a move between two of
    chw, hwc and hcw (whose names are their memory orders) on an activation whose dimensions longer than 1 come
    in the same order in both: chw <-> hwc with one channel or one pixel, chw <-> hcw with one channel or one row,
    hwc <-> hcw with one channel or one column. torch then returns the tensor itself or a view of it."""
    if src == dst:
        return True
    if src.block or dst.block:
        return False
    _, c, (h, w) = shape
    sizes = {"c": c, "h": h, "w": w}
    return [d for d in src.name if sizes[d] > 1] == [d for d in dst.name if sizes[d] > 1]


def data_edges(network: Network) -> list[tuple[str, str]]:
    """Every (producer, consumer) pair of ``network``, once per pair, in consumer order; a producer is a layer
    or a network input."""
    return [(producer, layer.name) for layer in network.layers for producer in dict.fromkeys(layer.inputs)]


def activation_shapes(network: Network) -> dict[str, Shape]:
    """The output shape of every network input and layer, by name."""
    return {**{spec.name: spec.shape for spec in network.inputs},
            **{layer.name: layer.output_shape for layer in network.layers}}


def option_layouts(network: Network, conv_primitives: Mapping[str, Iterable[str]]
                   ) -> dict[str, tuple[tuple[Layout, Layout], ...]]:
    """(read, write) layouts of each option of every node: a network input writes chw; a convolution layer
    reads and writes its primitives' layouts (in ``conv_primitives[name]``'s order); another layer reads and
    writes each of :func:`layer_layouts`."""
    found: dict[str, tuple[tuple[Layout, Layout], ...]] = {spec.name: ((CHW, CHW),) for spec in network.inputs}
    for layer in network.layers:
        if layer.name in conv_primitives:
            prims = [get_primitive(p) for p in conv_primitives[layer.name]]
            found[layer.name] = tuple((p.input_layout, p.output_layout) for p in prims)
        else:
            found[layer.name] = tuple((layout, layout) for layout in layer_layouts(layer))
    return found


def needed_transforms(network: Network, conv_primitives: Mapping[str, Iterable[str]]
                      ) -> dict[tuple[ActivationShape, str], str]:
    """The transformations ``network``'s cost graph can need, each with the first layer (or input) whose output
    it moves: every (write layout of a producer's option, read layout of a consumer's option) pair on a 4-D edge,
    and every write layout of an output's options to chw. Transformations that copy nothing
    (:func:`same_bytes`) are left out."""
    layouts = option_layouts(network, conv_primitives)
    shapes = activation_shapes(network)
    needed: dict[tuple[ActivationShape, str], str] = {}

    def need(producer: str, reads: Iterable[Layout]) -> None:
        if len(shapes[producer]) != 4:
            return
        key = activation_key(shapes[producer])
        for _, src in layouts[producer]:
            for dst in reads:
                if not same_bytes(key, src, dst):
                    needed.setdefault((key, transform_name(src, dst)), producer)

    for producer, consumer in data_edges(network):
        need(producer, dict.fromkeys(read for read, _ in layouts[consumer]))
    for output in network.outputs:
        need(output, (CHW,))
    return needed


def _shape_text(shape: ActivationShape) -> str:
    n, c, (h, w) = shape
    return f"{n}x{c}x{h}x{w}"


def _seconds(what: str, value: Any) -> float | None:
    """``value`` as seconds; None for NaN or inf (no cost: not an option); negative raises."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise CostGraphError(f"{what}: {value!r} is not a number of seconds") from None
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    if seconds < 0:
        raise CostGraphError(f"{what}: a negative time ({seconds!r} s)")
    return seconds


@dataclass(frozen=True)
class PrimitiveCosts:
    """Times in seconds for primitive selection on one system.

    ``conv_s[config][primitive]`` is the time of ``primitive`` on a convolution configuration;
    ``transforms_s[(batch, c, (h, w))]["chw->hwc"]`` the time of a layout transformation on an activation.
    NaN or inf entries are dropped on construction (a primitive without a finite time is not an option for its
    layer); a negative one, a key that is not a configuration or activation and a transformation name that is
    not ``"<layout>-><layout>"`` raise :class:`CostGraphError`. Identities are never stored: they cost 0
    (Mulder et al. 3.2.2), as does a move between two of chw, hwc and hcw on an activation whose two layouts have
    the same bytes (:func:`same_bytes`). ``layers_s[key]["hwc"]`` is the time of a layer other than a convolution in a
    layout, by :func:`~nnperf.primitives.layer_key` (measured: :func:`~nnperf.primitives.time_layer`); left
    empty, such layers are taken to cost the same in every layout (0). ``source`` says where the numbers come
    from ("predicted by nn2", "profiled", ...). The mappings are copied on construction.
    """

    conv_s: Mapping[ConvConfig, Mapping[str, float]]
    transforms_s: Mapping[ActivationShape, Mapping[str, float]] = field(default_factory=dict)
    source: str = "table"
    layers_s: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        conv: dict[ConvConfig, dict[str, float]] = {}
        for config, times in self.conv_s.items():
            if not isinstance(config, ConvConfig):
                raise CostGraphError(f"conv_s: key {config!r} is not a ConvConfig")
            kept = {str(p): _seconds(f"time of {p} on {config_label(config)}", t) for p, t in times.items()}
            conv[config] = {p: t for p, t in kept.items() if t is not None}
        transforms: dict[ActivationShape, dict[str, float]] = {}
        for key, times in self.transforms_s.items():
            shape = activation_key(key)
            row: dict[str, float] = {}
            for name, t in times.items():
                src, dst = _parse_transform(name)
                seconds = _seconds(f"time of {name} on {_shape_text(shape)}", t)
                if seconds is not None and src != dst:
                    row[transform_name(src, dst)] = seconds
            transforms[shape] = row
        layers: dict[str, dict[str, float]] = {}
        for key, times in self.layers_s.items():
            kept = {str(parse_layout(name)): _seconds(f"time of layer {key} in {name}", t)
                    for name, t in times.items()}
            layers[str(key)] = {name: t for name, t in kept.items() if t is not None}
        object.__setattr__(self, "conv_s", conv)
        object.__setattr__(self, "transforms_s", transforms)
        object.__setattr__(self, "layers_s", layers)

    def with_layers(self, layers_s: Mapping[str, Mapping[str, float]]) -> PrimitiveCosts:
        """These costs with ``layers_s`` (layer key -> layout -> s) as the other layers' times."""
        return PrimitiveCosts(self.conv_s, self.transforms_s, self.source, layers_s)

    def layer_times(self, layer: Layer) -> dict[str, float]:
        """Layout name -> time (s) of ``layer`` (not a convolution) in each layout it can run in: 0 in every one
        when the costs hold no layer times; a layer they lack (when they hold some) raises
        :class:`MissingCostError`, and a layout they lack for it is left out (not an option)."""
        layouts = [str(layout) for layout in layer_layouts(layer)]
        if not self.layers_s or len(layouts) == 1:
            return dict.fromkeys(layouts, 0.0)
        times = self.layers_s.get(layer_key(layer))
        if not times or not set(times) & set(layouts):
            raise MissingCostError(f"the costs ({self.source}) hold no time of layer {layer.name!r} "
                                   f"({layer.op.value}) in {' or '.join(layouts)}; profile the network's layers "
                                   "(nnperf.campaign.profile_layer_layouts)")
        return {name: times[name] for name in layouts if name in times}

    def primitive_times(self, config: ConvConfig, layer: str = "") -> dict[str, float]:
        """Primitive name -> time (s) on ``config``; a configuration the table lacks raises
        :class:`MissingCostError` (naming ``layer`` when given)."""
        try:
            return dict(self.conv_s[config])
        except KeyError:
            where = f" (layer {layer!r})" if layer else ""
            raise MissingCostError(f"the costs ({self.source}) hold no convolution {config_label(config)}{where}"
                                   ) from None

    def transform_time(self, shape: ActivationShape | Shape, src: Layout, dst: Layout, layer: str = "") -> float:
        """The time (s) of moving an activation (batch, c, (h, w)) or a 4-D shape from ``src`` to ``dst``; 0 for
        a copy-free move (:func:`same_bytes`); one the table lacks raises :class:`MissingCostError`."""
        key = activation_key(shape)
        if same_bytes(key, src, dst):
            return 0.0
        name = transform_name(src, dst)
        try:
            return self.transforms_s[key][name]
        except KeyError:
            where = f" (the output of {layer!r})" if layer else ""
            raise MissingCostError(f"the costs ({self.source}) hold no {name} transformation of a "
                                   f"{_shape_text(key)} activation{where}") from None


def _parse_transform(name: str) -> tuple[Layout, Layout]:
    parts = str(name).split("->")
    if len(parts) != 2:
        raise CostGraphError(f"{name!r} is not a transformation name like 'chw->hwc'")
    return parse_layout(parts[0]), parse_layout(parts[1])


def usable(name: str, config: ConvConfig) -> bool:
    """Whether primitive ``name`` is available here and applies to ``config``."""
    primitive = get_primitive(name)
    return primitive.availability().ok and primitive.applies(config)


DEFAULT_PRIMITIVE = "torch-conv2d"
"""The convolution a user's torch model runs: ``torch.nn.functional.conv2d`` on an NCHW (chw) tensor, torch
choosing the kernel per layer (oneDNN for most layers on a CPU). It applies to every convolution."""

DEFAULT_STAND_IN = "onednn-chw"
"""What stands for :data:`DEFAULT_PRIMITIVE` on a convolution whose costs hold no time for it (a cost model or
dataset made before ``torch-conv2d`` was a primitive): oneDNN on chw, the kernel ``conv2d`` runs for most layers
here."""


def default_primitive(times_s: Mapping[str, float]) -> str | None:
    """The primitive that stands for the framework default among a convolution's ``times_s``:
    :data:`DEFAULT_PRIMITIVE`, else :data:`DEFAULT_STAND_IN`, whichever first has a finite time; None when
    neither has."""
    return next((name for name in (DEFAULT_PRIMITIVE, DEFAULT_STAND_IN) if math.isfinite(times_s.get(name, math.nan))),
                None)


def _layer_primitives(convs: Mapping[str, ConvConfig], conv_s: Mapping[ConvConfig, Mapping[str, float]]
                      ) -> dict[str, list[str]]:
    return {name: list(conv_s[config]) for name, config in convs.items()}


def predicted_costs(model: PrimitiveCostModel, network: Network, margin: float = 0.0) -> PrimitiveCosts:
    """The costs of ``network`` predicted by ``model`` (Mulder et al. 4.3: selection on predicted times).

    With ``margin`` > 0 every predicted time but the default's (:func:`default_primitive`, the option the
    default selection runs), and every layout transformation, costs ``1 + margin`` times its prediction, so
    that a layer leaves the default only where the model predicts a saving larger than ``margin`` (0 is the
    paper's selection; ``bench/select_networks.py --margin 0.12`` measures a 12% margin, the model's median ratio
    error, against it).

    One batched :meth:`~PrimitiveCostModel.predict` over the network's distinct convolutions gives every
    primitive the model knows that applies and is available here; one :meth:`~PrimitiveCostModel.predict_transforms`
    gives the transformations the network's graph can need (:func:`needed_transforms`). A needed
    transformation the model does not predict raises :class:`MissingCostError`; a network without convolutions
    :class:`NoConvolutionError`.
    """
    if not (math.isfinite(margin) and margin >= 0):
        raise SelectionError(f"the cost model's margin must be a fraction >= 0 (0.1 for 10%), got {margin!r}")
    convs = network_convs(network)
    configs = list(dict.fromkeys(convs.values()))
    names = list(model.primitives_)
    times = model.predict(configs, names)
    available = [get_primitive(n).availability().ok for n in names]
    conv_s = {config: _with_margin({n: float(t) for n, t, ok in zip(names, row, available, strict=True)
                                    if ok and np.isfinite(t)}, margin)
              for config, row in zip(configs, times, strict=True)}
    needed = needed_transforms(network, _layer_primitives(convs, conv_s))
    unknown = sorted({name for _, name in needed if name not in model.transforms_})
    if unknown:
        raise MissingCostError(f"the cost model predicts no {', '.join(unknown)} transformation, which network "
                               f"{network.name!r} can need; it predicts: {', '.join(model.transforms_) or '(none)'}")
    shapes = list(dict.fromkeys(shape for shape, _ in needed))
    columns = list(dict.fromkeys(name for _, name in needed))
    transforms_s: dict[ActivationShape, dict[str, float]] = {shape: {} for shape in shapes}
    if shapes:
        predicted = model.predict_transforms(shapes, columns)
        row = {shape: i for i, shape in enumerate(shapes)}
        column = {name: j for j, name in enumerate(columns)}
        for shape, name in needed:
            transforms_s[shape][name] = float(predicted[row[shape], column[name]]) * (1.0 + margin)
    source = f"predicted by {model.kind}" + (f", other than the default at +{margin:.0%}" if margin else "")
    return PrimitiveCosts(conv_s, transforms_s, source)


def _with_margin(times_s: dict[str, float], margin: float) -> dict[str, float]:
    """A convolution's predicted times with every one but the default's (:func:`default_primitive`) ``1 + margin``
    times dearer."""
    default = default_primitive(times_s)
    return {name: t if name == default else t * (1.0 + margin) for name, t in times_s.items()}


def profiled_costs(dataset: PrimitiveDataset, network: Network, measure_missing: bool = False, threads: int = 1,
                   harness: HarnessConfig = DATASET_HARNESS) -> PrimitiveCosts:
    """The costs of ``network`` looked up in a profiled dataset: the stored median times.

    A convolution takes the primitives timed on its configuration that apply and are available here. A
    configuration the dataset lacks, or a transformation the graph can need (:func:`needed_transforms`) that it
    holds no time for, raises :class:`MissingCostError` naming it (and the layer); with ``measure_missing`` it
    is timed here instead (:func:`~nnperf.primitives.time_primitive` and
    :func:`~nnperf.primitives.time_transform` with ``threads`` and ``harness``, default the dataset's own
    :data:`~nnperf.campaign.DATASET_HARNESS`). The dataset times transformations on the convolutions' input
    activations only, so the output of a layer that no convolution reads (a concat before global pooling) is
    usually missing.
    """
    convs = network_convs(network)
    stored = {sample.config: sample.times_s for sample in dataset.conv}
    conv_s: dict[ConvConfig, dict[str, float]] = {}
    for layer, config in convs.items():
        if config in conv_s:
            continue
        if config in stored:
            conv_s[config] = {n: t for n, t in stored[config].items() if usable(n, config)}
        elif measure_missing:
            conv_s[config] = {p.name: time_primitive(p, config, threads, harness).stats.median_s
                              for p in _applicable(config)}
        else:
            raise MissingCostError(f"the profiled dataset ({dataset.system_key}) holds no convolution "
                                   f"{config_label(config)} (layer {layer!r} of {network.name!r}); profile it, "
                                   "or pass measure_missing=True")
    layout = {(s.batch, s.c, (int(s.im[0]), int(s.im[1]))): s.times_s for s in dataset.layout}
    transforms_s: dict[ActivationShape, dict[str, float]] = {}
    for (shape, name), producer in needed_transforms(network, _layer_primitives(convs, conv_s)).items():
        seconds = layout.get(shape, {}).get(name)
        if seconds is None:
            if not measure_missing:
                raise MissingCostError(f"the profiled dataset ({dataset.system_key}) holds no {name} "
                                       f"transformation of a {_shape_text(shape)} activation (the output of "
                                       f"{producer!r} in {network.name!r}); pass measure_missing=True to time it")
            src, dst = _parse_transform(name)
            seconds = time_transform(LayoutTransform(src, dst), shape[0], shape[1], shape[2], threads,
                                     harness).stats.median_s
        transforms_s.setdefault(shape, {})[name] = seconds
    return PrimitiveCosts(conv_s, transforms_s, f"profiled on {dataset.system_key}")


def _applicable(config: ConvConfig) -> list[Primitive]:
    return [p for p in all_primitives() if p.availability().ok and p.applies(config)]
