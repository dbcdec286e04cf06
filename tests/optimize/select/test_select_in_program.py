"""Convolution costs measured inside the running program: the context factor by hand, the primitive calls timed in
the forward pass, and a selection misled by a planted cost error that the program's own times correct."""

from __future__ import annotations

import pytest

from nnperf.ir import ConvAttrs, Layer, Network, OpType, TensorSpec
from nnperf.optimize.select import PrimitiveCosts, SelectionError, network_cost_graph, solve
from nnperf.optimize.select._costs import network_convs
from nnperf.optimize.select._in_program import (
    UNIFORM_CANDIDATES,
    challenger,
    in_program_costs,
    refine_in_program,
    time_in_program,
)
from nnperf.primitives import ConvConfig


def _chain() -> Network:
    """Two 3x3 convolutions of 16 channels on 24x24, a ReLU between them."""
    shape = (1, 16, 24, 24)
    attrs = ConvAttrs((3, 3), padding=(1,) * 4)
    layers = (Layer("conv0", OpType.CONV, ("x",), (shape,), shape, attrs),
              Layer("relu", OpType.RELU, ("conv0",), (shape,), shape),
              Layer("conv1", OpType.CONV, ("relu",), (shape,), shape, attrs))
    return Network("chain", (TensorSpec("x", shape),), layers, ("conv1",))


CONFIG_A = ConvConfig(1, 16, 16, (24, 24), (3, 3), padding=(1, 1, 1, 1))
CONFIG_B = ConvConfig(1, 8, 8, (12, 12), (1, 1))


def test_measured_pairs_take_their_time_and_the_others_their_configurations_context_factor() -> None:
    costs = PrimitiveCosts({CONFIG_A: {"torch-conv2d": 1e-3, "direct": 2e-3, "fft": 4e-3},
                            CONFIG_B: {"torch-conv2d": 1e-4, "direct": 3e-4}}, source="isolated")
    measured = {(CONFIG_A, "torch-conv2d"): 1.5e-3, (CONFIG_A, "direct"): 4e-3}  # factors 1.5 and 2: median 1.75
    refined = in_program_costs(costs, measured)
    assert refined.conv_s[CONFIG_A] == {"torch-conv2d": pytest.approx(1.5e-3), "direct": pytest.approx(4e-3),
                                        "fft": pytest.approx(4e-3 * 1.75)}
    assert refined.conv_s[CONFIG_B] == {"torch-conv2d": pytest.approx(1e-4), "direct": pytest.approx(3e-4)}
    assert refined.source == "isolated, convolutions in the program"


def test_layout_moves_that_ran_in_the_program_take_their_time_there_and_the_others_keep_theirs() -> None:
    shape = (1, 16, (24, 24))
    costs = PrimitiveCosts({CONFIG_A: {"torch-conv2d": 1e-3}},
                           {shape: {"chw->hwc": 2e-4, "hwc->chw": 3e-4}}, source="isolated")
    refined = in_program_costs(costs, {}, {(shape, "chw->hwc"): 5e-4, ((1, 8, (12, 12)), "chw->hwc"): 1.0})
    assert refined.transforms_s[shape] == {"chw->hwc": pytest.approx(5e-4), "hwc->chw": pytest.approx(3e-4)}
    assert (1, 8, (12, 12)) not in refined.transforms_s  # a move the costs never held is not added
    assert refined.source == "isolated, convolutions and layout moves in the program"


def test_layout_moves_are_timed_inside_the_forward_pass() -> None:
    network = _chain()
    shape = (1, 16, (24, 24))
    # kn2col reads and writes hwc: the input moves chw -> hwc before conv0, its output hwc -> chw before the ReLU
    labels = {"x": "chw", "conv0": "kn2col", "relu": "chw", "conv1": "torch-conv2d"}
    timed = time_in_program(network, {"hwc": labels}, rounds=3)["hwc"]
    assert set(timed.moves_s) == {(shape, "chw->hwc"), (shape, "hwc->chw")}
    assert all(0 < s < timed.whole_s for s in timed.moves_s.values())
    plain = time_in_program(network, {"chw": {**labels, "conv0": "torch-conv2d"}}, rounds=2)["chw"]
    assert plain.moves_s == {}


def test_every_convolution_is_timed_inside_the_forward_pass() -> None:
    network = _chain()
    default = {"conv0": "torch-conv2d", "conv1": "torch-conv2d"}
    timed = time_in_program(network, {"default": default, "direct": {**default, "conv1": "direct"}}, rounds=3)
    for name in ("default", "direct"):
        run = timed[name]
        assert len(run.rounds_s) == 3 and set(run.conv_s) == {"conv0", "conv1"}
        assert 0 < sum(run.conv_s.values()) < run.whole_s * 1.5  # medians of parts: about the whole at most
    assert timed["direct"].ratio(timed["direct"]).median == 1.0
    with pytest.raises(SelectionError, match="at least one round"):
        time_in_program(network, {"default": default}, rounds=0)


