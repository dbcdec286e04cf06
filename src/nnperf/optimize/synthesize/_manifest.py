"""The manifest of a synthesised folder: the device, the versions, the program, Table I and every candidate."""

from __future__ import annotations

import platform
import time
from typing import Any

from nnperf.measure import PairedRatio, host_info
from nnperf.optimize.synthesize._artifact import MANIFEST_FORMAT, MANIFEST_VERSION
from nnperf.optimize.synthesize._data import ValidationSet
from nnperf.optimize.synthesize._result import Measured, SynthesisResult


def manifest(result: SynthesisResult, final: Measured, data: ValidationSet) -> dict[str, Any]:
    """The manifest of ``result``'s folder, whose program is ``final``."""
    host = host_info()
    layers: dict[str, str] = {}
    search = next((s for s in result.searches if s.runtime == final.spec.runtime), None)
    if search is not None:
        layers = {e.layer: (search.mode if e.layer in final.spec.inexact else "fp32") for e in search.effects}
    stats = final.timing.stats
    comparison = result.comparison
    return {
        "format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "network": result.network,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": {"cpu": host.cpu_model, "logical_cores": host.logical_cores, "os": platform.platform()},
        "versions": _versions(), "budget": result.budget, "artifact": result.artifact,
        "program": final.spec.to_dict(), "layers": layers,
        "latency_s": {"median": stats.median_s, "q1": stats.q1_s, "q3": stats.q3_s},
        "accuracy": final.accuracy.to_dict(), "reference_top1": result.reference_top1,
        "validation": {"name": data.name, "evaluation_samples": result.evaluation_samples,
                       "calibration_samples": result.calibration_samples, "proxy": data.proxy},
        "comparison": comparison.to_dict() if comparison is not None else None,
        "table1": [{"stage": s.name, "program": s.program.spec.label(), "latency_s": s.program.latency_s,
                    "predicted_s": s.program.predicted_s, "compared_latency_s": s.compared_s,
                    **_speedup_fields(s.speedup, result.stages[0].program.latency_s / s.program.latency_s),
                    "accuracy": s.program.accuracy.to_dict(), "note": s.note} for s in result.stages],
        "speedup_over_ort_fp32": result.over_ort_fp32.to_dict() if result.over_ort_fp32 is not None else None,
        "energy": result.energy_note or None,
        "candidates": [{"program": m.spec.label(), "latency_s": m.latency_s, "predicted_s": m.predicted_s,
                        "drop": m.accuracy.drop} for m in result.candidates],
        "skipped": [{"program": k.spec.label(), "predicted_s": k.predicted_s} for k in result.skipped],
        "skipping_saved_s": result.skipping_saved_s,
    }


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("nnperf", "numpy", "torch", "onnxruntime", "onnx"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found


def _speedup_fields(ratio: PairedRatio | None, unpaired: float) -> dict[str, Any]:
    """A Table I row's speed-up: the comparison's median and interval, or (no comparison) the ratio of medians."""
    if ratio is None:
        return {"speedup": unpaired, "speedup_ci": None}
    return {"speedup": ratio.median, "speedup_ci": [ratio.ci_low, ratio.ci_high]}
