"""``nnperf evaluate``: the zoo networks measured against this system's predictions (PreVIous VI), with baselines."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nnperf.cli._backend_args import add_backend_arguments
from nnperf.cli._store_arg import add_db_argument, open_store
from nnperf.cli.fleet_cmd import add_fleet_argument, measuring
from nnperf.measure import ComparisonProtocol, RoundsConfig, resolve_protocol


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("evaluate", help="measure zoo networks and compare them with this system's predictions",
                       description="Measure networks (the reference zoo by default) layer by layer and whole on "
                                   "one backend, reusing earlier measurements of the same settings, and compare "
                                   "them with the predictions of this system's calibration: Table I and II, "
                                   "Fig. 5 and Fig. 7 of PreVIous, nnperf's composition and the MACs and roofline "
                                   "baselines side by side. Writes the figures and one self-contained HTML report.")
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help="zoo names, .onnx or IR .json files (default: every reference zoo network)")
    add_backend_arguments(p)
    p.add_argument("--out", type=Path, default=Path("nnperf-evaluation"),
                   help="folder for fig5_layers.png, fig7_networks.png and report.html "
                        "(default ./nnperf-evaluation)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="time budget per layer measurement in seconds (default: the calibration's, 0.5)")
    p.add_argument("--csv", metavar="FILE.csv", type=Path,
                   help="also write every layer's measured (isolated) and predicted time as CSV: one row per "
                        "layer with its network, run id and system, in seconds")
    p.add_argument("--protocol", choices=["auto", *(p.value for p in ComparisonProtocol), "none"], default="auto",
                   help="also time each network whole beside the machine-speed reference (interleaved, duet, "
                        "sequential; auto, the default, takes what a quick machine check recommends) and report every method's error against the measurement scaled to the "
                        "calibration's speed; none skips it (and a fleet always does)")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON instead of tables")
    add_fleet_argument(p)
    add_db_argument(p)
    p.set_defaults(run=run)


EVALUATE_ROUNDS = RoundsConfig(min_rounds=10, max_rounds=30, target_ci=0.01, budget_s=10.0)
"""Each network beside the reference: 10 to 30 rounds, at most 10 s."""


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from nnperf import __version__, zoo
    from nnperf.api import load_model
    from nnperf.campaign import CALIBRATION_HARNESS, ProfileConfig, measure_networks
    from nnperf.errors import NnperfError
    from nnperf.prediction import load_system_model
    from nnperf.prediction.evaluation import evaluate
    from nnperf.report import console
    from nnperf.report.evaluation import (
        network_table,
        provenance,
        summary_lines,
        table1,
        table2,
        write_layer_csv,
        write_report,
    )

    if args.budget_s is not None and args.budget_s <= 0:
        raise NnperfError(f"--budget-s must be > 0, got {args.budget_s}")
    networks = [load_model(name) for name in (args.models or zoo.names())]
    harness = CALIBRATION_HARNESS if args.budget_s is None else replace(CALIBRATION_HARNESS, budget_s=args.budget_s)
    with open_store(args) as store, measuring(args, store, "evaluating") as (backend, progress):
        system = backend.system()
        model = load_system_model(store, system.key, system.label, args.backend)
        for network in networks:  # refuse an uncovered network before measuring anything
            model.predict(network)
        measured = measure_networks(backend, store, networks, ProfileConfig(per_layer="isolated", harness=harness),
                                    progress=progress)
        adjusted = {}
        calibrated = model.reference_s
        if args.protocol != "none" and not args.fleet and calibrated is not None:
            from nnperf.campaign import store_referenced, time_with_reference

            chosen = resolve_protocol(args.protocol, threads=args.threads).protocol
            for i, network in enumerate(networks):
                if progress is not None:  # no bar with --json
                    progress(f"{network.name} beside the reference ({chosen.value})", i, len(networks))
                timing = store_referenced(store, backend, network, network.name, time_with_reference(
                    network, backend, chosen, EVALUATE_ROUNDS, calibrated[0]))
                adjusted[network.name] = timing.at_reference_speed_s(calibrated[1])
        evaluation = evaluate(model, measured, adjusted)
        source = provenance(store, evaluation, __version__)
    paths = write_report(evaluation, args.out, source)
    if args.csv is not None:
        write_layer_csv(evaluation, args.csv, source.system.key)
        paths.append(args.csv)
    if args.json:
        document = evaluation.to_dict()
        document["files"] = [str(p) for p in paths]
        print(json.dumps(document, indent=1))
        return 0
    out = console()
    for table in (table1(evaluation), table2(evaluation), network_table(evaluation)):
        out.print(table)
    for line in summary_lines(evaluation):
        out.print(line)
    out.print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
