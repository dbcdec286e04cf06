"""Synthesising the fastest program for a network on this device within an accuracy budget, from Python
(Cappuccino; ``nnperf synthesize`` on the command line).

::

    import nnperf.api as api

    result = api.synthesize("digits-cnn", data="digits", budget=0.01, out="digits-program")
    for stage in result.stages:
        print(stage.name, stage.program.latency_s, stage.program.accuracy.drop)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nnperf.api._load import load_model
from nnperf.api._session import StoreLike
from nnperf.errors import NnperfError
from nnperf.measure import System
from nnperf.store import default_store_path

if TYPE_CHECKING:
    from torch import nn

    from nnperf.measure import ComparisonProtocol
    from nnperf.optimize.synthesize import Predict, ProgramSpec, Progress, SynthesisResult, ValidationSet
    from nnperf.prediction import NetworkPrediction

DIGITS_MODEL = "digits-cnn"
"""The model name of the CNN trained here on scikit-learn's digits (32x32, width 16, 8 epochs, seed 0)."""
DEFAULT_SAMPLES = 200
"""Validation samples judged by default (after the calibration part is taken)."""
DEFAULT_CALIBRATION = 32
"""Validation samples the int8 ranges are calibrated on by default."""

KERNEL_PREDICTOR = "kernel"
"""The network predictor an inexact program's latency comes from (every layer int8 or bf16), where its calibration
fitted one; an fp32 program's, and any program's where it did not, is the composed one. The kernel-aware predictor
learns each kernel's time inside the calibration networks, while the composition sums isolated layer times: each
int8 layer then pays its own quantise and dequantise, and every all-int8 glyph program measured was over-predicted
2 to 4.7 times (bench/int8_composition.py). On the glyph networks with
calibrations that ran the CNN blocks, the all-bf16 programs were predicted within 15% by the kernel-aware
predictor (16 of 16, bench/kernel_samples.py) and at -20 to +13% by the composed one; for fp32 programs (each glyph
network's four, timed in interleaved rounds) the kernel-aware predictor erred less but ordered one pair of
candidates wrong where the composed one ordered all right, so fp32 keeps the composed prediction."""


def digits_cache(size: int = 32, width: int = 16, epochs: int = 8, seed: int = 0) -> Path:
    """Where the trained digits CNN is cached: ``$XDG_CACHE_HOME/nnperf`` (default ``~/.cache/nnperf``)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nnperf"
    return root / f"digits-cnn-{size}-{width}-{epochs}-{seed}.pt"


@dataclass(frozen=True)
class Verified:
    """The generated runner run in a fresh process on its check samples: its exit code and what it printed."""

    returncode: int
    output: str


def parse_budget(text: str | float) -> float:
    """``"1%"`` -> 0.01, ``"0.01"`` -> 0.01; anything else raises ``BudgetError``."""
    from nnperf.optimize.synthesize import BudgetError, check_budget

    value = str(text).strip()
    try:
        number = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise BudgetError(f"the budget must be a percentage like 1% or a fraction like 0.01, got {text!r}") from None
    return check_budget(number)


def _resolve(model: str | os.PathLike[str] | nn.Module, data: str | os.PathLike[str] | ValidationSet,
             input_shape: tuple[int, ...] | None
             ) -> tuple[str, nn.Module | None, Path | None, ValidationSet, tuple[int, ...]]:
    """(name, torch module or None, ONNX path or None, validation set, input shape) for what the user named;
    samples whose shape is not the network's raise ``ValidationDataError``."""
    from nnperf.optimize.synthesize import ValidationSet, cached_digits, check_sample_shape, load_validation

    if isinstance(model, (str, os.PathLike)) and os.fspath(model) == DIGITS_MODEL:
        trained = cached_digits(digits_cache())
        if isinstance(data, str) and data == "digits":
            shape = (1, 1, trained.size, trained.size)  # the held-out digits, never trained on:
            return DIGITS_MODEL, trained.module, None, trained.validation, shape
        module, onnx_path, name, shape = trained.module, None, DIGITS_MODEL, (1, 1, trained.size, trained.size)
    elif isinstance(model, (str, os.PathLike)):
        from nnperf.measure.backends import build_torch

        network = load_model(model, input_shape)
        shape = network.inputs[0].shape
        if len(network.inputs) != 1:
            raise NnperfError(f"{network.name}: synthesis takes networks with one input, it has {len(network.inputs)}")
        if Path(os.fspath(model)).suffix.lower() == ".onnx":  # the file's own weights: ONNX Runtime only
            module, onnx_path = None, Path(os.fspath(model))
        else:
            module, onnx_path = build_torch(network), None
        name = network.name
    else:
        if input_shape is None:
            raise NnperfError("a torch module needs input_shape (batch first)")
        module, onnx_path, name, shape = model, None, type(model).__name__, tuple(input_shape)
    validation = data if isinstance(data, ValidationSet) else load_validation(data, tuple(shape[1:]))
    check_sample_shape(validation, tuple(shape[1:]), name)  # before the module is exported on these samples
    return name, module, onnx_path, validation, tuple(shape)


