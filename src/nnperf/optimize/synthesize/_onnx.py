"""ONNX Runtime programs: session settings, static int8 quantisation of chosen layers, per-node profiling.

Cappuccino (Motamedi et al., "Cappuccino: Efficient CNN inference software synthesis for mobile
system-on-chips", 2018) synthesises an inference program from three kinds of choice: how the work is
parallelised, the memory layout of the feature maps ("map-major" order, kept from layer to layer so that no
reordering is paid between them), and inexact arithmetic per layer under an accuracy budget.  On ONNX Runtime's
CPU provider these become:

* threads and sequential/parallel execution (:class:`OrtSettings`);
* the layout: ``"nchwc"`` turns on ORT's NCHWc transformer, which rewrites float convolutions and max pools
  into channel-blocked kernels (16 channels a block with AVX-512, 8 with AVX2) and removes every
  reorder between two of them, so the blocked layout is kept end to end, as Cappuccino's map-major order is;
  ``"plain"`` keeps NCHW.  Checked on ONNX Runtime 1.32 by saving the optimised ResNet-18: ``"nchwc"`` has 20
  ``com.microsoft.nchwc`` Conv nodes, one NCHWc MaxPool, no ReorderInput (the first convolution reads the
  3-channel NCHW input directly), one ReorderOutput (before the global pooling), and the residual Adds
  fused into the convolutions; ``"plain"`` has FusedConv (conv+BN+ReLU) and Conv nodes in NCHW.
* static int8 quantisation of exactly a chosen set of layers (:class:`Int8Quantizer`), in ORT's QDQ format,
  which ORT fuses into QLinearConv / QGemm kernels.  ``"nchwc"`` (ORT_ENABLE_ALL) also changes the int8
  layout: ORT's NHWC transformer runs uint8 QLinearConv channels-last, with a Transpose only where the
  int8 region starts or ends (3 in all-int8 ResNet-18).  Where an fp32 Add reads two DequantizeLinear and
  feeds a QuantizeLinear (a residual join between two int8 layers), ORT itself runs it as QLinearAdd: that
  is what DQ -> Add -> Q computes, so the numbers are those of the QDQ model.  Likewise a MaxPool between
  int8 layers runs on uint8 (ORT drops the DQ -> MaxPool -> Q pair around it); in NCHW (``"plain"``) that
  kernel is slow (about 10 ms of ResNet-18's 28 ms at 1 thread), in ``"nchwc"`` it is an NHWC MaxPool (~0.08 ms).
  Not always: in a mixed program ORT also moves a QuantizeLinear or DequantizeLinear across a MaxPool at the edge
  of an int8 region, and the NHWC transformer leaves some of those pools in NCHW (:func:`slow_int8_pools` counts
  them in ORT's optimised graph).
"""

from __future__ import annotations

import hashlib
import json
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.measure.backends.onnx_int8 import (
    ACTIVATION_TYPES,
    QUANTIZABLE_OPS,
    NodeOwners,
    fold_batch_norms,
    int8_nodes,
    quantize_qdq,
    quiet_logging,
)
from nnperf.optimize.synthesize._errors import SynthesisError, UnsupportedModeError, ValidationDataError

if TYPE_CHECKING:
    import onnx
    import onnxruntime

ORT_LAYOUTS = ("plain", "nchwc")
"""``"plain"``: graph optimisation ORT_ENABLE_EXTENDED (constant folding, conv+BN+activation and other fusions,
NCHW kept).  ``"nchwc"``: ORT_ENABLE_ALL, which adds the NCHWc blocked layout (on AVX2 / AVX-512 CPUs)."""

ORT_EXECUTIONS = ("sequential", "parallel")
"""``"sequential"`` runs one node at a time (ORT_SEQUENTIAL); ``"parallel"`` (ORT_PARALLEL) also runs
independent branches at once, on an inter-op pool of the same number of threads."""

DEFAULT_ACTIVATION_TYPE = "uint8"
"""uint8 activations with int8 weights: on x86, ORT 1.32 rewrites int8 activations to uint8 (QDQS8ToU8) and
then fuses only part of the graph (9 of ResNet-18's 20 convolutions became QLinearConv, the other 11 stayed
float Conv between DequantizeLinear nodes).  Measured on an Intel Xeon VM (AVX-512 VNNI), ResNet-18 all-int8,
1 thread, medians of interleaved repeats in two sessions: uint8 9.2 and 7.5 ms ("nchwc"), 14.9 and 17.8 ms
("plain"); int8 23.8 and 26.1 ms ("nchwc"), 22.2 and 28.6 ms ("plain")."""

