"""Import an ONNX file into the IR, using onnx's checker and shape inference.

The file is read and checked as data only (``_onnx_read``): nothing in it is executed. Sizes it states as -1
are unknown, as symbolic ones are. Shapes are inferred, and shape computations and constant subgraphs folded
(``_onnx_fold``) until nothing more folds; sizes that inference leaves unknown come from one run in ONNX Runtime
(``_onnx_run_shapes``). The converter
(``_onnx_converter``) then maps each node that computes on activations by the rule of its operator in
``ONNX_IMPORTERS`` (``_onnx_table``: one handler per ``op_type``), with exporter patterns fused back:
Sigmoid+Mul into SiLU, MatMul+Add into a fully connected layer with a bias, Mul+Add by per-channel constants
into a scale layer with a bias, GELU's Erf form and torch.export's softplus (``_onnx_patterns``), decomposed
layer and group normalisation, a Split as one slice layer per output, and Reshape-Transpose-Reshape as one
channel shuffle (``fuse_channel_shuffle``, shared with the torch importer). :func:`from_onnx_with_weights` also
gives the file's own parameters for the layers (``_onnx_weights``), to rebuild what the file computes.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

import onnx
from onnx import shape_inference

from nnperf.errors import InvalidNetworkError, NnperfWarning, ShapeInferenceError
from nnperf.ir._network import Network
from nnperf.ir._shapes import Shape
from nnperf.ir._transforms import fuse_channel_shuffle, remove_noops
from nnperf.ir.importers._onnx_converter import Converter
from nnperf.ir.importers._onnx_fold import fold_constants
from nnperf.ir.importers._onnx_read import (
    drop_large_weights,
    fix_input_shapes,
    forget_negative_sizes,
    one_line,
    read_model,
    static_shapes,
)
from nnperf.ir.importers._onnx_run_shapes import shapes_by_running
from nnperf.ir.importers._onnx_table import ONNX_IMPORTERS, ONNX_NOT_IMPORTED
from nnperf.ir.importers._onnx_weights import FileWeights, file_weights

__all__ = ["ONNX_IMPORTERS", "ONNX_NOT_IMPORTED", "FileWeights", "from_onnx", "from_onnx_with_weights"]

MAX_FOLD_ROUNDS = 64
"""Folding and inference alternate until nothing more folds (torch's exporter chains ``chunk`` after ``chunk``,
each Slice bound computed from the shape of the one before), at most this many times. Swin-T's shifted windows
fold in 17 rounds (at 16, its last block's Shape nodes were left), Swin-B's in 29."""


def from_onnx(
    path: str | Path,
    input_shapes: Mapping[str, Shape] | None = None,
    name: str | None = None,
    keep_noops: bool = False,
    strict: bool = False,
    fold: bool = True,
) -> Network:
    """The IR of the ONNX model at ``path``.

    A symbolic batch dimension of a graph input is fixed to 1; other symbolic
    dimensions need ``input_shapes`` (input name -> full shape). Identity and
    dropout nodes are dropped unless ``keep_noops`` is set. A node no rule maps becomes a generic layer (the
    node kept as it is, see ``_onnx_generic``) unless ``strict`` is set, which refuses the file naming them.
    ``fold=False`` leaves shape computations and constant subgraphs unfolded (what folding adds is measured by
    ``bench/onnx_import_coverage.py``).
    """
    return _imported(Path(path), input_shapes, name, keep_noops, strict, fold)[0]


def from_onnx_with_weights(path: str | Path, input_shapes: Mapping[str, Shape] | None = None,
                           name: str | None = None) -> tuple[Network, FileWeights]:
    """The IR of the ONNX model at ``path`` (as :func:`from_onnx` imports it) and the file's own parameters for
    its layers (``_onnx_weights``): given to the graph builders (``build_torch(network, weights=...)``,
    ``build_onnx``), the rebuilt network computes what the file computes."""
    path = Path(path)
    network, converter = _imported(path, input_shapes, name, keep_noops=False, strict=False, fold=True)
    return network, file_weights(converter, network, path)


def _imported(path: Path, input_shapes: Mapping[str, Shape] | None, name: str | None, keep_noops: bool,
              strict: bool, fold: bool) -> tuple[Network, Converter]:
    """The network of :func:`from_onnx`, and the converter that made it (what it read of the file)."""
    model = read_model(path)
    forget_negative_sizes(model)
    fix_input_shapes(model, dict(input_shapes or {}), path)
    drop_large_weights(model)
    inferred = _inferred(model, path)
    inferred = _folded(inferred, path) if fold else inferred
    added, not_run = _add_shapes_from_a_run(inferred, path)
    if added and fold:  # other domains' operators' sizes: what they feed folds now
        inferred = _folded(inferred, path)
    converter = Converter(inferred, name or path.stem, str(path), ONNX_IMPORTERS, strict, not_run)
    network = converter.convert()
    if keep_noops:
        return network, converter
    try:
        return fuse_channel_shuffle(remove_noops(network)), converter
    except InvalidNetworkError as exc:  # nothing but identities and dropouts
        raise InvalidNetworkError(f"{path}: {exc} once its identity and dropout nodes are dropped (they cost "
                                  "nothing to predict)") from exc


def _inferred(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """``model`` with every tensor's shape that can be inferred."""
    try:
        return shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError, ValueError) as exc:
        # ValueError: a tensor data type that onnx does not know (the checker lets it through)
        raise ShapeInferenceError(f"{path}: shapes cannot be inferred: {one_line(exc)}") from exc