def _predictor(model: str | os.PathLike[str] | nn.Module, shape: tuple[int, ...], store: StoreLike,
               calibrate_missing: bool, progress: Progress | None) -> Predict | None:
    """Predicts a program's latency (fp32, or all layers inexact) from the calibration of its system
    (``ProgramSpec.backend_system``, which names the precision) in ``store`` (:func:`program_latency_s`); a system
    without one is calibrated first, with nnperf's CNN blocks (whose chained convolutions the kernel-aware
    predictor needs), with ``calibrate_missing``, else not predicted (None). None when nnperf cannot read the
    network into its IR (a module torch.fx cannot trace): nothing is predicted."""
    from nnperf.api._predict import calibrate, predict
    from nnperf.prediction import MissingCalibrationError

    try:
        network = load_model(model, None if isinstance(model, str) and not model.endswith(".onnx") else shape)
    except NnperfError:
        return None

    def predicted(spec: ProgramSpec) -> float | None:
        backend, threads, options = spec.backend_system()
        try:
            system = System(backend, threads=threads, options=options)
            return program_latency_s(predict(network, system, store), spec)
        except MissingCalibrationError:
            if not calibrate_missing:
                return None
        except NnperfError:
            return None
        calibrate(system, store, if_needed=True, blocks=True, progress=progress)
        return program_latency_s(predict(network, system, store), spec)

    return predicted


def program_latency_s(prediction: NetworkPrediction, spec: ProgramSpec) -> float:
    """The predicted latency of the program ``spec`` (fp32, or every layer inexact) from its system's
    ``prediction``: :data:`KERNEL_PREDICTOR`'s for an inexact program where the calibration fitted it, else the
    primary prediction (``latency_s``, the composed one)."""
    kernel_s = prediction.network_latency_s.get(KERNEL_PREDICTOR)
    if spec.inexact and kernel_s is not None:
        return float(kernel_s)
    return prediction.latency_s


