"""``nnperf sweep``, ``nnperf steps fit|predict`` and ``nnperf advise`` end to end on the fake backend.

The fake backend's layer time is linear in its MACs (plus 2% seeded noise), so every sweep it gives is a line:
no steps, and no width the advisor could suggest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli_helpers import assert_error, run_cli, run_json
from nnperf.cli import main
from nnperf.ir import AxisAttrs, ConvAttrs, Layer, LinearAttrs, Network, OpType, TensorSpec, save_network
from nnperf.measure.backends._fake import CostModel
from nnperf.measure.sweep import UNDER_TEST, LayerConfig, profiling_network

FAKE = ["--backend", "fake"]
SYSTEM = "fake/cpu[threads=1]"


def fake_cost(kind: str, **values: int) -> float:
    """What the fake backend's cost model gives for the layer under test (no noise)."""
    return CostModel().layer_cost_s(profiling_network(LayerConfig.of(kind, values), 1).layer(UNDER_TEST))


def sweep(capsys: pytest.CaptureFixture[str], db: str, param: str = "channels", values: str = "10:40",
          *extra: str) -> dict[str, Any]:
    return run_json(capsys, "sweep", "conv2d", "--param", param, "--range", values, "--fixed", "size=8", *FAKE,
                    "--db", db, "--surround", "1", *extra)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "steps.db")


@pytest.fixture
def channels_db(capsys: pytest.CaptureFixture[str], db: str) -> str:
    """A store with one fitted conv2d channels sweep 10..40 (filters 128, size 8, surround 1)."""
    doc = sweep(capsys, db)
    assert doc["run_id"] == 1 and len(doc["points"]) == 31
    run_json(capsys, "steps", "fit", "--db", db)
    return db


@pytest.fixture
def both_db(capsys: pytest.CaptureFixture[str], channels_db: str) -> str:
    """``channels_db`` with a fitted filters sweep 10..40 (channels 128) as well."""
    doc = sweep(capsys, channels_db, "filters")
    assert doc["run_id"] == 2
    run_json(capsys, "steps", "fit", "2", "--db", channels_db)
    return channels_db


# --- sweep ----------------------------------------------------------------------------------------------------------


