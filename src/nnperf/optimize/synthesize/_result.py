"""What a synthesis finds: programs measured, Table I's stages, the inexact searches and the result as a whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nnperf.measure import PairedRatio, Timing
from nnperf.optimize.synthesize._boundaries import MixedCost
from nnperf.optimize.synthesize._compare import Comparison
from nnperf.optimize.synthesize._program import Accuracy, ProgramSpec
from nnperf.optimize.synthesize._search import LayerEffect, SearchResult

STAGES = ("baseline", "parallel", "layout", "inexact", "final")


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
class Skipped:
    """A candidate the predictions ranked out of the few measured: its spec and predicted latency (s)."""

    spec: ProgramSpec
    predicted_s: float


def fastest(programs: Sequence[Measured]) -> Measured:
    """The program of the lowest median latency (the first of equals)."""
    return min(programs, key=lambda m: m.latency_s)


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
class PredictionCheck:
    """One searched program timed with the fp32 program in paired rounds after the search, against the border
    model's prediction made before it: ``programs`` names the searches that chose it ("all int8", "greedy",
    "ILP"), ``spec`` is the program and ``drop`` its accuracy drop, ``measured`` its time over fp32's (median
    per-round ratio with its interval), ``predicted_ratio`` the model's, and ``fitted`` whether the model was
    fitted to this very program (then it is no test)."""

    programs: str
    spec: ProgramSpec
    drop: float
    predicted_ratio: float
    measured: PairedRatio
    fitted: bool

    @property
    def layers(self) -> int:
        """How many layers the program runs inexact."""
        return len(self.spec.inexact)

    @property
    def error(self) -> float:
        """The prediction's relative error: predicted over measured ratio, less 1."""
        return self.predicted_ratio / self.measured.median - 1.0

    def describe(self) -> str:
        m = self.measured
        return (f"{self.programs} ({self.layers} layers): {m.median:.3f} [{m.ci_low:.3f}, {m.ci_high:.3f}] of fp32's "
                f"time, predicted {self.predicted_ratio:.3f} ({self.error:+.1%}"
                f"{'; fitted to it' if self.fitted else ''})")


def paired_winner(checks: Sequence[PredictionCheck], budget: float) -> PredictionCheck | None:
    """The checked program within ``budget`` (accuracy drop) that ran fastest in its paired rounds, if faster than
    fp32 there; None where fp32 won. The search keeps it and sets the others, fp32 included, aside: their single
    search timings, taken minutes apart, are not to overrule the paired rounds."""
    within = [check for check in checks if check.drop <= budget]
    best = min(within, key=lambda check: check.measured.median, default=None)
    return best if best is not None and best.measured.median < 1.0 else None


@dataclass(frozen=True)
class GranularityCheck:
    """The int8 program the paired check kept, again with its weights scaled per tensor instead of per output
    channel: ``spec`` (per tensor), its accuracy ``drop``, its time over the per-channel program's in paired
    rounds (``measured``; None when its drop is over the budget, so it was not timed) and whether it was kept."""

    spec: ProgramSpec
    drop: float
    measured: PairedRatio | None
    kept: bool

    def describe(self) -> str:
        if self.measured is None:
            return f"weights per tensor: drop {self.drop:.2%}, over the budget; kept per output channel"
        m = self.measured
        kept = "per tensor" if self.kept else "per output channel"
        return (f"weights per tensor: {m.median:.3f} [{m.ci_low:.3f}, {m.ci_high:.3f}] of per-channel's time, drop "
                f"{self.drop:.2%}; kept {kept}")


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
    cost: MixedCost | None = None
    """The border model the ILP maximised and both searches' programs were predicted with (ONNX Runtime only)."""
    checked: tuple[PredictionCheck, ...] = ()
    """The all-inexact and searched programs timed with fp32 in paired rounds, against the border model's
    predictions (with a border model only)."""
    kept: str = ""
    """Which program the paired check kept (:func:`paired_winner`): the searches' names, or "fp32"; empty without
    a check."""
    granularity: GranularityCheck | None = None
    """The kept int8 program with its weights per tensor, timed against it (None where fp32 was kept or no check
    ran)."""


@dataclass(frozen=True)
class SynthesisResult:
    """What :func:`synthesize` did: Table I's stages, the inexact searches, every fp32 candidate measured, the
    reference accuracy (fp32 against the labels; None without labels), ONNX Runtime's best fp32 program (the
    goal is 1.5x over it: bench/synthesize_networks.py, RESULTS.md), the artifact
    folder and its kind, the energy note (Table II), the comparison the speed-ups come from and the final
    program's speed-up over ONNX Runtime's best fp32 program in it; with ``measure_best``, the candidates skipped."""

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
    skipped: tuple[Skipped, ...] = ()
    """Candidates the predictions ranked out of those measured (``measure_best``)."""
    skipping_saved_s: float = 0.0
    """About the seconds skipping saved (the skipped candidates times a measured one's median time)."""

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)
