"""Why int8 (and fp32 NCHWc) predictions miss on the small glyph networks: the per-layer models, the composition,
and calibration networks built from the blocks those networks are made of.

Run: PYTHONPATH=src:bench .venv/bin/python bench/int8_composition.py --db STORE [--networks resnet18 ...]
     [--json FILE]

For ONNX Runtime at one thread, NCHWc (``opt_level=all``), fp32 and all-int8 with weights per tensor, this measures
into ``--db`` (reusing what it holds, as a calibration does): the calibration networks and four configurations of
a *chain* network (below), each layer alone and whole, and profiled; and each glyph network (``--networks``, the
families of ``bench/train_glyphs.py`` at width 16, 32x32 inputs, untrained: a time does not depend on the weights)
layer by layer and whole. Then it fits the system's model twice, on the calibration networks alone and with the
chain network's configurations added (both without sampled layers, so they differ only in those networks), and
gives each glyph network's whole-network time against:

- the isolated layers' measured sum, over the whole time (what a composition must take away);
- ``composed`` on the measured isolated layer times (the composition's own error, no layer model in it);
- ``composed`` and ``kernel`` on the predicted layer times, from each of the two fits.

The chain network (nnperf calibrates with nothing like it): a 3x3 conv-BN-ReLU stem; a basic residual block, a
1x1-3x3-1x1 bottleneck, an inverted residual (expansion 4, ReLU6, depthwise 3x3, linear projection, add) and a fire
module (squeeze 1x1, expand 1x1 and 3x3, concat) at C channels; a 3x3/2 conv to 2C; a basic block, an inverted
residual, a fire module, a depthwise 3x3 and a 1x1 conv at 2C; global average pool and a 10-way linear layer. Its
configurations are PreVIousNet-01's (C x H x W of 32x56x56, 64x28x28, 64x14x14, 64x7x7). Unlike the calibration
networks, it chains convolutions the way deployed CNNs do: in int8, most of its convolutions read another
convolution's uint8 output directly, with no QuantizeLinear or DequantizeLinear between them.

Stdout: a Markdown table per system.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

import nnperf
from nnperf.api import load_model
from nnperf.campaign import CALIBRATION_HARNESS, ProfileConfig, calibration_networks, measure_networks
from nnperf.ir import Network
from nnperf.measure import host_info
from nnperf.optimize.synthesize._glyph_nets import glyph_network
from nnperf.prediction import SystemModel, fit_system_model
from nnperf.store import Store

SYSTEMS = {"fp32": {"opt_level": "all"},
           "int8 per tensor": {"opt_level": "all", "precision": "int8", "int8_weights": "per_tensor"}}
FAMILIES = ("resnet18", "mobilenet_v2", "googlenet", "squeezenet")
CONFIGURATIONS = ((32, 56), (64, 28), (64, 14), (64, 7))
"""(C, H = W) of the chain network: PreVIousNet-01's input configurations."""


def _cbr(cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1,
         act: type[nn.Module] | None = nn.ReLU) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([act()] if act is not None else []))


class _Basic(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.a, self.b, self.relu = _cbr(c, c), _cbr(c, c, act=None), nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.b(self.a(x)) + x)


class _Bottleneck(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.a, self.b, self.c = _cbr(c, c // 2, 1), _cbr(c // 2, c // 2), _cbr(c // 2, c, 1, act=None)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.c(self.b(self.a(x))) + x)


class _Inverted(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.a = _cbr(c, 4 * c, 1, act=nn.ReLU6)
        self.b = _cbr(4 * c, 4 * c, 3, groups=4 * c, act=nn.ReLU6)
        self.c = _cbr(4 * c, c, 1, act=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(self.b(self.a(x))) + x


class _Fire(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.squeeze, self.e1, self.e3 = _cbr(c, c // 4, 1), _cbr(c // 4, c // 2, 1), _cbr(c // 4, c // 2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.squeeze(x)
        return torch.cat([self.e1(y), self.e3(y)], 1)


def chain_network(c: int) -> nn.Module:
    """The chain network for ``c`` input channels (see the module docstring), random weights, eval mode."""
    torch.manual_seed(0)
    return nn.Sequential(_cbr(c, c), _Basic(c), _Bottleneck(c), _Inverted(c), _Fire(c), _cbr(c, 2 * c, 3, 2),
                         _Basic(2 * c), _Inverted(2 * c), _Fire(2 * c), _cbr(2 * c, 2 * c, 3, groups=2 * c),
                         _cbr(2 * c, 2 * c, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * c, 10)).eval()


def chain_networks() -> list[Network]:
    return [load_model(chain_network(c), (1, c, h, h), name=f"chain_{h}x{h}x{c}") for c, h in CONFIGURATIONS]


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
        chained = fitted(runner, store, calibration_networks() + chain_networks())
        targets = measure_networks(runner, store, glyph_networks(families),
                                   ProfileConfig(per_layer="isolated", harness=CALIBRATION_HARNESS))
    rows = []
    for run in targets:
        whole_s, layers_s = run.whole.timing.stats.median_s, run.layer_median_s()
        row: dict[str, Any] = {"network": run.network.name, "whole_ms": whole_s * 1e3,
                               "isolated_sum_over_whole": sum(layers_s.values()) / whole_s,
                               "composed_on_measured_layers": plain.predictors["composed"].latency_s(
                                   run.network, layers_s) / whole_s - 1}
        for label, model in (("calibration", plain), ("with chains", chained)):
            predicted = model.predict(run.network).network_latency_s
            for method in ("composed", "kernel"):
                value = predicted.get(method)
                row[f"{method}, {label}"] = None if value is None else value / whole_s - 1
        rows.append(row)
    return rows


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.0%}"


def print_table(name: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n### ONNX Runtime, 1 thread, NCHWc, {name}\n")
    print("| network | whole ms | isolated sum / whole | composed on measured layers | composed | kernel | "
          "composed, with chains | kernel, with chains |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['network']} | {r['whole_ms']:.3f} | {r['isolated_sum_over_whole']:.2f} | "
              f"{pct(r['composed_on_measured_layers'])} | {pct(r['composed, calibration'])} | "
              f"{pct(r['kernel, calibration'])} | {pct(r['composed, with chains'])} | {pct(r['kernel, with chains'])} |")


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
            print_table(name, results[name])
    if args.json:
        args.json.write_text(json.dumps({"host": host_info().cpu_model, "systems": results}, indent=1))


if __name__ == "__main__":
    main()
