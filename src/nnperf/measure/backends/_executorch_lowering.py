"""How the ExecuTorch backend makes its programs: IR networks and layers exported with ``torch.export``, lowered
to XNNPACK (or to the portable kernels alone) and emitted as ExecuTorch programs, one network at a time or many
layers at once (:func:`lower_layers`), with every refusal followed back to the IR layers it concerns."""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from nnperf.errors import NnperfError, UnsupportedOperatorError
from nnperf.ir import GenericAttrs, Layer, Network
from nnperf.measure._harness import MeasurementError
from nnperf.measure.backends._base import layer_input_dtypes, random_inputs

OTHER_BACKEND = "measure it with --backend torch"
"""What an error says to do with a layer ExecuTorch cannot run: the torch backend runs every module nnperf builds."""

_OPERATOR = re.compile(r"\baten[.:]+(\w+)(?:\.(\w+))?")
_MODULE_PATH = re.compile(r"(?:^|\.)layers\.(\w+)")


def executorch_modules() -> SimpleNamespace:
    """The parts of torch and ExecuTorch this backend uses, imported once, quietly (torchao, which ExecuTorch
    imports, logs the CUDA libraries it cannot load, and the bindings warn that they are experimental)."""
    with quiet():
        import torch
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.backends.xnnpack.serialization import xnnpack_graph_serialize
        from executorch.devtools.etdump import serialize as etdump
        from executorch.exir import EdgeCompileConfig, EdgeProgramManager, to_edge, to_edge_transform_and_lower
        from executorch.exir._serialize import _flatbuffer
        from executorch.exir.backend.canonical_partitioners.pattern_op_partitioner import (
            generate_grouped_partitions_from_list_of_nodes,
        )
        from executorch.exir.lowered_backend_module import get_lowered_submodules
        from executorch.extension.pybindings import portable_lib
    return SimpleNamespace(torch=torch, XnnpackPartitioner=XnnpackPartitioner, to_edge=to_edge,
                           to_edge_transform_and_lower=to_edge_transform_and_lower,
                           EdgeCompileConfig=EdgeCompileConfig, EdgeProgramManager=EdgeProgramManager,
                           grouped_partitions=generate_grouped_partitions_from_list_of_nodes,
                           lowered_submodules=get_lowered_submodules, runtime=portable_lib, etdump=etdump,
                           xnn_serialize=xnnpack_graph_serialize, flatbuffer=_flatbuffer)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Python warnings off, and log records below ERROR dropped, for the block (export and lowering warn about
    deprecations nnperf cannot act on)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def torch_inputs(shapes: list[tuple[int, ...]], seed: int, dtypes: Sequence[str]) -> list[Any]:
    """The backends' fixed random inputs (:func:`random_inputs`) as torch tensors, which ExecuTorch's bindings
    take."""
    import torch

    return [torch.from_numpy(array) for array in random_inputs(shapes, seed, dtypes)]


# ---------------------------------------------------------------------------------------------------- lowering
def runnable(module: Any) -> Any:
    """``module`` (changed in place) with the submodules ExecuTorch has no kernels for made to compute the same
    with kernels it has (the backend's class docstring says which): their class is swapped, so that every reference
    to them (a :class:`GraphModule` keeps its own list) runs the new one."""
    import torch

    channel_lrn, whole_map_max_pool = _swaps()
    for child in module.modules():
        if type(child) is torch.nn.LocalResponseNorm:
            child.__class__ = channel_lrn
        elif type(child) is torch.nn.AdaptiveMaxPool2d and child.output_size in (1, (1, 1)):
            child.__class__ = whole_map_max_pool
        elif isinstance(child, torch.nn.modules.batchnorm._BatchNorm) and not child.affine:
            _with_unit_affine(child)
    return module


def _with_unit_affine(norm: Any) -> None:
    """A batch norm without scale and shift given a scale of one and a shift of zero (the same function):
    XNNPACK's pass that turns a batch norm it cannot fuse into a depthwise convolution names the new weights after
    the scale, so two scale-less ones in a delegate get the same weights (ExecuTorch 1.5.1)."""
    import torch

    ones = torch.ones(norm.num_features)
    norm.affine = True
    norm.weight = torch.nn.Parameter(ones, requires_grad=False)
    norm.bias = torch.nn.Parameter(torch.zeros_like(ones), requires_grad=False)


