"""Synthesis end to end (Cappuccino, Fig. 3 and Table I): from a trained network and validation data to the
fastest program on this device within an accuracy budget, measured, verified and written as a deployable folder.

The stages follow Table I, each building on the one before and each measured (harness median) with its accuracy:

1. **baseline**: single-thread fp32, torch eager in chw (ONNX Runtime, plain, for a network given as an ONNX
   file);
2. **parallel** (Cappuccino IV.A): every runtime at every thread count up to ``max_threads``, ONNX Runtime's
   sequential and parallel executors; the fastest;
3. **layout** (IV.B, zero-overhead reordering): the layout each runtime keeps end to end (torch channels-last,
   ONNX Runtime's NCHWc), at each runtime's best parallel setting; the fastest fp32 program so far;
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
import functools
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.measure import ComparisonProtocol, HarnessConfig, PairedRatio, RoundsConfig, Timer, Timing, host_info
from nnperf.measure.backends import LoopTimer
from nnperf.optimize.synthesize._artifact import (
    MANIFEST_FORMAT,
    MANIFEST_VERSION,
    ort_session_document,
    read_manifest,
    runner_script,
    write_artifact,
)
from nnperf.optimize.synthesize._compare import (
    SYNTHESIS_HARNESS,
    SYNTHESIS_ROUNDS,
    Comparison,
    check_protocol,
    compare_programs,
    compare_timings,
)
from nnperf.optimize.synthesize._data import ValidationSet
from nnperf.optimize.synthesize._errors import BudgetError, SynthesisError, ValidationDataError
from nnperf.optimize.synthesize._program import (
    INEXACT_MODE,
    KEPT_LAYOUT,
    Accuracy,
    ProgramSpec,
    Sources,
    accuracy_of,
    measure_program,
)
from nnperf.optimize.synthesize._search import (
    LayerEffect,
    SearchResult,
    check_budget,
    greedy_search,
    ilp_search,
)

if TYPE_CHECKING:
    from torch import nn

Progress = Callable[[str, int, int], None]
Predict = Callable[[ProgramSpec], "float | None"]
"""A program's predicted latency (s) before it is measured, or None where nnperf has no calibration for it."""

STAGES = ("baseline", "parallel", "layout", "inexact", "final")
CHECK_SAMPLES = 8
"""Validation samples stored with the artifact for ``run.py --check``."""


def _no_progress(what: str, done: int, total: int) -> None:
    del what, done, total


@dataclass(frozen=True)
class Measured:
    """A program measured: its spec, timing (median and quartiles over blocks), accuracy, and the latency nnperf
    predicted for it before measuring (None without a calibration of its system)."""

    spec: ProgramSpec
    timing: Timing
    accuracy: Accuracy
    predicted_s: float | None = None

    @property
    def latency_s(self) -> float:
        return self.timing.stats.median_s


@dataclass(frozen=True)
class Stage:
    """One row of Table I: the stage, the program it chose, a note (why a step was not taken), and, once the
    stages are compared (:func:`synthesize` fills them), the baseline over the program (``speedup``, with its
    interval) and the program's median time per execution in that comparison (``compared_s``, seconds)."""

    name: str
    program: Measured
    note: str = ""
    speedup: PairedRatio | None = None
    compared_s: float | None = None


@dataclass(frozen=True)
class InexactSearch:
    """One runtime's inexact search: the layers' effects (``gains_from`` says how their time saved was found), the
    greedy and ILP results and their programs measured (None when the search made no layer inexact)."""

    runtime: str
    mode: str
    effects: tuple[LayerEffect, ...]
    all_inexact: Measured
    greedy: SearchResult
    ilp: SearchResult
    greedy_program: Measured | None
    ilp_program: Measured | None
    gains_from: str


@dataclass(frozen=True)
class SynthesisResult:
    """What :func:`synthesize` did: Table I's stages, the inexact searches, every fp32 candidate measured, the
    reference accuracy (fp32 against the labels; None without labels), ONNX Runtime's best fp32 program (the
    bar the issue sets at 1.2x), the artifact folder and its kind, the energy note (Table II), the comparison the
    speed-ups come from and the final program's speed-up over ONNX Runtime's best fp32 program in it."""

    network: str
    budget: float
    stages: tuple[Stage, ...]
    searches: tuple[InexactSearch, ...]
    candidates: tuple[Measured, ...]
    reference_top1: float | None
    ort_best_fp32: Measured | None
    out: Path
    artifact: str
    evaluation_samples: int
    calibration_samples: int
    elapsed_s: float
    energy_note: str
    comparison: Comparison | None = None
    over_ort_fp32: PairedRatio | None = None
    manifest: dict[str, Any] = field(default_factory=dict)

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


