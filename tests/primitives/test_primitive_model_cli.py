"""``nnperf primitives train`` and ``predict`` on a real (small) profiled dataset, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prims_helpers import NAMES

from cli_helpers import assert_error, run_cli, run_json
from harness_presets import SMOKE_HARNESS
from networks import relu_network, tiny_network
from nnperf.campaign import layout_layers, load_layer_layouts, profile_primitives
from nnperf.ir import save_network
from nnperf.optimize.select._in_program import UNIFORM_CANDIDATES
from nnperf.prediction import Predictor
from nnperf.primitives import ConvConfig, get_primitive, sample_configs
from nnperf.store import Store

BLOCKED = str(get_primitive("ort-nchwc").input_layout)  # chw16c with AVX-512, chw8c with AVX2

SEEDS = [ConvConfig.make(1, 8, 8, 16, 3, 1, 1), ConvConfig.make(1, 8, 16, 12, 1), ConvConfig.make(1, 16, 16, 8, 3, 2, 1)]


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with 30 small configurations timed under direct and im2col-fhw (and the transformations)."""
    db = tmp_path_factory.mktemp("primitives") / "p.db"
    with Store(db) as store:
        report = profile_primitives(store, SEEDS + sample_configs(SEEDS, 27, seed=1), harness=SMOKE_HARNESS,
                                    primitives=[get_primitive("direct"), get_primitive("im2col-fhw")])
    assert report.measured == 30
    return db


def test_train_scores_every_primitive_and_stores_the_model(capsys: pytest.CaptureFixture[str], profiled: Path,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "lin.json"
    document = run_json(capsys, "primitives", "train", "--kind", "lin", "--db", str(profiled), "--out", str(out))
    assert document["format"] == "nnperf-primitive-training"
    assert document["sizes"] == [24, 3, 3]  # 80/10/10 of 30 configurations
    layouts = ("chw", "hwc", "hcw", BLOCKED)
    assert set(document["mdrae"]) == {"direct", "im2col-fhw", *(f"{a}->{b}" for a in layouts for b in layouts if a != b)}
    assert document["test_counts"]["direct"] == 3
    assert all(0 <= v < 10 for v in document["mdrae"].values())
    saved = Predictor.from_dict(json.loads(out.read_text()))
    assert saved.kind == "lin" and saved.primitives_ == ("direct", "im2col-fhw")
    code, text, _ = run_cli(capsys, "primitives", "train", "--kind", "lin", "--db", str(profiled))
    assert code == 0 and "MdRAE" in text and "24 train, 3 validation, 3 test" in text


def test_train_relative_targets_reports_the_ratio_errors(capsys: pytest.CaptureFixture[str], profiled: Path) -> None:
    document = run_json(capsys, "primitives", "train", "--kind", "gb", "--targets", "relative", "--db", str(profiled))
    # the store timed direct and im2col-fhw alone (no torch-conv2d): the reference is the first most-timed one
    assert (document["kind"], document["targets"], document["reference"]) == ("gb", "relative", "direct")
    assert document["fitted"].startswith("gb (relative to direct): 2 primitive(s)")
    transforms = sorted(t for t in document["mdrae"] if "->" in t)  # every activation timed all: the first is theirs
    assert set(document["ratio_mdrae"]) == {"im2col-fhw", *transforms[1:]}
    assert all(0 <= v < 10 for v in document["ratio_mdrae"].values()) and document["selection"] == {}
    code, text, _ = run_cli(capsys, "primitives", "train", "--kind", "lin", "--targets", "relative", "--db",
                            str(profiled))
    assert code == 0 and "ratio to direct" in text and "lin (relative to direct)" in text


def test_predict_names_the_fastest_primitive_of_every_convolution(capsys: pytest.CaptureFixture[str],
                                                                  profiled: Path, tmp_path: Path) -> None:
    run_json(capsys, "primitives", "train", "--kind", "lin", "--db", str(profiled))
    net, csv_path = tmp_path / "tiny.json", tmp_path / "all.csv"
    save_network(tiny_network(), net)
    document = run_json(capsys, "primitives", "predict", str(net), "--db", str(profiled), "--csv", str(csv_path))
    assert document["format"] == "nnperf-primitive-prediction" and document["kind"] == "lin"
    assert [layer["layer"] for layer in document["layers"]] == ["conv1", "conv2", "dw"]
    for layer in document["layers"]:
        times = layer["times_s"]
        assert set(times) == {"direct", "im2col-fhw"} and all(t > 0 for t in times.values())
        assert layer["fastest"] == min(times, key=times.get)
    rows = csv_path.read_text().splitlines()
    assert rows[0] == "layer,configuration,direct_s,im2col-fhw_s" and rows[3].startswith("dw,c8 f8 8x8 k3x3 s1 p1 g8,")
    code, text, _ = run_cli(capsys, "primitives", "predict", str(net), "--db", str(profiled))
    assert code == 0 and "fastest" in text and "3 convolutions" in text


def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], profiled: Path, tmp_path: Path) -> None:
    flat = tmp_path / "flat.json"
    save_network(relu_network("flat"), flat)
    code, _, err = run_cli(capsys, "primitives", "predict", str(flat), "--db", str(profiled))
    assert_error(code, err, "has no 2-D convolution")
    code, _, err = run_cli(capsys, "select", "resnet18", "--costs", "profiled", "--margin", "0.1", "--db",
                           str(profiled))
    assert_error(code, err, "margin applies to predicted costs only")
    code, _, err = run_cli(capsys, "select", "resnet18", "--refine", "-1", "--db", str(profiled))
    assert_error(code, err, "refine is the most steps measured in the program")

    empty = tmp_path / "empty.db"
    Store(empty).close()
    code, _, err = run_cli(capsys, "primitives", "train", "--db", str(empty))
    assert_error(code, err, "holds no profiled primitives", "nnperf primitives profile")

    small = tmp_path / "small.db"
    with Store(small) as store:
        profile_primitives(store, SEEDS, harness=SMOKE_HARNESS, primitives=[get_primitive("direct")])
    code, _, err = run_cli(capsys, "primitives", "predict", "resnet18", "--db", str(small))
    assert_error(code, err, "has no primitive cost model", "nnperf primitives train")
    code, _, err = run_cli(capsys, "primitives", "train", "--kind", "lin", "--db", str(small))
    assert_error(code, err, "configuration")


