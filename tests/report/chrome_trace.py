"""A small validator of the Chrome trace-event format (the JSON that ui.perfetto.dev and chrome://tracing open),
shared by the trace tests: ``from report.chrome_trace import validate_trace``.

The format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU (complete events
"X" with ``ts``/``dur`` in microseconds, metadata events "M" naming processes and threads).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REQUIRED: Mapping[str, tuple[str, ...]] = {
    "X": ("name", "ts", "dur", "pid", "tid"),
    "B": ("name", "ts", "pid", "tid"),
    "E": ("ts", "pid", "tid"),
    "i": ("name", "ts", "pid"),
    "I": ("name", "ts", "pid"),
    "M": ("name", "pid", "args"),
    "C": ("name", "ts", "pid", "args"),
    "s": ("ts", "pid", "id"),
    "t": ("ts", "pid", "id"),
    "f": ("ts", "pid", "id"),
}
"""Keys each phase needs (phases nnperf and the frameworks it reads write)."""

METADATA_ARGS = {"process_name": "name", "thread_name": "name", "process_sort_index": "sort_index",
                 "thread_sort_index": "sort_index", "process_labels": "labels"}

TOLERANCE_US = 1e-3
"""Nesting slack: a nanosecond, for timestamps summed in floating point."""


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def validate_trace(document: Any) -> list[dict[str, Any]]:
    """Asserts ``document`` is a Chrome trace-event document whose complete events nest properly on each
    thread (a child lies within its parent, siblings do not overlap); returns its complete ("X") events."""
    assert isinstance(document, dict), "a trace document is a JSON object"
    events = document.get("traceEvents")
    assert isinstance(events, list) and events, "traceEvents is a non-empty list"
    assert document.get("displayTimeUnit", "ms") in ("ms", "ns")
    for event in events:
        assert isinstance(event, dict), event
        phase = event.get("ph")
        assert phase in REQUIRED, f"unknown phase {phase!r}: {event}"
        missing = [key for key in REQUIRED[phase] if key not in event]
        assert not missing, f"{phase} event lacks {missing}: {event}"
        if "name" in event:
            assert isinstance(event["name"], str) and event["name"], f"empty name: {event}"
        for key in ("pid", "tid"):
            if key in event:
                assert isinstance(event[key], int | str) and not isinstance(event[key], bool), event
        for key in ("ts", "dur"):
            if key in event:
                assert _number(event[key]) and event[key] >= 0, f"{key} must be a number >= 0 (us): {event}"
        if "args" in event:
            assert isinstance(event["args"], dict), event
        if "cat" in event:
            assert isinstance(event["cat"], str), event
        if phase == "M" and event["name"] in METADATA_ARGS:
            assert METADATA_ARGS[event["name"]] in event["args"], event
    complete = [e for e in events if e["ph"] == "X"]
    _check_nesting(complete)
    return complete


def _check_nesting(complete: list[dict[str, Any]]) -> None:
    threads: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for event in complete:
        threads.setdefault((event["pid"], event["tid"]), []).append(event)
    for thread, spans in threads.items():
        stack: list[dict[str, Any]] = []
        for span in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= span["ts"] + TOLERANCE_US:
                stack.pop()
            if stack:
                parent = stack[-1]
                assert span["ts"] + span["dur"] <= parent["ts"] + parent["dur"] + TOLERANCE_US, (
                    f"on thread {thread}, {span['name']!r} overruns {parent['name']!r} it starts in")
            stack.append(span)


def process_names(document: Mapping[str, Any]) -> dict[Any, str]:
    """pid -> the process name its metadata gives."""
    return {e["pid"]: e["args"]["name"] for e in document["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}


def spans_on(document: Mapping[str, Any], pid: Any, tid: Any) -> list[dict[str, Any]]:
    """The complete events of one thread in time order."""
    return sorted((e for e in document["traceEvents"] if e["ph"] == "X" and e["pid"] == pid and e["tid"] == tid),
                  key=lambda e: e["ts"])
