"""A candidate inference program, how it runs, how fast and how accurately (Cappuccino III-IV).

A :class:`ProgramSpec` says everything that decides a program: the runtime (torch eager, ONNX Runtime), the
thread count, how branches run (ONNX Runtime's sequential or parallel executor), the layout kept end to end
(torch chw or channels-last hwc; ONNX Runtime plain or NCHWc) and which layers run in an inexact mode (bf16 in
torch, static int8 in ONNX Runtime). :class:`Sources` holds what programs are built from: the fp32 torch module
and/or the fp32 ONNX file, and the int8 quantiser calibrated on part of the validation set.

Accuracy is measured against the fp32 reference's outputs on the same samples (:func:`accuracy_of`): with labels,
the top-1 accuracy and the drop from the reference's; without (a network with random weights on real photographs,
a proxy), the share of samples whose top-1 class differs from the reference's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.measure import HarnessConfig, Timing, measure
from nnperf.measure.backends import LoopTimer
from nnperf.optimize.synthesize._errors import SynthesisError

if TYPE_CHECKING:
    from torch import nn

    from nnperf.optimize.synthesize._onnx import Int8Quantizer

RUNTIMES = ("torch", "onnxruntime")
INEXACT_MODE = {"torch": "bf16", "onnxruntime": "int8"}
"""The inexact mode each runtime's search uses per layer. torch can also run fp16 where native
(``with_precision(fp16=...)``); on this project's CPU it measured slower than fp32, as bf16 did, so it is not
searched yet."""
DEFAULT_LAYOUT = {"torch": "chw", "onnxruntime": "plain"}
KEPT_LAYOUT = {"torch": "hwc", "onnxruntime": "nchwc"}
"""The layout each runtime keeps end to end between layers without separate reorders (Cappuccino IV.B)."""
INT8_WEIGHTS = ("per_channel", "per_tensor")
"""How an int8 program scales its weights: one scale per output channel (the default), or one per tensor."""

Runner = Callable[[np.ndarray], np.ndarray]
"""Runs a batch (N, ...) of float32 samples, returns the first output (N, ...)."""


@dataclass(frozen=True)
class ProgramSpec:
    """One candidate program (see the module docstring). ``inexact`` lists the layers in the runtime's inexact
    mode (:data:`INEXACT_MODE`), by the runtime's own names (torch module names, ONNX node names);
    ``int8_weights`` says how an int8 program scales its weights (:data:`INT8_WEIGHTS`). A program with no int8
    layer has no int8 weights: its ``int8_weights`` is always the default, so that it stays one program."""

    runtime: str
    threads: int = 1
    layout: str = ""
    execution: str = "sequential"
    inexact: tuple[str, ...] = ()
    int8_weights: str = INT8_WEIGHTS[0]

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise SynthesisError(f"unknown runtime {self.runtime!r}; use one of {', '.join(RUNTIMES)}")
        if not self.layout:
            object.__setattr__(self, "layout", DEFAULT_LAYOUT[self.runtime])
        if self.layout not in (DEFAULT_LAYOUT[self.runtime], KEPT_LAYOUT[self.runtime]):
            raise SynthesisError(f"{self.runtime} has no layout {self.layout!r}; use "
                                 f"{DEFAULT_LAYOUT[self.runtime]} or {KEPT_LAYOUT[self.runtime]}")
        if self.threads < 1:
            raise SynthesisError(f"threads must be at least 1, got {self.threads}")
        if self.execution not in ("sequential", "parallel") or (self.runtime == "torch"
                                                                 and self.execution != "sequential"):
            raise SynthesisError(f"{self.runtime} cannot run branches {self.execution!r}")
        object.__setattr__(self, "inexact", tuple(self.inexact))
        self._check_int8_weights()

    def _check_int8_weights(self) -> None:
        if self.int8_weights not in INT8_WEIGHTS:
            raise SynthesisError(f"int8 weights are scaled {' or '.join(INT8_WEIGHTS)}, not {self.int8_weights!r}")
        if self.int8_weights != INT8_WEIGHTS[0] and self.runtime != "onnxruntime":
            raise SynthesisError(f"{self.runtime} runs no int8 layers (its inexact mode is "
                                 f"{INEXACT_MODE[self.runtime]}), so its weights cannot be {self.int8_weights}")
        if not self.inexact:
            object.__setattr__(self, "int8_weights", INT8_WEIGHTS[0])

    @property
    def per_channel(self) -> bool:
        """Whether an int8 program scales its weights per output channel (else per tensor)."""
        return self.int8_weights == "per_channel"

    @property
    def mode(self) -> str:
        """The inexact mode of the listed layers, or fp32 when there are none."""
        return INEXACT_MODE[self.runtime] if self.inexact else "fp32"

    def label(self) -> str:
        execution = ", parallel branches" if self.execution == "parallel" else ""
        scales = "" if self.per_channel else " per tensor"
        inexact = f", {len(self.inexact)} layers {self.mode}{scales}" if self.inexact else ", fp32"
        return f"{self.runtime}, {self.threads} thread(s), {self.layout}{execution}{inexact}"

    def with_(self, **changes: Any) -> ProgramSpec:
        return replace(self, **changes)

    def backend_system(self) -> tuple[str, int, dict[str, str]]:
        """The nnperf backend, thread count and backend options that run this program with every layer in its
        precision (fp32, or all inexact when any is): the system a calibration of it is stored under
        (``nnperf calibrate --backend B --threads N --option K=V``)."""
        precision = {"precision": self.mode} if self.inexact else {}
        if not self.per_channel:
            precision["int8_weights"] = self.int8_weights
        if self.runtime == "torch":
            return "torch", self.threads, {"memory_format": "channels_last" if self.layout == "hwc" else "nchw",
                                           **precision}
        parallel = self.execution == "parallel"
        return "onnxruntime", self.threads, {"opt_level": "all" if self.layout == "nchwc" else "extended",
                                             "execution": self.execution,
                                             "inter_threads": str(self.threads if parallel else 1), **precision}

    def to_dict(self) -> dict[str, Any]:
        return {"runtime": self.runtime, "threads": self.threads, "layout": self.layout, "execution": self.execution,
                "mode": self.mode, "inexact": list(self.inexact), "int8_weights": self.int8_weights}


@dataclass
class Sources:
    """What programs are built from: the fp32 torch module (None for an ONNX file given alone: its weights are
    the file's), the fp32 ONNX file, the int8 quantiser (made on first use, calibrated on ``calibration``), and
    built runners cached by spec."""

    onnx_path: Path
    workdir: Path
    calibration: np.ndarray
    module: nn.Module | None = None
    _quantizer: Int8Quantizer | None = None
    _runners: dict[ProgramSpec, Runner] = field(default_factory=dict)

    @property
    def runtimes(self) -> tuple[str, ...]:
        return RUNTIMES if self.module is not None else ("onnxruntime",)

    def quantizer(self) -> Int8Quantizer:
        from nnperf.optimize.synthesize._onnx import Int8Quantizer

        if self._quantizer is None:
            self._quantizer = Int8Quantizer(self.onnx_path, self.calibration, self.workdir / "int8")
        return self._quantizer

    def onnx_model(self, spec: ProgramSpec) -> Path:
        """The ONNX file of ``spec``: the fp32 one, or the QDQ model with exactly its inexact layers int8."""
        return self.quantizer().quantize(spec.inexact, spec.per_channel) if spec.inexact else self.onnx_path

    def torch_module(self, spec: ProgramSpec) -> nn.Module:
        from nnperf.optimize.synthesize._torch import with_precision

        if self.module is None:
            raise SynthesisError("a network given as an ONNX file runs in ONNX Runtime only (its weights are the "
                                 "file's; nnperf has no torch module with them)")
        return with_precision(self.module, bf16=spec.inexact, layout=spec.layout)

    def runner(self, spec: ProgramSpec) -> Runner:
        if spec not in self._runners:
            self._runners[spec] = self._build(spec)
        return self._runners[spec]

    def _build(self, spec: ProgramSpec) -> Runner:
        if spec.runtime == "torch":
            from nnperf.optimize.synthesize._torch import torch_runner

            return torch_runner(self.torch_module(spec), spec.layout, spec.threads)
        from nnperf.optimize.synthesize._onnx import OrtSettings, ort_session, run_session

        session = ort_session(self.onnx_model(spec), OrtSettings(spec.threads, spec.execution, spec.layout))
        return functools.partial(run_session, session)

    def sample_shape(self) -> tuple[int | None, ...]:
        """The shape of one sample the network takes (its ONNX input without the batch; None where dynamic)."""
        import onnx

        model = onnx.load(str(self.onnx_path), load_external_data=False)
        dims = model.graph.input[0].type.tensor_type.shape.dim
        return tuple(d.dim_value if d.HasField("dim_value") else None for d in dims[1:])

    def quantizable(self, runtime: str) -> tuple[str, ...]:
        """The layers ``runtime`` can make inexact, in network order."""
        if runtime == "torch":
            from nnperf.optimize.synthesize._torch import quantizable_modules

            return quantizable_modules(self.module) if self.module is not None else ()
        import onnx

        from nnperf.optimize.synthesize._onnx import quantizable_nodes

        return quantizable_nodes(onnx.load(str(self.onnx_path)))


def program_timer(sources: Sources, spec: ProgramSpec, sample: np.ndarray) -> LoopTimer:
    """A timer of one inference of ``sample`` (a batch of one) by ``spec``'s program."""
    return LoopTimer(functools.partial(sources.runner(spec), sample))


def measure_program(sources: Sources, spec: ProgramSpec, sample: np.ndarray, harness: HarnessConfig) -> Timing:
    """The time of one inference of ``sample`` (a batch of one) by ``spec``'s program, by the measurement
    harness."""
    return measure(program_timer(sources, spec, sample), harness)


@dataclass(frozen=True)
class Accuracy:
    """A program's outputs on the validation samples against the fp32 reference's: ``top1`` (None without
    labels), ``agreement`` (share of samples whose top-1 class equals the reference's), ``max_rel_error``
    (``max|y - ref| / max|ref|``) and ``drop`` (``reference_top1 - top1`` with labels, ``1 - agreement``
    without)."""

    top1: float | None
    agreement: float
    max_rel_error: float
    drop: float

    def to_dict(self) -> dict[str, float | None]:
        return {"top1": self.top1, "agreement": self.agreement, "max_rel_error": self.max_rel_error,
                "drop": self.drop}


def _classes(outputs: np.ndarray) -> np.ndarray:
    return outputs.reshape(len(outputs), -1).argmax(axis=1)


def accuracy_of(outputs: np.ndarray, reference: np.ndarray, labels: np.ndarray | None) -> Accuracy:
    """The :class:`Accuracy` of ``outputs`` against the fp32 ``reference`` outputs (and ``labels`` when given)."""
    if outputs.shape != reference.shape:
        raise SynthesisError(f"a program's outputs have shape {outputs.shape}, the reference's {reference.shape}")
    got, want = _classes(outputs), _classes(reference)
    agreement = float(np.mean(got == want))
    scale = max(float(np.abs(reference).max()), np.finfo(np.float32).tiny)
    error = float(np.abs(outputs.astype(np.float64) - reference).max()) / scale
    if labels is None:
        return Accuracy(None, agreement, error, 1.0 - agreement)
    top1 = float(np.mean(got == labels))
    return Accuracy(top1, agreement, error, float(np.mean(want == labels)) - top1)
