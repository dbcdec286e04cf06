"""``nnperf steps fit|predict``: step-function models from stored sweeps, and predictions from them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from nnperf.cli._backend_args import Progress, add_backend_arguments, system_from_args
from nnperf.cli._store_arg import add_db_argument


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
    predict.add_argument("--param", dest="parameter", metavar="PARAM", help="predict along this parameter ...")
    predict.add_argument("--range", dest="values", metavar="START:STOP[:STEP]", help="... over these values")
    predict.add_argument("--characterise", action="store_true",
                         help="measure four points and fit this configuration's lines (needs the backend)")
    predict.add_argument("--verify", action="store_true", help="measure the whole range and report the error")
    add_backend_arguments(predict)
    predict.add_argument("--system", dest="models_of", metavar="ID|KEY",
                         help="use this stored system's models (default: the system of the backend options)")
    predict.add_argument("--plot", metavar="FILE.png", help="plot the prediction (with measurements, like Fig. 3.5)")
    predict.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(predict)
    predict.set_defaults(run=run_predict)


def run_fit(args: argparse.Namespace) -> int:
    from nnperf.api import fit_steps
    from nnperf.report import console
    from nnperf.report.steps import fit_lines_text, fit_table

    with _FirstReportProgress(not args.json, "fitting") as progress:
        fitted = fit_steps(args.runs, args.system, args.db, out=args.out,
                           progress=lambda what, done, total: progress(what, done, total) if total > 1 else None)
    if args.json:
        print(json.dumps(fitted.to_dict(), indent=1))
        return 0
    out = console()
    out.print(fit_table(fitted.fits))
    for fit in fitted.fits:
        out.print(f"run {fit.sweep.run_id}: {fit.model.shape.describe()}; {fit_lines_text(fit)}"
                  + (f"; {fit.note}" if fit.note else ""))
    if fitted.files:
        out.print(f"plots: {', '.join(str(p) for p in fitted.files)}")
    return 0


def run_predict(args: argparse.Namespace) -> int:
    from nnperf.api import predict_steps
    from nnperf.report import console
    from nnperf.report.steps import prediction_report

    system = system_from_args(args)
    with _FirstReportProgress(not args.json and (args.characterise or args.verify), "measuring") as progress:
        predicted = predict_steps(args.kind, system, args.db, config=args.config, parameter=args.parameter,
                                  values=args.values, characterise=args.characterise, verify=args.verify,
                                  models_of=args.models_of, plot=args.plot, progress=progress)
    if args.json:
        print(json.dumps(predicted.to_dict(), indent=1))
        return 0
    out = console()
    for item in prediction_report(predicted.prediction):
        out.print(item)
    for path in predicted.files:
        out.print(f"plot: {path}")
    return 0


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
