"""Import a .tflite file (LiteRT, formerly TensorFlow Lite) into the IR, float or int8, without TensorFlow.

The file is unpacked with LiteRT's own flatbuffer schema (``_tflite_read``: ai-edge-litert's
``schema_py_generated``): nothing in it is executed. The converter (``_tflite_convert``) walks the main subgraph
and maps each operator that computes on activations by the rule of its builtin operator in ``TFLITE_IMPORTERS``
(``_tflite_ops``: one handler per operator), TFLite's NHWC images becoming the IR's NCHW; stored tensors are
weights, counted in their layers' parameters, not layers. The network remembers the file and its digest
(:class:`~nnperf.ir.SourceFile`), so that the LiteRT backend runs the file itself.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from nnperf.ir._network import Network, SourceFile
from nnperf.ir.importers._tflite_convert import Converter
from nnperf.ir.importers._tflite_generic import twin_handler
from nnperf.ir.importers._tflite_ops import TFLITE_IMPORTERS, TFLITE_TWINS
from nnperf.ir.importers._tflite_read import read_tflite

__all__ = ["TFLITE_IMPORTERS", "TFLITE_TWINS", "from_tflite"]


def from_tflite(path: str | Path, strict: bool = False, name: str | None = None) -> Network:
    """The IR of the .tflite model at ``path`` (its main subgraph, the first).

    Shapes are the file's (a batch the file leaves dynamic is stored as 1); 4-D images become NCHW. An int8
    model imports as the float network it quantises, its int8 convolutions and matrix products named in
    ``int8_layers``. An operator no rule maps becomes a generic layer when it has an ONNX twin (abs, sqrt, rsqrt,
    minimum, ...: ``TFLITE_TWINS``), unless ``strict`` is set, which refuses the file naming them; any other is
    refused, every one listed at once (:class:`~nnperf.errors.UnsupportedOperatorError`). A missing, truncated or
    corrupted file, or a missing ai-edge-litert, is a :class:`~nnperf.errors.ModelFileError` naming the file.
    """
    path = Path(path)
    file = read_tflite(path)
    twins = {operator: twin_handler(twin) for operator, twin in TFLITE_TWINS.items()}
    network = Converter(file, name or path.stem, TFLITE_IMPORTERS, twins, strict).convert()
    source = SourceFile(path=str(path.resolve()), format="tflite", sha256=file.sha256)
    return dataclasses.replace(network, source=source)
