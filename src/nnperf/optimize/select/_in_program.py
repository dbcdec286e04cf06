"""Convolution costs measured inside the running program, and a selection refined with them.

A primitive timed alone, on a fresh tensor, is not the primitive inside a network: its input was just written by
another primitive (in cache, or not; in a layout whose strides it may not like), and its own output is read by the
next. On MobileNet v2 and MnasNet (one thread, a 2-core AMD EPYC VM) the selection on profiled costs ran
slower than torch's default, and 80-84% of its excess was in the convolutions: the primitives it chose ran slower
in the program, relative to ``conv2d``, than alone (``bench/select_in_program.py``).

:func:`time_in_program` runs selections of a network in interleaved rounds (a fresh random order each round)
and times every convolution's primitive call and every layout move inside the forward pass.
:func:`refine_in_program` starts from a selection solved on isolated costs (predicted or profiled) and repeats:
run the selection, its challenger (every convolution on its cheapest primitive not yet run in the program, within
:data:`EXPLORE_WITHIN` of the one it runs, :func:`challenger`) and the default in the program, replace the cost of
every (configuration, primitive) pair run with its in-program median, scale the pairs not run by their
configuration's context factor (in-program over isolated time of the pairs that were run), give every layout
transformation that ran its in-program median too, and solve again, until the solver picks a selection already
run and no layer has an option left to explore, or the steps run out. The :data:`UNIFORM_CANDIDATES` best uniform
choices on the refined costs (one primitive wherever it applies, the layouts solved around it) are run once too.
Of every selection run, the :data:`CONFIRM_CANDIDATES` fastest against the default, and the fastest uniform choice,
run again with it in fresh rounds, timed as a user runs them (whole programs, no call timed inside, interleaved in
blocks: :func:`~nnperf.optimize.select.compare_selections`), and the fastest there whose interval is below 1 is
kept (the default where none is). The transformations that did not run and the other layers keep their isolated
costs.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.ir import Network
from nnperf.measure import ComparisonProtocol, PairedRatio, Rounds
from nnperf.optimize.select._costs import PrimitiveCosts, activation_key, activation_shapes, network_convs
from nnperf.optimize.select._execute import _inputs, build_selected
from nnperf.optimize.select._graph import CostGraph, Selection, SelectionError
from nnperf.optimize.select._network import (
    default_selection,
    network_cost_graph,
    selection_from_labels,
    uniform_selections,
)
from nnperf.optimize.select._solvers import solve
from nnperf.prediction.primitives import ActivationShape
from nnperf.primitives import ConvConfig

if TYPE_CHECKING:
    from torch import nn

IN_PROGRAM_ROUNDS = 20
"""Rounds :func:`refine_in_program` runs its programs for, per refinement step (each program once a round)."""

EXPLORE_WITHIN = 3.0
"""How far a :func:`challenger` reaches: a primitive is run in the program only if its cost is at most this many
times the one the layer runs. The cost models of this project were measured wrong by up to 2.4x on a whole
layer (VGG-11's NNPACK layers, ranked fourth or lower); the bound also caps a challenger's convolutions at three
times the selection's."""

UNIFORM_CANDIDATES = 3
"""How many of the best uniform choices on the refined costs a refinement runs (those not run already): the one
the refined costs rank first can miss the fastest, whose convolutions' costs the steps did not measure."""

CONFIRM_CANDIDATES = 3
"""How many of the selections that ran fastest against the default are run again, together, in fresh rounds
before one is kept. The fastest in one set of rounds is the one its noise favoured most: on MobileNet v2 it
failed its confirmation and the default was kept, while a uniform choice 2.8% faster in the same rounds was
1.05x faster than the default when timed again.

The fastest uniform choice run is confirmed too, however it ran in the program: timed in the program, MobileNet
v2's best uniform choice (oneDNN on hwc) over the default came out higher than in plain rounds in 6 of 8 paired
repeats, by a median 0.9 points (``bench/in_program_bias.py``), and a refinement that ranked it by
its in-program time alone never ran it again and kept the default, 3% slower than it in the benchmark's rounds."""


@dataclass(frozen=True)
class InProgramTimes:
    """One selection run in the program: its whole time in each round (s), each convolution's median primitive
    call (s, by layer name) and the median layout move (s) by activation shape and transformation name."""

    rounds_s: tuple[float, ...]
    conv_s: Mapping[str, float]
    moves_s: Mapping[tuple[ActivationShape, str], float] = dataclasses.field(default_factory=dict)

    @property
    def whole_s(self) -> float:
        """The median whole time (s)."""
        return statistics.median(self.rounds_s)

    def ratio(self, other: InProgramTimes, confidence: float = 0.95) -> PairedRatio:
        """This program's time over ``other``'s (timed in the same rounds): the median per-round ratio with its
        bootstrap interval."""
        rounds = Rounds(ComparisonProtocol.INTERLEAVED, ("this", "other"), (self.rounds_s, other.rounds_s), (1, 1),
                        sum(self.rounds_s) + sum(other.rounds_s))
        return rounds.ratio("this", "other", confidence)


def _timed_steps(module: nn.Module, convs: Mapping[str, ConvConfig], sink: dict[str, float]) -> None:
    """Makes every convolution step of ``module`` (a :func:`build_selected` module) add the seconds of its
    primitive call to ``sink[layer]``."""
    def timed(run: Callable[..., Any], name: str) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            start = time.perf_counter()
            y = run(*args)
            sink[name] = sink.get(name, 0.0) + time.perf_counter() - start
            return y
        return call

    module._steps = tuple(dataclasses.replace(step, run=timed(step.run, step.layer.name))
                          if step.layer.name in convs else step for step in module._steps)


class _Programs:
    """Selections of one network, each built once by its labels with every convolution's primitive call timed into
    one sink, and timed in interleaved rounds. A module stays built while the next :meth:`time` asks for it again
    (a refinement's default, every step) and is dropped when it does not, so at most one call's modules live."""

    def __init__(self, network: Network, seed: int, threads: int) -> None:
        self.network, self.seed, self.threads = network, seed, threads
        self.convs = network_convs(network)
        self.shapes = {name: activation_key(shape) for name, shape in activation_shapes(network).items()
                       if len(shape) == 4}
        self.sink: dict[str, float] = {}
        self.moves: list[tuple[str, str, float]] = []
        self.built: dict[frozenset[tuple[str, str]], nn.Module] = {}

    def modules(self, selections: Mapping[str, Mapping[str, str]]) -> dict[str, nn.Module]:
        keys = {name: frozenset(labels.items()) for name, labels in selections.items()}
        self.built = {key: module for key, module in self.built.items() if key in keys.values()}
        for name, key in keys.items():
            if key not in self.built:
                self.built[key] = build_selected(self.network, selections[name], self.seed, self.threads)
                _timed_steps(self.built[key], self.convs, self.sink)
                self.built[key].timed_moves = self.moves
        return {name: self.built[key] for name, key in keys.items()}

    def time(self, selections: Mapping[str, Mapping[str, str]], rounds: int, order_seed: int
             ) -> dict[str, InProgramTimes]:
        """Each of ``selections`` run ``rounds`` times, once per round in an order drawn from ``order_seed``."""
        import torch

        if rounds < 1:
            raise SelectionError(f"in-program timing needs at least one round, got {rounds}")
        modules = self.modules(selections)
        inputs = _inputs(self.network, self.seed)
        whole: dict[str, list[float]] = defaultdict(list)
        steps: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in modules}
        moves: dict[str, dict[tuple[ActivationShape, str], list[float]]] = {name: defaultdict(list) for name in modules}
        rng = np.random.default_rng(order_seed)
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            for module in modules.values():  # one warm-up pass each
                module(*inputs)
            for _ in range(rounds):
                for name in rng.permutation(list(modules)):
                    self.sink.clear()
                    self.moves.clear()
                    start = time.perf_counter()
                    modules[name](*inputs)
                    whole[name].append(time.perf_counter() - start)
                    for layer, seconds in self.sink.items():
                        steps[name][layer].append(seconds)
                    for activation, transform, seconds in self.moves:
                        moves[name][self.shapes[activation], transform].append(seconds)
        finally:
            torch.set_num_threads(before)
        return {name: InProgramTimes(tuple(whole[name]), _medians(steps[name]), _medians(moves[name]))
                for name in modules}

    def confirm(self, selections: Mapping[str, Mapping[str, str]], rounds: int, order_seed: int
                ) -> dict[str, PairedRatio]:
        """Each of ``selections`` but "default" over "default", timed as a user runs them: whole programs, no call
        timed inside, interleaved in blocks (:func:`~nnperf.optimize.select.compare_selections`, its rounds with
        at least ``rounds`` of them)."""
        from nnperf.optimize.select._compare import SELECTION_ROUNDS, compare_selections

        config = dataclasses.replace(SELECTION_ROUNDS, min_rounds=rounds,
                                     max_rounds=max(rounds, SELECTION_ROUNDS.max_rounds), seed=order_seed)
        compared = compare_selections(self.network, selections, rounds=config, seed=self.seed, threads=self.threads)
        return {name: compared.ratio(name, "default") for name in selections if name != "default"}