def test_select_refines_the_selection_in_the_program(capsys: pytest.CaptureFixture[str], profiled: Path,
                                                     tmp_path: Path) -> None:
    run_json(capsys, "primitives", "train", "--kind", "lin", "--db", str(profiled))
    net = tmp_path / "tiny.json"
    save_network(tiny_network(), net)
    document = run_json(capsys, "select", str(net), "--refine", "2", "--no-layer-costs", "--db", str(profiled))
    refinement = document["refinement"]
    assert 1 <= refinement["steps"] <= 2 and len(refinement["over_default"]) == len(refinement["run"])
    assert all(r > 0 for r in refinement["over_default"]) and refinement["run"][0] == "pbqp"
    kept, runs, over_default = refinement["kept"], refinement["run"], refinement["over_default"]
    # each step: its solved selection and its challenger; then the best uniform choices not run already
    uniform = [i for i, solver in enumerate(runs) if solver.startswith("uniform:")]
    assert refinement["steps"] <= len(runs) - len(uniform) <= 2 * refinement["steps"]
    assert len(uniform) <= UNIFORM_CANDIDATES and uniform == list(range(len(runs) - len(uniform), len(runs)))
    # confirmed: those that ran faster than the default and the fastest uniform choice, however it ran
    assert kept is None or over_default[kept] < 1.0 or kept == min(uniform, key=over_default.__getitem__)
    confirmed = refinement["confirmed_over_default"]
    assert (confirmed is None) == (min(over_default) >= 1.0 and not uniform)
    assert kept is None or confirmed["ci_high"] < 1.0  # kept only where surely faster than the default
    assert {document["chosen"][name] for name in ("conv1", "conv2", "dw")} <= {"direct", "im2col-fhw"}
    code, text, _ = run_cli(capsys, "select", str(net), "--refine", "1", "--no-layer-costs", "--db", str(profiled))
    assert code == 0 and "refined in the program: 1 steps; each selection's time over the default's: pbqp" in text


@pytest.mark.slow
@pytest.mark.parametrize("costs", ["predicted", "profiled"])
def test_select_solves_runs_and_times_the_network(capsys: pytest.CaptureFixture[str], profiled: Path, tmp_path: Path,
                                                  costs: str) -> None:
    run_json(capsys, "primitives", "train", "--kind", "lin", "--db", str(profiled))
    net, saved = tmp_path / "tiny.json", tmp_path / "selection.json"
    save_network(tiny_network(), net)
    document = run_json(capsys, "select", str(net), "--costs", costs, "--verify", "--db", str(profiled),
                        "--save", str(saved))
    assert (document["format"], document["costs"], document["solver"]) == ("nnperf-selection", costs, "pbqp")
    chosen = document["chosen"]
    convs = {chosen[name] for name in ("conv1", "conv2", "dw")}
    if costs == "predicted":  # the model knows the two profiled primitives only
        assert convs <= {"direct", "im2col-fhw"}
    else:  # tiny's layers are not in the dataset: every applicable primitive was timed on the spot
        assert convs <= set(NAMES)
    assert chosen["fc"] == "chw" and chosen["relu1"] in ("chw", "hwc")
    assert document["optimal"] is True and document["predicted_s"] <= document["default_predicted_s"]
    assert 0 <= document["max_error"] < 1e-3 and document["measured_s"] > 0 and document["default_measured_s"] > 0
    assert json.loads(saved.read_text())["chosen"] == chosen
    with Store(profiled) as store:  # the other layers were timed in each layout into the store (by either case)
        stored = load_layer_layouts(store, document["system_id"])
    assert set(stored) == set(layout_layers([tiny_network()])) and document["layer_profile_s"] >= 0
    code, text, _ = run_cli(capsys, "select", str(net), "--costs", costs, "--db", str(profiled), "--solver", "ilp")
    assert code == 0 and "proved optimal" in text and "conv1" in text
    assert "layers timed" not in text and "convolutions, transformations and other layers" in text  # read back
    again = run_json(capsys, "select", str(net), "--costs", costs, "--db", str(profiled), "--no-layer-costs")
    assert again["layer_profile_s"] == 0
    # without layer costs only the convolutions and the moves count: the default costs its convolutions alone.
    # Predicted convolution costs come from the model and repeat exactly; profiled ones are timed again on the
    # spot (tiny's layers are not in the dataset), so only the predicted case can compare the two totals.
    assert again["default_predicted_s"] > 0
    if costs == "predicted":
        assert again["default_predicted_s"] < document["default_predicted_s"]
