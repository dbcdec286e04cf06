"""``nnperf advise MODEL``: layers whose width, changed a little, runs faster on this system."""

from __future__ import annotations

import argparse
import json

from nnperf.cli._backend_args import Progress, add_backend_arguments, system_from_args
from nnperf.cli._store_arg import add_db_argument


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
    p.add_argument("model", metavar="MODEL", help="zoo name (see `nnperf zoo`), .onnx, .tflite or IR .json file")
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
    from nnperf.api import advise
    from nnperf.report import console
    from nnperf.report.advice import advice_table

    system = system_from_args(args)
    with Progress(not args.json, "advising") as progress:
        result = advise(args.model, system, args.db, tolerance=args.tolerance, min_bonus=args.min_bonus,
                        verify=args.verify, progress=progress)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    advice = result.advice
    out = console()
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