def test_sweep_prints_the_run_and_how_to_fit_it(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, err = run_cli(capsys, "sweep", "conv2d", "--param", "channels", "--range", "10:40", "--fixed",
                             "size=8", *FAKE, "--db", db, "--surround", "1")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == (f"sweep 1 on {SYSTEM}: conv2d channels 10..40 (31 points; filters=128, size=8, kernel=3, "
                        "stride=1; surround 1) measured")
    assert lines[1].startswith("latency ") and "31 of 31 points reached the 1% confidence target" in lines[1]
    assert lines[2] == f"stored in {db}; fit it with: nnperf steps fit 1"
    # the same sweep again is reused, not measured
    code, out, err = run_cli(capsys, "sweep", "conv2d", "--param", "channels", "--range", "10:40", "--fixed",
                             "size=8", *FAKE, "--db", db, "--surround", "1")
    assert code == 0, err
    assert out.splitlines()[0].endswith(") reused from the store")
    assert "nnperf steps fit 1" in out


def test_sweep_json_has_every_point(capsys: pytest.CaptureFixture[str], db: str) -> None:
    doc = sweep(capsys, db)
    assert (doc["format"], doc["version"], doc["run_id"], doc["system"]) == ("nnperf-sweep-result", 1, 1, SYSTEM)
    assert (doc["kind"], doc["parameter"], doc["surround"]) == ("conv2d", "channels", 1)
    assert doc["fixed"] == {"filters": 128, "size": 8, "kernel": 3, "stride": 1}
    assert doc["complete"] is True and doc["reused"] is False
    points = doc["points"]
    assert len(points) == 31
    assert [p["value"] for p in points] == list(range(10, 41))
    for p in points:
        expected = fake_cost("conv2d", channels=p["value"], size=8)
        assert p["median_s"] == pytest.approx(expected, rel=0.03)
        assert p["ci_low_s"] <= p["median_s"] <= p["ci_high_s"]
        assert p["n"] >= 10 and p["stop_reason"] == "converged"
    again = sweep(capsys, db)
    assert again["reused"] is True and again["run_id"] == 1
    assert [p["median_s"] for p in again["points"]] == [p["median_s"] for p in points]
    fresh = sweep(capsys, db, "channels", "10:40", "--fresh")
    assert fresh["run_id"] == 2 and fresh["reused"] is False


def test_sweep_rounds_are_stored_and_reported(capsys: pytest.CaptureFixture[str], db: str) -> None:
    doc = sweep(capsys, db, "channels", "10:12", "--rounds", "3")
    assert doc["rounds"] == 3 and doc["complete"] is True
    for p in doc["points"]:
        assert len(p["round_medians_s"]) == 3
        assert p["median_s"] == sorted(p["round_medians_s"])[1]  # the median round
    code, out, err = run_cli(capsys, "sweep", "conv2d", "--param", "channels", "--range", "10:12", "--fixed",
                             "size=8", *FAKE, "--db", db, "--surround", "1", "--rounds", "3")
    assert code == 0, err
    assert "(3 points x 3 rounds;" in out and "reused from the store" in out
    assert "round_medians_s" not in sweep(capsys, db, "channels", "10:12")["points"][0]  # one round: a new sweep


def test_sweep_with_auto_surround_chooses_it_once(capsys: pytest.CaptureFixture[str], db: str) -> None:
    argv = ["sweep", "conv2d", "--param", "channels", "--range", "4:6", "--fixed", "filters=8,size=8", *FAKE,
            "--db", db]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    # the fake's middle layer costs the same whatever surrounds it: the narrowest surround is within 3%
    assert out.startswith("surround: width 1 chosen from 1: ")
    assert "128: " in out.splitlines()[0]
    assert "surround 1) measured" in out
    # another conv2d sweep on this system reuses the recorded choice
    code, out, err = run_cli(capsys, "sweep", "conv2d", "--param", "filters", "--range", "4:6", "--fixed",
                             "channels=8,size=8", *FAKE, "--db", db)
    assert code == 0, err
    assert "surround:" not in out and "surround 1) measured" in out


def test_sweep_accepts_an_odd_kernel_wider_than_the_unpadded_input(capsys: pytest.CaptureFixture[str],
                                                                     db: str) -> None:
    # 9x9 on 4x4 pads to 12x12: a valid convolution, so the sweep runs (only a kernel larger than the padded
    # input is refused, see test_sweep_input_errors)
    doc = run_json(capsys, "sweep", "conv2d", "--param", "channels", "--range", "1:2", "--fixed", "kernel=9,size=4",
                   *FAKE, "--db", db, "--surround", "1")
    assert [p["value"] for p in doc["points"]] == [1, 2]
    assert doc["fixed"]["kernel"] == 9


# --- steps fit ------------------------------------------------------------------------------------------------------


def test_steps_fit_finds_the_fake_linear(capsys: pytest.CaptureFixture[str], db: str) -> None:
    sweep(capsys, db)
    document = run_json(capsys, "steps", "fit", "--db", db)
    assert (document["format"], document["version"]) == ("nnperf-step-fits", 1)
    fits = document["fits"]
    assert len(fits) == 1
    fit = fits[0]
    assert (fit["format"], fit["version"], fit["run_id"]) == ("nnperf-steps", 1, 1)
    assert (fit["kind"], fit["parameter"], fit["range"], fit["points"]) == ("conv2d", "channels", [10, 40], 31)
    assert fit["shape"]["kind"] == "linear"
    assert fit["confidence"] >= 0.9
    assert fit["mape"] < 0.05
    assert fit["note"] == ""
    (line,) = fit["lines"]
    # one more input channel adds 3 * 3 * 128 filters * 8 * 8 pixels MACs at 1e-10 s each
    assert line["slope_s"] == pytest.approx(1e-10 * 9 * 128 * 64, rel=0.03)
    code, out, err = run_cli(capsys, "steps", "fit", "1", "--db", db)
    assert code == 0, err
    assert "run 1: linear (no steps); line: T = " in out


def test_steps_fit_a_short_sweep_gets_a_line(capsys: pytest.CaptureFixture[str], db: str) -> None:
    sweep(capsys, db, "kernel", "1,3,5,7")
    (fit,) = run_json(capsys, "steps", "fit", "--db", db)["fits"]
    assert fit["shape"]["kind"] == "linear" and fit["confidence"] is None
    assert "4 points: too few to detect steps" in fit["note"]


# --- steps predict --------------------------------------------------------------------------------------------------


def test_steps_predict_one_configuration(capsys: pytest.CaptureFixture[str], channels_db: str) -> None:
    doc = run_json(capsys, "steps", "predict", "conv2d", "--config", "channels=30,filters=64,size=8", *FAKE,
                   "--db", channels_db)
    assert (doc["format"], doc["kind"], doc["system"]) == ("nnperf-steps-prediction", "conv2d", SYSTEM)
    assert doc["config"] == {"channels": 30, "filters": 64, "size": 8, "kernel": 3, "stride": 1}
    assert doc["composition"]["modelled"] == ["channels"]
    assert doc["composition"]["points"] == 31
    expected = fake_cost("conv2d", channels=30, filters=64, size=8)
    assert doc["latency_s"] > 0
    assert doc["latency_s"] == pytest.approx(expected, rel=0.2)
    assert doc["latency_s"] == pytest.approx(expected, rel=0.05)  # filters proportional to their work: near exact
    assert doc["extrapolated"] == ["filters=64 (covered 128-128)"]
    code, out, err = run_cli(capsys, "steps", "predict", "conv2d", "--config", "channels=30,filters=64,size=8",
                             *FAKE, "--db", channels_db)
    assert code == 0, err
    assert f"conv2d(channels=30, filters=64, size=8, kernel=3, stride=1): predicted {doc['latency_s'] * 1e3:.4g} ms" \
        in out
    assert "extrapolated beyond the measured data: filters=64 (covered 128-128)" in out


def test_steps_predict_with_a_stored_systems_models_opens_no_backend(capsys: pytest.CaptureFixture[str],
                                                                   channels_db: str) -> None:
    doc = run_json(capsys, "steps", "predict", "conv2d", "--config", "channels=30,filters=64,size=8", "--system", "1",
                   "--backend", "nosuch", "--db", channels_db)  # predicting only: the backend is never opened
    assert doc["system"] == SYSTEM
    assert doc["latency_s"] == pytest.approx(fake_cost("conv2d", channels=30, filters=64, size=8), rel=0.05)


def test_steps_predict_characterise_and_verify(capsys: pytest.CaptureFixture[str], channels_db: str) -> None:
    doc = run_json(capsys, "steps", "predict", "conv2d", "--config", "size=8", "--param", "channels", "--range",
                   "12:36:2", "--characterise", "--verify", *FAKE, "--db", channels_db)
    assert doc["values"] == list(range(12, 37, 2))
    assert len(doc["composed_s"]) == len(doc["measured_s"]) == len(doc["characterised_s"]) == 13
    assert doc["extrapolated"] == []
    ch = doc["characterisation"]
    assert ch["shape"] == "linear (no steps)"
    assert ch["points"] == [12, 14, 34, 36]  # the first two and the last two grid values
    assert len(ch["measured_s"]) == 4 and len(ch["lines"]) == 1
    assert (ch["rounds"], ch["run_id"]) == (3, 2)  # the four points are a stored sweep of three rounds
    assert ch["lines"][0][0] == pytest.approx(1e-10 * 9 * 128 * 64, rel=0.05)
    assert set(doc["mape"]) == {"composed", "characterised", "characterised_held_out"}
    assert doc["mape"]["composed"] < 0.05
    assert doc["mape"]["characterised"] < 0.05
    assert doc["verify_run_id"] == 3  # the verification sweep is stored as a new run
    for value, measured in zip(doc["values"], doc["measured_s"]):
        assert measured == pytest.approx(fake_cost("conv2d", channels=value, size=8), rel=0.03)


# --- advise ---------------------------------------------------------------------------------------------------------


def residual_network() -> Network:
    """stem -> a -> relu -> b -> add(b, stem) -> gap -> flatten -> fc: only ``a`` can change its width alone."""
    s = (1, 8, 8, 8)
    conv = ConvAttrs((3, 3), padding=(1,) * 4)
    return Network("residual", (TensorSpec("x", (1, 3, 8, 8)),), (
        Layer("stem", OpType.CONV, ("x",), ((1, 3, 8, 8),), s, conv),
        Layer("a", OpType.CONV, ("stem",), (s,), s, conv),
        Layer("relu", OpType.RELU, ("a",), (s,), s),
        Layer("b", OpType.CONV, ("relu",), (s,), s, conv),
        Layer("add", OpType.ADD, ("b", "stem"), (s, s), s),
        Layer("gap", OpType.GLOBAL_AVG_POOL, ("add",), (s,), (1, 8, 1, 1)),
        Layer("flatten", OpType.FLATTEN, ("gap",), ((1, 8, 1, 1),), (1, 8), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 8),), (1, 10), LinearAttrs()),
    ), ("fc",))


