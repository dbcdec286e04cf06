"""``nnperf primitives``: the convolution primitive library (Mulder et al.)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from nnperf.cli._backend_args import (
    PRIMITIVES_HELP,
    Progress,
    add_backend_arguments,
    add_primitive_system_arguments,
    system_from_args,
)
from nnperf.cli._store_arg import add_db_argument
from nnperf.cli._units import parse_duration
from nnperf.cli.fleet_cmd import add_fleet_argument
from nnperf.errors import NnperfError

TRANSFER_METHODS = ("factor", "fine-tune", "factor+fine-tune", "residual", "frozen")
"""``--method`` of ``nnperf primitives transfer`` (``nnperf.api._primitives.TRANSFER_METHODS``)."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("primitives", help="convolution primitives: the library, their profiled times and cost models",
                       description="The library of convolution primitives of Mulder et al.: vendor kernels reachable "
                                   "from Python and the algorithm families written on torch ops, each with its input "
                                   "and output data layout and the configurations it applies to; the profiled dataset "
                                   "of their times, the cost models (Lin, NN1, NN2) that predict them, and their "
                                   "transfer to another platform. `nnperf select` uses them on a network.")
    commands = p.add_subparsers(dest="primitives_command", metavar="COMMAND", required=True)
    listing = commands.add_parser("list", help="every primitive: family, layouts, where it applies, devices, "
                                               "availability",
                                  description="Every registered primitive with its family, library, input and output "
                                              "layouts, applicability rule, the devices it computes on (cpu, cuda), "
                                              "and whether it can run here (and if not, why).")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(run=run_list)
    for add in (_register_profile, _register_train, _register_predict, _register_transfer, _register_files):
        add(commands)


