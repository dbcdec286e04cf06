"""Chrome trace-event files (open in ui.perfetto.dev or chrome://tracing) of measured and predicted inferences.

Three kinds, all in the Chrome trace-event format (``{"traceEvents": [...], "displayTimeUnit": "ms",
"otherData": {...}}``, complete events ``"ph": "X"`` with ``ts``/``dur`` in microseconds):

- layer spans of a profile (:func:`measured_trace`): one inference laid out from the stored medians;
- layer spans of a prediction (:func:`predicted_trace`), the same layout from the predicted latencies;
- a framework's own profiler trace (:func:`framework_trace`), its process renamed so it tells itself apart.

Layer spans: each process (``MEASURED_PID``, ``PREDICTED_PID``) has two threads: ``NETWORK_TID`` holds one
span, the whole network's median (or prediction), and ``LAYERS_TID`` the layers one after another, each as long
as its median (or prediction), from the same start. The whole network is a track of its own rather than the
layers' parent: the layers' sum is PreVIous' c times the whole network (Eq. 6) and c is rarely 1, so the
layers overrun a parent span when c > 1, and Perfetto drops slices that overrun their parent.

Fused layers are zero-length spans (category ``fused``) where they fall in network order, after the layer
they fuse into: a layer the composition expects the backend to fuse costs nothing inside the network (its
isolated prediction is in ``args``), and the members of a fused group measured by a profiler all carry the
group's one time, shown once, on the group's first member.

The two processes have distinct ids and names ("nnperf measured: <system>", "nnperf predicted: <system>"), so
two files merge into one timeline by concatenating their ``traceEvents``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nnperf.campaign import ProfileReport
from nnperf.ir import Network, shape_text
from nnperf.ir.metrics import network_metrics
from nnperf.measure import Timing
from nnperf.prediction import NetworkPrediction, Verification
from nnperf.report._format import write_bytes

TRACE_FORMAT = ("nnperf-trace", 1)
"""Name and version of the ``otherData`` block nnperf writes into every trace."""

MEASURED_PID, PREDICTED_PID = 1, 2
NETWORK_TID, LAYERS_TID = 1, 2
US_PER_S = 1e6


@dataclass(frozen=True)
class Span:
    """One layer's span on the layers track: its duration (seconds, 0 for a fused layer) and what it shows."""

    name: str
    duration_s: float
    category: str
    args: Mapping[str, Any] = field(default_factory=dict)


def measured_trace(network: Network, report: ProfileReport) -> dict[str, Any]:
    """Layer spans of a profile: the whole-network median, and each measured layer's median end to end in
    network order (a fused group's time once, on its first member), then the framework nodes outside the IR."""
    by_layer = {m.layer: m for m in report.layers}
    details = _layer_details(network)
    spans, shown_groups = [], set()
    for layer in network.layers:
        m = by_layer.get(layer.name)
        if m is None:
            continue
        group = m.group or m.layer
        args = {**details[layer.name], "method": m.method.value, **_timing_args(m.timing)}
        if m.group_size > 1:
            args |= {"fused_group": group, "group_size": m.group_size}
        if m.energy_j is not None:
            args["energy_j"] = m.energy_j
        fused = group in shown_groups
        shown_groups.add(group)
        spans.append(Span(layer.name, 0.0 if fused else m.timing.stats.median_s, "fused" if fused else "layer",
                          args))
    spans += [Span(node, seconds, "framework", {"median_s": seconds, "note": "a framework node of no IR layer"})
              for node, seconds in report.unattributed_s.items()]
    whole_args = {"method": "whole", **_timing_args(report.network.timing), "layer_sum_s": report.layer_sum_s,
                  "sum_ratio": report.sum_ratio}
    events = _process(MEASURED_PID, f"nnperf measured: {report.system_label}", network.name,
                      report.network.timing.stats.median_s, whole_args, spans,
                      ("whole network (median)", f"layers ({report.method} medians, end to end)"))
    return _document(events, {"source": "layers", "network": network.name, "system": report.system_label,
                              "system_key": report.system_key, "run_id": report.run_id, "method": report.method})


def predicted_trace(network: Network, prediction: NetworkPrediction,
                    verification: Verification | None = None) -> dict[str, Any]:
    """Layer spans of a prediction: the network-level prediction (``prediction.latency_s``), and each layer's
    predicted latency end to end, the layers the backend fuses at zero length. With ``verification``, the
    measured inference it was checked against is a second process in the same trace."""
    details = _layer_details(network)
    spans = []
    for p in prediction.layers:
        args = {**details[p.layer], "model": p.key, "predicted_s": p.latency_s}
        if p.energy_j is not None:
            args["predicted_energy_j"] = p.energy_j
        if p.layer in prediction.fused_layers:
            args["note"] = "fused into the layer before it: no time of its own in the network"
            spans.append(Span(p.layer, 0.0, "fused", args))
        else:
            spans.append(Span(p.layer, p.latency_s, "layer", args))
    whole_args = {"predictor": prediction.method, "predicted_s": prediction.latency_s,
                  "network_predictions_s": dict(prediction.network_latency_s), "layer_sum_s": prediction.layer_sum_s,
                  "coefficient_c": prediction.coefficient_c}
    events = _process(PREDICTED_PID, f"nnperf predicted: {prediction.system}", network.name, prediction.latency_s,
                      whole_args, spans, (f"whole network ({prediction.method} prediction)",
                                          "layers (predictions, end to end)"))
    if verification is not None:
        measured = [Span(layer.name, verification.layer_measured_s[layer.name], "layer",
                         {**details[layer.name], "method": "isolated",
                          "median_s": verification.layer_measured_s[layer.name]})
                    for layer in network.layers if layer.name in verification.layer_measured_s]
        events += _process(MEASURED_PID, f"nnperf measured: {prediction.system}", network.name,
                           verification.measured_latency_s,
                           {"method": "whole", "median_s": verification.measured_latency_s,
                            "run_id": verification.run_id}, measured,
                           ("whole network (median)", "layers (isolated medians, end to end)"))
    return _document(events, {"source": "prediction", "network": network.name, "system": prediction.system,
                              "predictor": prediction.method,
                              "verified_run_id": None if verification is None else verification.run_id})


