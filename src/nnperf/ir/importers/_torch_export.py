"""The second and third routes from a PyTorch module to the IR: through ONNX.

torch.fx traces a module symbolically, which Python control flow on tensor sizes or values stops, and nnperf's
torch.fx importer maps only the modules and calls it knows. When either fails, :func:`from_torch` exports the
module to ONNX, first with torch's torch.export-based exporter, then with its TorchScript one, and imports the
file with the ONNX importer (where any operator without a dedicated layer type becomes a generic layer). The route
taken is named in a warning (:class:`~nnperf.errors.NnperfWarning`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from nnperf.errors import NnperfError, NnperfWarning
from nnperf.ir._network import Network
from nnperf.ir.importers._onnx import from_onnx

EXPORTERS = ("torch.export", "TorchScript")
"""torch's ONNX exporters, in the order the fallback tries them."""


class ExportError(NnperfError):
    """A module that no route brings into the IR; the message names each route's failure."""


def via_onnx(module: nn.Module, inputs: tuple[torch.Tensor, ...], name: str, why: str,
             keep_noops: bool = False) -> Network:
    """The IR of ``module`` exported to ONNX (torch.export's exporter, else TorchScript's) and imported from the
    file; ``why`` says why the torch.fx route failed and goes into the warning naming the route taken."""
    failures = [why]
    with tempfile.TemporaryDirectory(prefix="nnperf-export-") as folder:
        for exporter in EXPORTERS:
            path = Path(folder) / f"{exporter.replace('.', '_')}.onnx"
            try:
                _export(module, inputs, path, dynamo=exporter == "torch.export")
            except Exception as exc:  # noqa: BLE001 - each exporter raises its own types; the message is kept
                failures.append(f"{exporter} export: {type(exc).__name__}: {first_line(exc)}")
                continue
            network = from_onnx(path, name=name, keep_noops=keep_noops)
            warnings.warn(f"{name}: imported through {exporter} and ONNX ({why})", NnperfWarning, stacklevel=3)
            return network
    raise ExportError(f"{name}: no route imports this module; " + "; ".join(failures))


def _export(module: nn.Module, inputs: Sequence[torch.Tensor], path: Path, dynamo: bool) -> None:
    """Writes ``module`` as an ONNX file at ``path``, silencing the exporters' progress and advice."""
    quiet = io.StringIO()
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet), \
                torch.no_grad():
            warnings.simplefilter("ignore")
            if dynamo:
                torch.onnx.export(module, tuple(inputs), str(path), dynamo=True, verbose=False, external_data=False)
            else:
                torch.onnx.export(module, tuple(inputs), str(path), dynamo=False, opset_version=17)
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def first_line(exc: Exception, limit: int = 200) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]
