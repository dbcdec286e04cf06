"""Which exported model definitions nnperf imports, predicts and verifies: torchvision's and timm's, by torch's two
ONNX exporters, and the same models quantised by ONNX Runtime's quantiser.

Run (after ``bench/export_model_families.py`` has written the corpus with its own environment):

    .venv/bin/python bench/onnx_model_coverage.py --corpus /work/onnx-corpus \\
        [--json bench/results/import/model_coverage.json] [--verify 12] [--verify-max-gmacs 1.0] [--quantize 6]

For every file the corpus manifest lists as exported:

- ``ort``: whether ONNX Runtime builds a session for it (the bar: every file it runs should import);
- ``import``: ``from_onnx`` as shipped: imported (layers, generic layers and their operators, wall time), refused
  (the first words of the reason) or an internal error (any exception that is not an ``NnperfError``);
- ``predict``: the ONNX Runtime system model calibrated on this machine (``nnperf calibrate --backend
  onnxruntime``, into ``--db``, resumed) predicts it: the latency and the share of predicted time in generic
  layers;
- ``verify`` (the ``--verify`` smallest networks up to ``--verify-max-gmacs``, spread over families and
  exporters): ``nnperf.api.verify`` on ONNX Runtime, one thread: measured against predicted latency.

``--quantize N`` also writes N of the torchscript classification files through ONNX Runtime's static quantiser in
QDQ and QOperator formats (random calibration data) and runs them through the same steps.

Rows are written to the result file (``--json``) as each file is done (an interrupted run resumes); the summary
table goes to stdout.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import statistics
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from _shared import commit, markdown_table, pct, read_result, result_path, write_result

from nnperf.errors import NnperfError
from nnperf.ir import GenericAttrs, OpType
from nnperf.ir.importers import from_onnx
from nnperf.ir.metrics import network_metrics

COMMIT = (commit()["sha"] or "")[:7]
"""The commit whose importer a row was measured with (rows are kept across runs)."""


def ort_loads(path: Path) -> str:
    """'yes', or the first line of ONNX Runtime's refusal."""
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # building is the question
    try:
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ONNX Runtime's own exception types
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160]}"
    return "yes"


def import_row(path: Path, system_model: Any) -> dict[str, Any]:
    row: dict[str, Any] = {}
    started = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            network = from_onnx(path)
    except NnperfError as exc:
        return {"import": "refused", "reason": str(exc).split(": ", 1)[-1][:200]}
    except Exception as exc:  # noqa: BLE001 - the defect this benchmark looks for
        return {"import": "internal error", "reason": f"{type(exc).__name__}: {exc}"[:300],
                "traceback": traceback.format_exc()[-1500:]}
    generic = [layer for layer in network.layers if layer.op is OpType.GENERIC]
    row.update({
        "import": "imported", "import_s": time.perf_counter() - started, "layers": len(network.layers),
        "generic": len(generic),
        "generic_operators": sorted({layer.attrs.operator for layer in generic if isinstance(layer.attrs, GenericAttrs)}),
        "gmacs": network_metrics(network).macs / 1e9,
        "warnings": [str(w.message)[:200] for w in caught],
    })
    try:
        prediction = system_model.predict(network)
    except NnperfError as exc:
        row.update(predict="refused", predict_reason=str(exc)[:200])
    except Exception as exc:  # noqa: BLE001
        row.update(predict="internal error", predict_reason=f"{type(exc).__name__}: {exc}"[:300])
    else:
        row.update(predict="predicted", predicted_s=prediction.latency_s, generic_share=prediction.generic_share)
    return row


