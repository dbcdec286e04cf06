"""Importers from PyTorch modules and ONNX files into the IR."""

from nnperf.ir.importers._onnx import from_onnx
from nnperf.ir.importers._torch import TraceError, from_torch

__all__ = ["TraceError", "from_onnx", "from_torch"]
