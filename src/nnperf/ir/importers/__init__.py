"""Importers from PyTorch modules, ONNX files and .tflite files into the IR."""

from nnperf.ir.importers._onnx import ONNX_IMPORTERS, ONNX_NOT_IMPORTED, FileWeights, from_onnx, from_onnx_with_weights
from nnperf.ir.importers._onnx_generic import rename_outer
from nnperf.ir.importers._table import ImportRule, imported_ops
from nnperf.ir.importers._tflite import TFLITE_IMPORTERS, TFLITE_TWINS, from_tflite
from nnperf.ir.importers._torch import (
    TORCH_CALL_IMPORTERS,
    TORCH_MODULE_IMPORTERS,
    TORCH_NOT_IMPORTED,
    TraceError,
    from_torch,
)

__all__ = [
    "ONNX_IMPORTERS", "ONNX_NOT_IMPORTED", "TFLITE_IMPORTERS", "TFLITE_TWINS", "TORCH_CALL_IMPORTERS",
    "TORCH_MODULE_IMPORTERS", "TORCH_NOT_IMPORTED", "FileWeights", "ImportRule", "TraceError", "from_onnx",
    "from_onnx_with_weights", "from_tflite", "from_torch", "imported_ops", "rename_outer",
]