class _Evaluator:
    """Accuracy of programs on the evaluation samples against the fp32 reference, cached by spec."""

    def __init__(self, sources: Sources, data: ValidationSet, reference: np.ndarray) -> None:
        self.sources, self.data, self.reference = sources, data, reference
        self.cache: dict[ProgramSpec, Accuracy] = {}

    def __call__(self, spec: ProgramSpec) -> Accuracy:
        if spec not in self.cache:
            outputs = self.sources.runner(spec)(self.data.inputs)
            self.cache[spec] = accuracy_of(outputs, self.reference, self.data.labels)
        return self.cache[spec]


def check_sample_shape(data: ValidationSet, sample_shape: tuple[int | None, ...], network: str = "the network"
                       ) -> None:
    """Refuses samples whose shape is not the network's (a dynamic dimension, None, takes any size)."""
    shape = tuple(data.sample_shape)
    if len(shape) != len(sample_shape) or any(w is not None and w != s for s, w in zip(shape, sample_shape,
                                                                                         strict=True)):
        raise ValidationDataError(f"the validation samples of {data.name!r} have shape {shape}, {network} takes "
                                  f"{tuple(sample_shape)} (batch left out)")


def _fastest(programs: Sequence[Measured]) -> Measured:
    return min(programs, key=lambda m: m.latency_s)


def _macs_share(sources: Sources, runtime: str, layers: Sequence[str], sample: np.ndarray) -> dict[str, float]:
    """Each layer's share of the multiply-accumulates of ``layers`` (torch modules or ONNX nodes): its weights times
    its output positions, counted by forward hooks on one sample in torch and by ONNX shape inference in ONNX
    Runtime. Empty when nothing was counted."""
    if runtime == "onnxruntime":
        from nnperf.optimize.synthesize._onnx import node_macs

        counts = node_macs(sources.onnx_path, layers)
    elif sources.module is not None:
        counts = _module_macs(sources.module, layers, sample)
    else:
        return {}
    total = sum(counts.values())
    return {name: counts.get(name, 0.0) / total for name in layers} if total > 0 else {}


def _module_macs(module: nn.Module, layers: Sequence[str], sample: np.ndarray) -> dict[str, float]:
    import torch

    counts: dict[str, float] = {}
    handles = []
    by_name = dict(module.named_modules())
    for name in layers:
        def hook(_: Any, __: Any, output: Any, name: str = name) -> None:
            weight = by_name[name].weight
            positions = output.numel() / output.shape[1] if output.dim() > 2 else output.shape[0]
            counts[name] = float(weight.numel() * positions)
        handles.append(by_name[name].register_forward_hook(hook))
    try:
        with torch.inference_mode():
            module(torch.from_numpy(sample))
    finally:
        for handle in handles:
            handle.remove()
    return counts


def _layer_gains(sources: Sources, base: ProgramSpec, all_inexact: ProgramSpec, layers: Sequence[str],
                 base_s: float, inexact_s: float, sample: np.ndarray) -> tuple[dict[str, float], str]:
    """Time each layer saves when inexact (s), and how it was found: ONNX Runtime's profiler per node (fp32 against
    all-int8) where its nodes map back to the layers, else the measured whole-network saving shared by MACs."""
    if base.runtime == "onnxruntime":
        from nnperf.optimize.synthesize._onnx import OrtSettings, node_times

        settings = OrtSettings(base.threads, base.execution, base.layout)
        fp32 = node_times(sources.onnx_model(base), settings, sample)
        int8 = node_times(sources.onnx_model(all_inexact), settings, sample)
        if all(name in fp32 and name in int8 for name in layers):
            return {name: fp32[name] - int8[name] for name in layers}, "per node, ONNX Runtime's profiler"
    share = _macs_share(sources, base.runtime, layers, sample)
    if not share:
        share = dict.fromkeys(layers, 1.0 / len(layers))
    saved = base_s - inexact_s
    return {name: saved * share[name] for name in layers}, "whole-network saving shared by MACs"


