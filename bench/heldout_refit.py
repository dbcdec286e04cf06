"""Judge a refit against rounds already measured: fit a system's models again on the calibration a held-out DB
holds (nothing re-measured), predict the held-out networks, and score each predictor against the whole-network
rounds stored in earlier `bench/heldout_prediction.py --json` files.

Run: .venv/bin/python bench/heldout_refit.py --db bench/results/heldout_pools.db --system torch:1
         --rounds bench/results/heldout_before.json bench/results/heldout_after_rerun.json
         [--sample-budget 120] [--layers bench/results/heldout_before.json]
     (a minute or two: the stored calibration and sampling are read back, the models fitted twice)

Rounds measured at different times judge the same fitted models, so a change of model can be told from a change
of the machine's speed, which on a shared 2-vCPU VM moves by tens of percent between runs (RESULTS.md). Two
fits are judged:

- ``pools in Ridge``: the calibration as nnperf fits it (the sampled pools join PreVIous' pool Ridge models);
- ``no samples in Ridge``: the same with every sample kept out of the Ridge models (the kernel-aware model still
  gets them), as before pools were sampled.

With --layers (a heldout_prediction JSON written with --layers), the max- and average-pool layers of the
held-out networks, measured alone in that run, also judge each fit's Ridge pool predictions (MdRAE, median
signed error).

The DB must hold the system's calibration networks and, with --sample-budget, its finished sampling of that
budget (both are read back; a missing one would be measured, which this script refuses to do on purpose).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from _shared import markdown_table, pct, read_values
from heldout_prediction import System, heldout_network

from nnperf.campaign import (
    CALIBRATION_HARNESS,
    FUSION_PROFILER_RUNS,
    ProfileConfig,
    calibration_networks,
    measure_networks,
    sample_layers,
    sentinel_reference_s,
)
from nnperf.ir import Network
from nnperf.prediction import SystemModel, fit_system_model
from nnperf.store import Store

FITS = {"pools in Ridge": None, "no samples in Ridge": ()}
"""Each fit's ``ridge_sampled_types`` (None: nnperf's default)."""

POOLS = ("max_pool", "avg_pool")


def stored_system(path: Path, system: str) -> dict[str, Any]:
    """The part of a heldout_prediction JSON that holds ``system``'s figures."""
    for entry in read_values(path)["systems"]:
        if entry["system"] == system:
            return dict(entry)
    raise SystemExit(f"{path} holds no figures of {system}")


def stored_rounds(path: Path, system: str) -> dict[str, float]:
    """Network -> median of its round medians, for ``system``, from a heldout_prediction JSON."""
    return {n["network"]: float(n["median_s"]) for n in stored_system(path, system)["networks"]}


def stored_pool_layers(path: Path, system: str) -> list[dict[str, Any]]:
    """The max- and average-pool layers of ``system`` measured alone in a heldout_prediction --layers JSON."""
    layers = stored_system(path, system).get("layers")
    if not layers:
        raise SystemExit(f"{path} holds no layers of {system}: write it with heldout_prediction --layers")
    return [row for row in layers if row["kind"] in POOLS]


def fit(system: System, db: Path, sample_budget_s: float) -> dict[str, SystemModel]:
    """Each of :data:`FITS` on the stored calibration (and sampling) of ``system`` in ``db``."""
    config = ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS)
    networks = calibration_networks()
    with system.settings.open() as backend, Store(db) as store:
        runs = measure_networks(backend, store, networks, config)
        if not all(run.reused for run in runs):
            raise SystemExit(f"{db} lacked calibration networks of {system.label}; they were measured now, so "
                             "this is no longer a refit on the stored calibration: run heldout_prediction first")
        profiled = measure_networks(backend, store, networks, replace(config, per_layer="profiler",
                                                                      profiler_runs=FUSION_PROFILER_RUNS))
        samples = [] if not sample_budget_s else sample_layers(
            backend, store, sample_budget_s, config.harness,
            reference_s=sentinel_reference_s(r.whole.extra for r in runs))
        key, label = backend.system().key, backend.system().label
    print(f"{system.label}: {len(runs)} calibration networks, {len(samples)} sampled layers read back from {db}\n")
    return {name: fit_system_model(runs, key, label, profiled=profiled, layer_samples=samples,
                                   ridge_sampled_types=types) for name, types in FITS.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--system", required=True, metavar="BACKEND:THREADS")
    parser.add_argument("--rounds", type=Path, nargs="+", required=True, metavar="JSON")
    parser.add_argument("--sample-budget", type=float, default=120.0, metavar="SECONDS",
                        help="the budget the DB's sampling was taken with (0: none)")
    parser.add_argument("--layers", type=Path, metavar="JSON", help="judge the Ridge pool predictions too")
    parser.add_argument("--onnx-dir", type=Path, default=Path("bench/results/onnx"))
    args = parser.parse_args()
    system = System.parse(args.system)
    rounds = {path: stored_rounds(path, system.label) for path in args.rounds}
    names = sorted(set.intersection(*(set(r) for r in rounds.values())))
    networks: dict[str, Network] = {name: heldout_network(name, args.onnx_dir) for name in names}
    models = fit(system, args.db, args.sample_budget)
    rows = []
    for fit_name, model in models.items():
        predicted = {name: model.predict(network).network_latency_s for name, network in networks.items()}
        for path, measured in rounds.items():
            for predictor in ("composed", "kernel", "previous"):
                errors = [predicted[n][predictor] / measured[n] - 1 for n in names]
                rows.append([fit_name, path.stem, predictor, pct(float(np.mean(np.abs(errors)))),
                             f"{sum(abs(e) <= 0.10 for e in errors)}/{len(errors)}",
                             *(pct(e, 0, signed=True) for e in errors)])
    print(markdown_table(["fit", "rounds", "predictor", "MAPE", "within +/-10%", *names], rows,
                         right=range(3, 5 + len(names))))
    if args.layers:
        rows = [r for r in stored_pool_layers(args.layers, system.label) if r["network"] in networks]
        print(f"\nPool layers measured alone in {args.layers.stem} ({len(rows)} layers), against each fit's Ridge:\n")
        for fit_name, model in models.items():
            by_network = {n: {p.layer: p.latency_s for p in model.predict_layers(networks[n])} for n in networks}
            errors = [by_network[r["network"]][r["layer"]] / r["measured_s"] - 1 for r in rows]
            print(f"- {fit_name}: MdRAE {np.median(np.abs(errors)):.1%}, median signed {np.median(errors):+.1%}")


if __name__ == "__main__":
    main()