def _folded(inferred: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """``inferred`` with its shape computations and constant subgraphs folded, inferred again after each round."""
    for _ in range(MAX_FOLD_ROUNDS):  # a chain computed from the shape of another chain's result needs a round more
        if not fold_constants(inferred, static_shapes(inferred)):
            break
        inferred = _inferred(inferred, path)  # computed bounds and shapes became constants
    return inferred


def _add_shapes_from_a_run(model: onnx.ModelProto, path: Path) -> tuple[bool, str]:
    """Gives the tensors whose sizes depend on values (NonZero, Unique, computed axes, an If's branch) or come
    from operators onnx does not know (ONNX Runtime's QLinearAdd) the shapes of one run in ONNX Runtime
    (``_onnx_run_shapes``), with a warning naming the operators; nothing when every shape is known or ONNX Runtime
    cannot run the file (the importer then names the nodes whose shapes are unknown, and why it could not run).
    Whether any shape was added, and ONNX Runtime's error when it could not run the file."""
    shapes = static_shapes(model)
    unknown = {t: node.op_type for node in model.graph.node for t in node.output if t and shapes.get(t) is None}
    if not unknown:
        return False, ""
    found, error = shapes_by_running(model, list(unknown), path)
    if not found:
        return False, error
    empty = sorted({unknown[t] for t, (shape, _) in found.items() if 0 in shape})
    found = {t: (tuple(max(d, 1) for d in shape), elem) for t, (shape, elem) in found.items()}
    values: dict[str, list[onnx.ValueInfoProto]] = {}
    for value in (*model.graph.value_info, *model.graph.output):
        values.setdefault(value.name, []).append(value)
    for tensor, (shape, elem_type) in found.items():
        if tensor not in values:
            values[tensor] = [model.graph.value_info.add()]
            values[tensor][0].name = tensor
        for value in values[tensor]:
            value.type.tensor_type.elem_type = elem_type
            value.type.tensor_type.shape.Clear()
            for size in shape:
                value.type.tensor_type.shape.dim.add().dim_value = size
    operators = ", ".join(sorted({unknown[t] for t in found}))
    empties = f"; an empty result ({', '.join(empty)}) counts as one element" if empty else ""
    warnings.warn(f"{path}: shape inference left {len(found)} tensor size(s) unknown ({operators}: sizes that "
                  "depend on values, or operators onnx does not know); nnperf took them from one run of ONNX Runtime "
                  f"on random inputs{empties}", NnperfWarning, stacklevel=4)
    return True, ""
