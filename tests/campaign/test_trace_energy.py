"""A power-analyser trace attached to a stored isolated run: energy per layer, as PreVIous Fig. 3."""

from __future__ import annotations

import numpy as np
import pytest

from harness_presets import SMOKE_HARNESS
from networks import tiny_network
from nnperf.campaign import ProfileConfig, attach_trace, profile_network
from nnperf.errors import NnperfError
from nnperf.measure.backends import create_backend
from nnperf.measure.power import PowerTrace
from nnperf.store import Store


def test_constant_power_gives_power_times_time_per_execution(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Store(tmp_path / "m.db") as store, create_backend("torch") as torch_backend:
        report = profile_network(tiny_network(), torch_backend, store, ProfileConfig(harness=SMOKE_HARNESS, gap_s=0.01))
        records = store.layer_measurements(run_id=report.run_id)
        start = min(r.started_at for r in records) - 1.0
        end = max(r.ended_at for r in records) + 1.0
        # a 4 W analyser sampling every 5 us, on its own clock that starts at 0 when the run starts (a layer's
        # window under the smoke harness can be as short as 0.35 ms: at 50 us it held fewer than 10 samples once)
        t = np.arange(0.0, end - start, 5e-6)
        trace = PowerTrace(t, np.full_like(t, 4.0))
        energies = attach_trace(store, torch_backend.system(), "tiny", trace, offset_s=start, source="bench.csv")
        assert [e.label for e in energies] == [r.layer for r in records]
        for r in store.layer_measurements(run_id=report.run_id):
            executions = r.n * r.block_size
            assert r.energy_j == pytest.approx(4.0 * (r.ended_at - r.started_at) / executions, rel=1e-6)
            assert r.power_meter == "trace:bench.csv"
            # the window holds every timed block, so it can never hold less than 4 W x the mean time
            assert r.energy_j >= 4.0 * r.stats.mean_s * (1 - 1e-9), r.layer


def test_a_trace_needs_a_finished_isolated_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = np.arange(0.0, 1.0, 0.01)
    with Store(tmp_path / "m.db") as store, create_backend("torch") as torch_backend, \
            pytest.raises(NnperfError, match="no finished isolated run of tiny"):
        attach_trace(store, torch_backend.system(), "tiny", PowerTrace(t, np.ones_like(t)))
