"""``nnperf steps fit|predict``: step-function models from stored sweeps, and predictions from them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from nnperf.cli._backend_args import Progress, add_backend_arguments, backend_from_args
from nnperf.cli._store_arg import add_db_argument, open_store

if TYPE_CHECKING:
    from nnperf.measure.backends import Backend
    from nnperf.measure.sweep import LayerConfig
    from nnperf.store import Store, SystemRecord


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("steps", help="fit step-function latency models to sweeps and predict with them",
                       description="Step-function latency models (Osterwind et al.): `fit` finds the step depth d "
                                   "and fluctuation period r of stored sweeps automatically; `predict` composes "
                                   "the fitted models to predict any layer configuration, or characterises a new "
                                   "configuration from four measurements.")
    steps = p.add_subparsers(dest="steps_command", metavar="COMMAND", required=True)

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
    from nnperf.prediction.steps import fit_sweep, load_sweep, save_fit, sweep_runs
    from nnperf.report import console
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
        print(json.dumps({"format": "nnperf-step-fits", "version": 1, "fits": [fit.to_dict() for fit in fits]},
                         indent=1))
        return 0
    out.print(fit_table(fits))
    for fit in fits:
        out.print(f"run {fit.sweep.run_id}: {fit.model.shape.describe()}; {fit_lines_text(fit)}"
                  + (f"; {fit.note}" if fit.note else ""))
    if plots:
        out.print(f"plots: {', '.join(str(p) for p in plots)}")
    return 0


def run_predict(args: argparse.Namespace) -> int:
    from nnperf.campaign import predict_steps
    from nnperf.report import console
    from nnperf.report.steps import plot_prediction, prediction_report

    config, values = _predict_request(args)
    measuring = args.characterise or args.verify
    with open_store(args) as store:
        backend = backend_from_args(args) if measuring or args.system is None else None
        try:
            system = _predict_system(args, store, backend)
            with _FirstReportProgress(not args.json and measuring, "measuring") as progress:
                prediction = predict_steps(store, system.id, config, args.param, values,
                                           characterise_with=backend if args.characterise else None,
                                           verify_with=backend if args.verify else None, progress=progress)
        finally:
            if backend is not None:
                backend.close()
    plot = plot_prediction(prediction, args.plot) if args.plot and prediction.parameter is not None else None
    if args.json:
        print(json.dumps(prediction.to_dict(), indent=1))
        return 0
    out = console()
    for item in prediction_report(prediction):
        out.print(item)
    if plot is not None:
        out.print(f"plot: {plot}")
    return 0


def _predict_request(args: argparse.Namespace) -> tuple[LayerConfig, tuple[int, ...]]:
    """The configuration and the values along ``--param`` that ``steps predict`` asks for, checked."""
    from nnperf.errors import NnperfError
    from nnperf.measure.sweep import LayerConfig, check_parameter, parse_fixed, parse_range
    from nnperf.prediction.steps import STEPPED

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
    return config, values


def _predict_system(args: argparse.Namespace, store: Store, backend: Backend | None) -> SystemRecord:
    """The system whose models predict: ``--system``, which must be the backend's when one measures, or else the
    backend's own."""
    from nnperf.errors import NnperfError

    if args.system is not None:
        system = store.system(args.system)
        if backend is not None and system.key != backend.system().key:
            raise NnperfError(f"--system {args.system} is {system.label}, but the backend options describe "
                              f"{backend.system().label}; measure on the system whose models you use")
        return system
    assert backend is not None
    found = store.find_system(backend.system().key)
    if found is None:
        raise NnperfError(f"{store.path} has no sweeps of {backend.system().label}; measure them with "
                          f"`nnperf sweep {args.kind} ...` on these backend options")
    return found


class _FirstReportProgress:
    """A :class:`Progress` bar opened at the first report, so that a request refused before anything is measured
    (no fitted sweep to characterise with, too narrow a range) leaves stderr to its one error line."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.bar = Progress(enabled, label)
        self.update: Callable[[str, int, int], None] | None = None
        self.opened = False

    def __enter__(self) -> Callable[[str, int, int], None]:
        return self.report

    def report(self, what: str, done: int, total: int) -> None:
        if not self.opened:
            self.update, self.opened = self.bar.__enter__(), True
        if self.update is not None:
            self.update(what, done, total)

    def __exit__(self, *exc: object) -> None:
        if self.opened:
            self.bar.__exit__(*exc)