def framework_trace(document: Mapping[str, Any] | Sequence[Any], network: Network, system_label: str,
                    backend: str) -> dict[str, Any]:
    """A framework's own trace (a document or a bare event list, as :meth:`Backend.trace` gives it) with each
    of its processes named "nnperf measured (<backend> profiler): <system>" (the framework's own name for it
    in brackets) and nnperf's ``otherData``; its events are kept as they are."""
    if isinstance(document, Mapping):
        events, extra = list(document.get("traceEvents", [])), dict(document)
    else:
        events, extra = list(document), {}
    extra.pop("traceEvents", None)
    extra.pop("traceName", None)  # the framework's temporary file
    original = {e.get("pid"): str(e.get("args", {}).get("name", "")) for e in events
                if e.get("ph") == "M" and e.get("name") == "process_name"}
    kept = [e for e in events if not (e.get("ph") == "M" and e.get("name") == "process_name")]
    pids = list(dict.fromkeys(e["pid"] for e in kept if "pid" in e))
    name = f"nnperf measured ({backend} profiler): {system_label}"
    named = [_metadata("process_name", pid, 0, {"name": f"{name} [{original[pid]}]" if original.get(pid) else name})
             for pid in pids]
    other = {"source": "framework", "backend": backend, "network": network.name, "system": system_label}
    return {**extra, **_document(named + kept, other)}


def write_trace(document: Mapping[str, Any], path: Path) -> Path:
    """The trace written as JSON (parent folders created); OutputFileError names the path when it cannot be."""
    return write_bytes(path, json.dumps(document, separators=(",", ":")).encode("utf-8"))


def _process(pid: int, process: str, network: str, whole_s: float, whole_args: Mapping[str, Any],
             spans: Sequence[Span], threads: tuple[str, str]) -> list[dict[str, Any]]:
    """One inference as a process: its names, the whole-network span and the layer spans end to end."""
    events = [_metadata("process_name", pid, 0, {"name": process}),
              _metadata("process_sort_index", pid, 0, {"sort_index": pid}),
              _metadata("thread_name", pid, NETWORK_TID, {"name": threads[0]}),
              _metadata("thread_sort_index", pid, NETWORK_TID, {"sort_index": NETWORK_TID}),
              _metadata("thread_name", pid, LAYERS_TID, {"name": threads[1]}),
              _metadata("thread_sort_index", pid, LAYERS_TID, {"sort_index": LAYERS_TID}),
              _complete(network, "network", 0.0, whole_s, pid, NETWORK_TID, whole_args)]
    start_s = 0.0
    for span in spans:
        events.append(_complete(span.name, span.category, start_s, span.duration_s, pid, LAYERS_TID, span.args))
        start_s += span.duration_s
    return events


def _complete(name: str, category: str, start_s: float, duration_s: float, pid: int, tid: int,
              args: Mapping[str, Any]) -> dict[str, Any]:
    """A complete ("X") event; seconds in, microseconds out (the format's unit)."""
    return {"name": name, "cat": category, "ph": "X", "ts": start_s * US_PER_S, "dur": max(duration_s, 0.0) * US_PER_S,
            "pid": pid, "tid": tid, "args": dict(args)}


def _metadata(name: str, pid: Any, tid: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": dict(args)}


def _document(events: list[dict[str, Any]], other: Mapping[str, Any]) -> dict[str, Any]:
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"format": TRACE_FORMAT[0], "version": TRACE_FORMAT[1], **other}}


def _layer_details(network: Network) -> dict[str, dict[str, Any]]:
    """Each layer's op type, shapes and MACs, the args every layer span starts with."""
    metrics = network_metrics(network).layers
    return {layer.name: {"op": layer.op.value, "input_shapes": [shape_text(s) for s in layer.input_shapes],
                         "output_shape": shape_text(layer.output_shape), "macs": m.macs}
            for layer, m in zip(network.layers, metrics)}


def _timing_args(timing: Timing) -> dict[str, Any]:
    s = timing.stats
    return {"median_s": s.median_s, "ci_low_s": s.ci_low_s, "ci_high_s": s.ci_high_s, "q1_s": s.q1_s,
            "q3_s": s.q3_s, "n": s.n, "block_size": timing.block_size}
