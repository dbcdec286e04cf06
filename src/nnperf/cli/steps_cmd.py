"""``nnperf steps fit|predict``: step-function models from stored sweeps, and predictions from them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from nnperf.cli._backend_args import Progress, add_backend_arguments, backend_from_args
from nnperf.cli._store_arg import add_db_argument, open_store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("steps", help="fit step-function latency models to sweeps and predict with them",
                       description="Step-function latency models (Osterwind et al.): `fit` finds the step depth d "
                                   "and fluctuation period r of stored sweeps automatically; `predict` composes "
                                   "the fitted models to predict any layer configuration, or characterises a new "
                                   "configuration from four measurements.")
    steps = p.add_subparsers(dest="steps_command", metavar="ACTION", required=True)

    fit = steps.add_parser("fit", help="detect d and r in stored sweeps and store the fitted models",
                           description="Fit the generalised step model (Eq. 3.1-3.3) to stored sweeps: linear, "
                                       "a staircase of depth d, or upper/lower staircases alternating with period r, "
                                       "chosen by an information criterion, with a confidence (the share of random "
                                       "half-samples that choose the same model). Sweeps too short to detect steps "
                                       "(under 8 points) get a line.")
    fit.add_argument("runs", nargs="*", type=int, metavar="RUN",
                     help="sweep run ids (printed by `nnperf sweep`); default: every stored sweep of 2+ points")
    fit.add_argument("--system", metavar="ID|KEY", help="only the sweeps of this system")
    fit.add_argument("--out", metavar="DIR", help="write one plot per sweep, sweep-RUN.png (like Fig. 3.2)")
    fit.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(fit)
    fit.set_defaults(run=run_fit)

    predict = steps.add_parser("predict", help="predict a layer configuration from the fitted step models",
                               description="Predict the latency of a layer configuration by composing the system's "
                                           "fitted step models (T = b + a x the product of each parameter's effective "
                                           "size; parameters without a model count proportionally). With --param and "
                                           "--range, predict along that parameter; --characterise measures the four "
                                           "points of section 3.3.3 and fits this configuration's own lines with the "
                                           "stored d and r; --verify measures the whole range and reports the MAPE.")
    predict.add_argument("kind", metavar="KIND", help="conv2d, depthwise or fc")
    predict.add_argument("--config", default="", metavar="NAME=VALUE,...",
                         help="the layer's parameters (defaults as for `nnperf sweep`)")
    predict.add_argument("--param", help="predict along this parameter ...")
    predict.add_argument("--range", dest="values", metavar="START:STOP[:STEP]", help="... over these values")
    predict.add_argument("--characterise", action="store_true",
                         help="measure four points and fit this configuration's lines (needs the backend)")
    predict.add_argument("--verify", action="store_true", help="measure the whole range and report the error")
    add_backend_arguments(predict)
    predict.add_argument("--system", metavar="ID|KEY",
                         help="use this stored system's models (default: the system of the backend options)")
    predict.add_argument("--plot", metavar="FILE.png", help="plot the prediction (with measurements, like Fig. 3.5)")
    predict.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(predict)
    predict.set_defaults(run=run_predict)


def run_fit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nnperf.errors import NnperfError
    from nnperf.measure.sweep import load_sweep, sweep_runs
    from nnperf.predict.steps import fit_sweep, save_fit
    from nnperf.report._format import console
    from nnperf.report.steps import fit_lines_text, fit_table, plot_sweep

    out = console()
    with open_store(args) as store:
        system_id = store.system(args.system).id if args.system else None
        if args.runs:
            sweeps = [load_sweep(store, run) for run in args.runs]
            if system_id is not None:
                sweeps = [s for s in sweeps if s.system_id == system_id]
        else:
            sweeps = [s for s in (load_sweep(store, r.id) for r in sweep_runs(store, system_id))
                      if len(s.timings) >= 2]
        if not sweeps:
            raise NnperfError(f"{store.path} holds no sweep to fit; measure one with `nnperf sweep conv2d --param "
                              "channels --range 16:256:1`")
        fits = []
        with Progress(not args.json and len(sweeps) > 1, "fitting") as progress:
            for i, sweep in enumerate(sweeps):
                if progress:
                    progress(sweep.spec.label, i, len(sweeps))
                fit = fit_sweep(sweep)
                save_fit(store, fit)
                fits.append(fit)
    plots = []
    if args.out:
        for fit in fits:
            plots.append(plot_sweep(fit.sweep, fit.model, Path(args.out) / f"sweep-{fit.sweep.run_id}.png",
                                    work=fit.work))
    if args.json:
        print(json.dumps([fit.to_dict() for fit in fits], indent=1))
        return 0
    out.print(fit_table(fits))
    for fit in fits:
        out.print(f"run {fit.sweep.run_id}: {fit.model.shape.describe()}; {fit_lines_text(fit)}"
                  + (f"; {fit.note}" if fit.note else ""))
    if plots:
        out.print(f"plots: {', '.join(str(p) for p in plots)}")
    return 0


def run_predict(args: argparse.Namespace) -> int:
    import numpy as np

    from nnperf.errors import NnperfError
    from nnperf.measure.sweep import (
        SWEEP_HARNESS,
        LayerConfig,
        SweepSpec,
        check_parameter,
        parse_fixed,
        parse_range,
        run_sweep,
        surround_width,
    )
    from nnperf.predict.steps import STEPPED, characterise, composed_model, mape
    from nnperf.report._format import console
    from nnperf.report.steps import plot_sweep

    config = LayerConfig.of(args.kind, parse_fixed(args.config))
    if (args.param is None) != (args.values is None):
        raise NnperfError("give --param and --range together")
    if (args.characterise or args.verify) and args.param is None:
        raise NnperfError("--characterise and --verify work along a range: give --param and --range")
    if args.characterise and args.param not in STEPPED:
        raise NnperfError(f"--characterise works along {' or '.join(STEPPED)} (the stepped parameters), "
                          f"not {args.param}")
    values: tuple[int, ...] = ()
    if args.param is not None:
        check_parameter(args.kind, args.param)
        values = parse_range(args.values)
        for value in values:  # every value makes a valid layer
            config.with_value(args.param, value)
    need_backend = args.characterise or args.verify or args.system is None
    doc: dict[str, Any] = {"format": "nnperf-steps-prediction", "version": 1, "kind": args.kind,
                           "config": dict(config.params)}
    out = console()
    with open_store(args) as store:
        backend = backend_from_args(args) if need_backend else None
        try:
            if args.system is not None:
                system = store.system(args.system)
                if backend is not None and system.key != backend.system().key:
                    raise NnperfError(f"--system {args.system} is {system.label}, but the backend options describe "
                                      f"{backend.system().label}; measure on the system whose models you use")
            else:
                assert backend is not None
                found = store.find_system(backend.system().key)
                if found is None:
                    raise NnperfError(f"{store.path} has no sweeps of {backend.system().label}; measure them with "
                                      f"`nnperf sweep {args.kind} ...` on these backend options")
                system = found
            doc["system"] = system.label
            composed = composed_model(store, system.id, args.kind)
            doc["composition"] = {"scale_s": composed.scale_s_, "offset_s": composed.offset_s_,
                                  "modelled": composed.modelled, "points": composed.fitted_points_}
            if args.param is None:
                latency = composed.predict(config)
                doc["latency_s"] = latency
                doc["extrapolated"] = composed.extrapolated(config)
            else:
                configs = [config.with_value(args.param, v) for v in values]
                composed_s = np.array([composed.predict(c) for c in configs])
                doc["values"] = list(values)
                doc["composed_s"] = composed_s.tolist()
                doc["extrapolated"] = sorted({e for c in configs for e in composed.extrapolated(c)})
                local = None
                if args.characterise:
                    assert backend is not None
                    with Progress(not args.json, "characterising") as progress:
                        found = characterise(backend, store, system.id, config, args.param, values,
                                             progress=progress)
                    local = found.model
                    doc["characterisation"] = {"shape": found.shape.describe(), "points": list(found.points),
                                               "rounds": found.sweep.spec.rounds, "run_id": found.sweep.run_id,
                                               "measured_s": found.sweep.latency_s.tolist(),
                                               "lines": [[ln.slope_s, ln.intercept_s] for ln in local.lines_]}
                    doc["characterised_s"] = local.predict(np.array(values)).tolist()
                sweep = None
                if args.verify:
                    assert backend is not None
                    spec = SweepSpec(config.with_value(args.param, values[0]), args.param, values,
                                     surround_width(store, system.id, args.kind), SWEEP_HARNESS)
                    with Progress(not args.json, "verifying") as progress:
                        sweep = run_sweep(backend, store, spec, progress=progress)
                    truth = sweep.latency_s
                    doc["measured_s"] = truth.tolist()
                    doc["verify_run_id"] = sweep.run_id
                    doc["mape"] = {"composed": mape(composed_s, truth)}
                    if local is not None:
                        held = np.array([v not in doc["characterisation"]["points"] for v in values])
                        doc["mape"]["characterised"] = mape(local.predict(np.array(values)), truth)
                        doc["mape"]["characterised_held_out"] = mape(local.predict(np.array(values))[held], truth[held])
                if args.plot:
                    _plot_prediction(args, values, composed_s, local, sweep, doc, plot_sweep)
        finally:
            if backend is not None:
                backend.close()
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    _print_prediction(out, args, doc)
    return 0


def _plot_prediction(args, values, composed_s, local, sweep, doc, plot_sweep) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    import numpy as np

    from nnperf.report._format import pyplot, write_png

    if sweep is not None and local is not None:
        plot_sweep(sweep, local, args.plot, title=f"{args.kind} {args.param}: characterised from "
                   f"{len(doc['characterisation']['points'])} measurements (Fig. 3.5 style)")
        return
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.plot(values, np.asarray(composed_s) * 1e3, "-", label="composed prediction")
    if sweep is not None:
        ax.plot(sweep.x, sweep.latency_s * 1e3, ".", ms=3, label="measured")
    if local is not None:
        ax.plot(values, local.predict(np.array(values)) * 1e3, "_", label="characterised")
    ax.set_xlabel(args.param)
    ax.set_ylabel("latency (ms)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    write_png(fig, Path(args.plot))


def _print_prediction(out, args, doc) -> None:  # type: ignore[no-untyped-def]
    comp = doc["composition"]
    out.print(f"{doc['system']}: composition of {len(comp['modelled'])} fitted parameter model(s) "
              f"({', '.join(comp['modelled'])}; others proportional to their work), scaled on {comp['points']} "
              "measured points")
    if "latency_s" in doc:
        config = ", ".join(f"{k}={v}" for k, v in doc["config"].items())
        out.print(f"{args.kind}({config}): predicted {doc['latency_s'] * 1e3:.4g} ms")
    else:
        from rich.table import Table

        table = Table()
        table.add_column(args.param, justify="right")
        table.add_column("composed (ms)", justify="right")
        for key, name in (("characterised_s", "characterised (ms)"), ("measured_s", "measured (ms)")):
            if key in doc:
                table.add_column(name, justify="right")
        for i, value in enumerate(doc["values"]):
            row = [str(value), f"{doc['composed_s'][i] * 1e3:.4g}"]
            row += [f"{doc[k][i] * 1e3:.4g}" for k in ("characterised_s", "measured_s") if k in doc]
            table.add_row(*row)
        out.print(table)
        if "characterisation" in doc:
            ch = doc["characterisation"]
            out.print(f"characterised from {len(ch['points'])} measurements at {args.param} = "
                      f"{', '.join(map(str, ch['points']))} with the stored {ch['shape']}")
        if "mape" in doc:
            out.print("MAPE against the measured range: "
                      + ", ".join(f"{k.replace('_', ' ')} {v:.2%}" for k, v in doc["mape"].items())
                      + f" (run {doc['verify_run_id']})")
    if doc["extrapolated"]:
        out.print("extrapolated beyond the measured data: " + "; ".join(doc["extrapolated"]))
    if args.plot:
        out.print(f"plot: {args.plot}")