_MAX_BATCH = 16
_CALIBRATION_FILE = "calibration_ranges.json"


@dataclass(frozen=True)
class OrtSettings:
    """How an ONNX Runtime CPU session runs a model.

    Each field maps to ``onnxruntime.SessionOptions`` (the names a standalone runner must set):

    * ``threads`` -> ``intra_op_num_threads`` (and ``inter_op_num_threads`` when parallel); default 1.
    * ``execution`` -> ``execution_mode``: ``"sequential"`` = ``ExecutionMode.ORT_SEQUENTIAL`` (default),
      ``"parallel"`` = ``ExecutionMode.ORT_PARALLEL``.
    * ``layout`` -> ``graph_optimization_level``: ``"plain"`` = ``GraphOptimizationLevel.ORT_ENABLE_EXTENDED``,
      ``"nchwc"`` = ``GraphOptimizationLevel.ORT_ENABLE_ALL`` (default).
    """

    threads: int = 1
    execution: str = "sequential"
    layout: str = "nchwc"

    def __post_init__(self) -> None:
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise SynthesisError(f"OrtSettings.threads must be a whole number >= 1, not {self.threads!r}")
        if self.execution not in ORT_EXECUTIONS:
            raise SynthesisError(f"OrtSettings.execution must be one of {ORT_EXECUTIONS}, not {self.execution!r}")
        if self.layout not in ORT_LAYOUTS:
            raise SynthesisError(f"OrtSettings.layout must be one of {ORT_LAYOUTS}, not {self.layout!r}")

    def session_options(self) -> onnxruntime.SessionOptions:
        """A fresh ``onnxruntime.SessionOptions`` with these settings (see the class docstring)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        if self.execution == "parallel":
            options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
            options.inter_op_num_threads = self.threads
        else:
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if self.layout == "nchwc"
                                            else ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        return options

    def to_dict(self) -> dict[str, Any]:
        """``{"threads": int, "execution": str, "layout": str}``, for JSON."""
        return {"threads": self.threads, "execution": self.execution, "layout": self.layout}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OrtSettings:
        """The settings :meth:`to_dict` wrote; unknown keys are refused rather than ignored."""
        unknown = sorted(set(data) - {"threads", "execution", "layout"})
        if unknown:
            raise SynthesisError(f"unknown OrtSettings keys {unknown}; expected threads, execution, layout")
        return cls(**data)


def named_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` in which every node has a unique, non-empty name.

    Unnamed nodes become ``f"{op_type}_{index}"`` (index in graph order); a name already taken (by an earlier
    node, or by a later node's own name) gets ``_1``, ``_2``... appended.  Quantising chosen layers and
    attributing profiled time both go by node name, so names must exist and be unique.
    """
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    own = {node.name for node in copy.graph.node if node.name}
    taken: set[str] = set()
    for index, node in enumerate(copy.graph.node):
        name = node.name or f"{node.op_type}_{index}"
        if name in taken or (not node.name and name in own):
            name = _free_name(name, taken | own)
        taken.add(name)
        node.name = name
    return copy


def _free_name(base: str, taken: set[str]) -> str:
    suffix = 1
    while f"{base}_{suffix}" in taken:
        suffix += 1
    return f"{base}_{suffix}"


def quantizable_nodes(model: onnx.ModelProto) -> tuple[str, ...]:
    """Names (as :func:`named_model` gives them) of the nodes int8 can run, in graph order.

    These are Conv, Gemm and MatMul nodes whose weight (input 1) is an initializer: static quantisation
    stores that weight as int8 per output channel, which needs it known before the run.
    """
    return int8_nodes(named_model(model))


def node_macs(path: Path, nodes: Collection[str]) -> dict[str, float]:
    """Multiply-accumulates of each of ``nodes`` (quantizable nodes of the model at ``path``, by
    :func:`named_model`'s names) for one input batch: its weight's elements times its output positions (the output's
    elements over its channels: dimension 1 of a Conv's output, the last of a Gemm's or MatMul's), from ONNX shape
    inference; a symbolic batch counts as one sample, a node whose other output dimensions are not inferred as 0."""
    import onnx

    model = onnx.shape_inference.infer_shapes(named_model(onnx.load(str(path))))
    graph = model.graph
    weights = {tensor.name: int(np.prod(tensor.dims)) for tensor in graph.initializer}
    shapes = {value.name: tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
              for value in [*graph.value_info, *graph.output]}
    counts = {}
    for node in graph.node:
        if node.name not in nodes:
            continue
        shape = shapes.get(node.output[0], ())
        shape = (shape[0] or 1, *shape[1:]) if shape else ()  # a symbolic batch counts as one sample
        if not shape or not all(shape):
            counts[node.name] = 0.0
            continue
        channels = shape[1] if node.op_type == "Conv" else shape[-1]
        counts[node.name] = float(weights.get(node.input[1], 0) * int(np.prod(shape)) / channels)
    return counts


