"""Export a PyTorch module to ONNX without folding its layers together.

Imports torch, so it is a module of its own rather than a name in :mod:`nnperf.ir`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path

import torch
from torch import nn

from nnperf.errors import NnperfError


class ExportError(NnperfError):
    """A module that torch.onnx cannot export."""


def check_output_path(path: str | Path) -> Path:
    """``path`` as a Path, once it is known that an ONNX file can be written there."""
    path = Path(path)
    if path.suffix.lower() != ".onnx":
        raise ExportError(f"{path}: the output file must end in .onnx")
    if not path.parent.is_dir():
        raise ExportError(f"{path}: the folder {path.parent} does not exist")
    return path


def export_onnx(module: nn.Module, example_input: torch.Tensor, path: str | Path) -> Path:
    """Writes ``module`` to ``path`` as ONNX (opset 20) through torch.export.

    Constants are folded but the graph is not otherwise optimised: the default
    optimiser folds batch normalisation into the preceding convolution, which
    would change the layers, parameters and MACs nnperf reports for the file.
    """
    import onnxscript.optimizer  # imported here: only exporting needs it

    path = check_output_path(path)
    module = module.eval()
    quiet = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet), \
                _quiet_loggers("torch.onnx", "torch.export", "onnxscript"):
            warnings.simplefilter("ignore")
            program = torch.onnx.export(module, (example_input,), dynamo=True, optimize=False, verbose=False)
            assert program is not None
            model = program.model_proto
            onnxscript.optimizer.fold_constants(model)
            onnxscript.optimizer.remove_unused_nodes(model)
    except Exception as exc:  # torch.onnx raises many types
        raise ExportError(f"exporting {type(module).__name__} to ONNX failed: {exc}") from exc
    import onnx

    onnx.save(model, str(path))
    return path


@contextlib.contextmanager
def _quiet_loggers(*names: str):  # type: ignore[no-untyped-def]
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