def synthesize(sources: Sources, data: ValidationSet, budget: float, out: Path, *, network: str = "network",
               max_threads: int | None = None, harness: HarnessConfig = SYNTHESIS_HARNESS, aot: bool = True,
               inexact: bool = True, predict: Predict | None = None, progress: Progress | None = None,
               protocol: str | ComparisonProtocol = ComparisonProtocol.INTERLEAVED,
               rounds: RoundsConfig = SYNTHESIS_ROUNDS) -> SynthesisResult:
    """Synthesises the fastest program within ``budget`` (a fraction: 0.01 = 1% accuracy drop) on this device and
    writes it to ``out`` (see the module docstring). ``data`` is the evaluation part of the validation set (the
    calibration part is already in ``sources``). ``max_threads`` defaults to this machine's cores. With
    ``predict``, every fp32 candidate is predicted first and the candidates of a stage are measured in the order of
    their predicted latency (fastest first); each :class:`Measured` keeps its prediction. ``harness`` times each
    candidate (about a second by default). ``protocol`` says where the reported speed-ups come from:
    ``interleaved`` (default) times the stages' programs again in the same rounds under ``rounds``
    (:data:`SYNTHESIS_ROUNDS`: up to 20 s); ``sequential`` takes the ratios of the candidates' own medians."""
    budget = check_budget(budget)
    chosen_protocol = check_protocol(protocol)
    check_sample_shape(data, sources.sample_shape(), network)
    report = progress or _no_progress
    start = time.perf_counter()
    threads = max_threads or os.cpu_count() or 1
    if threads < 1:
        raise SynthesisError(f"max_threads must be at least 1, got {max_threads}")
    sample = data.inputs[:1]
    runtimes = sources.runtimes
    reference_spec = ProgramSpec(runtimes[0])
    reference = sources.runner(reference_spec)(data.inputs)
    evaluate = _Evaluator(sources, data, reference)
    measured: dict[ProgramSpec, Measured] = {}

    predictions: dict[ProgramSpec, float | None] = {}
    shares: dict[tuple[str, tuple[str, ...]], dict[str, float]] = {}

    def predicted(spec: ProgramSpec) -> float | None:
        if spec not in predictions:
            predictions[spec] = _predicted(spec, predict, sources, sample, predictions, shares)
        return predictions[spec]

    def ranked(specs: Sequence[ProgramSpec]) -> list[ProgramSpec]:
        """``specs`` by predicted latency, fastest first; those without a prediction after, in their order."""
        return sorted(specs, key=lambda spec: (predicted(spec) is None, predicted(spec) or 0.0))

    def run(spec: ProgramSpec) -> Measured:
        if spec not in measured:
            report(f"measuring {spec.label()}", len(measured), 0)
            timing = measure_program(sources, spec, sample, harness)
            measured[spec] = Measured(spec, timing, evaluate(spec), predicted(spec))
        return measured[spec]

    baseline = run(reference_spec)
    stages = [Stage("baseline", baseline, "single thread, fp32, the runtime's default layout")]

    parallel = [run(spec) for spec in ranked([
        ProgramSpec(r, n, execution=e) for r in runtimes for n in range(1, threads + 1)
        for e in (("sequential", "parallel") if r == "onnxruntime" and n > 1 else ("sequential",))])]
    best_parallel = _fastest(parallel)
    stages.append(Stage("parallel", best_parallel, f"fastest of {len(parallel)} thread/executor settings"))

    best_by_runtime = {r: _fastest([m for m in parallel if m.spec.runtime == r]) for r in runtimes}
    kept = [run(spec) for spec in ranked([best_by_runtime[r].spec.with_(layout=KEPT_LAYOUT[r]) for r in runtimes])]
    best_fp32 = _fastest([*parallel, *kept])
    layout_note = (f"{best_fp32.spec.layout} kept end to end" if best_fp32.spec.layout == KEPT_LAYOUT[
        best_fp32.spec.runtime] else "the kept layouts measured slower; not used")
    stages.append(Stage("layout", best_fp32, layout_note))
    for r in runtimes:  # each runtime's best fp32 program, layout included
        best_by_runtime[r] = _fastest([m for m in measured.values() if m.spec.runtime == r and not m.spec.inexact])

    searches: list[InexactSearch] = []
    if inexact:
        for r in runtimes:
            if not _inexact_available(r) or not sources.quantizable(r):
                continue  # no native inexact mode here, or no layer it applies to
            report(f"{INEXACT_MODE[r]} search on {r}", 0, 0)
            searches.append(_search_runtime(sources, best_by_runtime[r], evaluate, run, budget, sample))
    within = [m for m in measured.values() if m.accuracy.drop <= budget]
    if not within:
        raise BudgetError(f"no program meets the accuracy budget of {budget:.2%}: the smallest drop measured was "
                          f"{min(m.accuracy.drop for m in measured.values()):.2%} (fp32 on "
                          f"{', '.join(runtimes)} against the {reference_spec.runtime} reference)")
    best = _fastest(within)
    inexact_note = (f"{len(best.spec.inexact)} layers {best.spec.mode}" if best.spec.inexact else
                    "no inexact program within the budget measured faster")
    stages.append(Stage("inexact", best, inexact_note))

    report("packaging and timing the artifacts", 0, 0)
    final, artifact, model_path, session, final_note, final_timer = _package(sources, within, runtimes, data,
                                                                             reference, harness, aot)
    stages.append(Stage("final", final, final_note))
    ort_fp32 = [m for m in measured.values() if m.spec.runtime == "onnxruntime" and not m.spec.inexact]
    ort_best = _fastest(ort_fp32) if ort_fp32 else None
    report(f"comparing the stages ({chosen_protocol.value})", 0, 0)
    stages, comparison, over_ort = _compare_stages(stages, ort_best, final_timer, sources, sample, chosen_protocol,
                                                   rounds)
    result = SynthesisResult(network, budget, tuple(stages), tuple(searches), tuple(measured.values()),
                             _top1(reference, data.labels), ort_best, out, artifact,
                             len(data), len(sources.calibration), time.perf_counter() - start, _energy_note(),
                             comparison, over_ort)
    manifest = _manifest(result, final, data)
    runtime = "onnxruntime" if model_path.suffix == ".onnx" else "torch"
    runner = runner_script(network, final.spec.label(), runtime, "model.onnx" if runtime == "onnxruntime"
                           else "model.pt2", final.spec.threads, tuple(data.sample_shape),
                           channels_last=final.spec.layout == "hwc")
    check = data.inputs[:CHECK_SAMPLES]
    outputs = _artifact_runner(model_path, final.spec)(check)
    write_artifact(out, model_path, runtime, manifest, check, outputs, session, runner)
    return dataclasses.replace(result, manifest=manifest)