def _medians(samples: Mapping[Any, list[float]]) -> dict[Any, float]:
    return {key: statistics.median(v) for key, v in samples.items()}


def time_in_program(network: Network, selections: Mapping[str, Mapping[str, str]], rounds: int = IN_PROGRAM_ROUNDS,
                    seed: int = 0, threads: int = 1) -> dict[str, InProgramTimes]:
    """Each of ``selections`` (a name to node labels, as :func:`build_selected` takes) run ``rounds`` times,
    once per round in a fresh random order, torch on ``threads`` threads (restored afterwards): its whole time
    and its convolutions' primitive calls, inside the forward pass (medians)."""
    return _Programs(network, seed, threads).time(selections, rounds, seed)


@dataclass(frozen=True)
class Refinement:
    """A selection refined in the program over ``steps`` steps. ``history`` holds every selection run, in order:
    each step's solved one (the first on the isolated costs) and its challenger (``solver`` "challenger"), then
    the :data:`UNIFORM_CANDIDATES` best uniform choices on the refined costs (``solver`` "uniform:<primitive>"),
    those not run already;
    ``over_default`` each one's time over the framework default's (median per-round ratio, run in the same
    rounds); ``measured_s`` the in-program time of every (configuration, primitive) pair run (s), ``moves_s`` of
    every layout transformation run (s, by activation shape and name); ``costs`` the isolated costs with them
    (:func:`in_program_costs`). ``selection`` is the history's selection of the least
    ratio if it runs faster than the default again, in fresh rounds (the least of several noisy ratios is biased
    low), else the default, costed on ``costs``; ``kept`` its index in ``history`` (None: the default),
    ``confirmed`` its time over the default's in those fresh rounds, with its 95% interval, which must lie below 1
    (None when none was run again).
    ``converged``: the last solve chose a selection already run, and no layer had an option left to explore."""

    selection: Selection
    kept: int | None
    costs: PrimitiveCosts
    history: tuple[Selection, ...]
    over_default: tuple[float, ...]
    measured_s: Mapping[tuple[ConvConfig, str], float]
    steps: int
    converged: bool
    confirmed: PairedRatio | None = None
    moves_s: Mapping[tuple[ActivationShape, str], float] = dataclasses.field(default_factory=dict)