@functools.cache
def _swaps() -> tuple[type, type]:
    """The classes :func:`runnable` gives the modules it changes (defined on first use: they subclass torch's)."""
    import torch
    import torch.nn.functional as F

    class ChannelLrn(torch.nn.LocalResponseNorm):
        """Local response normalisation across channels with a two-dimensional average pooling of the squares,
        channels as rows and every spatial position a column."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            n, c = x.shape[0], x.shape[1]
            squares = F.pad((x * x).reshape(n, 1, c, -1), (0, 0, self.size // 2, (self.size - 1) // 2))
            mean = F.avg_pool2d(squares, (self.size, 1), stride=1).reshape(x.shape)
            return x / (mean * self.alpha + self.k).pow(self.beta)

    class WholeMapMaxPool(torch.nn.AdaptiveMaxPool2d):
        """Global max pooling as one max pooling window over the whole map."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.max_pool2d(x, tuple(x.shape[-2:]))

    return ChannelLrn, WholeMapMaxPool


class Unlowerable(Exception):
    """A graph ExecuTorch cannot export, lower or run: ``reason`` in a few words, the operators it names with the
    modules (IR layer keys) that use them, and ``no_kernel`` when the program was made but the runtime has no kernel
    for some of its operators."""

    def __init__(self, reason: str, by_operator: Mapping[str, list[str]] | None = None,
                 no_kernel: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.by_operator = dict(by_operator or {})
        self.no_kernel = no_kernel


@dataclass(frozen=True)
class Delegate:
    """A delegate of a lowered program: its backend, the IR layer key of each graph node it took (by debug handle)
    and its serialised graph."""

    backend_id: str
    inside: Mapping[int, str | None]
    processed: bytes


@dataclass(frozen=True)
class Lowered:
    """A lowered program: its bytes, and what profiling needs to say whom each instruction ran for: the debug
    handles of the graph nodes each instruction runs (ExecuTorch's emitter's map), the instructions that call a
    delegate, the edge graph's nodes by debug handle (their name and IR layer key; emitting rewrites the graph, so
    they are read before) and the delegates."""

    buffer: bytes
    instructions: Mapping[int, Any]
    delegated: frozenset[int]
    nodes: Mapping[int, tuple[str, str | None]]
    delegates: tuple[Delegate, ...]


def _export(et: SimpleNamespace, module: Any, inputs: Sequence[Any]) -> Any:
    try:
        with quiet():
            return et.torch.export.export(module, tuple(inputs))
    except Exception as exc:  # torch.export raises many types (UserError, Unsupported, TorchRuntimeError, ...)
        raise Unlowerable(f"torch.export cannot trace it: {_first_line(exc)}") from exc


def _to_edge(et: SimpleNamespace, exported: Any, delegate: str, partitioner: Any) -> Any:
    try:
        with quiet():
            if delegate == "portable":
                return et.to_edge(exported)
            return et.to_edge_transform_and_lower(exported, partitioner=[partitioner])
    except Exception as exc:  # ExecuTorch raises SpecViolationError, RuntimeError, AssertionError, ...
        raise Unlowerable(f"ExecuTorch cannot lower it: {_first_line(exc)}",
                           _operators_named(str(exc), exported.graph)) from exc


def _to_program(et: SimpleNamespace, edge: Any) -> Lowered:
    """``edge`` emitted as a program; operators the runtime has no kernel for are refused here, before loading
    (where the runtime would only say 'error 0x14')."""
    graph_module = edge.exported_program().graph_module  # read before emitting, which rewrites the graph
    callers = _operator_keys(graph_module.graph)
    nodes: dict[int, tuple[str, str | None]] = {}
    for node in graph_module.graph.nodes:  # nodes one operator was decomposed into share its handle
        handle, key = node.meta.get("debug_handle"), module_key(node)
        if node.op == "call_function" and isinstance(handle, int) and (handle not in nodes or nodes[handle][1] is None):
            nodes[handle] = (node.name, key)
    delegates = tuple(Delegate(module.backend_id, {n.meta.get("debug_handle"): module_key(n)
                                                   for n in module.original_module.graph.nodes
                                                   if n.op == "call_function"}, module.processed_bytes)
                      for _, module, _ in et.lowered_submodules(graph_module))
    try:
        with quiet():
            program = edge.to_executorch()
            buffer = program.buffer
    except Exception as exc:
        raise Unlowerable(f"ExecuTorch cannot emit it: {_first_line(exc)}") from exc
    kernels = set(et.runtime._get_operator_names())
    missing = sorted({f"{op.name}.{op.overload}" for plan in program.executorch_program.execution_plan
                      for op in plan.operators} - kernels)
    if missing:
        named = {match.group(1) for match in _OPERATOR.finditer(" ".join(missing))}
        by_operator = {operator: keys for operator, keys in callers.items() if operator in named}
        raise Unlowerable(f"ExecuTorch's runtime has no kernel for {', '.join(missing)}", by_operator, True)
    return Lowered(buffer, dict(program.debug_handle_map.get("forward", {})),
                   frozenset(program.delegate_map.get("forward", {})), nodes, delegates)


def lower_network(et: SimpleNamespace, module: Any, inputs: Sequence[Any], delegate: str) -> Lowered:
    exported = _export(et, module, inputs)
    return _to_program(et, _to_edge(et, exported, delegate, et.XnnpackPartitioner()))


def _operators_named(message: str, graph: Any) -> dict[str, list[str]]:
    """The aten operators ``message`` names, each with the modules (IR layer keys) of ``graph`` that call it."""
    named = {match.group(1) for match in _OPERATOR.finditer(message)}
    return {operator: keys for operator, keys in _operator_keys(graph).items() if operator in named}


def _operator_keys(graph: Any) -> dict[str, list[str]]:
    """Each aten operator ``graph`` calls, with the modules (IR layer keys) that call it."""
    found: dict[str, list[str]] = {}
    for node in graph.nodes:
        match = _OPERATOR.search(str(getattr(node.target, "__name__", node.target)).replace("::", "."))
        key = module_key(node) if node.op == "call_function" else None
        if match and key is not None and key not in found.get(match.group(1), []):
            found.setdefault(match.group(1), []).append(key)
    return found


def module_key(node: Any) -> str | None:
    """The IR layer key (the module under ``layers``) whose call made ``node``, from ``torch.export``'s module
    stack; None for nodes no layer's module made."""
    stack = node.meta.get("nn_module_stack") or {}
    for path, _ in reversed(list(stack.values())):
        match = _MODULE_PATH.search(str(path))
        if match:
            return match.group(1)
    return None


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def module_layers(module: Any) -> dict[str, str]:
    """IR layer name by the key of its module in a :class:`GraphModule` (keys are the names made identifiers)."""
    return {key: layer.name for key, (layer, _) in zip(module.layers.keys(), module.layer_modules())}


def network_error(network: Network, exc: Unlowerable, seed: int) -> UnsupportedOperatorError | MeasurementError:
    """One line for a network ExecuTorch cannot lower: the layers that use the operators it names, or (when it
    names none) the layers ``torch.export`` cannot trace alone."""
    from nnperf.measure.backends._torch_graph import build_torch

    names = module_layers(build_torch(network, seed))
    problems: dict[str, list[str]] = {}
    for keys in exc.by_operator.values():
        for layer in (network.layer(names[key]) for key in keys if key in names):
            problems.setdefault(f"{_kind(layer)} ({exc.reason}; {OTHER_BACKEND})", []).append(layer.name)
    if not problems and exc.reason.startswith("torch.export"):
        problems = _untraceable_layers(network, seed)
    if problems:
        return UnsupportedOperatorError(network.name, problems)
    return MeasurementError(f"ExecuTorch cannot run the program nnperf made of {network.name!r}: {exc.reason} "
                            f"({OTHER_BACKEND})")


def _untraceable_layers(network: Network, seed: int) -> dict[str, list[str]]:
    """The layers of ``network`` that ``torch.export`` cannot trace alone, by operator and reason."""
    from nnperf.measure.backends._torch_graph import layer_module

    et = executorch_modules()
    problems: dict[str, list[str]] = {}
    for layer in network.layers:
        try:
            _export(et, runnable(layer_module(layer, seed)),
                    torch_inputs(list(layer.input_shapes), seed, layer_input_dtypes(layer)))
        except Unlowerable as exc:
            problems.setdefault(f"{_kind(layer)} ({exc.reason}; {OTHER_BACKEND})", []).append(layer.name)
    return problems


# ---------------------------------------------------------------------------------------------------- many layers
def lower_layers(et: SimpleNamespace, layers: Sequence[Layer], seed: int,
                 delegate: str) -> list[bytes | NnperfError | None]:
    """A program for each of ``layers`` (in order), lowered all at once: the layers side by side in one graph (each
    with its own inputs), each in XNNPACK delegates of its own, the lowered graph cut into one program per layer. A
    layer the runtime has no kernel for, or that the torch builder refuses, gets its error instead, and one whose
    cut program fails None (to be lowered alone). Raises Unlowerable when the graph as a whole cannot be exported
    or lowered."""
    from nnperf.measure.backends._torch_graph import layer_module

    found: list[bytes | NnperfError | None] = [None] * len(layers)
    modules, kept = [], []
    for index, layer in enumerate(layers):
        try:
            modules.append(runnable(layer_module(layer, seed)))
            kept.append(index)
        except NnperfError as exc:  # a layer the torch builder refuses, or too big for the free memory
            found[index] = exc
    if not kept:
        return found
    inputs = [x for i in kept for x in torch_inputs(list(layers[i].input_shapes), seed, layer_input_dtypes(layers[i]))]
    arities = [len(layers[i].inputs) for i in kept]
    exported = _export(et, _side_by_side(modules, arities), inputs)
    programs = _cut(_to_edge(et, exported, delegate, _per_layer_partitioner(et)).exported_program(), arities)
    for index, program in zip(kept, programs):
        try:
            with quiet():
                edge = et.EdgeProgramManager({"forward": program},
                                             compile_config=et.EdgeCompileConfig(_check_ir_validity=False))
            found[index] = _to_program(et, edge).buffer
        except Unlowerable as exc:
            found[index] = _layer_error(layers[index], exc) if exc.no_kernel else None
        except Exception:  # noqa: BLE001 - a cut ExecuTorch will not emit (or none): the layer is lowered alone
            found[index] = None
    return found


def lower_one(et: SimpleNamespace, layer: Layer, seed: int, delegate: str) -> bytes | NnperfError:
    """``layer``'s program lowered alone, or why it cannot be."""
    from nnperf.measure.backends._torch_graph import layer_module

    try:
        module = runnable(layer_module(layer, seed))
        inputs = torch_inputs(list(layer.input_shapes), seed, layer_input_dtypes(layer))
        return lower_network(et, module, inputs, delegate).buffer
    except NnperfError as exc:
        return exc
    except Unlowerable as exc:
        return _layer_error(layer, exc)


def _layer_error(layer: Layer, exc: Unlowerable) -> UnsupportedOperatorError:
    return UnsupportedOperatorError(layer.name, {f"{_kind(layer)} ({exc.reason}; {OTHER_BACKEND})": [layer.name]})


def _kind(layer: Layer) -> str:
    """The layer's operator as errors name it: its op type, or the ONNX operator a generic layer keeps."""
    return f"generic {layer.attrs.operator}" if isinstance(layer.attrs, GenericAttrs) else layer.op.value


def _side_by_side(modules: Sequence[Any], arities: Sequence[int]) -> Any:
    """One module running ``modules`` independently: its inputs are theirs in turn, its outputs theirs."""
    import torch

    class SideBySide(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(modules)

        def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
            outputs, at = [], 0
            for module, arity in zip(self.layers, arities):
                outputs.append(module(*inputs[at:at + arity]))
                at += arity
            return tuple(outputs)

    return SideBySide().eval()


def _per_layer_partitioner(et: SimpleNamespace) -> Any:
    """XNNPACK's partitioner, its partitions cut along layers: each layer's supported operators in delegates of
    their own (as XNNPACK's grouping would make of that layer alone), never one delegate for several layers."""

    class PerLayer(et.XnnpackPartitioner):  # type: ignore[misc, name-defined]
        def generate_partitions(self, ep: Any) -> list[Any]:
            by_layer: dict[str | None, list[list[Any]]] = {}
            for group in self.get_matched_nodes_from_configs(ep):
                key = next((k for k in map(module_key, group) if k is not None), None)
                by_layer.setdefault(key, []).append(group)
            partitions: list[Any] = []
            for groups in by_layer.values():
                for partition in et.grouped_partitions(ep.graph_module, groups):
                    partition.id = len(partitions)
                    partitions.append(partition)
                for node in (node for group in groups for node in group):
                    node.meta.pop("match", None)  # left on nodes no partition took, it would mark them for the next
            return partitions

    return PerLayer()


def _cut(program: Any, arities: Sequence[int]) -> list[Any]:
    """The lowered side-by-side ``program`` as one program per layer (in order; None for a layer it cannot cut
    out): each keeps its layer's inputs, nodes, delegates and constants, and returns its layer's output."""
    try:
        owner = _owners(program, arities)
        outputs = program.graph.output_node().args[0]
    except Exception as exc:  # a graph the cut does not understand: every layer alone instead
        raise Unlowerable(f"the lowered graph cannot be cut into layers: {_first_line(exc)}") from exc
    cuts: list[Any] = []
    for index in range(len(arities)):
        try:
            cuts.append(_program_of(program, [n for n in program.graph.nodes if owner.get(n) == index],
                                    outputs[index]))
        except Exception:  # noqa: BLE001 - this layer alone instead
            cuts.append(None)
    return cuts


def _owners(program: Any, arities: Sequence[int]) -> dict[Any, int]:
    """The layer (index) of every node of the side-by-side ``program``: user inputs by position, operators by
    their module stack (a delegate by its nodes'), the rest by their inputs' or else their users' layer."""
    gm, graph = program.graph_module, program.graph
    user_inputs = set(program.graph_signature.user_inputs)
    placeholders = [n for n in graph.nodes if n.op == "placeholder" and n.name in user_inputs]
    layer_of_input = [index for index, arity in enumerate(arities) for _ in range(arity)]
    owner: dict[Any, int] = dict(zip(placeholders, layer_of_input))
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        key = module_key(node)
        if key is None and node.args and getattr(node.args[0], "op", "") == "get_attr":
            inside = getattr(getattr(getattr(gm, node.args[0].target, None), "original_module", None), "graph", None)
            key = next((k for k in map(module_key, inside.nodes) if k is not None), None) if inside else None
        if key is not None and key.isdigit():
            owner[node] = int(key)
        else:
            owner_of_input = next((owner[n] for n in node.all_input_nodes if n in owner), None)
            if owner_of_input is not None:
                owner[node] = owner_of_input
    for node in reversed(graph.nodes):
        if node.op == "call_function" and node not in owner:
            owner_of_user = next((owner[u] for u in node.users if u in owner), None)
            if owner_of_user is not None:
                owner[node] = owner_of_user
    return owner


def _program_of(program: Any, nodes: Sequence[Any], output: Any) -> Any:
    """The program of ``nodes`` of ``program`` (with the inputs, constants and delegates they read), returning
    ``output``."""
    import torch
    from torch.export.exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
    from torch.export.graph_signature import ExportGraphSignature, OutputKind, OutputSpec, TensorArgument
    from torch.utils import _pytree as pytree

    needed = set(nodes) | {n for node in nodes for n in node.all_input_nodes if n.op in ("placeholder", "get_attr")}
    needed |= {output} if output.op == "placeholder" else set()
    graph = torch.fx.Graph()
    env: dict[Any, Any] = {}
    specs = {spec.arg.name: spec for spec in program.graph_signature.input_specs}
    input_specs = []
    for node in program.graph.nodes:
        if node in needed:
            env[node] = graph.node_copy(node, lambda n: env[n])
            if node.op == "placeholder":
                input_specs.append(specs[node.name])
    graph.output((env[output],))
    output_specs = [OutputSpec(kind=OutputKind.USER_OUTPUT, arg=TensorArgument(name=env[output].name), target=None)]
    signature = ExportGraphSignature(input_specs=input_specs, output_specs=output_specs)
    targets = {spec.target for spec in input_specs if spec.target is not None}
    in_spec = pytree.tree_flatten((tuple(signature.user_inputs), {}))[1]
    out_spec = pytree.tree_flatten(signature.user_outputs)[1]
    module = torch.fx.GraphModule(program.graph_module, graph)
    return ExportedProgram(
        root=module, graph=module.graph, graph_signature=signature,
        state_dict={k: v for k, v in program.state_dict.items() if k in targets}, range_constraints={},
        module_call_graph=[ModuleCallEntry("", ModuleCallSignature(inputs=[], outputs=[], in_spec=in_spec,
                                                                   out_spec=out_spec))],
        constants={k: v for k, v in program.constants.items() if k in targets}, verifiers=[program.verifier])