def test_advise_small_residual_network(capsys: pytest.CaptureFixture[str], channels_db: str,
                                       tmp_path: Path) -> None:
    path = tmp_path / "residual.json"
    save_network(residual_network(), path)
    doc = run_json(capsys, "advise", str(path), *FAKE, "--db", channels_db)
    assert (doc["format"], doc["network"], doc["system"], doc["tolerance"]) == ("nnperf-advice", "residual", SYSTEM,
                                                                               0.1)
    assert doc["considered"] == 1  # a (followed by b)
    assert doc["suggestions"] == []  # a line has no step to land on
    assert doc["skipped"] == {"stem": "its width feeds add 'add' with other inputs",
                              "b": "its width feeds add 'add' with other inputs",
                              "fc": "its width reaches the network output"}
    code, out, err = run_cli(capsys, "advise", str(path), *FAKE, "--db", channels_db)
    assert code == 0, err
    assert "1 layer widths considered on fake/cpu[threads=1] (+/-10%); 0 suggestion(s); 3 layer(s) skipped" in out


@pytest.mark.slow  # about 3 s when it is the first to import torch (the zoo traces resnet18 on the meta device)
def test_advise_resnet18_on_a_linear_device_suggests_nothing(capsys: pytest.CaptureFixture[str],
                                                            both_db: str) -> None:
    # loading the zoo network traces it on torch's meta device (no torch backend, no computation)
    doc = run_json(capsys, "advise", "resnet18", *FAKE, "--db", both_db)
    assert doc["network"] == "resnet18"
    assert doc["considered"] > 0
    assert doc["considered"] == 8  # the first conv of each of the 8 basic blocks
    assert doc["suggestions"] == []
    skipped = doc["skipped"]
    assert skipped["fc"] == "its width reaches the network output"
    adds = {name: reason for name, reason in skipped.items() if name != "fc"}
    assert len(adds) == 12  # conv1, the 8 second convs and the 3 downsampling convs feed a residual add
    assert all("feeds add" in reason for reason in adds.values())