def in_program_costs(costs: PrimitiveCosts, measured_s: Mapping[tuple[ConvConfig, str], float],
                     moves_s: Mapping[tuple[ActivationShape, str], float] | None = None) -> PrimitiveCosts:
    """``costs`` with each measured (configuration, primitive) pair's in-program time, and every other primitive
    of a configuration with a measured pair scaled by that configuration's context factor: the median of its
    measured pairs' in-program over isolated times. With ``moves_s``, each layout transformation ``costs`` holds
    for an activation that moved in the program takes its in-program time (the others keep theirs)."""
    conv_s: dict[ConvConfig, dict[str, float]] = {}
    for config, times in costs.conv_s.items():
        factors = [measured_s[config, p] / t for p, t in times.items() if (config, p) in measured_s and t > 0]
        factor = statistics.median(factors) if factors else 1.0
        conv_s[config] = {p: measured_s.get((config, p), t * factor) for p, t in times.items()}
    moved = moves_s or {}
    transforms_s = {shape: {name: moved.get((shape, name), t) for name, t in times.items()}
                    for shape, times in costs.transforms_s.items()}
    what = "convolutions and layout moves" if moved else "convolutions"
    return PrimitiveCosts(conv_s, transforms_s, f"{costs.source}, {what} in the program", costs.layers_s)


