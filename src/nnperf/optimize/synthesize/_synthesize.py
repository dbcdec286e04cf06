"""Synthesis end to end (Cappuccino, Fig. 3 and Table I): from a trained network and validation data to the
fastest program on this device within an accuracy budget, measured, verified and written as a deployable folder.

The stages follow Table I, each building on the one before and each measured (harness median) with its accuracy:

1. **baseline**: single-thread fp32, torch eager in chw (ONNX Runtime, plain, for a network given as an ONNX
   file);
2. **parallel** (Cappuccino IV.A): every runtime at every thread count up to ``max_threads``, ONNX Runtime's
   sequential and parallel executors; the fastest;
3. **layout** (IV.B, zero-overhead reordering): the layout each runtime keeps end to end (torch channels-last,
   ONNX Runtime's NCHWc), at each runtime's best parallel setting; the fastest fp32 program so far, every fp32
   program timed again in the same paired rounds to decide it (each runtime's slower ones are set aside);
4. **inexact** (IV.C): for each runtime with an inexact mode (ONNX Runtime static int8; torch bf16 where this CPU
   runs it natively), each layer's effect alone (accuracy drop on the validation set, time saved), then the
   paper's greedy search and the exact ILP (:mod:`._search`); every searched program is measured, and the
   fastest within the budget wins;
5. **final**: each runtime's fastest program within the budget is packaged (the ONNX model with its session
   options; for torch, an AOTInductor package, unless ``aot`` is off), reloaded from its files, checked against
   the fp32 reference and timed; the faster artifact is written.

Accuracy is measured on the evaluation part of the validation set; the calibration part (int8 ranges) is never
used to judge a program.

The search ranks candidates by their own timings, but the speed-ups reported (Table I, the manifest, the CLI) come
from a comparison of their own (:mod:`._compare`): under the ``interleaved`` protocol (default), the baseline, each
stage's program, the final artifact and ONNX Runtime's best fp32 program are timed again in the same rounds, and
each speed-up is the median per-round ratio with its bootstrap interval; ``sequential`` keeps the old figures, the
ratio of the search's medians, taken minutes apart.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from nnperf.measure import ComparisonProtocol, HarnessConfig, PairedRatio, RoundsConfig, Timer
from nnperf.optimize.synthesize._candidates import Candidates, Predict, Progress
from nnperf.optimize.synthesize._compare import (
    CHECK_ROUNDS,
    SYNTHESIS_HARNESS,
    SYNTHESIS_ROUNDS,
    Comparison,
    check_protocol,
    compare_programs,
    compare_timings,
)
from nnperf.optimize.synthesize._data import ValidationSet
from nnperf.optimize.synthesize._errors import SynthesisError, ValidationDataError
from nnperf.optimize.synthesize._inexact import inexact_available, search_runtime
from nnperf.optimize.synthesize._manifest import manifest as manifest_of
from nnperf.optimize.synthesize._package import package, write_package
from nnperf.optimize.synthesize._program import INEXACT_MODE, KEPT_LAYOUT, ProgramSpec, Sources, program_timer
from nnperf.optimize.synthesize._result import InexactSearch, Measured, Stage, SynthesisResult, fastest
from nnperf.optimize.synthesize._search import check_budget

if TYPE_CHECKING:
    from torch import nn


def _no_progress(what: str, done: int, total: int) -> None:
    del what, done, total


def check_sample_shape(data: ValidationSet, sample_shape: tuple[int | None, ...], network: str = "the network"
                       ) -> None:
    """Refuses samples whose shape is not the network's (a dynamic dimension, None, takes any size)."""
    shape = tuple(data.sample_shape)
    if len(shape) != len(sample_shape) or any(w is not None and w != s for s, w in zip(shape, sample_shape,
                                                                                         strict=True)):
        raise ValidationDataError(f"the validation samples of {data.name!r} have shape {shape}, {network} takes "
                                  f"{tuple(sample_shape)} (batch left out)")


