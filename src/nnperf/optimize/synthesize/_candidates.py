"""The programs a synthesis measures: each measured once, with its accuracy on the evaluation samples and the
latency nnperf predicted for it before measuring.

:class:`Candidates` keeps every program measured, by spec, in the order measured; :func:`predicted_latency` works
out a program's prediction from its system's calibration, a mixed-precision program's by the share of the inexact
layers' multiply-accumulates (:func:`macs_share`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.measure import HarnessConfig, RoundsConfig
from nnperf.optimize.synthesize._compare import CHECK_ROUNDS
from nnperf.optimize.synthesize._data import ValidationSet
from nnperf.optimize.synthesize._errors import BudgetError, SynthesisError
from nnperf.optimize.synthesize._program import Accuracy, ProgramSpec, Sources, accuracy_of, measure_program
from nnperf.optimize.synthesize._result import Measured, Skipped

if TYPE_CHECKING:
    from torch import nn

Progress = Callable[[str, int, int], None]
Predict = Callable[[ProgramSpec], "float | None"]
"""A program's predicted latency (s) before it is measured, or None where nnperf has no calibration for it."""

MacShares = dict[tuple[str, tuple[str, ...]], dict[str, float]]
"""Each layer's share of the multiply-accumulates of a runtime's layers, by (runtime, layers)."""


class Evaluator:
    """Accuracy of programs on the evaluation samples against the fp32 reference, cached by spec."""

    def __init__(self, sources: Sources, data: ValidationSet, reference: np.ndarray) -> None:
        self.sources, self.data, self.reference = sources, data, reference
        self.cache: dict[ProgramSpec, Accuracy] = {}

    def __call__(self, spec: ProgramSpec) -> Accuracy:
        if spec not in self.cache:
            outputs = self.sources.runner(spec)(self.data.inputs)
            self.cache[spec] = accuracy_of(outputs, self.reference, self.data.labels)
        return self.cache[spec]


