"""Stage 5 of a synthesis: the deployable artifact, packaged, loaded back from its files, checked and timed.

ONNX Runtime's program is the model with its session options; torch's an AOTInductor package. :func:`load_program`
runs a written folder's program in this process, as ``run.py`` runs it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nnperf.measure import HarnessConfig, Timer
from nnperf.measure.backends import LoopTimer
from nnperf.optimize.synthesize._artifact import ort_session_document, read_manifest, runner_script, write_artifact
from nnperf.optimize.synthesize._data import ValidationSet
from nnperf.optimize.synthesize._errors import SynthesisError
from nnperf.optimize.synthesize._program import Accuracy, ProgramSpec, Sources, accuracy_of
from nnperf.optimize.synthesize._result import Measured, fastest


@dataclass(frozen=True)
class Packaged:
    """An artifact measured from its files: its program measured, its kind, the model file, ONNX Runtime's session
    document (None for torch), a timer of one sample run from its files, and a note naming what it was measured
    against (empty until :func:`package` chose it)."""

    program: Measured
    kind: str
    model: Path
    session: dict[str, Any] | None
    timer: Timer
    note: str = ""


def artifact_runner(model: Path, spec: ProgramSpec) -> Callable[[np.ndarray], np.ndarray]:
    """Runs the artifact from its file, as ``run.py`` does (one sample at a time)."""
    if model.suffix == ".onnx":
        from nnperf.optimize.synthesize._onnx import OrtSettings, ort_session, run_session

        return functools.partial(run_session, ort_session(model, OrtSettings(spec.threads, spec.execution,
                                                                               spec.layout)))
    from nnperf.optimize.synthesize._torch import load_aoti

    run = load_aoti(model, spec.threads)
    return lambda x: np.concatenate([run(x[i:i + 1]) for i in range(len(x))])


def load_program(folder: Path, threads: int | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """The program of a synthesised ``folder``, run in this process from its files as ``run.py`` runs it (one
    sample at a time) on ``threads`` threads (default: the manifest's, as ``run.py --threads``): for timing a
    written program against others."""
    program = read_manifest(Path(folder))["program"]
    spec = ProgramSpec(program["runtime"], threads or program["threads"], program["layout"], program["execution"],
                       tuple(program["inexact"]), program.get("int8_weights", "per_channel"))
    model = Path(folder) / ("model.onnx" if spec.runtime == "onnxruntime" else "model.pt2")
    return artifact_runner(model, spec)


def package(sources: Sources, within: Sequence[Measured], runtimes: Sequence[str], data: ValidationSet,
            reference: np.ndarray, harness: HarnessConfig, aot: bool, budget: float) -> Packaged:
    """The deployable artifact: each runtime's fastest program within the budget packaged (ONNX Runtime: the model
    and its session options; torch, with ``aot``: an AOTInductor package), loaded back, checked against the
    budget again (:func:`check_reloaded`) and timed; the faster one wins, with a note naming what it was measured
    against."""
    packaged: list[Packaged] = []
    failed: list[str] = []
    for runtime in runtimes:
        programs = [m for m in within if m.spec.runtime == runtime]
        if not programs or (runtime == "torch" and not aot):
            continue
        try:
            packaged.append(_artifact(sources, fastest(programs), data, reference, harness, budget))
        except SynthesisError as exc:
            failed.append(f"{runtime}: {exc}")
    if not packaged:
        raise SynthesisError("no program within the budget could be packaged: " + "; ".join(failed))
    final = min(packaged, key=lambda p: p.program.latency_s)
    others = [f"{p.kind} {p.program.latency_s * 1e3:.2f} ms" for p in packaged if p.kind != final.kind] + failed
    note = final.kind + (f" (against {', '.join(others)})" if others else "")
    return Packaged(final.program, final.kind, final.model, final.session, final.timer, note)


def check_reloaded(what: str, reloaded: Accuracy, made_from: Accuracy, budget: float, samples: int) -> None:
    """Refuses (:class:`SynthesisError`) an artifact whose accuracy, run from its own files, exceeds the budget
    (``budget``, a fraction of top-1) or lost more than one sample's worth against the program it was made from
    (``samples`` validation samples): what is written must be what was chosen."""
    if reloaded.drop > budget:
        raise SynthesisError(f"{what}, loaded back from its files, drops {reloaded.drop:.2%} of top-1, over the "
                             f"{budget:.2%} budget (the program it was made from dropped {made_from.drop:.2%}); "
                             "nothing was written")
    if reloaded.drop > made_from.drop + 1.0 / samples and reloaded.drop > 0:
        raise SynthesisError(f"{what} lost accuracy against the program it was made from (drop "
                             f"{reloaded.drop:.2%} against {made_from.drop:.2%}); nothing was written")


def _artifact(sources: Sources, best: Measured, data: ValidationSet, reference: np.ndarray,
              harness: HarnessConfig, budget: float) -> Packaged:
    """The deployable artifact of ``best``: measured from its files and checked against the reference."""
    spec = best.spec
    if spec.runtime == "onnxruntime":
        model = sources.onnx_model(spec)
        session: dict[str, Any] | None = ort_session_document(spec.threads, spec.execution, spec.layout)
        kind = "ONNX model with its session options"
    else:
        import torch

        from nnperf.optimize.synthesize._torch import aoti_package

        model = sources.workdir / f"{spec.layout}-{len(spec.inexact)}-{spec.threads}.pt2"
        example = torch.from_numpy(data.inputs[:1])
        aoti_package(sources.torch_module(spec), example, model, spec.layout)
        session, kind = None, "AOTInductor package"
    run_artifact = artifact_runner(model, spec)
    accuracy = accuracy_of(run_artifact(data.inputs), reference, data.labels)
    check_reloaded(f"the {kind} of {spec.label()}", accuracy, best.accuracy, budget, len(data))
    from nnperf.measure import measure

    timer = LoopTimer(functools.partial(run_artifact, data.inputs[:1]))
    timing = measure(timer, harness)
    return Packaged(Measured(spec, timing, accuracy, best.predicted_s), kind, model, session, timer)


CHECK_SAMPLES = 8
"""Validation samples stored with the artifact for ``run.py --check``."""


def write_package(out: Path, network: str, final: Packaged, data: ValidationSet, manifest: dict[str, Any]) -> None:
    """Writes the folder of ``final``: its model file, session document, ``run.py``, the manifest, and the first
    :data:`CHECK_SAMPLES` validation samples with the outputs the artifact gives for them."""
    spec = final.program.spec
    runtime = "onnxruntime" if final.model.suffix == ".onnx" else "torch"
    runner = runner_script(network, spec.label(), runtime, "model.onnx" if runtime == "onnxruntime"
                           else "model.pt2", spec.threads, tuple(data.sample_shape),
                           channels_last=spec.layout == "hwc")
    check = data.inputs[:CHECK_SAMPLES]
    outputs = artifact_runner(final.model, spec)(check)
    write_artifact(out, final.model, runtime, manifest, check, outputs, final.session, runner)