class Int8Quantizer:
    """Writes QDQ static int8 versions of one model in which exactly the chosen layers are quantised.

    Calibration (MinMax ranges of every activation over ``calibration``) is the expensive part, so it runs
    once, here, and is stored in ``workdir``; each :meth:`quantize` call reuses those ranges through
    ``quantize_static``'s ``calibration_cache_path``.  Before calibrating, batch normalisation is folded into
    the convolution before it (as ORT does when it optimises a float session), so that an int8 convolution is
    not followed by a float BN between a DequantizeLinear and a QuantizeLinear.

    Weights are int8, per output channel (or per tensor: :meth:`quantize`'s ``per_channel``); activations
    ``activation_type``, per tensor, asymmetric.  A ReLU
    (or Clip) that only reads an int8 layer's output is quantised with it: the quantiser then drops it and
    clips through the output's zero point, which is how ORT fuses an activation into QLinearConv.

    Files in ``workdir``: ``fp32_prepared.onnx`` (the BN-folded model that is calibrated and quantised),
    ``calibration_ranges.json`` (ORT's calibration cache format) and ``int8_<type>_<hash of the node set>.onnx``
    (``int8_<type>_per_tensor_<hash>.onnx`` with weights per tensor).
    Attributes set here: ``quantizable_`` (the node names :meth:`quantize` accepts), ``calibration_s_``
    (seconds calibration took).
    """

    def __init__(self, model_path: Path, calibration: np.ndarray, workdir: Path,
                 activation_type: str = DEFAULT_ACTIVATION_TYPE) -> None:
        import onnx

        if activation_type not in ACTIVATION_TYPES:
            raise SynthesisError(f"activation_type must be one of {ACTIVATION_TYPES}, not {activation_type!r}")
        self.model_path = Path(model_path)
        self.workdir = Path(workdir)
        self.activation_type = activation_type
        model = named_model(onnx.load(str(self.model_path)))
        self._batch, samples = _checked_samples(model, calibration, "calibration")
        self.quantizable_ = quantizable_nodes(model)
        self._folded = fold_batch_norms(model)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._prepared_path = self.workdir / "fp32_prepared.onnx"
        onnx.save(self._folded, str(self._prepared_path))
        self._ranges_path = self.workdir / _CALIBRATION_FILE
        start_s = time.perf_counter()
        _calibrate_ranges(self._prepared_path, samples, self._batch, self._ranges_path)
        self.calibration_s_ = time.perf_counter() - start_s
        self._written: dict[tuple[frozenset[str], bool], Path] = {}

    def quantize(self, nodes: Collection[str], per_channel: bool = True) -> Path:
        """Path of a model in which exactly ``nodes`` run in int8 (the fp32 model's path when empty), their weights
        scaled per output channel or, with ``per_channel`` False, per tensor.

        The file is written on the first call for a node set and reused afterwards.
        """
        chosen = frozenset(nodes)
        if not chosen:
            return self.model_path
        self._check_nodes(chosen)
        if (chosen, per_channel) not in self._written:
            self._written[chosen, per_channel] = self._write(chosen, per_channel)
        return self._written[chosen, per_channel]

    def _check_nodes(self, chosen: frozenset[str]) -> None:
        ops = {node.name: node.op_type for node in self._folded.graph.node}
        for name in sorted(chosen - set(self.quantizable_)):
            why = (f"{self.model_path.name} has no node of that name" if name not in ops
                   else f"it is a {ops[name]} node, which int8 cannot run (only {', '.join(QUANTIZABLE_OPS)}"
                        " with a constant weight)")
            raise UnsupportedModeError(f"cannot quantise {name!r} to int8: {why}; the quantizable nodes are "
                                       f"{', '.join(self.quantizable_)}")

    def _write(self, chosen: frozenset[str], per_channel: bool) -> Path:
        digest = hashlib.sha1("\n".join(sorted(chosen)).encode()).hexdigest()[:12]
        scales = "" if per_channel else "per_tensor_"
        path = self.workdir / f"int8_{self.activation_type}_{scales}{digest}.onnx"
        quantize_qdq(self._prepared_path, path, chosen, activation_type=self.activation_type, ranges=self._ranges_path,
                     per_channel=per_channel)
        return path


