"""CSV export escapes text that a spreadsheet would run as a formula (OWASP CSV injection)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from nnperf.measure import HostInfo, LayerMeasurement, Method, SystemSpec, Timing, TimingStats
from nnperf.store import Store, export_csv


def _timing() -> Timing:
    times = (1e-3, 2e-3, 3e-3)
    stats = TimingStats(n=3, median_s=2e-3, q1_s=1.5e-3, q3_s=2.5e-3, mean_s=2e-3, std_s=1e-3, min_s=1e-3,
                        max_s=3e-3, ci_low_s=1e-3, ci_high_s=3e-3, confidence=0.95, n_outliers=0)
    return Timing(times, 1, stats, "converged", 0.1)


def test_formula_like_text_cells_are_escaped_but_numbers_are_not(tmp_path: Path) -> None:
    host = HostInfo(hostname="h", cpu_model="cpu", logical_cores=1, governor="", os="Linux", python="3.11",
                    versions=(), allocator_env=())
    spec = SystemSpec("onnxruntime", "cpu", "@cpu", (("threads", "-1"),), host)
    with Store(tmp_path / "m.db") as store:
        system = store.add_system(spec)
        run = store.start_run(system.id, "=HYPERLINK(\"http://x\")", "+model", "h", "isolated", {})
        store.add_layer_measurement(run.id, LayerMeasurement(
            layer="-conv", op="conv", method=Method.ISOLATED, timing=_timing(), group="-2", group_size=1,
            energy_j=-0.5, power_meter=""))
        out = io.StringIO()
        assert export_csv(store, out, "layers") == 1
    header, row = list(csv.reader(io.StringIO(out.getvalue())))
    cells = dict(zip(header, row))
    assert cells["campaign"] == "'=HYPERLINK(\"http://x\")"
    assert cells["model"] == "'+model"
    assert cells["layer"] == "'-conv"
    assert cells["device_name"] == "'@cpu"
    assert cells["options"] == "threads=-1"
    assert cells["energy_j"] == "-0.5"  # a negative number stays a number
    assert cells["group"] == "-2"  # ... also when it is stored as text