def _register_profile(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    profile = commands.add_parser(
        "profile", help="profile every primitive and layout transformation on layer configurations (the dataset)",
        description="Build the primitive-time dataset of Mulder et al. 3.2 in the store: the distinct convolutions of "
                    "the given networks (every zoo network when none is given) and --random configurations sampled "
                    "around them, each timed under every applicable primitive, with the layout transformations of "
                    "its input. Every time is stored as it is taken and what the store holds for this system is not "
                    "measured again, so the same command resumes an interrupted or budget-limited profile. With "
                    "--device cuda the primitives that run on a CUDA GPU (those on torch ops and torch's own conv2d) "
                    "are profiled there, a system of its own.")
    profile.add_argument("models", nargs="*", metavar="MODEL",
                         help="zoo names, .onnx, .tflite or IR .json files (default: every zoo network)")
    profile.add_argument("--random", type=int, default=200, metavar="N",
                         help="configurations sampled around the networks' ones (default 200)")
    profile.add_argument("--budget", default=None, metavar="DURATION",
                         help="stop starting new configurations after this long (e.g. 90s, 20m, 1h; default: none)")
    profile.add_argument("--only", default="", metavar="NAME[,NAME...]",
                         help="profile only these primitives or families (e.g. vendor,winograd; default: every "
                              "available primitive)")
    add_backend_arguments(profile, default="primitives", backend_help=PRIMITIVES_HELP)  # the fleet's too
    profile.add_argument("--seed", type=int, default=0, help="seed of the random configurations (default 0)")
    profile.add_argument("--grid", choices=("paper",), default=None,
                         help="profile Mulder et al.'s grid instead of sampled configurations: the convolution shapes "
                              "of their Table 7 networks (DenseNet and ResNeXt held out) x kernels 1-11 (odd) x "
                              "strides 1, 2, 4, in a seeded random order so that --budget keeps a uniform sample")
    profile.add_argument("--max-gmacs", type=float, default=None, metavar="G",
                         help="with --grid, leave out configurations of more than G billion multiply-accumulates")
    profile.add_argument("--output-activations", action="store_true",
                         help="instead of the configurations, time the layout transformations alone on their output "
                              "activations that none of them reads (more activations for the transformations' model)")
    profile.add_argument("--protocol", default="auto", choices=("auto", "sequential", "interleaved"),
                         help="how a configuration's primitives and transformations are timed: interleaved (in the "
                              "same rounds, in random order: their ratios hold when the machine drifts) or "
                              "sequential (one after the other); auto (default) takes what a quick machine check "
                              "recommends, interleaved for these in-process timings")
    profile.add_argument("--retime-slow", nargs="?", const="", default=None, metavar="FACTOR",
                         help="once every configuration is stored, time again each one whose machine-speed reference "
                              "ran over FACTOR (default 1.5) times its median: the dataset reads the new times, the "
                              "slow ones stay in the store")
    profile.add_argument("--json", action="store_true", help="print JSON")
    add_fleet_argument(profile)
    add_db_argument(profile)
    profile.set_defaults(run=run_profile)


def _register_train(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    train = commands.add_parser(
        "train", help="fit a cost model (Lin, NN1 or NN2) on the profiled dataset and score it",
        description="Fit a performance model of Mulder et al. 3.3 on the stored primitive dataset, split 80/10/10 "
                    "(train, early-stopping validation, test): Lin (least squares), NN1 (one network per primitive) "
                    "or NN2 (one network for all, masked loss). Prints the median relative absolute error (MdRAE) of "
                    "every primitive and transformation on the test part and stores the model with the system.")
    train.add_argument("--kind", choices=("lin", "nn1", "nn2", "gb", "ens", "auto"), default="nn2",
                       help="the model: the paper's lin, nn1, nn2, boosted trees (gb), nn2 and gb averaged (ens), or "
                            "the best of lin, nn2, gb and ens on the validation part (auto) (default nn2)")
    train.add_argument("--targets", choices=("absolute", "relative", "auto"), default="absolute",
                       help="learn log times (the paper's), or the reference primitive's log time and every other "
                            "primitive's log ratio to it on the same configuration, which interleaved timing keeps "
                            "exact, or choose on the validation part (default absolute)")
    add_primitive_system_arguments(train)
    train.add_argument("--seed", type=int, default=0, help="seed of the split and the weights (default 0)")
    train.add_argument("--out", type=Path, metavar="FILE.json", help="also write the model's JSON document here")
    train.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(train)
    train.set_defaults(run=run_train)


def _register_predict(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    predict = commands.add_parser(
        "predict", help="every primitive's predicted time on every convolution of a network, and the fastest",
        description="Predict the time of every primitive on every 2-D convolution of MODEL with the system's newest "
                    "cost model (`nnperf primitives train`), in one batched call, and name the fastest per layer.")
    predict.add_argument("model", metavar="MODEL", help="zoo name, .onnx, .tflite or IR .json file")
    add_primitive_system_arguments(predict)
    predict.add_argument("--json", action="store_true", help="print JSON")
    predict.add_argument("--csv", type=Path, metavar="FILE.csv",
                         help="write every layer's time under every primitive (seconds) to this CSV file")
    add_db_argument(predict)
    predict.set_defaults(run=run_predict)


def _register_transfer(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    transfer = commands.add_parser(
        "transfer", help="move another system's cost model to this platform from a small profiled sample",
        description="Transfer learning of Mulder et al. 4.4: profile a random --samples fraction of the source "
                    "system's configurations here (this CPU with --threads threads; the same CPU is another "
                    "platform with another thread count or with ONEDNN_MAX_CPU_ISA/ATEN_CPU_CAPABILITY set), then "
                    "correct the source's newest cost model with one factor per primitive and transformation "
                    "(factor), train it further on the sample (fine-tune), both (factor+fine-tune), fit the log "
                    "residuals' level and each primitive's part against it (residual), or tune the networks' last "
                    "layer alone (frozen). The result "
                    "is stored with this platform's system, where `nnperf primitives predict` and `nnperf select` "
                    "find it.")
    transfer.add_argument("--from", dest="source", required=True, metavar="ID|KEY",
                          help="the source system, with a trained cost model (see `nnperf systems`)")
    transfer.add_argument("--samples", default="1%", metavar="FRACTION",
                          help="the fraction of the source's configurations to profile here: 1%% or 0.01 "
                               "(default 1%%, at least one configuration)")
    transfer.add_argument("--method", choices=TRANSFER_METHODS, default="factor",
                          help="how the model is moved (default factor)")
    add_backend_arguments(transfer, default="primitives", backend_help=PRIMITIVES_HELP)
    transfer.add_argument("--seed", type=int, default=0, help="seed of the sample and of fine-tuning (default 0)")
    transfer.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(transfer)
    transfer.set_defaults(run=run_transfer)


def _register_files(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    export = commands.add_parser(
        "export", help="write the profiled dataset to one portable file (JSON, .gz compressed)",
        description="Write a primitive system's profiled dataset (what the cost models learn from: each primitive's "
                    "and transformation's time per configuration, the paired time where its rounds were interleaved) "
                    "and the system it was profiled on to FILE: JSON, gzip-compressed when FILE ends in .gz. "
                    "`nnperf primitives import` stores it in another store.")
    export.add_argument("file", type=Path, metavar="FILE", help="the file to write (.json or .json.gz)")
    add_primitive_system_arguments(export)
    add_db_argument(export)
    export.set_defaults(run=run_export)
    imported = commands.add_parser(
        "import", help="store a dataset file written by `nnperf primitives export`",
        description="Store the dataset of FILE (written by `nnperf primitives export`) under the system it was "
                    "profiled on, one run per configuration, each time as one sample; times the store holds already "
                    "are kept, so importing twice adds nothing. `nnperf primitives train --system ID` then fits a "
                    "model on it.")
    imported.add_argument("file", type=Path, metavar="FILE", help="the dataset file (.json or .json.gz)")
    add_db_argument(imported)
    imported.set_defaults(run=run_import)


def run_export(args: argparse.Namespace) -> int:
    from nnperf.api import export_primitive_dataset

    record, dataset = export_primitive_dataset(args.file, _stored_or_here(args), args.db)
    print(f"wrote {args.file}: system {record.id} ({record.label}, {record.device_name}), "
          f"{len(dataset.conv)} configurations, {len(dataset.layout)} activations, {dataset.n_samples} times")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from nnperf.api import import_primitive_dataset

    result = import_primitive_dataset(args.file, args.db)
    alone = f" and {result.activations} activation{'s' * (result.activations != 1)}" if result.activations else ""
    print(f"stored {result.times} times of {result.configurations} configurations{alone} under system "
          f"{result.system.id} ({result.system.label}, {result.system.device_name}); {result.skipped} held already")
    return 0


def _stored_or_here(args: argparse.Namespace) -> Any:
    """``--system`` when given, else this CPU's primitive system of ``--threads``."""
    return args.system if args.system is not None else system_from_args(args)


def run_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.api import primitive_catalog
    from nnperf.report import console

    catalog = primitive_catalog()
    transforms = catalog.layout_transforms
    if args.json:
        print(json.dumps(catalog.to_dict(), indent=1))
        return 0
    table = Table(title="convolution primitives", title_justify="left")
    for column in ("name", "family", "library", "in", "out", "applies to", "devices", "available", "why not"):
        table.add_column(column)
    for p in catalog.primitives:
        table.add_row(p.name, p.family, p.library, p.input_layout, p.output_layout, p.applies, ", ".join(p.devices),
                      "yes" if p.available else "no", p.reason)
    out = console()
    out.print(table)
    out.print(f"layout transformations: {', '.join(t for t in transforms if t.split('->')[0] != t.split('->')[1])}")
    return 0


def run_profile(args: argparse.Namespace) -> int:
    from nnperf.api import profile_primitives

    budget_s = None if args.budget is None else parse_duration(args.budget)
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    if only and args.output_activations:
        raise NnperfError("--only picks the primitives of the configurations; --output-activations times the layout "
                          "transformations alone, no primitive: give one or the other")
    if args.fleet:
        return _profile_on_fleet(args, only, budget_s)
    with Progress(not args.json, "profiling primitives") as progress:
        report = profile_primitives(args.models, system_from_args(args), args.db, random=args.random, primitives=only,
                                    budget_s=budget_s, seed=args.seed, progress=progress, protocol=args.protocol,
                                    grid=args.grid, max_macs=_max_macs(args),
                                    output_activations=args.output_activations, retime_over=_retime_over(args))
    return _print_profile(args, report)


def _retime_over(args: argparse.Namespace) -> float | bool | None:
    """``--retime-slow``'s factor: True (the library's default factor) when given without one, None when not
    given."""
    if args.retime_slow is None:
        return None
    try:
        return float(args.retime_slow) if args.retime_slow else True
    except ValueError:
        raise NnperfError(f"--retime-slow takes a factor (e.g. 1.5), got {args.retime_slow!r}: give the models first "
                          "or write --retime-slow=FACTOR") from None


def _max_macs(args: argparse.Namespace) -> int | None:
    """``--max-gmacs`` in multiply-accumulates; only with ``--grid`` and positive."""
    if args.max_gmacs is None:
        return None
    if args.grid is None:
        raise NnperfError("--max-gmacs applies to --grid only")
    if args.max_gmacs <= 0:
        raise NnperfError(f"--max-gmacs must be positive, got {args.max_gmacs}")
    return int(args.max_gmacs * 1e9)


def _profile_on_fleet(args: argparse.Namespace, only: list[str], budget_s: float | None) -> int:
    """``nnperf primitives profile --fleet``: the dataset of every primitive system the fleet has for these
    threads (nodes of different CPUs are different systems), profiled in turn; one report each."""
    from nnperf.api import profile_primitives
    from nnperf.cli._store_arg import open_store
    from nnperf.cli.fleet_cmd import fleet_runners

    reports = []
    with open_store(args) as store, fleet_runners(args, store, "profiling primitives") as (runners, progress):
        for runner in runners:
            reports.append(profile_primitives(args.models, system_from_args(args), store, random=args.random,
                                              primitives=only, budget_s=budget_s, seed=args.seed, progress=progress,
                                              runner=runner, protocol=args.protocol, grid=args.grid,
                                              max_macs=_max_macs(args), output_activations=args.output_activations,
                                              retime_over=_retime_over(args)))
    if args.json:
        from nnperf.report.primitives import profile_document

        documents = [profile_document(report) for report in reports]
        print(json.dumps(documents[0] if len(documents) == 1 else documents, indent=1))
        return 0
    for report in reports:
        _print_profile(args, report)
    return 0


def _print_profile(args: argparse.Namespace, report: Any) -> int:
    """A :func:`nnperf.api.profile_primitives` report as JSON, or in words."""
    from nnperf.report import console
    from nnperf.report.primitives import profile_document, speed_lines

    if args.json:
        print(json.dumps(profile_document(report), indent=1))
        return 0
    out = console()
    unit = "activations" if args.output_activations else "configurations"
    out.print(f"system {report.system_id}: {report.measured} {unit} profiled now ({report.samples} samples "
              f"in {report.elapsed_s:.0f} s), {report.reused} profiled before")
    if report.remaining:
        out.print(f"the budget was spent with {report.remaining} {unit} left: run the same command again to go on")
    for name, label, error in report.failures:
        out.print(f"{name} failed on {label}: {error}", style="yellow")
    for line, style in speed_lines(report.speed_readings_s, len(report.retimed)):
        out.print(line, style=style or None)
    if report.retimed:
        more = f" and {len(report.retimed) - 10} more" if len(report.retimed) > 10 else ""
        out.print(f"timed again (the dataset reads the new times): {', '.join(report.retimed[:10])}{more}")
    return 0


def run_train(args: argparse.Namespace) -> int:
    from nnperf.api import train_primitive_model
    from nnperf.report import write_bytes

    with Progress(not args.json, f"training {args.kind}") as progress:
        if progress is not None:
            progress(f"training {args.kind}", 0, 1)
        result = train_primitive_model(_stored_or_here(args), args.db, kind=args.kind, seed=args.seed,
                                       targets=args.targets)
    if args.out is not None:
        write_bytes(args.out, json.dumps(result.model.to_dict()).encode())
    if args.json:
        print(json.dumps({"format": "nnperf-primitive-training", "version": 1, "system_id": result.system_id,
                          "model_id": result.model_id, "kind": args.kind, "targets": args.targets,
                          "fitted": result.model.summary(), "sizes": list(result.sizes),
                          "train_s": result.train_s, "skipped": dict(result.model.skipped_),
                          "mdrae": result.mdrae, "test_counts": result.test_counts, "reference": result.reference,
                          "ratio_mdrae": result.ratio_mdrae, "selection": result.model.selection_}, indent=1))
        return 0
    _print_training(args, result)
    return 0


def _print_training(args: argparse.Namespace, result: Any) -> None:
    from rich.table import Table

    from nnperf.report import console
    from nnperf.report.primitives import family

    table = Table(title=f"{args.kind} on system {result.system_id}: MdRAE on the test part", title_justify="left")
    for column, justify in (("primitive", "left"), ("family", "left"), ("test times", "right"), ("MdRAE", "right"),
                            (f"ratio to {result.reference or 'the reference'}", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for name, count in result.test_counts.items():
        value, ratio = result.mdrae.get(name), result.ratio_mdrae.get(name)
        table.add_row(name, family(name), str(count), "-" if value is None else f"{value * 100:.1f}%",
                      "-" if ratio is None else f"{ratio * 100:.1f}%")
    out = console()
    out.print(table)
    train, validation, test = result.sizes
    out.print(f"configurations: {train} train, {validation} validation, {test} test; fitted in "
              f"{result.train_s:.1f} s; stored as model {result.model_id}: {result.model.summary()}")
    for table_name, scores in result.model.selection_.items():
        if scores:
            out.print(f"{table_name}, validation score (MdRAE of the times, plus of the ratios for relative targets): "
                      + ", ".join(f"{k} {v * 100:.1f}%" for k, v in scores.items()))
    for name, count in result.model.skipped_.items():
        out.print(f"{name} left out: {count} training times", style="yellow")


def run_predict(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.api import predict_primitives
    from nnperf.report import console, write_csv
    from nnperf.report.primitives import config_label

    result = predict_primitives(args.model, _stored_or_here(args), args.db)
    if args.csv is not None:
        write_csv(args.csv, ["layer", "configuration", *(f"{name}_s" for name in result.primitives)],
                  [[layer.layer, config_label(layer.config), *(None if math.isnan(t) else t for t in layer.times_s)]
                   for layer in result.layers])
    if args.json:
        print(json.dumps({"format": "nnperf-primitive-prediction", "version": 1, "network": result.network,
                          "system_id": result.system_id, "kind": result.kind, "predict_s": result.predict_s,
                          "primitives": list(result.primitives),
                          "layers": [{"layer": layer.layer, "config": layer.config.to_dict(),
                                      "fastest": result.fastest(layer)[0],
                                      "times_s": {n: t for n, t in zip(result.primitives, layer.times_s, strict=True)
                                                  if not math.isnan(t)}}
                                     for layer in result.layers]}, indent=1))
        return 0
    default = result.default
    table = Table(title=f"{result.network}: predicted primitive times ({result.kind}, system {result.system_id})",
                  title_justify="left")
    for column, justify in (("layer", "left"), ("configuration", "left"), ("fastest", "left"), ("ms", "right"),
                            ("runner-up", "left"), ("ms", "right"), (f"{default or 'default'} ms", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    best_total = default_total = 0.0
    for layer in result.layers:
        ranked = sorted((t, n) for n, t in zip(result.primitives, layer.times_s, strict=True) if not math.isnan(t))
        second = ranked[1] if len(ranked) > 1 else (math.nan, "-")
        default_s = layer.times_s[result.primitives.index(default)] if default else math.nan
        best_total += ranked[0][0]
        default_total += default_s
        table.add_row(layer.layer, config_label(layer.config), ranked[0][1], f"{ranked[0][0] * 1e3:.3f}", second[1],
                      f"{second[0] * 1e3:.3f}", f"{default_s * 1e3:.3f}")
    out = console()
    out.print(table)
    out.print(f"{len(result.layers)} convolutions: fastest primitive per layer {best_total * 1e3:.2f} ms"
              + (f", {default} everywhere {default_total * 1e3:.2f} ms" if default and not math.isnan(default_total)
                 else "")
              + f" (layout transformations not counted); predicted in {result.predict_s * 1e3:.1f} ms")
    return 0


def run_transfer(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.api import transfer_primitive_model
    from nnperf.report import console
    from nnperf.report.primitives import config_label, family

    with Progress(not args.json, "profiling the sample") as progress:
        result = transfer_primitive_model(args.source, system_from_args(args), args.db, samples=args.samples,
                                          method=args.method, seed=args.seed, progress=progress)
    if args.json:
        print(json.dumps({"format": "nnperf-primitive-transfer", "version": 1, "source_id": result.source_id,
                          "target_id": result.target_id, "model_id": result.model_id, "kind": result.model.kind,
                          "method": result.method, "samples": result.samples, "seed": args.seed,
                          "configurations": len(result.configs), "measured": result.measured,
                          "reused": result.reused, "sample_times": result.sample_times,
                          "profile_s": result.profile_s, "transfer_s": result.transfer_s, "factors": result.factors,
                          "configs": [c.to_dict() for c in result.configs],
                          "failures": [list(f) for f in result.failures]}, indent=1))
        return 0
    out = console()
    out.print(f"system {result.source_id} -> system {result.target_id} ({args.threads} thread(s) here): "
              f"{len(result.configs)} configurations ({result.samples * 100:g}% of the source's) profiled, "
              f"{result.measured} now and {result.reused} before ({result.profile_s:.1f} s); "
              f"{result.sample_times} target times")
    if len(result.configs) <= 10:
        out.print("sample: " + "; ".join(config_label(c) for c in result.configs))
    out.print(f"method: {result.method} ({result.model.kind}, {result.transfer_s:.1f} s)")
    if result.factors is not None:
        table = Table(title="correction factors (measured / predicted)", title_justify="left")
        for column, justify in (("primitive", "left"), ("family", "left"), ("factor", "right")):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for name, factor in result.factors.items():
            table.add_row(name, family(name), f"{factor:.3g}")
        out.print(table)
    for name, label, error in result.failures:
        out.print(f"{name} failed on {label}: {error}", style="yellow")
    out.print(f"stored as model {result.model_id} with system {result.target_id}: `nnperf primitives predict "
              f"--threads {args.threads}` and `nnperf select --threads {args.threads}` use it here")
    return 0
