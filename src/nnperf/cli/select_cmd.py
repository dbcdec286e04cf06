"""``nnperf select``: a primitive per convolution and a layout per layer, solved over the network (Mulder et al.)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nnperf.cli._backend_args import add_primitive_system_arguments, system_from_args
from nnperf.cli._store_arg import add_db_argument


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "select", help="choose a convolution primitive per layer and the layouts between them (Mulder et al.)",
        description="Build the network's cost graph (every applicable primitive of every convolution, the layout "
                    "transformations between neighbours) from the cost model (`nnperf primitives train`) or the "
                    "profiled dataset, solve it with PBQP or an ILP, and print the chosen primitive and layout per "
                    "layer with the predicted network time against the framework default (torch's conv2d, NCHW) "
                    "and the best uniform choice (one primitive wherever it applies). With --verify the selected "
                    "network also runs end to end in torch, is checked against the reference and is timed against "
                    "both, in the same interleaved rounds by default (--protocol).")
    p.add_argument("model", metavar="MODEL", help="zoo name, .onnx, .tflite or IR .json file")
    p.add_argument("--costs", choices=("predicted", "profiled"), default="predicted",
                   help="the cost model's predictions or the profiled medians (default predicted)")
    p.add_argument("--solver", choices=("pbqp", "ilp", "exhaustive"), default="pbqp", help="(default pbqp)")
    p.add_argument("--margin", type=float, default=0.0, metavar="FRACTION",
                   help="with predicted costs, make every option but the default this fraction dearer (0.1 for "
                        "10%%), so a layer leaves the default only for a predicted saving larger than the model's "
                        "error (default 0, the paper's selection)")
    p.add_argument("--refine", type=int, default=0, metavar="STEPS",
                   help="then measure the convolutions and layout moves inside the running program (each step also "
                        "one option per layer not yet run), solve again with those times, for at most STEPS steps, "
                        "and keep the selection that ran surely faster than the default, else the default (seconds "
                        "to a minute a step on the zoo networks; default 0: the costs as they are)")
    p.add_argument("--verify", action="store_true",
                   help="run and check the selected network, and time it against the default and the best uniform one")
    p.add_argument("--protocol", default="auto", metavar="auto|sequential|interleaved",
                   help="how --verify times the networks against each other (auto, the default, takes what a quick "
                        "machine check recommends; in-process programs always get interleaved then): interleaved runs each once "
                        "per round, in random order, and reports the median per-round speed-up with its 95%% "
                        "interval; sequential measures each in turn and reports the ratio of the medians (drifts "
                        "with the machine's speed)")
    p.add_argument("--no-layer-costs", dest="layer_costs", action="store_false",
                   help="charge the layers other than convolutions nothing in either layout, instead of their time "
                        "in each (timed into the store the first time)")
    add_primitive_system_arguments(p)
    p.add_argument("--save", type=Path, metavar="FILE.json", help="write the selection to this JSON file")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(p)
    p.set_defaults(run=run)


def _document(result) -> dict[str, object]:  # type: ignore[no-untyped-def]
    s = result.selection
    comparison = result.comparison

    def ratio(r):  # type: ignore[no-untyped-def]
        return None if r is None else r.to_dict()

    return {"format": "nnperf-selection", "version": 1, "network": result.network, "system_id": result.system_id,
            "costs": result.costs, "solver": result.solver, "optimal": s.optimal, "heuristic_used": s.heuristic_used,
            "predicted_s": result.predicted_s, "default_predicted_s": result.default_predicted_s,
            "optimise_s": result.optimise_s, "layer_profile_s": result.layer_profile_s, "solve_s": s.solve_s, "measured_s": result.measured_s,
            "default_measured_s": result.default_measured_s, "max_error": result.max_error,
            "chosen": dict(s.chosen),
            "best_uniform": result.best_uniform_primitive,
            "best_uniform_predicted_s": None if result.best_uniform is None else result.best_uniform.cost_s,
            "best_uniform_measured_s": result.best_uniform_measured_s,
            "comparison": None if comparison is None else comparison.to_dict(),
            "speedup_over_default": ratio(result.speedup_over_default),
            "speedup_over_best_uniform": ratio(result.speedup_over_best_uniform),
            "refinement": _refinement(result.refinement)}


def _refinement(refinement) -> dict[str, object] | None:  # type: ignore[no-untyped-def]
    if refinement is None:
        return None
    return {"steps": refinement.steps, "over_default": list(refinement.over_default),
            "run": [selection.solver for selection in refinement.history], "kept": refinement.kept,
            "confirmed_over_default": None if refinement.confirmed is None else refinement.confirmed.to_dict(),
            "converged": refinement.converged}


def _speedup(ratio) -> str:  # type: ignore[no-untyped-def]
    """``median [low, high]x``."""
    return f"{ratio.median:.2f}x [{ratio.ci_low:.2f}, {ratio.ci_high:.2f}]"


def _refinement_text(refinement) -> str:  # type: ignore[no-untyped-def]
    confirmed = refinement.confirmed
    if refinement.kept is not None:
        kept = (f"selection {refinement.kept + 1}, {confirmed.median:.3f} [{confirmed.ci_low:.3f}, "
                f"{confirmed.ci_high:.3f}] of the default's time when timed again")
    elif confirmed is not None:
        kept = (f"the default: the fastest selection took {confirmed.median:.3f} [{confirmed.ci_low:.3f}, "
                f"{confirmed.ci_high:.3f}] of its time timed again, not surely faster")
    else:
        kept = "the default: no selection ran faster than it"
    runs = ", ".join(f"{selection.solver} {ratio:.3f}"
                     for selection, ratio in zip(refinement.history, refinement.over_default, strict=True))
    return (f"refined in the program: {refinement.steps} steps; each selection's time over the default's: {runs}; "
            f"kept {kept}")


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.api import select
    from nnperf.cli._backend_args import Progress
    from nnperf.report import console, write_bytes
    from nnperf.report.primitives import primitive_columns

    with Progress(not args.json, "selecting") as progress:
        if progress is not None:
            progress("timing the layers in each layout (once), solving" + (", then running and timing" if args.verify
                                                                            else ""), 0, 1)
        result = select(args.model, system=system_from_args(args), store=args.db, calibration=args.system,
                        costs=args.costs, solver=args.solver, verify=args.verify, layer_costs=args.layer_costs,
                        protocol=args.protocol, margin=args.margin, refine=args.refine)
    document = _document(result)
    if args.save is not None:
        write_bytes(args.save, json.dumps(document, indent=1).encode())
    if args.json:
        print(json.dumps(document, indent=1))
        return 0
    chosen = result.selection.chosen
    table = Table(title=f"{result.network}: primitive per convolution ({result.costs} costs, {result.solver})",
                  title_justify="left")
    for column in ("layer", "primitive", "family", "in", "out"):
        table.add_column(column)
    for layer in result.convolutions:
        table.add_row(layer, *primitive_columns(chosen[layer]))
    out = console()
    out.print(table)
    others = [name for name in chosen if name not in set(result.convolutions)]
    hwc = sum(chosen[name] == "hwc" for name in others)
    s = result.selection
    out.print(f"other layers: {len(others) - hwc} in chw, {hwc} in hwc; "
              f"{'proved optimal' if s.optimal else 'not proved optimal'}"
              + (" (PBQP's RN heuristic was used)" if s.heuristic_used else "")
              + f"; optimised in {result.optimise_s * 1e3:.0f} ms (solver {s.solve_s * 1e3:.1f} ms)"
              + (f", layers timed in {result.layer_profile_s:.1f} s" if result.layer_profile_s else ""))
    if result.refinement is not None:
        out.print(_refinement_text(result.refinement))
    counted = "convolutions, transformations and other layers" if args.layer_costs else \
        "convolutions and transformations only"
    uniform = result.best_uniform
    out.print(f"predicted: {result.predicted_s * 1e3:.2f} ms selected, {result.default_predicted_s * 1e3:.2f} ms "
              f"default ({', '.join(sorted({result.default.chosen[layer] for layer in result.convolutions}))}, NCHW)"
              + (f", {uniform.cost_s * 1e3:.2f} ms best uniform ({result.best_uniform_primitive})" if uniform else "")
              + f"; {counted}")
    comparison = result.comparison
    if (comparison is not None and result.measured_s is not None and result.default_measured_s is not None
            and result.best_uniform_measured_s is not None):
        how = (f"median per-round ratio [95% interval] over {comparison.rounds.rounds} interleaved rounds"
               if comparison.rounds.paired else "ratio of medians [95% interval], measured one after the other")
        out.print(f"measured end to end: {result.measured_s * 1e3:.2f} ms selected, "
                  f"{result.default_measured_s * 1e3:.2f} ms default, {result.best_uniform_measured_s * 1e3:.2f} ms "
                  f"best uniform; speed-up over the default {_speedup(result.speedup_over_default)}, over the best "
                  f"uniform {_speedup(result.speedup_over_best_uniform)} ({how}); outputs within "
                  f"{result.max_error:.2g} of the reference")
    return 0