def _model_input(model: onnx.ModelProto) -> tuple[str, tuple[int | None, ...]]:
    """Name and shape (None for a symbolic dimension) of the model's single non-initializer input."""
    initializers = {tensor.name for tensor in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in initializers]
    if len(inputs) != 1:
        raise SynthesisError(f"only single-input models are supported; this one has {len(inputs)} inputs")
    dims = inputs[0].type.tensor_type.shape.dim
    return inputs[0].name, tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)


def _checked_samples(model: onnx.ModelProto, samples: np.ndarray, what: str) -> tuple[int | None, np.ndarray]:
    """The model's fixed batch size (None when symbolic) and ``samples`` as float32, once they fit its input."""
    name, shape = _model_input(model)
    array = np.asarray(samples, dtype=np.float32)
    expected = shape[1:]
    if array.ndim != len(shape) or any(d is not None and d != s for d, s in zip(expected, array.shape[1:])):
        raise ValidationDataError(f"{what} samples have shape {tuple(array.shape[1:])} (array {array.shape}), but "
                                  f"the model's input {name!r} has shape {shape}, so samples must have shape "
                                  f"{expected}")
    if array.shape[0] == 0:
        raise ValidationDataError(f"{what} holds no samples (array of shape {array.shape})")
    if not np.isfinite(array).all():
        raise ValidationDataError(f"{what} holds non-finite values (NaN or infinity)")
    batch = shape[0]
    if batch is not None and array.shape[0] % batch:
        raise ValidationDataError(f"{what} has {array.shape[0]} samples, not a multiple of the model's fixed "
                                  f"batch size {batch}")
    return batch, array


def _batches(samples: np.ndarray, batch: int | None) -> Iterator[np.ndarray]:
    """``samples`` cut into the model's fixed batch size, or into chunks of at most 16 when it is symbolic."""
    step = batch if batch is not None else _MAX_BATCH
    for start in range(0, len(samples), step):
        yield samples[start:start + step]


class _ArrayReader:
    """Feeds calibration batches to ORT's calibrator (its CalibrationDataReader protocol: ``get_next``)."""

    def __init__(self, input_name: str, batches: Sequence[np.ndarray]) -> None:
        self._feeds = iter([{input_name: batch} for batch in batches])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        return self._feeds


def _calibrate_ranges(model_path: Path, samples: np.ndarray, batch: int | None, ranges_path: Path) -> None:
    """Runs MinMax calibration of every tensor the quantiser may quantise and writes the ranges to
    ``ranges_path`` in the JSON format ``quantize_static(calibration_cache_path=...)`` reads."""
    import onnx
    from onnxruntime.quantization import CalibrationMethod, create_calibrator, save_tensors_data
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    input_name, _ = _model_input(onnx.load(str(model_path), load_external_data=False))
    op_types = sorted(set(QLinearOpsRegistry) | set(QDQRegistry))  # what quantize_static calibrates by default
    with tempfile.TemporaryDirectory(prefix="nnperf-calib-") as tmp, quiet_logging():
        calibrator = create_calibrator(model_path, op_types, augmented_model_path=str(Path(tmp) / "augmented.onnx"),
                                       calibrate_method=CalibrationMethod.MinMax)
        calibrator.collect_data(_ArrayReader(input_name, list(_batches(samples, batch))))
        save_tensors_data(calibrator.compute_data(), ranges_path)


def ort_session(path: Path, settings: OrtSettings) -> onnxruntime.InferenceSession:
    """An ORT session on the CPU provider for the model at ``path``."""
    import onnxruntime as ort

    return ort.InferenceSession(str(path), settings.session_options(), providers=["CPUExecutionProvider"])


