"""nnperf profile's time-by-op-type table: per-type sums of the medians, a fused group counted once, framework
nodes as their own type, shares of the layer sum."""

from __future__ import annotations

import io

from rich.console import Console

from networks import tiny_network
from nnperf.campaign import ProfileReport
from nnperf.measure import LayerMeasurement, Method, NetworkMeasurement, fixed_timing
from nnperf.report.measurements import op_type_table

NET = tiny_network()


def rows_of(table) -> list[tuple[str, ...]]:  # type: ignore[no-untyped-def]
    columns = [list(c._cells) for c in table.columns]
    return list(zip(*columns))


def test_time_by_op_type_sums_medians_counts_a_fused_group_once_and_lists_framework_nodes() -> None:
    ms = {"conv1": 3.0, "bn1": 1.0, "relu1": 1.0, "conv2": 2.0, "dw": 0.5}  # conv1+bn1+relu1 fused: 3 ms in all
    groups = {"conv1": ("conv1", 3), "bn1": ("conv1", 3), "relu1": ("conv1", 3)}
    layers = tuple(LayerMeasurement(name, NET.layer(name).op.value, Method.PROFILER, fixed_timing([t * 1e-3] * 3),
                                    *groups.get(name, (name, 1))) for name, t in ms.items())
    report = ProfileReport("fake/cpu[threads=1]", "k", 1, False, NetworkMeasurement(fixed_timing([7e-3] * 3)),
                           layers, "profiler", unattributed_s={"reorder": 0.5e-3})
    rows = rows_of(op_type_table(NET, report))
    # conv/standard: conv1's group (3) + conv2 (2) = 5 of 6 ms; bn1 and relu1 add nothing (inside the group)
    assert rows == [("conv/standard", "2", "5", "83.3%"), ("conv/depthwise", "1", "0.5", "8.3%"),
                    ("framework", "1", "0.5", "8.3%"), ("batch_norm", "1", "0", "0.0%"), ("relu", "1", "0", "0.0%")]
    text = io.StringIO()
    Console(file=text, width=100).print(op_type_table(NET, report))
    assert "tiny: time by op type (profiler)" in text.getvalue()
