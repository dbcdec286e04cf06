"""Zoo totals against published figures, and how long importing and exporting takes.

Run: .venv/bin/python bench/zoo_metrics.py [--repeat 3] [--json bench/results/zoo/zoo_metrics.json]
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
from _shared import log, pct, print_table, write_result

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


HEADERS = ("network", "layers", "MACs", "published", "diff", "params", "published", "diff", "import (meta) s",
           "import (weights) s", "export s", "ONNX import s")


def measure(entry: object, repeat: int, folder: Path) -> dict[str, object]:
    """One zoo network: its metrics against the published ones, and its import and export times (s)."""
    t_meta, net = timed(lambda: zoo_network(entry.name), repeat)  # type: ignore[attr-defined]
    m = network_metrics(net)  # type: ignore[arg-type]
    module, x = entry.build(), entry.example_input()  # type: ignore[attr-defined]
    t_torch, _ = timed(lambda: from_torch(module, x), repeat)
    path = folder / f"{entry.name}.onnx"  # type: ignore[attr-defined]
    t_export, _ = timed(lambda: export_onnx(module, x, path), 1)
    t_onnx, via_onnx = timed(lambda: from_onnx(path), repeat)
    assert network_metrics(via_onnx).macs == m.macs  # type: ignore[arg-type]
    pub = PUBLISHED.get(entry.name)  # type: ignore[attr-defined]
    return {"network": entry.name, "layers": len(net),  # type: ignore[attr-defined]
            "gmacs": m.macs / 1e9, "mparams": m.params / 1e6,
            "published_gmacs": pub[0] if pub else None, "published_mparams": pub[1] if pub else None,
            "macs_diff": m.macs / 1e9 / pub[0] - 1 if pub else None,
            "params_diff": m.params / 1e6 / pub[1] - 1 if pub else None,
            "import_meta_s": t_meta, "import_weights_s": t_torch, "export_s": t_export, "onnx_import_s": t_onnx}


def cells(r: dict[str, object]) -> list[str]:
    def published(value: object, unit: str) -> str:
        return "-" if value is None else f"{value} {unit}"

    return [str(r["network"]), str(r["layers"]), f"{r['gmacs']:.4f} G", published(r["published_gmacs"], "G"),
            pct(r["macs_diff"], 2, signed=True), f"{r['mparams']:.4f} M", published(r["published_mparams"], "M"),
            pct(r["params_diff"], 2, signed=True), f"{r['import_meta_s']:.2f}", f"{r['import_weights_s']:.2f}",
            f"{r['export_s']:.1f}", f"{r['onnx_import_s']:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the result file here (bench/results/zoo/zoo_metrics.json)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"Machine: {host_info().cpu_model}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch thread, "
          f"torch {torch.__version__}, Python {platform.python_version()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for entry in zoo.entries():
            rows.append(measure(entry, args.repeat, Path(tmp)))
            log(f"{entry.name} done")
    print_table(HEADERS, [cells(r) for r in rows])
    if args.json:
        diffs = [abs(d) for r in rows for d in (r["macs_diff"], r["params_diff"]) if d is not None]
        write_result(args.json, method="zoo", concern="MACs and parameters against published figures",
                     values={"networks": rows}, headline={
                         "rows": [dict(zip(("network", "layers", "MACs", "published MACs", "MACs diff", "params",
                                            "published params", "params diff", "import (meta) s", "import (weights) s",
                                            "export s", "ONNX import s"), cells(r), strict=True)) for r in rows],
                         "largest_diff": max(diffs), "networks": len(rows),
                         "published": sum(r["published_gmacs"] is not None for r in rows)})

if __name__ == "__main__":
    main()
