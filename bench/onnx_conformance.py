"""The ONNX project's conformance node models through nnperf's importer: every model either imports or is refused
with a named reason; an internal error (any exception that is not an ``NnperfError``) is a defect.

Run: .venv/bin/python bench/onnx_conformance.py [--json bench/results/import/conformance.json]

The models are generated in this process by ``onnx.backend.test.case.node.collect_testcases`` (the onnx package
writes the same files into its source tree; nothing is downloaded). For each: whether ONNX Runtime can build a
session for it, and what ``from_onnx`` does with it (imported, refused: the first words of the reason, or an
internal error with its type and message), the generic layers of an imported model, and whether the imported
network runs: built by nnperf's ONNX graph builder and run once by ONNX Runtime on random inputs (what measuring
and verifying it needs). Writes ``OUT/conformance.json`` and prints the counts, every internal error and every
imported network that does not run.
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import warnings
from pathlib import Path

import onnx
import onnxruntime as ort
from _shared import result_path, write_result
from onnx.backend.test.case import node

from nnperf.errors import NnperfError
from nnperf.ir import Network, OpType
from nnperf.ir.importers import from_onnx
from nnperf.measure.backends import build_onnx, ort_numpy_type, random_inputs


def ort_loads(path: Path) -> bool:
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001
        return False
    return True


def built_network_runs(network: Network) -> str:
    """'yes', or why nnperf's ONNX build of ``network`` does not run in ONNX Runtime (the first line)."""
    try:
        session = ort.InferenceSession(build_onnx(network).SerializeToString(), providers=["CPUExecutionProvider"])
        shapes = [tuple(int(d) for d in i.shape) for i in session.get_inputs()]
        dtypes = [ort_numpy_type(i.type) for i in session.get_inputs()]
        session.run(None, dict(zip([i.name for i in session.get_inputs()], random_inputs(shapes, 0, dtypes))))
    except Exception as exc:  # noqa: BLE001 - recorded, not raised
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:200]
    return "yes"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=result_path("import", "conformance"))
    args = parser.parse_args()
    ort.set_default_logger_severity(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            path = Path(tmp) / f"{case.name}.onnx"
            onnx.save(case.model, str(path))
            row = {"case": case.name, "ort": ort_loads(path)}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # sizes taken from a run, metadata size hints: counted, not shown
                    net = from_onnx(path)
                row.update(result="imported", layers=len(net.layers),
                           generic=sum(layer.op is OpType.GENERIC for layer in net.layers))
                row.update(runs=built_network_runs(net))
            except NnperfError as exc:
                row.update(result="refused", reason=str(exc).split(": ", 1)[-1][:140])
            except Exception as exc:  # noqa: BLE001 - the defect this benchmark looks for
                row.update(result="internal error", reason=f"{type(exc).__name__}: {exc}"[:200])
            rows.append(row)
    write_result(args.json, method="import", concern="the ONNX project's conformance node models",
                 values={"rows": rows})
    counts = collections.Counter((r["ort"], r["result"]) for r in rows)
    print(f"{len(rows)} conformance node models")
    for (runs, result), n in sorted(counts.items()):
        print(f"  ONNX Runtime {'loads' if runs else 'refuses'} it, nnperf: {result}: {n}")
    imported = [r for r in rows if r["result"] == "imported"]
    print(f"  imported with generic layers: {sum(1 for r in imported if r['generic'])}; imported networks that run "
          f"in ONNX Runtime once built by nnperf: {sum(1 for r in imported if r['runs'] == 'yes')} of {len(imported)}")
    for row in rows:
        if row["result"] == "internal error":
            print(f"  internal error: {row['case']}: {row['reason']}")
    for row in imported:
        if row["runs"] != "yes":
            print(f"  does not run: {row['case']}: {row['runs']}")


if __name__ == "__main__":
    main()
