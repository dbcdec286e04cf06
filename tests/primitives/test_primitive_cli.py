"""``nnperf primitives list``: the table and the JSON."""

from __future__ import annotations

import pytest
from prims_helpers import NAMES

from cli_helpers import run_cli, run_json


def test_list_json_has_every_primitive_with_layouts_and_availability(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "primitives", "list")
    assert (document["format"], document["version"]) == ("nnperf-primitives", 1)
    rows = {r["name"]: r for r in document["primitives"]}
    assert sorted(rows) == sorted(NAMES)
    assert rows["im2col-hwf"] | {"available": True, "reason": ""} == {
        "name": "im2col-hwf", "family": "im2", "library": "torch ops", "input_layout": "chw", "output_layout": "hwc",
        "applies": "any kernel, stride, padding, groups, dilation", "error_bound": 1e-5, "available": True,
        "reason": ""}
    assert all(r["available"] or r["reason"] for r in rows.values())
    assert "chw->hwc" in document["layout_transforms"] and "hwc->chw" in document["layout_transforms"]


def test_list_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "primitives", "list")
    assert code == 0
    assert "winograd-4x3" in out and "3x3 kernel, stride 1, dilation 1" in out
    assert "layout transformations: chw->hwc" in out


def test_primitives_needs_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "primitives")
    assert info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err
