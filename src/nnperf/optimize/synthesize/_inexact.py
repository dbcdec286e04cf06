"""Stage 4 of a synthesis (Cappuccino IV.C): one runtime's inexact search from its best fp32 program.

Each layer's effect alone (accuracy drop on the evaluation samples, time saved) feeds the paper's greedy search
and the exact ILP (:mod:`._search`); the programs both choose are measured."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nnperf.optimize.synthesize._candidates import Candidates, macs_share
from nnperf.optimize.synthesize._program import INEXACT_MODE, ProgramSpec, Sources
from nnperf.optimize.synthesize._result import InexactSearch, Measured
from nnperf.optimize.synthesize._search import LayerEffect, SearchResult, greedy_search, ilp_search


def inexact_available(runtime: str) -> bool:
    """Whether ``runtime``'s inexact mode runs natively here (torch's bf16 needs the CPU's support; int8 always
    runs)."""
    if runtime == "torch":
        from nnperf.optimize.synthesize._torch import bf16_native

        return bf16_native()
    return True


def layer_gains(sources: Sources, base: ProgramSpec, all_inexact: ProgramSpec, layers: Sequence[str],
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
    share = macs_share(sources, base.runtime, layers, sample)
    if not share:
        share = dict.fromkeys(layers, 1.0 / len(layers))
    saved = base_s - inexact_s
    return {name: saved * share[name] for name in layers}, "whole-network saving shared by MACs"


def search_runtime(candidates: Candidates, base: Measured, budget: float) -> InexactSearch:
    """One runtime's inexact search from its best fp32 program ``base``."""
    sources, evaluate, run = candidates.sources, candidates.evaluate, candidates.run
    layers = sources.quantizable(base.spec.runtime)
    all_inexact = run(base.spec.with_(inexact=layers))
    gains, gains_from = layer_gains(sources, base.spec, all_inexact.spec, layers, base.latency_s,
                                    all_inexact.latency_s, candidates.sample)
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