def synthesize(sources: Sources, data: ValidationSet, budget: float, out: Path, *, network: str = "network",
               max_threads: int | None = None, harness: HarnessConfig = SYNTHESIS_HARNESS, aot: bool = True,
               inexact: bool = True, predict: Predict | None = None, progress: Progress | None = None,
               protocol: str | ComparisonProtocol = ComparisonProtocol.INTERLEAVED,
               rounds: RoundsConfig = SYNTHESIS_ROUNDS, measure_best: int | None = None,
               check_rounds: RoundsConfig = CHECK_ROUNDS) -> SynthesisResult:
    """Synthesises the fastest program within ``budget`` (a fraction: 0.01 = 1% accuracy drop) on this device and
    writes it to ``out`` (see the module docstring). ``data`` is the evaluation part of the validation set (the
    calibration part is already in ``sources``). ``max_threads`` defaults to this machine's cores. With
    ``predict``, every fp32 candidate is predicted first and the candidates of a stage are measured in the order of
    their predicted latency (fastest first); each :class:`Measured` keeps its prediction; with ``measure_best`` as
    well, a stage measures only that many of each runtime's predicted fastest candidates and the result lists the
    others (``skipped``) and about the time that saved. ``harness`` times each
    candidate (about a second by default). ``protocol`` says where the reported speed-ups come from:
    ``interleaved`` (default) times the stages' programs again in the same rounds under ``rounds``
    (:data:`SYNTHESIS_ROUNDS`: up to 20 s); ``sequential`` takes the ratios of the candidates' own medians. The
    searches decide between programs in paired rounds under ``check_rounds`` (:data:`CHECK_ROUNDS`: up to 8 s)."""
    budget = check_budget(budget)
    chosen_protocol = check_protocol(protocol)
    check_sample_shape(data, sources.sample_shape(), network)
    report = progress or _no_progress
    start = time.perf_counter()
    threads = _thread_count(max_threads)
    candidates = Candidates(sources, data, harness, predict, report, measure_best, check_rounds)
    stages = _fp32_stages(candidates, threads)
    searches = _inexact_searches(candidates, budget) if inexact else []
    within = candidates.within(budget)
    stages.append(_inexact_stage(within))
    report("packaging and timing the artifacts", 0, 0)
    final = package(sources, within, sources.runtimes, data, candidates.reference, harness, aot, budget)
    stages.append(Stage("final", final.program, final.note))
    report(f"comparing the stages ({chosen_protocol.value})", 0, 0)
    compared, comparison, ort_best, over_ort = _compare_stages(stages, candidates.fp32("onnxruntime"), final.timer,
                                                               sources, candidates.sample, chosen_protocol, rounds)
    result = SynthesisResult(network, budget, tuple(compared), tuple(searches), tuple(candidates.measured.values()),
                             _top1(candidates.reference, data.labels), ort_best, out, final.kind,
                             len(data), len(sources.calibration), time.perf_counter() - start, _energy_note(),
                             comparison, over_ort, skipped=tuple(candidates.skipped.values()),
                             skipping_saved_s=candidates.saved_s())
    manifest = manifest_of(result, final.program, data)
    write_package(out, network, final, data, manifest)
    return dataclasses.replace(result, manifest=manifest)


def _thread_count(max_threads: int | None) -> int:
    """The most threads a program may take: ``max_threads``, else this machine's cores."""
    threads = max_threads or os.cpu_count() or 1
    if threads < 1:
        raise SynthesisError(f"max_threads must be at least 1, got {max_threads}")
    return threads


def _parallel_specs(runtimes: Sequence[str], threads: int) -> list[ProgramSpec]:
    """Every runtime at every thread count up to ``threads``; ONNX Runtime's sequential and parallel executors."""
    return [ProgramSpec(r, n, execution=e) for r in runtimes for n in range(1, threads + 1)
            for e in (("sequential", "parallel") if r == "onnxruntime" and n > 1 else ("sequential",))]


def _fp32_stages(candidates: Candidates, threads: int) -> list[Stage]:
    """Table I's fp32 stages, measured: the baseline, the fastest thread/executor setting (parallel), and the
    fastest fp32 program once each runtime's best setting keeps its layout end to end (layout), decided in paired
    rounds (:func:`paired_fastest_fp32`)."""
    runtimes = candidates.sources.runtimes
    baseline = candidates.run(candidates.reference_spec)
    parallel = candidates.run_ranked(_parallel_specs(runtimes, threads))
    best_by_runtime = {r: fastest([m for m in parallel if m.spec.runtime == r]) for r in runtimes}
    kept = candidates.run_ranked([best_by_runtime[r].spec.with_(layout=KEPT_LAYOUT[r]) for r in runtimes])
    best_fp32 = paired_fastest_fp32(candidates, [*parallel, *kept])
    layout_note = (f"{best_fp32.spec.layout} kept end to end" if best_fp32.spec.layout == KEPT_LAYOUT[
        best_fp32.spec.runtime] else "the kept layouts ran slower in paired rounds; not used")
    return [Stage("baseline", baseline, "single thread, fp32, the runtime's default layout"),
            Stage("parallel", fastest(parallel), f"fastest of {len(parallel)} thread/executor settings"),
            Stage("layout", best_fp32, layout_note)]


def paired_fastest_fp32(candidates: Candidates, programs: Sequence[Measured]) -> Measured:
    """The fastest of the fp32 ``programs`` timed again in the same interleaved rounds (``candidates.check_rounds``); every
    other one of each runtime is set aside (:meth:`Candidates.set_aside`), so that the inexact search starts from,
    and the final choice sees, each runtime's fastest there. Their single search timings, about a second each and
    minutes apart, rank close programs either way on a shared machine: ONNX Runtime's NCHWc program once measured
    slower than its plain one alone and ran 1.39 times faster in paired rounds."""
    distinct = list({m.spec: m for m in programs}.values())
    if len(distinct) == 1:
        return distinct[0]
    timers = {m.spec.label(): program_timer(candidates.sources, m.spec, candidates.sample) for m in distinct}
    comparison = compare_programs(timers, "interleaved", rounds=candidates.check_rounds)
    ranked = sorted(distinct, key=lambda m: comparison.median_s(m.spec.label()))
    for runtime in {m.spec.runtime for m in ranked}:
        for slower in [m for m in ranked if m.spec.runtime == runtime][1:]:
            candidates.set_aside(slower.spec)
    return ranked[0]