def verify_row(path: Path, store: Path) -> dict[str, Any]:
    from nnperf.api import verify

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check = verify(str(path), "onnxruntime", store, protocol="interleaved")
    except NnperfError as exc:
        return {"verify": "refused", "verify_reason": str(exc)[:200]}
    except Exception as exc:  # noqa: BLE001
        return {"verify": "internal error", "verify_reason": f"{type(exc).__name__}: {exc}"[:300]}
    return {"verify": "verified", "measured_s": check.measured_latency_s, "verify_error": check.error,
            "verify_noise": check.noise, "speed_adjusted_error": check.adjusted_error}


def quantize_file(source: Path, prepared: Path, target: Path, fmt: Any) -> None:
    """``source`` through ONNX Runtime's pre-processing (kept in ``prepared``) and static quantiser, int8 weights per
    channel and uint8 activations, calibrated on two random batches, written to ``target`` in format ``fmt``."""
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class RandomImages(CalibrationDataReader):
        def __init__(self, name: str, shape: list[int]) -> None:
            rng = np.random.default_rng(0)
            self.batches = iter([{name: rng.random(shape, dtype=np.float32)} for _ in range(2)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    if not prepared.exists():
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
    first = ort.InferenceSession(str(prepared), providers=["CPUExecutionProvider"]).get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in first.shape]
    quantize_static(str(prepared), str(target), RandomImages(first.name, shape), quant_format=fmt,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)


def quantized_copies(records: list[dict[str, Any]], count: int, folder: Path) -> list[dict[str, Any]]:
    """QDQ and QOperator static-int8 copies of the first ``count`` torchscript classification files."""
    from onnxruntime.quantization import QuantFormat

    chosen = [r for r in records if r["exporter"] == "torchscript" and r["task"] == "classification"
              and r["status"] == "exported"]
    chosen = sorted(chosen, key=lambda r: r.get("bytes", 0))[:count]
    made = []
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    for record in chosen:
        source = Path(record["path"]).resolve()
        prepared = folder / f"{record['model']}.prep.onnx"
        for fmt, name in ((QuantFormat.QDQ, "ort-qdq"), (QuantFormat.QOperator, "ort-qoperator")):
            target = folder / f"{record['model']}.{name}.onnx"
            row = {**record, "library": record["library"], "family": "ort-quantized", "exporter": name,
                   "path": str(target), "status": "exported", "error": None}
            if not target.exists():
                try:
                    with contextlib.chdir(folder):  # ORT's quantiser writes scratch files in the working folder
                        quantize_file(source, prepared, target, fmt)
                except Exception as exc:  # noqa: BLE001 - the quantiser's own failures are recorded
                    row.update(status="failed", error=f"{type(exc).__name__}: {exc}"[:200])
            made.append(row)
    return made


def summary(rows: list[dict[str, Any]]) -> str:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for row in rows:  # timm's families (its model modules) are one row each exporter: the sample has one or two each
        if row.get("excluded"):
            continue
        timm = row["library"] == "timm" and row["family"] != "ort-quantized"
        groups[("timm (all families)" if timm else row["family"], row["exporter"])].append(row)
    cells = []
    for (family, exporter), group in sorted(groups.items()):
        ort_ok = [r for r in group if r.get("ort") == "yes"]
        imported = [r for r in group if r.get("import") == "imported"]
        predicted = [r for r in group if r.get("predict") == "predicted"]
        shares = [r["generic_share"] for r in predicted]
        verified = [r for r in group if r.get("verify") == "verified"]
        errors = [abs(r["verify_error"]) for r in verified]
        share = f"{statistics.median(shares):.1%} ({max(shares):.1%})" if shares else "-"
        cells.append([family, exporter, len(group), len(ort_ok), len(imported),
                      sum(r.get("import") == "internal error" for r in group), len(predicted),
                      sum(1 for r in imported if r["generic"]), share, len(verified),
                      pct(statistics.median(errors)) if errors else "-"])
    lines = [markdown_table(["family", "exporter", "files", "ONNX Runtime builds", "imported", "internal errors",
                             "predicted", "with generic layers", "generic share of predicted time, median (max)",
                             "verified", "verify error, median \\|abs\\|"], cells, right=range(2, 11))]
    excluded = [r for r in rows if r.get("excluded")]
    if excluded:
        lines.append(f"\nNot counted: {len(excluded)} file(s) ({', '.join(sorted({r['model'] for r in excluded}))}): "
                     f"{excluded[0]['excluded']}.")
    return "\n".join(lines)


def save(path: Path, done: dict[tuple[str, str, str], dict[str, Any]]) -> None:
    write_result(path, method="import", concern="exported torchvision and timm models, and their quantised copies",
                 values={"rows": list(done.values())})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/onnx-corpus"))
    parser.add_argument("--json", type=Path, default=result_path("import", "model_coverage"))
    parser.add_argument("--db", type=Path, default=Path("bench/results/import/onnx-coverage.db"))
    parser.add_argument("--verify", type=int, default=12, help="how many networks to verify (0: none)")
    parser.add_argument("--verify-max-gmacs", type=float, default=1.0)
    parser.add_argument("--quantize", type=int, default=6, help="how many classifiers to quantise (0: none)")
    args = parser.parse_args()
    from nnperf.api import calibrate

    print("calibrating ONNX Runtime on this machine (resumes; reused when stored)", flush=True)
    system_model = calibrate("onnxruntime", store=args.db, if_needed=True, check=False)
    records = json.loads((args.corpus / "manifest.json").read_text())
    records = [r for r in records if r["status"] == "exported" and Path(r["path"]).exists()]
    if args.quantize:
        records += [r for r in quantized_copies(records, args.quantize, args.corpus / "quantized")
                    if r["status"] == "exported"]
    done = {(r["family"], r["model"], r["exporter"]): r for r in
            (read_result(args.json)["values"]["rows"] if args.json.exists() else [])}
    for index, record in enumerate(records, 1):
        key = (record["family"], record["model"], record["exporter"])
        if key in done:
            continue
        path = Path(record["path"])
        row = {k: record[k] for k in ("library", "family", "model", "task", "exporter")} | {"ort": ort_loads(path),
                                                                                            "commit": COMMIT}
        row.update(import_row(path, system_model))
        done[key] = row
        save(args.json, done)
        print(f"[{index}/{len(records)}] {record['family']} {record['model']} {record['exporter']}: ort {row['ort'][:20]}, "
              f"{row['import']}, {row.get('predict', '-')}, generic {row.get('generic', '-')}", flush=True)
    if args.verify:
        candidates = [r for r in done.values() if r.get("predict") == "predicted" and r["gmacs"] <= args.verify_max_gmacs
                      and "verify" not in r]
        by_group: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
        for row in sorted(candidates, key=lambda r: r["gmacs"]):
            by_group[(row["family"], row["exporter"])].append(row)
        picked: list[dict[str, Any]] = []
        while len(picked) + sum("verify" in r for r in done.values()) < args.verify and any(by_group.values()):
            for group in by_group.values():  # round robin over families and exporters, smallest first
                if group and len(picked) + sum("verify" in r for r in done.values()) < args.verify:
                    picked.append(group.pop(0))
        paths = {(r["family"], r["model"], r["exporter"]): Path(r["path"]) for r in records}
        for row in picked:
            key = (row["family"], row["model"], row["exporter"])
            row.update(verify_row(paths[key], args.db))
            save(args.json, done)
            print(f"verify {key}: {row.get('verify')} {row.get('verify_error', row.get('verify_reason', ''))}",
                  flush=True)
    print(summary(list(done.values())))
    internal = [r for r in done.values() if "internal error" in (r.get("import"), r.get("predict"), r.get("verify"))]
    for row in internal:
        print(f"internal error: {row['family']} {row['model']} {row['exporter']}: "
              f"{row.get('reason') or row.get('predict_reason') or row.get('verify_reason')}", file=sys.stderr)


if __name__ == "__main__":
    main()