_INT8_PRODUCERS = ("QuantizeLinear", "QLinear", "QGemm", "DynamicQuantize")
"""Op type prefixes whose output is 8-bit (ORT's fused int8 kernels)."""
_PASS_THROUGH = frozenset({"MaxPool", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
"""Ops whose output has their first input's element type."""


def slow_int8_pools(path: Path, settings: OrtSettings) -> int:
    """How many MaxPool nodes ORT runs on 8-bit data in NCHW (its plain-loop kernel) in the model at ``path``
    under ``settings``: ORT optimises the graph as a session would, and its saved graph is read.

    On the glyph GoogLeNet (32x32, ORT NCHWc, 1 thread) each such pool took 100-340 µs against about 10 µs for the
    fp32 NCHWc pool (ORT's profiler), and a count of them explained mixed programs' times that borders alone
    did not (see :mod:`~nnperf.optimize.synthesize._boundaries`)."""
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory(prefix="nnperf-optimised-") as tmp:
        options = settings.session_options()
        options.optimized_model_filepath = str(Path(tmp) / "optimised.onnx")
        options.log_severity_level = 3  # errors only: ORT warns that a saved NCHWc graph suits this machine alone
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        graph = onnx.load(options.optimized_model_filepath, load_external_data=False).graph
    producer = {out: node for node in graph.node for out in node.output}

    def eight_bit(tensor: str) -> bool:
        node = producer.get(tensor)
        if node is None:
            return False
        if node.op_type.startswith(_INT8_PRODUCERS):
            return True
        return node.op_type in _PASS_THROUGH and bool(node.input) and eight_bit(node.input[0])

    return sum(node.op_type == "MaxPool" and node.domain in ("", "ai.onnx") and eight_bit(node.input[0])
               for node in graph.node)


def run_session(session: onnxruntime.InferenceSession, inputs: np.ndarray) -> np.ndarray:
    """The first output for every sample of ``inputs`` (shape (N, *sample shape)), stacked to (N, ...).

    Samples run in batches of the model's fixed batch size (one at a time when it is 1), or in chunks of at
    most 16 when the batch dimension is symbolic.
    """
    meta = session.get_inputs()[0]
    batch = meta.shape[0] if isinstance(meta.shape[0], int) and meta.shape[0] > 0 else None
    array = np.asarray(inputs, dtype=np.float32)
    if batch is not None and len(array) % batch:
        raise ValidationDataError(f"{len(array)} samples are not a multiple of the model's batch size {batch}")
    outputs = [session.run(None, {meta.name: chunk})[0] for chunk in _batches(array, batch)]
    return np.concatenate(outputs, axis=0)


def node_times(path: Path, settings: OrtSettings, sample: np.ndarray, runs: int = 20) -> dict[str, float]:
    """Median seconds per run spent in each node of the model at ``path``, from ORT's profiler.

    ``sample`` is one input batch (the model's input shape).  Two warm-up runs are left out, then ``runs`` runs
    are profiled; each ``Node`` event of the trace is assigned to the ``model_run`` it falls in, its kernel time
    is charged to a node of the model file by :func:`_ort_name_owner`, and the median over runs of each
    node's per-run total is returned.  Time that cannot be charged to a node of the file (layout changes ORT
    inserted: ``ReorderInput``/``ReorderOutput`` for NCHWc, ``Transpose`` around NHWC int8 convolutions; a
    QuantizeLinear shared by several int8 layers) stays under ORT's own node name.  Time between kernels
    (the executor's own overhead) is in no node, so the values sum to a little less than a run.

    The per-node median leaves out the time a run loses when the process is preempted in some node, so on a
    busy machine the values sum to less than a whole run takes: ResNet-18 fp32 on this 2-core VM at load ~5,
    24 ms summed against a median run of 35 ms (fastest run 30 ms); on a quiet one they agree within a few
    per cent (int8: 7.19 ms summed, 7.16 ms a run).
    """
    import onnx

    if runs < 1:
        raise SynthesisError(f"runs must be >= 1, not {runs}")
    model = onnx.load(str(path), load_external_data=False)
    owners = NodeOwners(model)
    with tempfile.TemporaryDirectory(prefix="nnperf-profile-") as tmp:
        options = settings.session_options()
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tmp) / "ort")
        import onnxruntime as ort

        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: np.asarray(sample, dtype=np.float32)}
        for _ in range(2 + runs):
            session.run(None, feed)
        trace_path = session.end_profiling()
        events = json.loads(Path(trace_path).read_text())
    per_run = _kernel_seconds_per_run(events)[2:]
    totals: list[dict[str, float]] = []
    for kernels in per_run:
        charged: dict[str, float] = defaultdict(float)
        for ort_name, seconds in kernels.items():
            charged[owners.owner(ort_name)] += seconds
        totals.append(charged)
    names = {name for charged in totals for name in charged}
    return {name: statistics.median(charged.get(name, 0.0) for charged in totals) for name in sorted(names)}


def _kernel_seconds_per_run(events: list[dict[str, Any]]) -> list[dict[str, float]]:
    """For each ``model_run`` of an ORT trace (in order), seconds per ORT node name (trace times are in µs)."""
    windows = sorted((event["ts"], event["ts"] + event["dur"]) for event in events
                     if event.get("cat") == "Session" and event.get("name") == "model_run")
    runs: list[dict[str, float]] = [defaultdict(float) for _ in windows]
    starts = [start for start, _ in windows]
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        index = int(np.searchsorted(starts, event["ts"], side="right")) - 1
        if index >= 0 and event["ts"] <= windows[index][1]:
            runs[index][event["name"][:-len("_kernel_time")]] += event["dur"] * 1e-6
    return runs