def challenger(network: Network, costs: PrimitiveCosts, chosen: Mapping[str, str],
               ran: Collection[tuple[ConvConfig, str]] = frozenset(), within: float = EXPLORE_WITHIN
               ) -> dict[str, str] | None:
    """``chosen`` (node labels) with every convolution moved to its cheapest primitive on ``costs`` that has not
    run in the program yet (no (configuration, primitive) pair in ``ran``) and costs at most ``within`` times the
    one it runs there, the other layers left as they are; None where no convolution has such a primitive. Running
    it measures an option of every layer in the program that the solver's own picks never would: one step's
    challenger the second cheapest, the next step's the third, as far as ``within`` reaches."""
    if within < 1:
        raise SelectionError(f"a challenger explores primitives within a factor of at least 1, got {within}")
    moved, changed = dict(chosen), False
    for layer, config in network_convs(network).items():
        times = costs.conv_s[config]
        limit = within * times[chosen[layer]]
        untried = {p: t for p, t in times.items()
                   if p != chosen[layer] and (config, p) not in ran and t <= limit}
        if untried:
            moved[layer], changed = min(untried, key=untried.__getitem__), True
    return moved if changed else None


def refine_in_program(network: Network, costs: PrimitiveCosts, max_steps: int = 6, rounds: int = IN_PROGRAM_ROUNDS,
                      solver: str = "pbqp", seed: int = 0, threads: int = 1,
                      explore_within: float = EXPLORE_WITHIN) -> Refinement:
    """The selection of ``network`` on ``costs`` (predicted or profiled, isolated), refined in the program for at
    most ``max_steps`` steps (see the module docstring); each step runs the current selection, its
    :func:`challenger` (reaching ``explore_within`` times a layer's cost) and the framework default in
    interleaved rounds, and the selection kept is the one that ran fastest against the default (the default
    itself where none ran faster)."""
    if max_steps < 1:
        raise SelectionError(f"refining in the program needs at least one step, got {max_steps}")
    convs = network_convs(network)
    programs = _Programs(network, seed, threads)
    graph = network_cost_graph(network, costs)
    selection, default = solve(graph, solver), default_selection(graph).chosen
    samples: dict[tuple[ConvConfig, str], list[float]] = defaultdict(list)
    move_samples: dict[tuple[ActivationShape, str], list[float]] = defaultdict(list)
    history: list[Selection] = []
    over_default: list[float] = []
    refined, refined_graph, converged, steps = costs, graph, False, 0
    measured: dict[tuple[ConvConfig, str], float] = {}
    moved: dict[tuple[ActivationShape, str], float] = {}
    rival = challenger(network, refined, selection.chosen, measured, explore_within)
    while steps < max_steps and not (converged and rival is None):
        steps += 1
        runs = {"selection": selection.chosen, "default": default}
        if rival is not None:
            runs["challenger"] = rival
        timed = programs.time(runs, rounds, seed)
        history.append(selection)
        if rival is not None:
            history.append(selection_from_labels(graph, rival, "challenger"))
        over_default += [timed[run].ratio(timed["default"]).median for run in runs if run != "default"]
        for run, labels in runs.items():
            for layer, seconds in timed[run].conv_s.items():
                samples[convs[layer], labels[layer]].append(seconds)
            for key, seconds in timed[run].moves_s.items():
                move_samples[key].append(seconds)
        measured, moved = _medians(samples), _medians(move_samples)
        refined = in_program_costs(costs, measured, moved)
        refined_graph = network_cost_graph(network, refined)
        selection = solve(refined_graph, solver)
        converged = any(selection.chosen == seen.chosen for seen in history)
        rival = challenger(network, refined, selection.chosen, measured, explore_within)
    for uniform, ratio in _uniform_runs(programs, refined_graph, solver, history, default, rounds, seed):
        history.append(uniform)
        over_default.append(ratio)
    kept, confirmed = _confirmed(programs, history, over_default, default, rounds, seed)
    chosen = history[kept].chosen if kept is not None else default
    kept_selection = selection_from_labels(refined_graph, chosen, "in program")
    return Refinement(kept_selection, kept, refined, tuple(history), tuple(over_default), measured, steps,
                      converged, confirmed, moved)