# --- user errors ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv,needles", [
    (["conv3d", "--param", "channels", "--range", "1:4"], ["unknown layer kind 'conv3d'", "conv2d, depthwise, fc"]),
    (["conv2d", "--param", "depth", "--range", "1:4"],
     ["a conv2d layer has no parameter 'depth'", "channels, filters, size, kernel, stride"]),
    (["fc", "--param", "size", "--range", "1:4"], ["a fc layer has no parameter 'size'"]),
    (["conv2d", "--param", "channels", "--range", "530:10"], ["range '530:10' is reversed", "write 10:530"]),
    (["conv2d", "--param", "channels", "--range", "5:5:0"], ["range '5:5:0'", "step must be a positive integer"]),
    (["conv2d", "--param", "channels", "--range", "ten"], ["range 'ten'", "START:STOP"]),
    (["conv2d", "--param", "channels", "--range", "1:4", "--fixed", "kernel=4,size=1"],
     ["the 4x4 kernel is larger than the 1x1 input (padded to 3)"]),
    (["conv2d", "--param", "channels", "--range", "1:4", "--fixed", "stride=9,size=8"],
     ["stride 9 is larger than the 8x8 input"]),
    (["conv2d", "--param", "size", "--range", "4:16", "--fixed", "stride=8"], ["stride 8 is larger than the 4x4"]),
    (["conv2d", "--param", "channels", "--range", "0:4"], ["channels must be a positive integer, got 0"]),
    (["conv2d", "--param", "channels", "--range", "1:4", "--fixed", "size=x"], ["'x' is not an integer"]),
    (["conv2d", "--param", "channels", "--range", "1:4", "--fixed", "channels=8"],
     ["--fixed gives channels, the parameter being swept"]),
    (["conv2d", "--param", "channels", "--range", "1:4", "--fixed", "size=8", "--surround", "0"],
     ["--surround must be auto or a positive integer, got 0"]),
    (["conv2d", "--param", "channels", "--range", "1:4", "--fixed", "size=8", "--surround", "wide"],
     ["--surround must be auto or a positive integer, got 'wide'"]),
    (["conv2d", "--param", "channels", "--range", "1:4", "--fixed", "size=8", "--rounds", "0"],
     ["--rounds must be at least 1, got 0"]),
])
def test_sweep_input_errors(capsys: pytest.CaptureFixture[str], db: str, argv: list[str],
                            needles: list[str]) -> None:
    code, out, err = run_cli(capsys, "sweep", *argv, *FAKE, "--db", db)
    assert_error(code, err, *needles)
    assert out == ""