FINAL = "final artifact"
"""The final program's name in the comparison: it runs from its files, apart from the program it was made from."""


def _compare_stages(stages: Sequence[Stage], ort_best: Measured | None, final_timer: Timer, sources: Sources,
                    sample: np.ndarray, protocol: ComparisonProtocol, rounds: RoundsConfig
                    ) -> tuple[list[Stage], Comparison, PairedRatio | None]:
    """Table I's stages with their speed-ups over the baseline, the comparison they come from, and the final
    program over ONNX Runtime's best fp32 program (the issue's 1.2x bar) in it.

    Each distinct program is compared once (stages often choose the same one), by its label; the final artifact
    by :data:`FINAL`, since it runs from its files. Interleaved: every program timed again in the same rounds;
    sequential: the search's own timings (the final artifact's is the one taken when it was packaged)."""
    programs: dict[str, Measured] = {}
    for m in [s.program for s in stages if s.name != "final"] + ([ort_best] if ort_best is not None else []):
        programs.setdefault(m.spec.label(), m)

    def name(stage: Stage) -> str:
        return FINAL if stage.name == "final" else stage.program.spec.label()

    final = next(s.program for s in stages if s.name == "final")
    if protocol is ComparisonProtocol.SEQUENTIAL:
        timings = {label: m.timing for label, m in programs.items()}
        comparison = compare_timings({**timings, FINAL: final.timing})
    else:
        timers: dict[str, Timer] = {label: LoopTimer(functools.partial(sources.runner(m.spec), sample))
                                    for label, m in programs.items()}
        comparison = compare_programs({**timers, FINAL: final_timer}, protocol, rounds=rounds)
    compared = [dataclasses.replace(s, speedup=comparison.speedup(name(s)), compared_s=comparison.median_s(name(s)))
                for s in stages]
    over_ort = comparison.ratio(ort_best.spec.label(), FINAL) if ort_best is not None else None
    return compared, comparison, over_ort


