"""Why int8 (and fp32 NCHWc) predictions miss on the small glyph networks: the per-layer models, the composition,
and calibration networks built from the blocks those networks are made of (``nnperf calibrate --blocks``).

Run: .venv/bin/python bench/int8_composition.py --db STORE [--networks resnet18 ...]
     [--json FILE]

For ONNX Runtime at one thread, NCHWc (``opt_level=all``), fp32 and all-int8 with weights per tensor, this measures
into ``--db`` (reusing what it holds, as a calibration does): the calibration networks and PreVIousNet-06 (the four
configurations ``--blocks`` adds), each layer alone and whole, and profiled; and each glyph network (``--networks``,
the families of ``bench/train_glyphs.py`` at width 16, 32x32 inputs, untrained: a time does not depend on the
weights) layer by layer and whole. Then it fits the system's model twice, on the default calibration networks and
with PreVIousNet-06 added (both without sampled layers, so they differ only in those networks), and gives each glyph
network's whole-network time against:

- the isolated layers' measured sum, over the whole time (what a composition must take away);
- ``composed`` on the measured isolated layer times (the composition's own error, no layer model in it);
- ``composed`` and ``kernel`` on the predicted layer times, from each of the two fits.

PreVIousNet-06 (:mod:`nnperf.zoo.previousnet06`) chains convolutions the way deployed CNNs do: in int8, most of its
convolutions read another convolution's uint8 output directly, with no QuantizeLinear or DequantizeLinear between
them, which the default calibration networks rarely do.

Stdout: a Markdown table per system.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from _shared import pct, print_table, write_result

import nnperf
from nnperf.api import load_model
from nnperf.campaign import (
    CALIBRATION_HARNESS,
    ProfileConfig,
    block_calibration_networks,
    calibration_networks,
    measure_networks,
)
from nnperf.ir import Network
from nnperf.measure import host_info
from nnperf.optimize.synthesize import glyph_network
from nnperf.prediction import SystemModel, fit_system_model
from nnperf.store import Store

SYSTEMS = {"fp32": {"opt_level": "all"},
           "int8 per tensor": {"opt_level": "all", "precision": "int8", "int8_weights": "per_tensor"}}
FAMILIES = ("resnet18", "mobilenet_v2", "googlenet", "squeezenet")


def glyph_networks(families: list[str]) -> list[Network]:
    torch.manual_seed(0)
    return [load_model(glyph_network(f).eval(), (1, 1, 32, 32), name=f"glyphs-{f}") for f in families]


def fitted(runner: Any, store: Store, networks: list[Network]) -> SystemModel:
    """The system's model fitted on ``networks`` measured alone and whole, and profiled (measured now where the
    store lacks them)."""
    isolated = ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS)
    runs = measure_networks(runner, store, networks, isolated)
    profiled = measure_networks(runner, store, networks, replace(isolated, per_layer="profiler", profiler_runs=10))
    return fit_system_model(runs, "bench", "bench", profiled=profiled)


def system_rows(options: dict[str, str], store: Store, families: list[str]) -> list[dict[str, Any]]:
    with nnperf.System("onnxruntime", threads=1, options=options).open() as runner:
        plain = fitted(runner, store, calibration_networks())
        chained = fitted(runner, store, calibration_networks() + block_calibration_networks())
        targets = measure_networks(runner, store, glyph_networks(families),
                                   ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS))
    rows = []
    for run in targets:
        whole_s, layers_s = run.whole.timing.stats.median_s, run.layer_median_s()
        row: dict[str, Any] = {"network": run.network.name, "whole_ms": whole_s * 1e3,
                               "isolated_sum_over_whole": sum(layers_s.values()) / whole_s,
                               "composed_on_measured_layers": plain.predictors["composed"].latency_s(
                                   run.network, layers_s) / whole_s - 1}
        for label, model in (("calibration", plain), ("with PreVIousNet-06", chained)):
            predicted = model.predict(run.network).network_latency_s
            for method in ("composed", "kernel"):
                value = predicted.get(method)
                row[f"{method}, {label}"] = None if value is None else value / whole_s - 1
        rows.append(row)
    return rows


def print_system(name: str, rows: list[dict[str, Any]]) -> None:
    columns = ["composed_on_measured_layers", "composed, calibration", "kernel, calibration",
               "composed, with PreVIousNet-06", "kernel, with PreVIousNet-06"]
    print_table(["network", "whole ms", "isolated sum / whole", "composed on measured layers", "composed", "kernel",
                 "composed, with PreVIousNet-06", "kernel, with PreVIousNet-06"],
                [[r["network"], f"{r['whole_ms']:.3f}", f"{r['isolated_sum_over_whole']:.2f}",
                  *(pct(r[c], 0, signed=True) for c in columns)] for r in rows],
                title=f"ONNX Runtime, 1 thread, NCHWc, {name}", right=range(1, 8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, required=True, help="the store to measure into and reuse")
    parser.add_argument("--networks", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    print(f"{host_info().cpu_model}; predictions over the measured whole time, less 1")
    results = {}
    with Store(args.db) as store:
        for name, options in SYSTEMS.items():
            print(f"measuring and fitting: {name}", file=sys.stderr, flush=True)
            results[name] = system_rows(options, store, args.networks)
            print_system(name, results[name])
    if args.json:
        write_result(args.json, method="prediction", concern="composition of int8 programs",
                     values={"systems": results})


if __name__ == "__main__":
    main()