def test_steps_fit_without_a_sweep(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, _, err = run_cli(capsys, "steps", "fit", "--db", db)
    assert_error(code, err, "holds no sweep to fit", "nnperf sweep conv2d --param channels")


def test_steps_fit_a_run_that_is_not_a_sweep(capsys: pytest.CaptureFixture[str], channels_db: str) -> None:
    code, _, err = run_cli(capsys, "steps", "fit", "999", "--db", channels_db)
    assert_error(code, err, "run 999 is not a stored sweep (sweeps: 1)")


def test_steps_predict_a_kind_without_a_model(capsys: pytest.CaptureFixture[str], channels_db: str) -> None:
    code, _, err = run_cli(capsys, "steps", "predict", "fc", *FAKE, "--db", channels_db)
    assert_error(code, err, "no fitted fc step model", "nnperf sweep fc --param channels", "nnperf steps fit")


def test_steps_predict_on_a_store_without_this_system(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, _, err = run_cli(capsys, "steps", "predict", "conv2d", *FAKE, "--db", db)
    assert_error(code, err, f"has no sweeps of {SYSTEM}", "nnperf sweep conv2d")


@pytest.mark.parametrize("argv,needle", [
    (["--param", "channels"], "give --param and --range together"),
    (["--characterise"], "--characterise and --verify work along a range"),
    (["--param", "size", "--range", "4:16", "--characterise"], "works along channels or filters"),
    (["--param", "filters", "--range", "4:16", "--characterise"], "no fitted conv2d filters sweep"),
    (["--param", "channels", "--range", "1:2", "--characterise"], "need at least 4"),
])
def test_steps_predict_usage_errors(capsys: pytest.CaptureFixture[str], channels_db: str, argv: list[str],
                                    needle: str) -> None:
    code, _, err = run_cli(capsys, "steps", "predict", "conv2d", "--config", "size=8", *argv, *FAKE,
                           "--db", channels_db)
    assert_error(code, err, needle)


def test_advise_without_models(capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path) -> None:
    path = tmp_path / "residual.json"
    save_network(residual_network(), path)
    code, _, err = run_cli(capsys, "advise", str(path), *FAKE, "--db", db)
    assert_error(code, err, f"has no step models of {SYSTEM}", "nnperf steps fit")


@pytest.mark.parametrize("tolerance", ["150%", "0", "abc"])
def test_advise_tolerance_out_of_range_is_a_usage_error(capsys: pytest.CaptureFixture[str], db: str,
                                                        tolerance: str) -> None:
    # checked by argparse (a type function), so it exits 2 with the usage before any model is loaded
    with pytest.raises(SystemExit) as info:
        main(["advise", "resnet18", "--tolerance", tolerance, *FAKE, "--db", db])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("usage: nnperf advise")
    assert "nnperf advise: error: argument --tolerance: expected a " in err.splitlines()[-1]
    assert repr(tolerance) in err.splitlines()[-1]
    assert not Path(db).exists()