def _predicted(spec: ProgramSpec, predict: Predict | None, sources: Sources, sample: np.ndarray,
               known: dict[ProgramSpec, float | None],
               shares: dict[tuple[str, tuple[str, ...]], dict[str, float]]) -> float | None:
    """``spec``'s predicted latency: from its system's calibration for an fp32 program or one with every layer
    inexact (``ProgramSpec.backend_system`` names the precision); a mixed program lies between the two, by the
    share of the inexact layers' multiply-accumulates: fp32 + share x (all inexact - fp32). ``known`` and
    ``shares`` keep the predictions and MAC shares already worked out, for the next candidate."""
    if predict is None:
        return None
    layers = sources.quantizable(spec.runtime) if spec.inexact else ()
    if not spec.inexact or set(spec.inexact) == set(layers):
        return predict(spec)
    ends = []
    for end in (spec.with_(inexact=()), spec.with_(inexact=layers)):
        if end not in known:
            known[end] = predict(end)
        ends.append(known[end])
    fp32_s, inexact_s = ends
    key = (spec.runtime, tuple(layers))
    if key not in shares:
        shares[key] = _macs_share(sources, spec.runtime, layers, sample)
    share = shares[key]
    if fp32_s is None or inexact_s is None or not share:
        return None
    return fp32_s + sum(share[name] for name in spec.inexact) * (inexact_s - fp32_s)


def _top1(reference: np.ndarray, labels: np.ndarray | None) -> float | None:
    if labels is None:
        return None
    return float(np.mean(reference.reshape(len(reference), -1).argmax(1) == labels))


def _inexact_available(runtime: str) -> bool:
    """Whether ``runtime``'s inexact mode runs natively here (torch's bf16 needs the CPU's support; int8 always
    runs)."""
    if runtime == "torch":
        from nnperf.optimize.synthesize._torch import bf16_native

        return bf16_native()
    return True


def _search_runtime(sources: Sources, base: Measured, evaluate: _Evaluator, run: Callable[[ProgramSpec], Measured],
                    budget: float, sample: np.ndarray) -> InexactSearch:
    """One runtime's inexact search from its best fp32 program ``base``."""
    layers = sources.quantizable(base.spec.runtime)
    all_inexact = run(base.spec.with_(inexact=layers))
    gains, gains_from = _layer_gains(sources, base.spec, all_inexact.spec, layers, base.latency_s, all_inexact.latency_s,
                            sample)
    effects = tuple(LayerEffect(name, evaluate(base.spec.with_(inexact=(name,))).drop, gains[name])
                    for name in layers)

    def drop_of(chosen: frozenset[str]) -> float:
        return evaluate(base.spec.with_(inexact=tuple(n for n in layers if n in chosen))).drop

    greedy = greedy_search(effects, drop_of, budget)
    ilp = ilp_search(effects, drop_of, budget)

    def program(result: SearchResult) -> Measured | None:
        if not result.inexact:
            return None
        return run(base.spec.with_(inexact=tuple(n for n in layers if n in set(result.inexact))))

    return InexactSearch(base.spec.runtime, INEXACT_MODE[base.spec.runtime], effects, all_inexact, greedy, ilp,
                         program(greedy), program(ilp), gains_from)


def _artifact_runner(model: Path, spec: ProgramSpec) -> Callable[[np.ndarray], np.ndarray]:
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
                       tuple(program["inexact"]))
    model = Path(folder) / ("model.onnx" if spec.runtime == "onnxruntime" else "model.pt2")
    return _artifact_runner(model, spec)


Packaged = tuple[Measured, str, Path, "dict[str, Any] | None", Timer]
"""An artifact measured from its files: (measured, kind, model file, ONNX Runtime session document or None, a timer
of one sample run from its files)."""


