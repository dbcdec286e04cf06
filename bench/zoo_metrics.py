"""Zoo totals against published figures, and how long importing and exporting takes.

Run: .venv/bin/python bench/zoo_metrics.py  (prints a Markdown table for RESULTS.md)
Timings are wall-clock medians of --repeat runs on this machine; the counts are exact.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from nnperf import zoo
from nnperf.ir.export import export_onnx
from nnperf.ir.importers import from_onnx, from_torch
from nnperf.ir.metrics import network_metrics
from nnperf.measure import host_info
from nnperf.zoo import zoo_network

# (GMACs, M params) as published (see README and tests/ir/test_zoo_metrics.py).
PUBLISHED = {
    "alexnet": (0.714, 61.1), "mobilenet_v1": (0.569, 4.23), "mobilenet_v2": (0.300, 3.50),
    "resnet18": (1.814, 11.69), "resnet34": (3.67, 21.8), "squeezenet1_0": (0.82, 1.248),
    "squeezenet1_1": (0.35, 1.235), "tiny_yolo_v2": (3.49, 15.86), "googlenet": (1.5, 6.6),
    "vgg11": (7.61, 132.86), "vgg16": (15.47, 138.36), "vgg19": (19.63, 143.67),
}


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"Machine: {host_info().cpu_model}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch thread, "
          f"torch {torch.__version__}, Python {platform.python_version()}\n")
    print("| network | layers | MACs | published | diff | params | published | diff | import (meta) s "
          "| import (weights) s | export s | ONNX import s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for entry in zoo.entries():
            t_meta, net = timed(lambda entry=entry: zoo_network(entry.name), args.repeat)
            m = network_metrics(net)  # type: ignore[arg-type]
            module, x = entry.build(), entry.example_input()
            t_torch, _ = timed(lambda module=module, x=x: from_torch(module, x), args.repeat)
            path = Path(tmp) / f"{entry.name}.onnx"
            t_export, _ = timed(lambda module=module, x=x, path=path: export_onnx(module, x, path), 1)
            t_onnx, via_onnx = timed(lambda path=path: from_onnx(path), args.repeat)
            assert network_metrics(via_onnx).macs == m.macs  # type: ignore[arg-type]
            pub = PUBLISHED.get(entry.name)
            dm = f"{100 * (m.macs / 1e9 / pub[0] - 1):+.2f}%" if pub else "-"
            dp = f"{100 * (m.params / 1e6 / pub[1] - 1):+.2f}%" if pub else "-"
            print(f"| {entry.name} | {len(net)} | {m.macs / 1e9:.4f} G | {f'{pub[0]} G' if pub else '-'} | {dm} "
                  f"| {m.params / 1e6:.4f} M | {f'{pub[1]} M' if pub else '-'} | {dp} | {t_meta:.2f} "
                  f"| {t_torch:.2f} | {t_export:.1f} | {t_onnx:.2f} |", flush=True)


if __name__ == "__main__":
    main()
