"""Stage 4 of a synthesis (Cappuccino IV.C): one runtime's inexact search from its best fp32 program.

Each layer's effect alone (accuracy drop on the evaluation samples, time saved) feeds the paper's greedy search
and the exact ILP (:mod:`._search`); the programs both choose are measured. On ONNX Runtime the ILP also counts
what the borders of int8 regions cost (:mod:`._boundaries`): a model fitted to a few random mixed programs,
timed in paired rounds with the fp32 program and the all-int8 one, which also predicts both searches' programs.
After the search those programs are timed again with fp32 in paired rounds, against the model's predictions, and
the fastest there within the budget is kept (:func:`check_predictions`); the kept int8 program is then tried with
its weights scaled per tensor instead of per output channel, and kept so where that is within the budget and
faster in paired rounds (:func:`check_granularity`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nnperf.optimize.synthesize._boundaries import MixedCost, fit_mixed_cost, int8_edges
from nnperf.optimize.synthesize._candidates import Candidates, macs_share
from nnperf.optimize.synthesize._compare import compare_programs
from nnperf.optimize.synthesize._program import INEXACT_MODE, ProgramSpec, Sources, program_timer
from nnperf.optimize.synthesize._result import (
    GranularityCheck,
    InexactSearch,
    Measured,
    PredictionCheck,
    paired_winner,
)
from nnperf.optimize.synthesize._search import LayerEffect, SearchResult, greedy_search, ilp_search

PROBE_SHARES = (0.25, 0.5, 0.75)
"""The share of layers made int8 in each random probe program the border model is fitted to."""


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
    saved = shared_by_macs(sources, base.runtime, layers, sample, base_s - inexact_s)
    return saved, "whole-network saving shared by MACs"


def shared_by_macs(sources: Sources, runtime: str, layers: Sequence[str], sample: np.ndarray, saved_s: float
                   ) -> dict[str, float]:
    """``saved_s`` shared out over ``layers`` by their multiply-accumulates (evenly where none were counted)."""
    share = macs_share(sources, runtime, layers, sample) or dict.fromkeys(layers, 1.0 / len(layers))
    return {name: saved_s * share[name] for name in layers}


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

    cost = mixed_cost(candidates, base, all_inexact) if base.spec.runtime == "onnxruntime" else None
    greedy = greedy_search(effects, drop_of, budget, cost)
    ilp = ilp_search(effects, drop_of, budget, cost=cost)

    def program(result: SearchResult) -> Measured | None:
        if not result.inexact:
            return None
        return run(base.spec.with_(inexact=tuple(n for n in layers if n in set(result.inexact))))

    checked, kept = (check_predictions(candidates, base.spec, cost, {"all int8": all_inexact.spec.inexact,
                                                                     "greedy": greedy.inexact, "ILP": ilp.inexact},
                                       budget) if cost is not None else ((), ""))
    winner = next((check.spec for check in checked if check.programs == kept), None)
    granularity = check_granularity(candidates, winner, budget) if winner is not None else None
    return InexactSearch(base.spec.runtime, INEXACT_MODE[base.spec.runtime], effects, all_inexact, greedy, ilp,
                         program(greedy), program(ilp), gains_from, cost, checked, kept, granularity)


def check_granularity(candidates: Candidates, per_channel: ProgramSpec, budget: float) -> GranularityCheck:
    """The int8 program ``per_channel`` again with its weights scaled per tensor: its accuracy drop on the
    evaluation samples and, within ``budget``, its time over the per-channel program's in paired rounds
    (``candidates.check_rounds``). Per tensor is kept (measured, and the per-channel program set aside) where it ran
    faster there. One scale per weight tensor instead of one per output channel ran the all-int8 glyph networks 1-9%
    faster on an AMD EPYC (Zen 4, AVX-512 with VNNI) and cost MobileNet v2 0.46 points of top-1
    (bench/int8_granularity.py, bench/synthesize_networks.py)."""
    per_tensor = per_channel.with_(int8_weights="per_tensor")
    drop = candidates.evaluate(per_tensor).drop
    if drop > budget:
        return GranularityCheck(per_tensor, drop, None, kept=False)
    sources, sample = candidates.sources, candidates.sample
    comparison = compare_programs({"per channel": program_timer(sources, per_channel, sample),
                                   "per tensor": program_timer(sources, per_tensor, sample)},
                                  "interleaved", rounds=candidates.check_rounds)
    measured = comparison.ratio("per tensor", "per channel")
    faster = measured.median < 1.0
    if faster:
        candidates.run(per_tensor)
        candidates.set_aside(per_channel)
    return GranularityCheck(per_tensor, drop, measured, faster)


def check_predictions(candidates: Candidates, base: ProgramSpec, cost: MixedCost,
                      programs: Mapping[str, Sequence[str]], budget: float) -> tuple[tuple[PredictionCheck, ...], str]:
    """The distinct non-empty ``programs`` (a name to its int8 layers) timed with the fp32 program ``base`` in
    paired rounds (``candidates.check_rounds``), each against the border model's predicted ratio to fp32. The search's
    own timings are single sequential medians taken minutes apart, so they cannot say how far off the model is;
    these can. The fastest of them within ``budget`` there, fp32 included (:func:`paired_winner`), is kept and
    every other one is set aside (:meth:`Candidates.set_aside`): their single search timings are not to overrule
    the paired rounds. Also returns the name of the program kept ("fp32" when fp32 won)."""
    sources, sample = candidates.sources, candidates.sample
    names: dict[frozenset[str], list[str]] = {}
    for name, chosen in programs.items():
        if chosen:
            names.setdefault(frozenset(chosen), []).append(name)
    if not names:
        return (), ""
    labels = {chosen: " = ".join(found) for chosen, found in names.items()}
    timers = {"fp32": program_timer(sources, base, sample)}
    specs = {label: base.with_(inexact=tuple(n for n in sources.quantizable(base.runtime) if n in chosen))
             for chosen, label in labels.items()}
    for label, spec in specs.items():
        timers[label] = program_timer(sources, spec, sample)
    comparison = compare_programs(timers, "interleaved", rounds=candidates.check_rounds)
    checks = tuple(PredictionCheck(label, specs[label], candidates.evaluate(specs[label]).drop, cost.ratio(chosen),
                                   comparison.ratio(label, "fp32"), cost.fitted(chosen))
                   for chosen, label in labels.items())
    winner = paired_winner(checks, budget)
    for spec in [base, *specs.values()]:
        if spec != (base if winner is None else winner.spec):
            candidates.set_aside(spec)
    return checks, "fp32" if winner is None else winner.programs


def mixed_cost(candidates: Candidates, base: Measured, all_inexact: Measured, seed: int = 0) -> MixedCost:
    """The border model of ``base``'s program (:func:`~._boundaries.fit_mixed_cost`), fitted to the all-int8
    program and one random program per share of :data:`PROBE_SHARES`, each timed over the fp32 program in the
    same paired rounds. Its gains are the all-int8 program's saving in those rounds shared by MACs: the per-node
    profile at several threads can charge int8 nodes more than their fp32 ones even where the whole int8 program
    is faster, which would leave the fit no gain to scale."""
    sources, layers = candidates.sources, list(all_inexact.spec.inexact)
    rng = np.random.default_rng(seed)
    drawn = [tuple(n for n in layers if rng.random() < share) for share in PROBE_SHARES]
    probes = list(dict.fromkeys([all_inexact.spec.inexact, *(chosen for chosen in drawn if chosen)]))
    timers = {"fp32": program_timer(sources, base.spec, candidates.sample)}
    for i, chosen in enumerate(probes):
        timers[f"probe {i}"] = program_timer(sources, base.spec.with_(inexact=chosen), candidates.sample)
    comparison = compare_programs(timers, "interleaved", rounds=candidates.check_rounds)
    ratios = [1.0 / comparison.speedup(f"probe {i}").median for i in range(len(probes))]
    gains = shared_by_macs(sources, base.spec.runtime, layers, candidates.sample,
                           base.latency_s * (1.0 - ratios[0]))  # probe 0: all int8
    edges = int8_edges(sources.onnx_path, layers)
    return fit_mixed_cost(base.latency_s, gains, edges, list(zip(probes, ratios, strict=True)),
                          slow_pool_counter(sources, base.spec))


def slow_pool_counter(sources: Sources, base: ProgramSpec) -> Callable[[frozenset[str]], int]:
    """For a set of int8 layers, how many max-pools ORT runs on 8-bit data in NCHW in ``base``'s program with those
    layers int8 (:func:`~._onnx.slow_int8_pools`; each set's program is written and optimised once)."""
    from nnperf.optimize.synthesize._onnx import OrtSettings, slow_int8_pools

    settings = OrtSettings(base.threads, base.execution, base.layout)

    @functools.cache
    def count(chosen: frozenset[str]) -> int:
        return slow_int8_pools(sources.onnx_model(base.with_(inexact=tuple(sorted(chosen)))), settings) if chosen else 0

    return count