def synthesize(model: str | os.PathLike[str] | nn.Module, store: StoreLike = None, *,
               data: str | os.PathLike[str] | ValidationSet | None = None,
               budget: float | str = 0.01, out: str | os.PathLike[str] = "nnperf-program",
               max_threads: int | None = None, samples: int = DEFAULT_SAMPLES,
               calibration: int = DEFAULT_CALIBRATION, aot: bool = True, inexact: bool = True,
               input_shape: tuple[int, ...] | None = None, workdir: str | os.PathLike[str] | None = None,
               predict: bool = True, calibrate_missing: bool = False,
               progress: Progress | None = None, protocol: str | ComparisonProtocol = "auto",
               measure_best: int | None = None) -> SynthesisResult:
    """The fastest program for ``model`` on this device whose accuracy drop stays within ``budget``, written to
    ``out`` (see :func:`nnperf.optimize.synthesize.synthesize`). It searches this device's programs (backends,
    thread counts up to ``max_threads``, executors, precisions) itself, so it takes no system; ``store`` holds the
    calibrations its latency predictions come from.

    ``model``: ``"digits-cnn"`` (trained here on scikit-learn's digits, cached), a zoo name (random weights: give
    ``data="photos"``, a proxy), an ONNX file (run with its own weights, in ONNX Runtime only) or a torch module
    (with ``input_shape``). ``data``: ``"digits"``, ``"photos"``, a folder with ``inputs.npy`` (and
    ``labels.npy``), an ``.npz`` file, or a :class:`~nnperf.optimize.synthesize.ValidationSet` (default: digits for
    ``"digits-cnn"``, photos otherwise). ``max_threads`` is the most threads tried (default: this machine's cores). The first
    ``calibration`` samples (shuffled, seeded) calibrate int8; at most ``samples`` of the rest judge accuracy.
    With ``predict``, the fp32 candidates are ranked by the latency nnperf predicts from the calibrations in
    ``store`` (default ./nnperf.db) before they are measured; ``calibrate_missing`` calibrates the systems the
    store lacks, with nnperf's CNN blocks (about 5 minutes each on a 2-core VM), else those are not predicted.
    ``protocol`` is where the reported speed-ups come from: ``"auto"`` (default: what a quick machine check
    recommends, interleaved for these in-process programs), ``"interleaved"`` (the stages' programs timed again
    in the same rounds) or ``"sequential"`` (the ratio of the search's own medians, taken minutes apart). With
    ``measure_best`` (and ``predict``), a stage whose candidates are all predicted measures only each runtime's
    ``measure_best`` predicted fastest; the result lists the others (``skipped``).
    """
    from nnperf.optimize.synthesize import ValidationDataError, check_protocol, make_sources
    from nnperf.optimize.synthesize import synthesize as run

    fraction = parse_budget(budget)
    chosen = check_protocol(protocol)  # before minutes of work, not after
    if max_threads is not None and max_threads < 1:
        raise NnperfError(f"max_threads must be at least 1, got {max_threads}")
    if measure_best is not None and measure_best < 1:
        raise NnperfError(f"measure_best must be at least 1 (or None: measure every candidate), got {measure_best}")
    if data is None:
        data = "digits" if isinstance(model, str) and model == DIGITS_MODEL else "photos"
    if samples < 1 or calibration < 1:
        raise NnperfError(f"samples and calibration must be at least 1, got {samples} and {calibration}")
    name, module, onnx_path, validation, shape = _resolve(model, data, input_shape)
    if len(validation) < 2:
        raise ValidationDataError(f"the validation set {validation.name!r} has {len(validation)} sample(s); "
                                  "synthesis needs at least 2 (a calibration part and an evaluation part)")
    share = min(calibration, len(validation) - 1) / len(validation)
    calibration_set, evaluation = validation.split(share, seed=0)
    evaluation = evaluation.take(min(samples, len(evaluation)))
    folder = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="nnperf-synthesize-"))
    sources = make_sources(module, onnx_path, calibration_set, folder)
    predictor = None
    if predict and (calibrate_missing or store is not None or default_store_path().exists()):
        predictor = _predictor(module if model == DIGITS_MODEL else model, shape, store, calibrate_missing, progress)
    return run(sources, evaluation, fraction, Path(out), network=name, max_threads=max_threads, aot=aot,
               inexact=inexact, predict=predictor, progress=progress, protocol=chosen, measure_best=measure_best)


def verify_program(folder: str | os.PathLike[str]) -> Verified:
    """Runs the folder's ``run.py --check`` in a fresh Python process (the runner reproduces its stored outputs or
    exits non-zero)."""
    done = subprocess.run([sys.executable, str(Path(folder) / "run.py"), "--check"], capture_output=True, text=True,
                          timeout=600, check=False)
    return Verified(done.returncode, (done.stdout + done.stderr).strip())
