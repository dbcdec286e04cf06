"""``nnperf advise MODEL``: layers whose width, changed a little, runs faster on this system."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from nnperf.cli._backend_args import Progress, add_backend_arguments, backend_from_args
from nnperf.cli._store_arg import add_db_argument, open_store

if TYPE_CHECKING:
    from nnperf.measure.sweep import LayerConfig


def _fraction(text: str) -> float:
    value = text.strip()
    try:
        number = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction or a percentage such as 10%, got {text!r}") from None
    if not 0 < number < 1:
        raise argparse.ArgumentTypeError(f"expected a tolerance between 0% and 100%, got {text!r}")
    return number


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("advise", help="find layers where a small change of filters lowers the latency",
                       description="For each conv and fc layer, try every filter count within the tolerance and "
                                   "predict the layer and the layers that read its output with this system's "
                                   "composed step models (`nnperf sweep` + `nnperf steps fit`). A change is listed "
                                   "when it saves more than the width change alone would (a step edge or an aligned "
                                   "fast path). --verify measures each suggestion in the profiling network.")
    p.add_argument("model", metavar="MODEL", help="zoo name (see `nnperf zoo`), .onnx file or IR .json file")
    add_backend_arguments(p)
    p.add_argument("--tolerance", type=_fraction, default=0.10, metavar="PCT",
                   help="how far a width may move, e.g. 10%% (default) or 0.05")
    p.add_argument("--min-bonus", type=_fraction, default=0.01, metavar="PCT",
                   help="least saving beyond the trend's over the tolerance window, as a share of the affected layers' time (default 1%%)")
    p.add_argument("--verify", action="store_true", help="measure each suggestion (both widths) on the backend")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import load_model
    from nnperf.campaign import surround_width
    from nnperf.errors import NnperfError
    from nnperf.measure.sweep import SWEEP_HARNESS, profiling_network, time_in_context
    from nnperf.optimize.advise import advise
    from nnperf.prediction.steps import composed_models
    from nnperf.report import console
    from nnperf.report.advice import advice_document, advice_table

    network = load_model(args.model)
    out = console()
    with open_store(args) as store, backend_from_args(args) as backend:
        spec = backend.system()
        found = store.find_system(spec.key)
        if found is None:
            raise NnperfError(f"{store.path} has no step models of {spec.label}; measure sweeps with `nnperf sweep "
                              "conv2d --param channels ...` (and filters) on these backend options, then `nnperf "
                              "steps fit`")
        system = found
        models = composed_models(store, system.id)
        if not models:
            raise NnperfError(f"{store.path} has no fitted step model on {system.label}; run `nnperf sweep` and "
                              "`nnperf steps fit` first")

        def measure(config: LayerConfig) -> float:
            """The median latency (seconds) of ``config`` inside the system's profiling network."""
            profiling = profiling_network(config, surround_width(store, system.id, config.kind))
            return time_in_context(backend, profiling, SWEEP_HARNESS).stats.median_s

        with Progress(not args.json, "advising") as progress:
            advice = advise(network, models, system.label, args.tolerance, args.min_bonus,
                            measure if args.verify else None, progress)
    if args.json:
        print(json.dumps(advice_document(advice), indent=1))
        return 0
    out.print(advice_table(advice))
    out.print(f"{advice.considered} layer widths considered on {advice.system} (+/-{advice.tolerance:.0%}); "
              f"{len(advice.suggestions)} suggestion(s); {len(advice.skipped)} layer(s) skipped"
              + (f" ({_reasons(advice.skipped)})" if advice.skipped else ""))
    return 0


def _reasons(skipped: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for reason in skipped.values():
        key = reason.split(" '")[0] if "feeds" in reason else reason
        counts[key] = counts.get(key, 0) + 1
    return "; ".join(f"{n} x {reason}" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]))
