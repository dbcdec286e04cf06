"""``nnperf calibrate``: profile the calibration networks once and fit this system's PreVIous models."""

from __future__ import annotations

import argparse

from nnperf.cli._backend_args import Progress, add_backend_arguments, backend_from_args
from nnperf.cli._store_arg import add_db_argument, open_store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("calibrate", help="profile the calibration networks and fit this system's models",
                       description="Profile PreVIousNet-01 (four input configurations), PreVIousNet-02 and nnperf's "
                                   "PreVIousNet-03 layer by layer and whole on one backend, store every measurement, "
                                   "fit a standardised Ridge model per layer type and the network coefficient c "
                                   "(PreVIous, Eq. 4 and 6), learn which layers the backend fuses (from a short "
                                   "profiler pass) and the per-call difference of the composition, measure the "
                                   "roofline peaks, and store it all. Resumes if interrupted; networks already "
                                   "calibrated on this system are reused.")
    add_backend_arguments(p)
    p.add_argument("--energy", metavar="METER", help="also fit energy models from a power meter (nvml, rapl)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="time budget per layer measurement in seconds (default 0.5)")
    p.add_argument("--target-ci", type=float, default=None, help="median CI target per layer (default 0.02)")
    p.add_argument("--if-needed", action="store_true",
                   help="do nothing when this system already has a stored calibration")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from nnperf.errors import FormatVersionError
    from nnperf.measure import ProfileConfig
    from nnperf.measure.power import get_meter
    from nnperf.predict import CALIBRATION_HARNESS, MissingCalibrationError, calibrate, load_system_model
    from nnperf.report._format import console
    from nnperf.report.predictions import calibration_table

    harness = CALIBRATION_HARNESS
    if args.budget_s is not None:
        harness = replace(harness, budget_s=args.budget_s)
    if args.target_ci is not None:
        harness = replace(harness, target_ci=args.target_ci)
    meter = get_meter(args.energy) if args.energy else None
    out = console()
    with open_store(args) as store, backend_from_args(args) as backend:
        if args.if_needed:
            system = backend.system()
            try:
                existing = load_system_model(store, system.key, system.label, args.backend)
            except MissingCalibrationError:
                existing = None
            except FormatVersionError as exc:  # an older nnperf's model: refit (stored measurements are reused)
                out.print(f"refitting: {exc}")
                existing = None
            if existing is not None:
                out.print(f"{system.label} is already calibrated in {store.path} (c = {existing.coefficient_c:.3f}, "
                          f"{len(existing.latency)} layer-type models); nothing to do")
                return 0
        with Progress(True, "calibrating") as progress:
            model = calibrate(backend, store, config=ProfileConfig(per_layer="isolated", harness=harness),
                              meter=meter, progress=progress)
    out.print(calibration_table(model))
    info = model.calibration
    out.print(f"network coefficient c = {model.coefficient_c:.3f} (Eq. 6, from {len(info['networks'])} "
              f"whole-network runs); {info['layers']} layers measured; {info['wall_s']:.0f} s "
              f"({info['reused_networks']} network(s) reused from earlier runs)")
    if model.composition is not None:
        fused = model.composition.fusion.fused_pairs
        out.print(f"composition: {model.composition.delta_s * 1e6:+.1f} us per unfused layer call; fused by this "
                  f"backend: {', '.join(fused) or 'nothing'}")
    if model.roofline is not None:
        out.print(f"roofline peaks: {model.roofline.ops_per_s / 1e9:.1f} GOP/s, "
                  f"{model.roofline.bytes_per_s / 1e9:.1f} GB/s")
    out.print(f"stored for {model.system_label} (system {model.system_key[:8]}) in {store.path}")
    return 0
