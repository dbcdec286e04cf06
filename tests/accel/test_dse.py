"""Design-space exploration: energy over GLB sizes, PE arrays and register files (nnperf.accel._dse)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from nnperf.accel import (
    NEAR_OPTIMUM,
    DesignPoint,
    DesignSweep,
    SweepError,
    eyeriss_spec,
    network_energy,
    reference_network,
    sweep_design,
)


@pytest.fixture(scope="module")
def rows():  # type: ignore[no-untyped-def]
    return reference_network("alexnet")


def test_the_reference_point_is_the_model_batch_energy(rows) -> None:  # type: ignore[no-untyped-def]
    spec = eyeriss_spec(8)
    assert spec.glb_energy_law == "constant" and spec.glb_kb == 100.0
    calls: list[tuple[int, int]] = []
    sweep = sweep_design(rows, spec, [16, 100, 512], name="alexnet", progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert [p.glb_kb for p in sweep.points] == [16.0, 100.0, 512.0]
    assert all((p.pe_rows, p.pe_cols, p.rf_scale, p.why_not) == (12, 14, 1.0, "") for p in sweep.points)
    at = {p.glb_kb: p.energy_j for p in sweep.points}
    # the sweep re-schedules with the model's own batch, not the table's n
    assert at[100.0] == network_energy(rows, spec, batch="model").total_j
    assert at[100.0] != network_energy(rows, spec, batch="table").total_j
    assert at[16.0] == network_energy(rows, replace(spec, glb_kb=16.0), batch="model").total_j
    # constant energy per access: a bigger GLB only adds reuse
    assert at[512.0] <= at[100.0] <= at[16.0]
    assert at[16.0] > at[100.0] * 1.1  # 16 kB costs clearly more (7.78 vs 6.70 mJ)
    assert sweep.best.glb_kb == 512.0
    assert sweep.network == "alexnet" and sweep.spec == spec


def test_sqrt_law_halves_glb_access_energy_at_a_quarter_of_the_size(rows) -> None:  # type: ignore[no-untyped-def]
    spec = replace(eyeriss_spec(8), glb_energy_law="sqrt")
    small = replace(spec, glb_kb=25.0)
    assert small.glb_access_energy_j == pytest.approx(spec.glb_access_energy_j / 2, rel=1e-12)  # sqrt(25/100)
    sqrt_energy = network_energy(rows, small, batch="model")
    constant_energy = network_energy(rows, replace(small, glb_energy_law="constant"), batch="model")
    # same schedule (the law changes no access count), so every layer's GLB energy halves
    for s, c in zip(sqrt_energy.layers, constant_energy.layers, strict=True):
        assert s.glb_words == c.glb_words
        assert s.glb_j == pytest.approx(c.glb_j / 2, rel=1e-12)
    sweep = sweep_design(rows, spec, [25, 100])
    assert sweep.points[0].energy_j == pytest.approx(sqrt_energy.total_j, rel=1e-12)
    # at the reference size the law does not matter
    assert sweep.points[1].energy_j == network_energy(rows, eyeriss_spec(8), batch="model").total_j


def test_a_glb_that_cannot_run_the_network(rows) -> None:  # type: ignore[no-untyped-def]
    sweep = sweep_design(rows, eyeriss_spec(8), [0.5, 100])
    bad, good = sweep.points
    assert bad.energy_j is None
    assert "GLB of 0.5 kB" in bad.why_not and "'C1'" in bad.why_not
    assert good.energy_j is not None and good.why_not == ""
    assert sweep.valid() == [good]
    assert sweep.best == good


def test_a_sweep_where_nothing_runs(rows) -> None:  # type: ignore[no-untyped-def]
    sweep = sweep_design(rows, eyeriss_spec(8), [0.5, 1], name="alexnet")
    assert [p.energy_j for p in sweep.points] == [None, None]
    assert sweep.valid() == []
    with pytest.raises(SweepError, match="alexnet: no configuration of the sweep can run the network"):
        _ = sweep.best
    with pytest.raises(SweepError):
        sweep.to_dict()


def test_a_sweep_needs_a_glb_size(rows) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SweepError, match="at least one GLB size"):
        sweep_design(rows, eyeriss_spec(8), [])


def test_pe_arrays_and_rf_scales_make_the_full_grid(rows) -> None:  # type: ignore[no-untyped-def]
    spec = eyeriss_spec(8)
    arrays, scales, glbs = [(12, 14), (16, 16), (8, 8)], [0.5, 1, 2], [16, 100]
    sweep = sweep_design(rows, spec, glbs, arrays, scales)
    assert len(sweep.points) == len(arrays) * len(scales) * len(glbs) == 18
    assert [(p.pe_rows, p.pe_cols, p.rf_scale, p.glb_kb) for p in sweep.points] == [
        (r, c, float(s), float(g)) for r, c in arrays for s in scales for g in glbs]
    # AlexNet's 11x11 C1 does not fit 8 PE rows
    eight = [p for p in sweep.points if p.pe_rows == 8]
    assert all(p.energy_j is None and "R=11 exceeds the PE array's 8 rows" in p.why_not for p in eight)
    # the spec's own array and register files at 100 kB is the reference point
    ref = next(p for p in sweep.points if (p.pe_rows, p.pe_cols, p.rf_scale, p.glb_kb) == (12, 14, 1.0, 100.0))
    assert ref.energy_j == network_energy(rows, spec, batch="model").total_j
    # a scaled register file is the spec's entries times the scale, rounded: 448*2, 24*2, 48*2
    scaled = next(p for p in sweep.points if (p.pe_rows, p.pe_cols, p.rf_scale, p.glb_kb) == (12, 14, 2.0, 100.0))
    bigger = replace(spec, filter_rf_entries=896, ifmap_rf_entries=48, psum_rf_entries=96)
    assert scaled.energy_j == network_energy(rows, bigger, batch="model").total_j
    assert scaled.energy_j != ref.energy_j


def test_to_dict_is_json_ready(rows) -> None:  # type: ignore[no-untyped-def]
    sweep = sweep_design(rows, eyeriss_spec(8), [0.5, 16, 100], name="alexnet")
    document = json.loads(json.dumps(sweep.to_dict()))
    assert (document["format"], document["version"], document["network"]) == ("nnperf-accel-sweep", 1, "alexnet")
    assert len(document["points"]) == 3
    assert document["points"][0]["energy_j"] is None and "GLB" in document["points"][0]["why_not"]
    assert document["best"]["glb_kb"] == 100.0
    assert document["best"]["energy_j"] == sweep.points[2].energy_j
    # 16 kB costs more than 2% above the optimum, so the smallest GLB within 2% is the optimum itself
    assert document["within_2_percent"]["glb_kb"] == 100.0
    assert document["spec"]["bits"] == 8 and document["spec"]["glb_energy_law"] == "constant"


# --- best and smallest_near_best on a hand-made sweep ----------------------------------------------------------


def hand_sweep(extra: tuple[DesignPoint, ...] = ()) -> DesignSweep:
    points = (
        DesignPoint(8, 12, 14, 1.0, None, "too small"),
        DesignPoint(16, 12, 14, 1.0, 1.05),
        DesignPoint(32, 12, 14, 1.0, 1.019),
        DesignPoint(64, 12, 14, 1.0, 1.005),
        DesignPoint(88, 12, 14, 1.0, 1.0),
        DesignPoint(128, 12, 14, 1.0, 1.01),
        *extra,
    )
    return DesignSweep("hand", eyeriss_spec(8), points)


def test_best_and_smallest_near_best_by_hand() -> None:
    sweep = hand_sweep()
    assert NEAR_OPTIMUM == 0.02
    assert sweep.best.glb_kb == 88
    # within 2%: energy <= 1.02; 32 kB (1.019) is the smallest such GLB, 16 kB (1.05) is not
    assert sweep.smallest_near_best().glb_kb == 32
    assert sweep.smallest_near_best(0.01).glb_kb == 64  # <= 1.01: 64 (1.005) and 128 (1.01)
    assert sweep.smallest_near_best(0.0).glb_kb == 88
    assert sweep.smallest_near_best(0.06).glb_kb == 16  # the 8 kB point cannot run, so it never counts


def test_best_breaks_ties_by_the_smaller_glb() -> None:
    sweep = hand_sweep((DesignPoint(48, 12, 14, 1.0, 1.0),))
    assert sweep.best.glb_kb == 48


def test_smallest_near_best_keeps_the_optimum_array_and_register_files() -> None:
    sweep = hand_sweep((
        DesignPoint(4, 12, 14, 1.0, 0.955),  # within 2% of the optimum, but another array's
        DesignPoint(100, 16, 16, 1.0, 0.95),
        DesignPoint(16, 16, 16, 1.0, 0.97),  # 0.97 > 0.95 * 1.02 = 0.969
        DesignPoint(8, 16, 16, 2.0, 0.951),  # another register-file scale
    ))
    best = sweep.best
    assert (best.glb_kb, best.pe_rows, best.pe_cols, best.rf_scale, best.energy_j) == (100, 16, 16, 1.0, 0.95)
    assert sweep.smallest_near_best() == best
    assert sweep.smallest_near_best(0.03).glb_kb == 16  # 0.97 <= 0.95 * 1.03; neither 4 nor 8 kB counts
    document = sweep.to_dict()
    assert document["best"]["glb_kb"] == 100 and document["within_2_percent"]["glb_kb"] == 100
    assert math.isclose(json.loads(json.dumps(document))["best"]["energy_j"], 0.95)
