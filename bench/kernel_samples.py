"""Sampled layers in the kernel-aware predictor: every one, or only where they help (``sampled_layers``).

Run: .venv/bin/python bench/kernel_samples.py --db STORE --system int8 [--blocks]
     [--networks FAMILY ...] [--glyph-width 16] [--json FILE]

A calibration's sampled layers are measured alone, and join a kernel kind's regressor with that kind's median
in-network minus isolated offset: every one (``always``, the default), or only where they lower the kind's
cross-validated error on the calibration networks' in-network layer times (``judged``, what a calibration with
PreVIousNet-06 uses). This reads a calibrated system's calibration back from ``--db`` (networks, profiler passes and
sampling, as ``nnperf calibrate`` stored them; where a calibration network was missing it stops, the network
measured into the store by then), fits the kernel-aware
predictor both ways on the same data, times the judged networks in interleaved rounds now, and gives each fit's
error on each:

- ``--system int8``: ONNX Runtime, one thread, NCHWc, all-int8 with weights per tensor; the four glyph networks
  (``bench/train_glyphs.py``'s families at base width ``--glyph-width``, 32x32 inputs, untrained: a time does not
  depend on weights);
- ``--system int8-per-channel``: the same with weights per output channel;
- ``--system fp32``: the same system in fp32;
- ``--system torch``: torch, one thread, NCHW; the zoo's 224-px networks of ``--networks``;
- ``--system bf16`` and ``bf16-channels-last``: torch, one thread, every layer in bf16 (the synthesis's torch
  programs with all their layers inexact), NCHW or channels-last; the four glyph networks.

``--blocks`` reads the calibration that ``nnperf calibrate --blocks`` stored (PreVIousNet-06 added); both fits then
move an int8 system's sampled layers into the network as that calibration does (``sampled_context``).

Stdout: a Markdown table, and which kinds' sampled layers each fit left out.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from _shared import pct, print_table, write_result

import nnperf
from nnperf.api import DEFAULT_SAMPLE_BUDGET_S, load_model
from nnperf.campaign import (
    CALIBRATION_HARNESS,
    FUSION_PROFILER_RUNS,
    ProfileConfig,
    measure_networks,
    networks_to_calibrate,
    predictor_options,
    sample_layers,
    sentinel_reference_s,
)
from nnperf.ir import Network
from nnperf.measure import RoundsConfig, host_info, measure_interleaved
from nnperf.optimize.synthesize import glyph_network
from nnperf.prediction import NetworkInput, SystemModel, fit_system_model
from nnperf.prediction.kernel import SAMPLED_LAYERS
from nnperf.store import Store
from nnperf.zoo import zoo_network

ORT = {"opt_level": "all", "execution": "sequential", "inter_threads": "1"}
SYSTEMS = {"int8": ("onnxruntime", {**ORT, "precision": "int8", "int8_weights": "per_tensor"}),
           "int8-per-channel": ("onnxruntime", {**ORT, "precision": "int8"}),
           "fp32": ("onnxruntime", ORT), "torch": ("torch", {"memory_format": "nchw"}),
           "bf16": ("torch", {"memory_format": "nchw", "precision": "bf16"}),
           "bf16-channels-last": ("torch", {"memory_format": "channels_last", "precision": "bf16"})}
GLYPHS = ("resnet18", "mobilenet_v2", "googlenet", "squeezenet")
ZOO = ("mobilenet_v3_large", "shufflenet_v2_x1_0", "googlenet", "resnet18", "mobilenet_v2", "squeezenet1_1")


def judged_networks(system: str, names: list[str] | None, width: int) -> list[Network]:
    torch.manual_seed(0)
    if system == "torch":
        return [zoo_network(name) for name in names or ZOO]
    return [load_model(glyph_network(f, width).eval(), (1, 1, 32, 32), name=f"glyphs-{f}-w{width}")
            for f in names or GLYPHS]


def fits(backend: Any, store: Store, blocks: bool) -> dict[str, SystemModel]:
    """The system's kernel-aware predictor fitted each way of :data:`SAMPLED_LAYERS` on its stored calibration."""
    config = ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS)
    networks = networks_to_calibrate(blocks)
    runs = measure_networks(backend, store, networks, config)
    if not all(run.reused for run in runs):
        raise SystemExit("the store lacked calibration networks of this system; they were measured now, so this "
                         "is no longer a refit on a stored calibration: run nnperf calibrate first")
    profiled = measure_networks(backend, store, networks, replace(config, per_layer="profiler",
                                                                  profiler_runs=FUSION_PROFILER_RUNS))
    samples = sample_layers(backend, store, DEFAULT_SAMPLE_BUDGET_S, config.harness,
                            reference_s=sentinel_reference_s(r.whole.extra for r in runs))
    key, label = backend.system().key, backend.system().label
    print(f"{label}: {len(runs)} calibration networks, {len(samples)} sampled layers read back\n", flush=True)
    kernel = predictor_options(networks, backend.option("precision")).get("kernel", {})
    return {way: fit_system_model(runs, key, label, profiled=profiled, layer_samples=samples,
                                  predictor_options={"kernel": {**kernel, "sampled_layers": way}})
            for way in SAMPLED_LAYERS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--system", choices=sorted(SYSTEMS), required=True)
    parser.add_argument("--blocks", action="store_true")
    parser.add_argument("--networks", nargs="+")
    parser.add_argument("--glyph-width", type=int, default=16, help="the glyph networks' base width")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    backend_name, options = SYSTEMS[args.system]
    system = nnperf.System(backend_name, threads=1, options=options)
    networks = judged_networks(args.system, args.networks, args.glyph_width)
    with system.open() as backend, Store(args.db) as store:
        fitted = fits(backend, store, args.blocks)
        rounds = measure_interleaved({n.name: backend.network_timer(n) for n in networks}, RoundsConfig())
        label = backend.system().label
    rows = []
    for network in networks:
        measured = rounds.median_s(network.name)
        predicted = {way: model.predictors["kernel"].predict(NetworkInput(network, {}))
                     for way, model in fitted.items()}
        rows.append({"network": network.name, "measured_s": measured, "predicted_s": predicted})
    cpu = host_info().cpu_model
    print(f"{cpu}; {label}; {rounds.rounds} interleaved rounds; error of each fit's prediction over the median\n")
    print_table(["network", "measured ms", *(f"kernel, {way}" for way in SAMPLED_LAYERS)],
                [[row["network"], f"{row['measured_s'] * 1e3:.3f}",
                  *(pct(row["predicted_s"][way] / row["measured_s"] - 1, signed=True) for way in SAMPLED_LAYERS)]
                 for row in rows], right=range(1, 2 + len(SAMPLED_LAYERS)))
    left_out = {way: sorted(k for k, used in model.predictors["kernel"].sampled_.items() if not used)
                for way, model in fitted.items()}
    print(f"\nkinds whose sampled layers were left out: {left_out}")
    if args.json:
        write_result(args.json, method="prediction", concern=f"kernel-aware predictions of {args.system} programs",
                     values={"system": args.system, "blocks": args.blocks, "rounds": rounds.rounds, "networks": rows,
                             "left_out": left_out})


if __name__ == "__main__":
    main()