def test_the_challenger_moves_every_convolution_to_its_cheapest_option_not_yet_run_within_the_bound() -> None:
    network = _chain()
    config = next(iter(network_convs(network).values()))
    costs = PrimitiveCosts({config: {"torch-conv2d": 1e-4, "direct": 3e-4, "fft": 2e-4, "winograd": 5e-4}})
    chosen = {"x": "chw", "conv0": "torch-conv2d", "relu": "hwc", "conv1": "fft"}
    assert challenger(network, costs, chosen) == {"x": "chw", "conv0": "fft", "relu": "hwc",
                                                   "conv1": "torch-conv2d"}
    # once the second cheapest ran, the next step's challenger runs the third (up to 3x the layer's own cost)
    ran = {(config, "fft"), (config, "torch-conv2d")}
    assert challenger(network, costs, chosen, ran) == {**chosen, "conv0": "direct", "conv1": "direct"}
    assert challenger(network, costs, chosen, {*ran, (config, "direct")}) == {**chosen, "conv1": "winograd"}
    assert challenger(network, costs, chosen, {*ran, (config, "direct")}, within=2.0) is None  # 5e-4 > 2 * 2e-4
    alone = PrimitiveCosts({config: {"torch-conv2d": 1e-4}})
    assert challenger(network, alone, {**chosen, "conv1": "torch-conv2d"}) is None  # no second option anywhere
    with pytest.raises(SelectionError, match="at least 1"):
        challenger(network, costs, chosen, within=0.5)


def test_a_planted_cost_error_is_corrected_by_the_times_in_the_program() -> None:
    network = _chain()
    config = next(iter(network_convs(network).values()))
    # the planted error: the naive direct loop claimed 100 times faster than torch's conv2d
    moves = {(1, 16, (24, 24)): {"chw->hwc": 1e-3, "hwc->chw": 1e-3}}  # the ReLU stays in chw
    planted = PrimitiveCosts({config: {"torch-conv2d": 1e-4, "direct": 1e-6}}, moves, source="planted")
    plain = solve(network_cost_graph(network, planted), "pbqp")
    assert plain.chosen["conv0"] == plain.chosen["conv1"] == "direct"
    refinement = refine_in_program(network, planted, rounds=3)
    assert refinement.history[0].chosen == plain.chosen
    # conv2d is 100x direct's planted cost, past any challenger's reach; the default, run in the same rounds,
    # measures it, and the next solve on the times in the program picks it
    assert len(refinement.history) == 2 and all(s.solver == "pbqp" for s in refinement.history)
    assert refinement.history[1].chosen["conv0"] == refinement.history[1].chosen["conv1"] == "torch-conv2d"
    assert refinement.measured_s[config, "direct"] > refinement.measured_s[config, "torch-conv2d"]
    assert refinement.costs.conv_s[config]["direct"] == refinement.measured_s[config, "direct"]
    assert refinement.selection.chosen["conv0"] == refinement.selection.chosen["conv1"] == "torch-conv2d"
    assert refinement.over_default[0] > 1.0 and refinement.converged and refinement.steps == 2
    with pytest.raises(SelectionError, match="at least one step"):
        refine_in_program(network, planted, max_steps=0)


def test_the_refinement_goes_on_while_a_layer_has_an_option_not_yet_run() -> None:
    network = _chain()
    config = next(iter(network_convs(network).values()))
    moves = {(1, 16, (24, 24)): {"chw->hwc": 1e-3, "hwc->chw": 1e-3}}
    three = {"torch-conv2d": 1e-4, "im2col-fhw": 1.1e-4, "winograd-2x3": 1.2e-4}  # all within 3x of each other
    # a reach far past the three (a loaded machine once timed im2col-fhw 25x torch-conv2d in the program, which put
    # winograd-2x3's scaled cost past the default reach)
    refinement = refine_in_program(network, PrimitiveCosts({config: three}, moves), max_steps=2, rounds=2,
                                   explore_within=1e3)
    # whatever each step solves, its challenger runs an option not run before: after two steps, all three ran
    assert refinement.steps == 2 and {(config, p) for p in three} <= set(refinement.measured_s)
    assert [s.solver for s in refinement.history][:4] == ["pbqp", "challenger", "pbqp", "challenger"]
    # then the best uniform choices on the refined costs, those not run yet, never the default's conv2d everywhere
    uniforms = refinement.history[4:]
    assert all(s.solver.startswith("uniform:") for s in uniforms) and len(uniforms) <= UNIFORM_CANDIDATES
    assert all(s.chosen != u.chosen for s in refinement.history[:4] for u in uniforms)
    assert "uniform:torch-conv2d" not in {s.solver for s in uniforms}
    assert len(refinement.over_default) == len(refinement.history)


