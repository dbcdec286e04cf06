"""Running a network with a selection: each convolution through its chosen primitive, the chosen layouts between
layers (Mulder et al. 4.3: the selected network is executed and timed end to end).

:func:`build_selected` makes a torch module from :func:`~nnperf.measure.backends.build_torch`'s: the same
weights, every layer other than a convolution the same module, every convolution its chosen primitive
prepared once with that layer's weights. Between layers an activation is moved to the layout its consumer's
option reads (once per activation and layout, however many consumers read it there). :func:`verify_selected`
checks its outputs against ``build_torch``'s, :func:`measure_selected` times it with the measurement harness.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nnperf.ir import Layer, Network, Shape
from nnperf.measure import HarnessConfig, Timing, measure
from nnperf.measure.backends import LoopTimer, build_torch, random_inputs
from nnperf.optimize.select._costs import activation_shapes, network_convs
from nnperf.optimize.select._graph import Selection, SelectionError
from nnperf.primitives import (
    CHW,
    ConvConfig,
    Layout,
    LayoutTransform,
    config_label,
    get_primitive,
    layer_layouts,
    to_layout,
)
from nnperf.registry import UnknownPluginError

if TYPE_CHECKING:
    import torch
    from torch import nn

NETWORK_TOLERANCE = 1e-3
"""The largest error :func:`verify_selected` accepts: ``max|y - ref| <= NETWORK_TOLERANCE * max|ref|`` on every
output, ``ref`` being ``build_torch``'s. One convolution's primitive errs by at most its family's bound
(:data:`nnperf.primitives.ERROR_BOUNDS`: 1e-5 for the GEMM-like families and the vendors, 3e-5 for FFT, 1e-4
for Winograd and for NNPACK and OpenCV, which may pick Winograd) relative to the largest magnitude of its output.
The layers after it carry that error to the network's output scaled by their gains, which for the seeded weights
(torch's default initialisation, +-1/sqrt(fan-in)) are about 1 or less; so the errors of L convolutions add up to
about L times their bound: 1e-3 holds ten Winograd layers, or a hundred GEMM-like ones, and is still 100 times
smaller than a wrong layout or a wrong weight would give (errors of order 1). Pass a larger ``tolerance`` for a
deeper network of Winograd layers."""


DEFAULT_HARNESS = HarnessConfig()


class InvalidSelectionError(SelectionError):
    """A selection that cannot run the network: an unknown node, a convolution without a primitive, a primitive
    that does not apply to (or is not available for) its layer, a layout a layer cannot run in."""


class SelectionAccuracyError(SelectionError):
    """A selected network whose outputs differ from ``build_torch``'s by more than the tolerance.

    ``error`` is the largest relative error (``max|y - ref| / max|ref|`` over the outputs), ``tolerance`` the
    bound it broke."""

    def __init__(self, message: str, error: float, tolerance: float) -> None:
        super().__init__(message)
        self.error = error
        self.tolerance = tolerance


def selection_labels(network: Network, selection: Selection | Mapping[str, str]) -> dict[str, str]:
    """Node name -> option label for every input and layer of ``network``, checked.

    ``selection`` is a solver's :class:`Selection` or a mapping of names to labels; every convolution must be
    given a primitive that applies to it and is available here; a layer or input left out takes chw. What cannot
    run raises :class:`InvalidSelectionError`; a network without convolutions
    :class:`~nnperf.optimize.select.NoConvolutionError`.
    """
    convs = network_convs(network)
    given = dict(selection.chosen if isinstance(selection, Selection) else selection)
    known = {spec.name for spec in network.inputs} | {layer.name for layer in network.layers}
    unknown = sorted(set(given) - known)
    if unknown:
        raise InvalidSelectionError(f"the selection names {', '.join(map(repr, unknown))}, which "
                                    f"{'is' if len(unknown) == 1 else 'are'} not a layer or input of {network.name!r}")
    labels: dict[str, str] = {}
    for spec in network.inputs:
        labels[spec.name] = given.get(spec.name, str(CHW))
        if labels[spec.name] != str(CHW):
            raise InvalidSelectionError(f"input {spec.name!r} is handed over in chw, not {labels[spec.name]!r}")
    for layer in network.layers:
        if layer.name in convs:
            labels[layer.name] = _check_primitive(layer.name, given.get(layer.name), convs[layer.name])
        else:
            labels[layer.name] = label = given.get(layer.name, str(CHW))
            allowed = [str(layout) for layout in layer_layouts(layer)]
            if label not in allowed:
                raise InvalidSelectionError(f"layer {layer.name!r} ({layer.op.value}) cannot run in {label!r}; "
                                            f"its layouts: {', '.join(allowed)}")
    return labels


def _check_primitive(layer: str, label: str | None, config: ConvConfig) -> str:
    if label is None:
        raise InvalidSelectionError(f"the selection gives convolution {layer!r} no primitive")
    try:
        primitive = get_primitive(label)
    except UnknownPluginError as exc:
        raise InvalidSelectionError(f"convolution {layer!r}: {exc}") from None
    available = primitive.availability()
    if not available.ok:
        raise InvalidSelectionError(f"convolution {layer!r}: primitive {label} is unavailable here: "
                                    f"{available.reason}")
    if not primitive.applies(config):
        raise InvalidSelectionError(f"convolution {layer!r}: primitive {label} does not apply to "
                                    f"{config_label(config)} ({primitive.rule})")
    return label


@dataclass(frozen=True)
class _Step:
    """One layer: ``run`` reads its inputs in ``reads`` (4-D ones) and writes its output in ``writes``."""

    layer: Layer
    run: Callable[..., Any]
    reads: Layout
    writes: Layout
    free: tuple[str, ...]


def _conv2d(module: nn.Module) -> nn.Conv2d:
    """The ``nn.Conv2d`` of ``build_torch``'s module for a convolution (alone, or after a padding module)."""
    from torch import nn

    return next(m for m in module.modules() if isinstance(m, nn.Conv2d))


def _selected_steps(network: Network, layer_modules: Iterable[tuple[Layer, nn.Module]], labels: Mapping[str, str],
                    threads: int) -> tuple[_Step, ...]:
    """``network``'s layers in order as steps: each convolution its chosen primitive prepared with the weights of
    its module in ``layer_modules`` (``build_torch``'s, in order), every other layer its module in the chosen
    layout; each step frees the activations it reads last (the network's outputs are kept)."""
    import torch

    convs = network_convs(network)
    last_use = {name: i for i, layer in enumerate(network.layers) for name in layer.inputs}
    kept = set(network.outputs)
    steps = []
    for i, (layer, module) in enumerate(layer_modules):
        free = tuple(n for n, last in last_use.items() if last == i and n not in kept)
        if layer.name in convs:
            primitive = get_primitive(labels[layer.name])
            conv = _conv2d(module)
            bias = None if conv.bias is None else conv.bias.detach()
            with torch.no_grad():
                bound = primitive.prepare(conv.weight.detach(), bias, convs[layer.name], threads)
            steps.append(_Step(layer, bound, primitive.input_layout, primitive.output_layout, free))
        else:
            layout = next(x for x in layer_layouts(layer) if str(x) == labels[layer.name])
            steps.append(_Step(layer, module, layout, layout, free))
    return tuple(steps)


class _Activations:
    """The activations of one forward pass, each in the layout its producer wrote it in, with the copies moved to
    other layouts (once per activation and layout, however many consumers read it there). With ``timed_moves``
    each move appends (activation, transformation name, seconds) to it."""

    def __init__(self, inputs: Mapping[str, torch.Tensor], shapes: Mapping[str, Shape],
                 timed_moves: list[tuple[str, str, float]] | None = None) -> None:
        self.shapes = shapes
        self.values = {name: x.contiguous() for name, x in inputs.items()}
        self.layouts = {name: CHW for name in inputs}
        self.moved: dict[tuple[str, Layout], torch.Tensor] = {}
        self.timed_moves = timed_moves

    def read(self, name: str, layout: Layout) -> torch.Tensor:
        """Activation ``name`` in ``layout`` (a tensor that is not 4-D as it is)."""
        shape = self.shapes[name]
        if len(shape) != 4 or self.layouts[name] == layout:
            return self.values[name]
        if (name, layout) not in self.moved:
            move = LayoutTransform(self.layouts[name], layout)
            start = time.perf_counter()
            self.moved[name, layout] = move.run(self.values[name], shape[1])
            if self.timed_moves is not None:
                self.timed_moves.append((name, move.name, time.perf_counter() - start))
        return self.moved[name, layout]

    def run(self, step: _Step) -> None:
        """Runs ``step`` on its inputs, keeps its output and frees what it read last."""
        name = step.layer.name
        y = step.run(*(self.read(n, step.reads) for n in step.layer.inputs))
        four_d = len(self.shapes[name]) == 4
        if four_d and not step.writes.block:
            y = to_layout(y, step.writes)  # free when the op kept the memory format (torch's ops do)
        self.values[name], self.layouts[name] = y, step.writes if four_d else CHW
        for dead in step.free:
            del self.values[dead]
            for key in [k for k in self.moved if k[0] == dead]:
                del self.moved[key]


@functools.lru_cache(maxsize=1)
def _module_class() -> type:
    """The module class, made on first use so that importing this module does not import torch."""
    import torch
    from torch import nn

    class SelectedNetwork(nn.Module):
        """A network whose convolutions run through chosen primitives (see :func:`build_selected`).

        ``labels``: node name -> option label; ``layers``: ``build_torch``'s modules (the weights).
        ``forward(*inputs)`` takes chw tensors in the order of ``network.inputs`` and returns chw outputs: a
        tensor for one output, else a tuple. ``timed_moves``, when set to a list, gets every layout move of a
        forward pass (activation, transformation name, seconds); ``timed_steps`` every step (layer name, seconds:
        the moves of its inputs, the layer, and the move of its output).
        """

        def __init__(self, network: Network, labels: Mapping[str, str], seed: int, threads: int) -> None:
            super().__init__()
            reference = build_torch(network, seed)
            self.network = network
            self.labels = dict(labels)
            self.layers = reference.layers
            self._shapes = activation_shapes(network)
            self._steps = _selected_steps(network, reference.layer_modules(), labels, threads)
            self.timed_moves: list[tuple[str, str, float]] | None = None
            self.timed_steps: list[tuple[str, float]] | None = None

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
            specs = self.network.inputs
            if len(inputs) != len(specs):
                raise TypeError(f"{self.network.name}: expected {len(specs)} input tensor(s), got {len(inputs)}")
            with torch.no_grad():
                activations = _Activations({spec.name: x for spec, x in zip(specs, inputs, strict=True)},
                                           self._shapes, self.timed_moves)
                for step in self._steps:
                    if self.timed_steps is None:
                        activations.run(step)
                        continue
                    start = time.perf_counter()
                    activations.run(step)
                    self.timed_steps.append((step.layer.name, time.perf_counter() - start))
                outputs = tuple(activations.read(name, CHW) for name in self.network.outputs)
            return outputs[0] if len(outputs) == 1 else outputs

    return SelectedNetwork


def build_selected(network: Network, selection: Selection | Mapping[str, str], seed: int = 0,
                   threads: int = 1) -> nn.Module:
    """``network`` as an eval-mode torch module running ``selection`` (a :class:`Selection` of
    :func:`network_cost_graph`'s graph, or node name -> label; see :func:`selection_labels`).

    Weights are ``build_torch(network, seed)``'s, so the outputs are comparable with that module's. Every
    convolution's primitive is prepared once here with ``threads`` (ONNX Runtime sessions take it; OpenCV's
    setting is process-wide and is set by its prepare); torch's own thread count is left as it is.
    """
    labels = selection_labels(network, selection)
    module: nn.Module = _module_class()(network, labels, seed, threads)
    return module.eval().requires_grad_(False)


def _inputs(network: Network, seed: int) -> list[torch.Tensor]:
    import torch

    return [torch.from_numpy(x) for x in random_inputs([spec.shape for spec in network.inputs], seed)]


def _outputs(result: Any) -> tuple[Any, ...]:
    return result if isinstance(result, tuple) else (result,)


def verify_selected(network: Network, selection: Selection | Mapping[str, str],
                    tolerance: float = NETWORK_TOLERANCE, seed: int = 0, threads: int = 1) -> float:
    """The largest relative error of the selected network's outputs against ``build_torch(network, seed)``'s on
    the same seeded inputs (:func:`~nnperf.measure.backends.random_inputs`): ``max|y - ref| / max|ref|`` over
    every output. Above ``tolerance`` (default :data:`NETWORK_TOLERANCE`) raises
    :class:`SelectionAccuracyError` naming the output."""
    import torch

    selected = build_selected(network, selection, seed, threads)
    reference = build_torch(network, seed)
    inputs = _inputs(network, seed)
    with torch.no_grad():
        got, want = _outputs(selected(*inputs)), _outputs(reference(*inputs))
    worst, where = 0.0, ""
    for name, y, ref in zip(network.outputs, got, want, strict=True):
        scale = max(float(ref.abs().max()), torch.finfo(torch.float32).tiny)
        error = float((y - ref).abs().max()) / scale
        if error > worst or not where:
            worst, where = error, name
    if not worst <= tolerance:
        raise SelectionAccuracyError(f"the selected {network.name!r} differs from build_torch's at output {where!r} "
                                     f"by {worst:.3g} of its largest magnitude, above the tolerance {tolerance:g}",
                                     worst, tolerance)
    return worst


def measure_selected(network: Network, selection: Selection | Mapping[str, str],
                     harness: HarnessConfig = DEFAULT_HARNESS, seed: int = 0, threads: int = 1) -> Timing:
    """The end-to-end time of one inference of the selected network (transformations included) on seeded
    inputs, by the measurement harness, with torch on ``threads`` threads (restored afterwards)."""
    import torch

    module = build_selected(network, selection, seed, threads)
    inputs = _inputs(network, seed)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return measure(LoopTimer(functools.partial(module, *inputs)), harness)
    finally:
        torch.set_num_threads(before)
