"""Which exporter-written ONNX files nnperf imports, with and without folding shape computations first, against
ONNX Runtime's offline basic optimisation as the normaliser.

Run: .venv/bin/python bench/onnx_import_coverage.py [--json bench/results/import/coverage.json]

The files: the held-out architectures of ``bench/architectures.py`` and small blocks written the way networks use
them (``chunk``, a half-channel split by ``x.shape``, a flatten by ``x.size(0)``, an attention block scaled by
``x.shape[-1] ** -0.5``, a registered one-element buffer added, a linear-attention block with a sum), each
exported by torch's two ONNX exporters (the TorchScript one with a dynamic batch, as most published exports are,
and the dynamo one). Random weights; nothing is downloaded. For each file and normaliser:

- ``ort``: whether ONNX Runtime runs the file (the bar: every file it runs should import);
- ``shipped``: nnperf's importer as shipped (an operator without a dedicated layer type is a generic layer);
- with ``strict=True`` (dedicated layer types only: what the normaliser leaves mappable), ``fold`` (nnperf's
  folding), ``none`` (the importer without the folding) and ``ort-basic`` (the file rewritten by ONNX Runtime's
  ORT_ENABLE_BASIC level, then imported without nnperf's folding);

each: imported (layers, generic layers) or the first line of the refusal, and the import's wall time (median of 3).

Writes the result file (``--json``) and prints the table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from _shared import markdown_table, result_path, write_result
from architectures import ARCHITECTURES
from torch import nn

from nnperf.errors import NnperfError
from nnperf.ir import OpType
from nnperf.ir.importers import from_onnx


class Chunk(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, dim=1)
        return torch.cat([a, self.conv(torch.cat([b, b], 1))[:, :8]], 1)


class HalfSplit(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1] // 2
        return x[:, :n] * 2 + x[:, n:]


class FlattenBySize(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.view(x.size(0), -1))


class ScaledAttention(nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = (q @ k.transpose(-2, -1)) * (x.shape[-1] ** -0.5)
        return scores.softmax(-1) @ v


class BufferAdd(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(16, 8, 3)
        self.register_buffer("k", torch.tensor([0.5]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x) + self.k - 0.25


class LinearAttention(nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).relu().chunk(3, dim=-1)
        return (q @ (k.transpose(-2, -1) @ v)) / (q @ k.sum(dim=-2, keepdim=True).transpose(-2, -1) + 1e-6)


BLOCKS: dict[str, tuple[type[nn.Module], tuple[int, ...]]] = {
    "chunk": (Chunk, (1, 16, 8, 8)), "half_split": (HalfSplit, (1, 16, 8, 8)),
    "flatten_by_size": (FlattenBySize, (1, 16, 8, 8)), "scaled_attention": (ScaledAttention, (1, 49, 32)),
    "buffer_add": (BufferAdd, (1, 16, 10, 10)), "linear_attention": (LinearAttention, (1, 49, 32))}


def models() -> dict[str, tuple[nn.Module, tuple[int, ...]]]:
    torch.manual_seed(0)
    found = {name: (make(), (1, 3, 224, 224)) for name, make in ARCHITECTURES.items()}
    found.update({name: (make(), shape) for name, (make, shape) in BLOCKS.items()})
    return found


def export(module: nn.Module, shape: tuple[int, ...], path: Path, dynamo: bool) -> str | None:
    """The export's error, or None when ``path`` was written."""
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
            warnings.simplefilter("ignore")
            torch.onnx.export(module.eval(), torch.randn(*shape), str(path), dynamo=dynamo, input_names=["x"],
                              **({} if dynamo else {"dynamic_axes": {"x": {0: "batch"}}}))
    except Exception as exc:  # noqa: BLE001 - an export failure is a result of the table
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    return None


def ort_runs(path: Path, shape: tuple[int, ...]) -> bool:
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        session.run(None, {session.get_inputs()[0].name: np.zeros(shape, np.float32)})
    except Exception:  # noqa: BLE001
        return False
    return True


def ort_basic(path: Path, out: Path) -> Path:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(out)
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return out


def imported(path: Path, fold: bool, strict: bool = True) -> dict[str, object]:
    """Imports ``path`` three times (with or without nnperf's folding; ``strict``: dedicated layer types only, the
    measure of what a normaliser leaves mappable): layers, generic layers and median wall time, or the refusal's
    first line."""
    try:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            net = from_onnx(path, strict=strict, fold=fold)
            times.append(time.perf_counter() - started)
        return {"ok": True, "layers": len(net.layers), "import_s": statistics.median(times),
                "generic": sum(layer.op is OpType.GENERIC for layer in net.layers)}
    except NnperfError as exc:
        return {"ok": False, "error": str(exc).split(": ", 1)[-1][:160]}
    except Exception as exc:  # noqa: BLE001 - an internal error is a result too
        return {"ok": False, "error": f"internal error {type(exc).__name__}: {exc}"[:160]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=result_path("import", "coverage"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (module, shape) in models().items():
            for dynamo in (False, True):
                exporter = "dynamo" if dynamo else "torchscript"
                path = Path(tmp) / f"{name}_{exporter}.onnx"
                row: dict[str, object] = {"model": name, "exporter": exporter}
                error = export(module, shape, path, dynamo)
                if error is not None:
                    rows.append({**row, "export_error": error})
                    print(name, exporter, "export failed:", error, flush=True)
                    continue
                row["ort"] = ort_runs(path, shape)
                row["shipped"] = imported(path, fold=True, strict=False)
                row["fold"] = imported(path, fold=True)
                row["none"] = imported(path, fold=False)
                try:
                    row["ort-basic"] = imported(ort_basic(path, Path(tmp) / f"{name}_{exporter}.basic.onnx"), False)
                except Exception as exc:  # noqa: BLE001
                    row["ort-basic"] = {"ok": False, "error": f"ORT could not optimise it: {exc}"[:160]}
                rows.append(row)
                print(json.dumps(row), flush=True)
    write_result(args.json, method="import", concern="exporter-written files, with and without folding",
                 values={"rows": rows})
    print(table(rows))


def _cell(result: object) -> str:
    if not isinstance(result, dict):
        return "-"
    if result.get("ok"):
        generic = f" ({result['generic']} generic)" if result.get("generic") else ""
        return f"{result['layers']} layers{generic}, {float(result['import_s']) * 1e3:.0f} ms"  # type: ignore[arg-type]
    return f"refused: {result['error']}"


def table(rows: list[dict[str, object]]) -> str:
    cells = [[row["model"], row["exporter"], f"export failed: {row['export_error']}", "", "", "", ""]
             if "export_error" in row else
             [row["model"], row["exporter"], "yes" if row["ort"] else "no", _cell(row["shipped"]), _cell(row["fold"]),
              _cell(row["none"]), _cell(row["ort-basic"])] for row in rows]
    lines = [markdown_table(["model", "exporter", "ORT runs it", "nnperf as shipped", "strict: folding",
                             "strict: without folding", "strict: ORT basic, then nnperf"], cells)]
    ran = [r for r in rows if r.get("ort")]
    for key, label in (("shipped", "nnperf as shipped (generic layers allowed)"), ("fold", "strict, folding"),
                       ("none", "strict, without folding"), ("ort-basic", "strict, ORT basic")):
        ok = sum(1 for r in ran if isinstance(r[key], dict) and r[key].get("ok"))  # type: ignore[union-attr]
        lines.append(f"\n{label}: {ok} of {len(ran)} files that ONNX Runtime runs import.")
    return "\n".join(lines) + "\n"

if __name__ == "__main__":
    main()