class _PlantedPrograms:
    """Times each selection in fresh rounds at a planted ratio to the default (1 ms), with a 1% alternating
    wobble so each ratio has an interval; records what it was asked to time."""

    def __init__(self, fresh_ratio: dict[str, float]) -> None:
        self.fresh_ratio, self.asked = fresh_ratio, []

    def time(self, selections, rounds, order_seed):  # type: ignore[no-untyped-def]
        from nnperf.optimize.select._in_program import InProgramTimes

        self.asked.append(sorted(selections))
        wobble = [1.0 + 0.01 * (-1) ** r for r in range(rounds)]
        default = InProgramTimes(tuple(1e-3 for _ in wobble), {})
        times = {name: InProgramTimes(tuple(1e-3 * self.fresh_ratio[labels["conv0"]] * w for w in wobble), {})
                 for name, labels in selections.items() if name != "default"}
        return {**times, "default": default}

    def confirm(self, selections, rounds, order_seed):  # type: ignore[no-untyped-def]
        self.confirmed_rounds = rounds
        times = self.time(selections, rounds, order_seed)
        return {name: t.ratio(times["default"]) for name, t in times.items() if name != "default"}


def test_the_three_fastest_are_confirmed_together_and_the_surely_faster_one_is_kept() -> None:
    from nnperf.optimize.select._graph import Selection
    from nnperf.optimize.select._in_program import CONFIRM_CANDIDATES, _confirmed

    def run(primitive: str) -> Selection:
        return Selection(("conv0",), (0,), (primitive,), 0.0, "pbqp", optimal=False)

    default = {"conv0": "torch-conv2d"}
    history = [run("direct"), run("winograd-2x3"), run("direct"), run("im2col-fhw"), run("kn2row")]
    over_default = [0.90, 0.95, 0.91, 0.97, 0.99]  # direct ran fastest, twice: one candidate, not two
    # in fresh rounds direct is no faster than the default, winograd surely is, im2col more so
    programs = _PlantedPrograms({"direct": 1.0, "winograd-2x3": 0.96, "im2col-fhw": 0.93, "kn2row": 0.5})
    kept, ratio = _confirmed(programs, history, over_default, default, rounds=20, seed=0)  # type: ignore[arg-type]
    assert CONFIRM_CANDIDATES == 3 and len(programs.asked) == 1  # one set of fresh rounds for all three
    assert programs.asked[0] == ["candidate 0", "candidate 1", "candidate 3", "default"]  # kn2row was fourth
    assert kept == 3 and ratio is not None and ratio.median == pytest.approx(0.93) and ratio.ci_high < 1.0
    # none surely faster in fresh rounds: the default is kept, with the fastest one's ratio there
    programs = _PlantedPrograms({"direct": 1.0, "winograd-2x3": 1.02, "im2col-fhw": 1.05, "kn2row": 0.5})
    kept, ratio = _confirmed(programs, history, over_default, default, rounds=20, seed=0)  # type: ignore[arg-type]
    assert kept is None and ratio is not None and ratio.median == pytest.approx(1.0)
    # none ran faster at first: nothing is timed again
    programs = _PlantedPrograms({})
    assert _confirmed(programs, history[:1], [1.01], default, 20, 0) == (None, None)  # type: ignore[arg-type]
    assert programs.asked == []


def test_the_fastest_uniform_choice_is_confirmed_however_it_ran_in_the_program() -> None:
    from nnperf.optimize.select._graph import Selection
    from nnperf.optimize.select._in_program import _confirmed

    def run(primitive: str, solver: str = "pbqp") -> Selection:
        return Selection(("conv0",), (0,), (primitive,), 0.0, solver, optimal=False)

    default = {"conv0": "torch-conv2d"}
    history = [run("direct"), run("kn2row", "uniform:kn2row"), run("fft", "uniform:fft")]
    over_default = [0.97, 1.03, 1.01]  # in the program the uniform choices ran slower than the default
    # run again, fft is surely faster than both the default and direct
    programs = _PlantedPrograms({"direct": 0.99, "kn2row": 1.03, "fft": 0.96})
    kept, ratio = _confirmed(programs, history, over_default, default, rounds=20, seed=0)  # type: ignore[arg-type]
    assert programs.asked == [["candidate 0", "candidate 2", "default"]]  # the fastest uniform choice, not both
    assert programs.confirmed_rounds == 40
    assert kept == 2 and ratio is not None and ratio.median == pytest.approx(0.96)
    # a uniform choice is run again even when no selection ran faster than the default
    programs = _PlantedPrograms({"kn2row": 1.03, "fft": 1.01})
    assert _confirmed(programs, history[1:], over_default[1:], default, 20, 0)[0] is None  # type: ignore[arg-type]
    assert programs.asked == [["candidate 1", "default"]]