def _uniform_runs(programs: _Programs, graph: CostGraph, solver: str, ran: Collection[Selection],
                  default: Mapping[str, str], rounds: int, seed: int) -> list[tuple[Selection, float]]:
    """The :data:`UNIFORM_CANDIDATES` best uniform choices on ``graph`` (by its costs) that neither ``ran`` nor the
    default is, run together against the default in one set of rounds: each with its median per-round ratio."""
    ranked = sorted(uniform_selections(graph, solver=solver).values(), key=lambda u: u.cost_s)
    fresh = [u for u in ranked[:UNIFORM_CANDIDATES]
             if u.chosen != default and all(u.chosen != seen.chosen for seen in ran)]
    if not fresh:
        return []
    timed = programs.time({**{f"uniform {i}": u.chosen for i, u in enumerate(fresh)}, "default": default},
                          rounds, seed)
    return [(u, timed[f"uniform {i}"].ratio(timed["default"]).median) for i, u in enumerate(fresh)]


def _confirmed(programs: _Programs, history: list[Selection], over_default: list[float], default: Mapping[str, str],
               rounds: int, seed: int) -> tuple[int | None, PairedRatio | None]:
    """The index in ``history`` of the selection kept: of the :data:`CONFIRM_CANDIDATES` distinct selections of
    least ratio to the default that ran faster than it, and the uniform choice of least ratio, run again together
    with the default in fresh rounds at least twice ``rounds`` long (:meth:`_Programs.confirm`), the one of least
    ratio there whose 95% interval is below 1 (None: the default); and its ratio there (that of the fastest there
    when none is surely faster; None when none was run again)."""
    ranked = sorted(range(len(history)), key=over_default.__getitem__)
    best: list[int] = []
    for index in ranked:
        if over_default[index] >= 1.0 or len(best) == CONFIRM_CANDIDATES:
            break
        if all(history[index].chosen != history[other].chosen for other in best):
            best.append(index)
    uniform = next((i for i in ranked if history[i].solver.startswith("uniform:")), None)
    if uniform is not None and all(history[uniform].chosen != history[other].chosen for other in best):
        best.append(uniform)
    if not best:
        return None, None
    ratios = programs.confirm({**{f"candidate {i}": history[i].chosen for i in best}, "default": default},
                              2 * rounds, seed + 1)
    ratios = {i: ratios[f"candidate {i}"] for i in best}
    fastest = min(best, key=lambda i: ratios[i].median)
    surely = [i for i in best if ratios[i].ci_high < 1.0]
    kept = min(surely, key=lambda i: ratios[i].median) if surely else None
    return kept, ratios[fastest if kept is None else kept]