def _inexact_searches(candidates: Candidates, budget: float) -> list[InexactSearch]:
    """The inexact search of each runtime whose inexact mode runs natively here and applies to some layer, each
    from that runtime's best fp32 program (layout included)."""
    sources = candidates.sources
    best_by_runtime = {r: fastest(candidates.kept_fp32(r)) for r in sources.runtimes}
    searches: list[InexactSearch] = []
    for r in sources.runtimes:
        if not inexact_available(r) or not sources.quantizable(r):
            continue  # no native inexact mode here, or no layer it applies to
        candidates.report(f"{INEXACT_MODE[r]} search on {r}", 0, 0)
        searches.append(search_runtime(candidates, best_by_runtime[r], budget))
    return searches


def _inexact_stage(within: Sequence[Measured]) -> Stage:
    """Table I's inexact stage: the fastest program within the budget."""
    best = fastest(within)
    scales = "" if best.spec.per_channel else ", weights per tensor"
    inexact_note = (f"{len(best.spec.inexact)} layers {best.spec.mode}{scales}" if best.spec.inexact else
                    "no inexact program within the budget measured faster")
    return Stage("inexact", best, inexact_note)


FINAL = "final artifact"
"""The final program's name in the comparison: it runs from its files, apart from the program it was made from."""


def _compare_stages(stages: Sequence[Stage], ort_fp32: Sequence[Measured], final_timer: Timer, sources: Sources,
                    sample: np.ndarray, protocol: ComparisonProtocol, rounds: RoundsConfig
                    ) -> tuple[list[Stage], Comparison, Measured | None, PairedRatio | None]:
    """Table I's stages with their speed-ups over the baseline, the comparison they come from, ONNX Runtime's best
    fp32 program and the final program over it (the goal is 1.5x) in that comparison.

    Each distinct program is compared once (stages often choose the same one), by its label; the final artifact
    by :data:`FINAL`, since it runs from its files. Every ONNX Runtime fp32 program measured (``ort_fp32``) is
    compared too, and the best is the fastest in the comparison: the search's own single timings can rank two
    close programs the wrong way round. Interleaved: every program timed again in the same rounds; sequential:
    the search's own timings (the final artifact's is the one taken when it was packaged)."""
    programs: dict[str, Measured] = {}
    for m in [s.program for s in stages if s.name != "final"] + list(ort_fp32):
        programs.setdefault(m.spec.label(), m)

    def name(stage: Stage) -> str:
        return FINAL if stage.name == "final" else stage.program.spec.label()

    final = next(s.program for s in stages if s.name == "final")
    if protocol is ComparisonProtocol.SEQUENTIAL:
        timings = {label: m.timing for label, m in programs.items()}
        comparison = compare_timings({**timings, FINAL: final.timing})
    else:
        timers: dict[str, Timer] = {label: program_timer(sources, m.spec, sample) for label, m in programs.items()}
        comparison = compare_programs({**timers, FINAL: final_timer}, protocol, rounds=rounds)
    compared = [dataclasses.replace(s, speedup=comparison.speedup(name(s)), compared_s=comparison.median_s(name(s)))
                for s in stages]
    ort_best = min(ort_fp32, key=lambda m: comparison.median_s(m.spec.label()), default=None)
    over_ort = comparison.ratio(ort_best.spec.label(), FINAL) if ort_best is not None else None
    return compared, comparison, ort_best, over_ort


def _top1(reference: np.ndarray, labels: np.ndarray | None) -> float | None:
    if labels is None:
        return None
    return float(np.mean(reference.reshape(len(reference), -1).argmax(1) == labels))


def _energy_note() -> str:
    from nnperf.measure.power import meter_report

    reasons = [f"{name}: {avail.reason}" for name, avail in meter_report() if not avail.ok]
    if len(reasons) == len(meter_report()):
        return "no energy meter can run on this machine (" + "; ".join(reasons) + ")"
    return ""


def make_sources(module: nn.Module | None, onnx_path: Path | None, calibration: ValidationSet,
                 workdir: Path | None = None) -> Sources:
    """:class:`Sources` for a torch module (exported to ONNX here) or an ONNX file with its own weights."""
    import torch

    from nnperf.ir.export import export_onnx

    folder = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="nnperf-synthesize-"))
    folder.mkdir(parents=True, exist_ok=True)
    if onnx_path is None:
        if module is None:
            raise SynthesisError("give a torch module or an ONNX file")
        onnx_path = export_onnx(module.eval(), torch.from_numpy(calibration.inputs[:1]), folder / "fp32.onnx")
    return Sources(Path(onnx_path), folder, calibration.inputs, module.eval() if module is not None else None)