class Candidates:
    """Every program one synthesis measured, by spec, in the order measured; each measured once (``harness``, one
    sample), judged against the reference (the first runtime's plain fp32 program, ``reference_spec``) and
    predicted first with ``predict``; the searches decide between programs in paired rounds under ``check_rounds``
    (:data:`CHECK_ROUNDS` by default). With ``measure_best``, a stage whose candidates are all predicted measures
    only the ``measure_best`` predicted fastest of each runtime and records the others as :attr:`skipped`;
    ``measure_s`` keeps the seconds each measured candidate took (timing and accuracy), to say what skipping
    saved."""

    def __init__(self, sources: Sources, data: ValidationSet, harness: HarnessConfig, predict: Predict | None,
                 report: Progress, measure_best: int | None = None,
                 check_rounds: RoundsConfig = CHECK_ROUNDS) -> None:
        if measure_best is not None and measure_best < 1:
            raise SynthesisError(f"measure_best must be at least 1 (or None: measure every candidate), "
                                 f"got {measure_best}")
        self.sources, self.harness, self.predict, self.report = sources, harness, predict, report
        self.measure_best, self.check_rounds = measure_best, check_rounds
        self.skipped: dict[ProgramSpec, Skipped] = {}
        self.measure_s: list[float] = []
        self.sample = data.inputs[:1]
        self.reference_spec = ProgramSpec(sources.runtimes[0])
        self.reference = sources.runner(self.reference_spec)(data.inputs)
        self.evaluate = Evaluator(sources, data, self.reference)
        self.measured: dict[ProgramSpec, Measured] = {}
        self.set_aside_specs: set[ProgramSpec] = set()
        self._predictions: dict[ProgramSpec, float | None] = {}
        self._shares: MacShares = {}

    def predicted(self, spec: ProgramSpec) -> float | None:
        if spec not in self._predictions:
            self._predictions[spec] = predicted_latency(spec, self.predict, self.sources, self.sample,
                                                        self._predictions, self._shares)
        return self._predictions[spec]

    def ranked(self, specs: Sequence[ProgramSpec]) -> list[ProgramSpec]:
        """``specs`` by predicted latency, fastest first; those without a prediction after, in their order."""
        return sorted(specs, key=lambda spec: (self.predicted(spec) is None, self.predicted(spec) or 0.0))

    def run(self, spec: ProgramSpec) -> Measured:
        """``spec`` measured (once: a program measured before is not measured again)."""
        if spec not in self.measured:
            self.report(f"measuring {spec.label()}", len(self.measured), 0)
            started = time.perf_counter()
            timing = measure_program(self.sources, spec, self.sample, self.harness)
            self.measured[spec] = Measured(spec, timing, self.evaluate(spec), self.predicted(spec))
            self.measure_s.append(time.perf_counter() - started)
            self.skipped.pop(spec, None)  # measured after all (another stage wanted it)
        return self.measured[spec]

    def run_ranked(self, specs: Sequence[ProgramSpec]) -> list[Measured]:
        """``specs`` measured in the order of their predicted latency (:meth:`ranked`); with ``measure_best``, and
        every one predicted, only that many of each runtime's predicted fastest."""
        ranked = self.ranked(specs)
        if self.measure_best is not None and all(self.predicted(spec) is not None for spec in ranked):
            kept: list[ProgramSpec] = []
            for spec in ranked:  # the fastest predicted of each runtime: later stages start from each one's best
                if sum(k.runtime == spec.runtime for k in kept) < self.measure_best:
                    kept.append(spec)
                elif spec not in self.measured:
                    self.skipped[spec] = Skipped(spec, float(self.predicted(spec) or 0.0))
            ranked = kept
        return [self.run(spec) for spec in ranked]

    def saved_s(self) -> float:
        """About the seconds skipping saved: the skipped candidates times the median measured one's time."""
        return len(self.skipped) * float(np.median(self.measure_s)) if self.skipped and self.measure_s else 0.0

    def set_aside(self, spec: ProgramSpec) -> None:
        """Keeps ``spec`` (measured) out of :meth:`within`: paired rounds found a faster program than it, which its
        single search timing may not show."""
        self.set_aside_specs.add(spec)

    def fp32(self, runtime: str) -> list[Measured]:
        """The fp32 programs of ``runtime`` measured so far."""
        return [m for m in self.measured.values() if m.spec.runtime == runtime and not m.spec.inexact]

    def kept_fp32(self, runtime: str) -> list[Measured]:
        """The fp32 programs of ``runtime`` measured so far and not set aside."""
        return [m for m in self.fp32(runtime) if m.spec not in self.set_aside_specs]

    def within(self, budget: float) -> list[Measured]:
        """The programs measured whose accuracy drop is within ``budget``, but those set aside (:meth:`set_aside`);
        :class:`BudgetError` when none is."""
        within = [m for m in self.measured.values() if m.accuracy.drop <= budget and m.spec not in self.set_aside_specs]
        if not within:
            raise BudgetError(f"no program meets the accuracy budget of {budget:.2%}: the smallest drop measured was "
                              f"{min(m.accuracy.drop for m in self.measured.values()):.2%} (fp32 on "
                              f"{', '.join(self.sources.runtimes)} against the {self.reference_spec.runtime} "
                              f"reference)")
        return within


def macs_share(sources: Sources, runtime: str, layers: Sequence[str], sample: np.ndarray) -> dict[str, float]:
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


def predicted_latency(spec: ProgramSpec, predict: Predict | None, sources: Sources, sample: np.ndarray,
                      known: dict[ProgramSpec, float | None], shares: MacShares) -> float | None:
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
        shares[key] = macs_share(sources, spec.runtime, layers, sample)
    share = shares[key]
    if fp32_s is None or inexact_s is None or not share:
        return None
    return fp32_s + sum(share[name] for name in spec.inexact) * (inexact_s - fp32_s)