def _package(sources: Sources, within: Sequence[Measured], runtimes: Sequence[str], data: ValidationSet,
             reference: np.ndarray, harness: HarnessConfig, aot: bool
             ) -> tuple[Measured, str, Path, dict[str, Any] | None, str, Timer]:
    """The deployable artifact: each runtime's fastest program within the budget packaged (ONNX Runtime: the model
    and its session options; torch, with ``aot``: an AOTInductor package), loaded back, checked and timed; the
    faster one wins. Returns it with a note naming what it was measured against, and its timer."""
    packaged: list[Packaged] = []
    failed: list[str] = []
    for runtime in runtimes:
        programs = [m for m in within if m.spec.runtime == runtime]
        if not programs or (runtime == "torch" and not aot):
            continue
        try:
            packaged.append(_artifact(sources, _fastest(programs), data, reference, harness))
        except SynthesisError as exc:
            failed.append(f"{runtime}: {exc}")
    if not packaged:
        raise SynthesisError("no program within the budget could be packaged: " + "; ".join(failed))
    final, kind, model, session, timer = min(packaged, key=lambda p: p[0].latency_s)
    others = [f"{k} {m.latency_s * 1e3:.2f} ms" for m, k, _, _, _ in packaged if k != kind] + failed
    note = kind + (f" (against {', '.join(others)})" if others else "")
    return final, kind, model, session, note, timer


def _artifact(sources: Sources, best: Measured, data: ValidationSet, reference: np.ndarray,
              harness: HarnessConfig) -> Packaged:
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
    run_artifact = _artifact_runner(model, spec)
    accuracy = accuracy_of(run_artifact(data.inputs), reference, data.labels)
    if accuracy.drop > best.accuracy.drop + 1.0 / len(data) and accuracy.drop > 0:
        raise SynthesisError(f"the {kind} of {spec.label()} lost accuracy against the program it was made from "
                             f"(drop {accuracy.drop:.2%} against {best.accuracy.drop:.2%}); nothing was written")
    from nnperf.measure import measure

    timer = LoopTimer(functools.partial(run_artifact, data.inputs[:1]))
    timing = measure(timer, harness)
    return Measured(spec, timing, accuracy, best.predicted_s), kind, model, session, timer


def _energy_note() -> str:
    from nnperf.measure.power import meter_report

    reasons = [f"{name}: {avail.reason}" for name, avail in meter_report() if not avail.ok]
    if len(reasons) == len(meter_report()):
        return "no energy meter can run on this machine (" + "; ".join(reasons) + ")"
    return ""


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("nnperf", "numpy", "torch", "onnxruntime", "onnx"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found


def _manifest(result: SynthesisResult, final: Measured, data: ValidationSet) -> dict[str, Any]:
    host = host_info()
    layers: dict[str, str] = {}
    search = next((s for s in result.searches if s.runtime == final.spec.runtime), None)
    if search is not None:
        layers = {e.layer: (search.mode if e.layer in final.spec.inexact else "fp32") for e in search.effects}
    stats = final.timing.stats
    comparison = result.comparison
    return {
        "format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "network": result.network,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": {"cpu": host.cpu_model, "logical_cores": host.logical_cores, "os": platform.platform()},
        "versions": _versions(), "budget": result.budget, "artifact": result.artifact,
        "program": final.spec.to_dict(), "layers": layers,
        "latency_s": {"median": stats.median_s, "q1": stats.q1_s, "q3": stats.q3_s},
        "accuracy": final.accuracy.to_dict(), "reference_top1": result.reference_top1,
        "validation": {"name": data.name, "evaluation_samples": result.evaluation_samples,
                       "calibration_samples": result.calibration_samples, "proxy": data.proxy},
        "comparison": comparison.to_dict() if comparison is not None else None,
        "table1": [{"stage": s.name, "program": s.program.spec.label(), "latency_s": s.program.latency_s,
                    "predicted_s": s.program.predicted_s, "compared_latency_s": s.compared_s,
                    **_speedup_fields(s.speedup, result.stages[0].program.latency_s / s.program.latency_s),
                    "accuracy": s.program.accuracy.to_dict(), "note": s.note} for s in result.stages],
        "speedup_over_ort_fp32": result.over_ort_fp32.to_dict() if result.over_ort_fp32 is not None else None,
        "energy": result.energy_note or None,
        "candidates": [{"program": m.spec.label(), "latency_s": m.latency_s, "predicted_s": m.predicted_s,
                        "drop": m.accuracy.drop} for m in result.candidates],
    }


def _speedup_fields(ratio: PairedRatio | None, unpaired: float) -> dict[str, Any]:
    """A Table I row's speed-up: the comparison's median and interval, or (no comparison) the ratio of medians."""
    if ratio is None:
        return {"speedup": unpaired, "speedup_ci": None}
    return {"speedup": ratio.median, "speedup_ci": [ratio.ci_low, ratio.ci_high]}


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
