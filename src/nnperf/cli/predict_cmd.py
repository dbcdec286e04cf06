"""``nnperf predict MODEL``: per-layer and network latency from this system's calibration, optionally verified."""

from __future__ import annotations

import argparse
import json

from nnperf.cli._backend_args import Progress, add_backend_arguments, backend_from_args
from nnperf.cli._shapes import parse_input_shape
from nnperf.cli._store_arg import add_db_argument, open_store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("predict", help="predict a network's per-layer and total latency from a calibration",
                       description="Predict each layer's latency (and energy, where calibrated) with the system's "
                                   "PreVIous models, the network total (composed with the backend's fusions, and "
                                   "PreVIous' c x the sum beside it) and the hotspots, without running the network. "
                                   "--verify also measures it and compares.")
    p.add_argument("model", metavar="MODEL", help="zoo name (see `nnperf zoo`), .onnx file or IR .json file")
    add_backend_arguments(p)
    p.add_argument("--system", metavar="ID|KEY",
                   help="predict with this stored system's calibration (id or key prefix, see `nnperf systems`); "
                        "no backend is needed unless --verify")
    p.add_argument("--verify", action="store_true",
                   help="also measure the network on the same system (layers in isolation and whole) and compare")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--top", type=int, default=5, help="how many hotspots to name (default 5)")
    p.add_argument("--input-shape", action="append", type=parse_input_shape, default=[], metavar="[NAME=]SHAPE",
                   help="fix an ONNX input's shape (repeatable)")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf._load import load_model
    from nnperf.errors import NnperfError
    from nnperf.measure import ProfileConfig, profile_network
    from nnperf.predict import load_stored_model, load_system_model
    from nnperf.predict.evaluation import relative_error
    from nnperf.report._format import console
    from nnperf.report.predictions import prediction_document, prediction_summary, prediction_table

    network = load_model(args.model, dict(args.input_shape) or None)
    verify = None
    measured: dict[str, float] | None = None
    with open_store(args) as store:
        if args.system is not None and not args.verify:  # a stored model predicts without any backend
            prediction = load_stored_model(store, args.system).predict(network)
        else:
            with backend_from_args(args) as backend:
                system = backend.system()
                if args.system is None:
                    model = load_system_model(store, system.key, system.label, args.backend)
                else:
                    model = load_stored_model(store, args.system)
                    if model.system_key != system.key:
                        raise NnperfError(
                            f"--verify measures on {system.label} here, but --system {args.system} is "
                            f"{model.system_label} ({model.system_key[:8]}, see `nnperf systems`): give that "
                            "system's --backend, --device, --threads and --option settings, on its host")
                prediction = model.predict(network)
                if args.verify:
                    with Progress(not args.json, "verifying") as progress:
                        report = profile_network(network, backend, store, ProfileConfig(per_layer="isolated"),
                                                 progress=progress, model=args.model)
                    measured = {m.layer: m.timing.stats.median_s for m in report.layers}
                    whole = report.network.timing.stats.median_s
                    verify = {"measured_latency_s": whole, "measured_layer_sum_s": report.layer_sum_s,
                              "error": relative_error(prediction.latency_s, whole),
                              "previous_error": relative_error(prediction.previous_latency_s, whole),
                              "run_id": report.run_id,
                              "layer_errors": {p.layer: relative_error(p.latency_s, measured[p.layer])
                                               for p in prediction.layers if p.layer in measured}}
    if args.json:
        print(json.dumps(prediction_document(network, prediction, verify), indent=1))
        return 0
    out = console()
    out.print(prediction_table(network, prediction, measured))
    for line in prediction_summary(prediction, args.top):
        out.print(line)
    if verify is not None:
        errors = [abs(e) for e in verify["layer_errors"].values()]
        out.print(f"measured network latency: {verify['measured_latency_s'] * 1e3:.4g} ms; predicted "
                  f"{prediction.latency_s * 1e3:.4g} ms; error {verify['error']:+.1%}"
                  + (f" (PreVIous' c x sum: {verify['previous_error']:+.1%})" if prediction.method == "composed" else ""))
        out.print(f"per-layer error: mean |error| {sum(errors) / len(errors):.1%}, median "
                  f"{sorted(errors)[len(errors) // 2]:.1%} over {len(errors)} layers "
                  f"(run {verify['run_id']} in {store.path})")
    return 0
