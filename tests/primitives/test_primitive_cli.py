"""``nnperf primitives list`` and ``profile``: tables, JSON, resuming and errors."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from prims_helpers import NAMES

from cli_helpers import assert_error, run_cli, run_json
from networks import conv_net, tiny_network
from nnperf.campaign import load_primitive_dataset, primitive_systems
from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, Network, OpType, save_network
from nnperf.store import Store


def test_list_json_has_every_primitive_with_layouts_and_availability(capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "primitives", "list")
    assert (document["format"], document["version"]) == ("nnperf-primitives", 1)
    rows = {r["name"]: r for r in document["primitives"]}
    assert sorted(rows) == sorted(NAMES)
    assert rows["im2col-hwf"] | {"available": True, "reason": ""} == {
        "name": "im2col-hwf", "family": "im2", "library": "torch ops", "input_layout": "chw", "output_layout": "hwc",
        "applies": "any kernel, stride, padding, groups, dilation", "error_bound": 1e-5, "devices": ["cpu", "cuda"],
        "available": True, "reason": ""}
    assert all(r["available"] or r["reason"] for r in rows.values())
    assert "chw->hwc" in document["layout_transforms"] and "hwc->chw" in document["layout_transforms"]
    assert {"chw->hcw", "hcw->chw", "hwc->hcw", "hcw->hwc"} <= set(document["layout_transforms"])
    assert rows["mec-row-partition"] | {"available": True, "reason": ""} == {
        "name": "mec-row-partition", "family": "mec", "library": "torch ops", "input_layout": "hcw",
        "output_layout": "hcw", "applies": "any kernel, stride, padding, groups, dilation", "error_bound": 1e-5,
        "devices": ["cpu", "cuda"], "available": True, "reason": ""}
    assert (rows["mec-col"]["input_layout"], rows["mec-col"]["output_layout"]) == ("hwc", "hwc")
    assert rows["torch-conv2d"]["family"] == "vendor" and rows["torch-conv2d"]["available"]
    assert rows["torch-conv2d"]["applies"] == "any kernel, stride, padding, groups, dilation"
    assert rows["torch-conv2d"]["devices"] == ["cpu", "cuda"] and rows["onednn-chw"]["devices"] == ["cpu"]


def test_list_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "primitives", "list")
    assert code == 0
    assert "winograd-4x3" in out and "3x3 kernel, stride 1, dilation 1" in out
    assert "mec-row-partition" in out and "torch-conv2d" in out
    assert "layout transformations: chw->hwc" in out


def test_primitives_needs_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "primitives")
    assert info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


def test_profile_stores_each_configuration_once_and_resumes(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    net, db = tmp_path / "tiny.json", str(tmp_path / "p.db")
    save_network(tiny_network(), net)
    args = ("primitives", "profile", str(net), "--random", "1", "--only", "direct", "--db", db)
    first = run_json(capsys, *args)
    assert first["format"] == "nnperf-primitive-profile"
    # 3 convolutions and 1 sampled configuration, each under direct and the 12 layout transformations (between
    # chw, hwc, hcw and the blocked layout)
    assert (first["measured"], first["reused"], first["samples"], first["failures"]) == (4, 0, 4 * 13, [])
    # the machine-speed reference was timed in each configuration's rounds (stored, not counted as a sample)
    assert len(first["speed_readings_s"]) == 4 and all(0 < s < 1 for _, s in first["speed_readings_s"])
    again = run_json(capsys, *args)
    assert (again["measured"], again["reused"], again["samples"]) == (0, 4, 0)
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "4 profiled before" in out


def test_profile_times_the_transformations_alone_on_the_outputs_no_configuration_reads(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """conv_net's 3x3 convolution reads and writes 4 x 6 x 6, and a strided one after it writes 8 x 3 x 3, which
    nothing reads: that activation alone gets its twelve transformations, under its carrier."""
    s, half = (1, 4, 6, 6), (1, 8, 3, 3)
    net = conv_net("strided", 4, 6)
    net = Network("strided", net.inputs, (*net.layers, Layer(
        "down", OpType.CONV, ("add",), (s,), half, ConvAttrs((3, 3), stride=(2, 2), padding=(1,) * 4))), ("down",))
    path, db = tmp_path / "strided.json", tmp_path / "p.db"
    save_network(net, path)
    args = ("primitives", "profile", str(path), "--random", "0", "--output-activations", "--db", str(db))
    first = run_json(capsys, *args)
    assert (first["measured"], first["samples"], first["failures"]) == (1, 12, [])
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "0 activations profiled now" in out and "1 profiled before" in out
    with Store(db) as store:
        (record,) = primitive_systems(store)
        dataset = load_primitive_dataset(store, record.id)
    assert dataset.conv == () and [(t.batch, t.c, t.im) for t in dataset.layout] == [(1, 8, (3, 3))]


@pytest.mark.parametrize(("argv", "protocol"), [(("--protocol", "sequential"), "sequential"), ((), "interleaved")])
def test_profile_times_under_the_protocol_asked_or_chosen(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          argv: tuple[str, ...], protocol: str) -> None:
    """Each configuration's run says the protocol its times were taken under; auto takes interleaved for these
    in-process timings on any machine."""
    net, db = tmp_path / "tiny.json", tmp_path / "p.db"
    save_network(tiny_network(), net)
    run_json(capsys, "primitives", "profile", str(net), "--random", "0", "--only", "direct", "--db", str(db), *argv)
    with Store(db) as store:
        assert {run.config["protocol"] for run in store.runs()} == {protocol}


@pytest.mark.slow  # three real profiling runs: about 12 s here
def test_profile_times_the_slow_configurations_again(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    net, db = tmp_path / "tiny.json", str(tmp_path / "p.db")
    save_network(tiny_network(), net)
    args = ("primitives", "profile", str(net), "--random", "1", "--only", "direct", "--db", db)
    readings = dict(run_json(capsys, *args)["speed_readings_s"])
    # over 1x the median of the four readings: the two above the middle ones, each timed again as a whole
    again = run_json(capsys, *args, "--retime-slow=1")
    median = statistics.median(readings.values())
    assert sorted(again["retimed"]) == sorted(label for label, s in readings.items() if s > median)
    assert (again["measured"], again["reused"], again["samples"]) == (0, 4, 13 * len(again["retimed"]))
    assert {label: s for label, s in again["speed_readings_s"]}.keys() == set(again["retimed"])
    code, out, _ = run_cli(capsys, *args, "--retime-slow=1")
    assert code == 0 and "of them after timing them again for a slow reading" in out
    assert "timed again (the dataset reads the new times): c" in out


@pytest.mark.parametrize(("argv", "needles"), [
    (("--only", "nope"), ("unknown primitive 'nope'", "winograd-4x3")),
    (("--random", "-1"), ("random must be 0 or more",)),
    (("--only", "direct", "--output-activations"), ("--only picks the primitives", "give one or the other")),
    (("--budget", "ten"), ("--budget", "not a duration")),
    (("--backend", "torch"), ("profile_primitives", "nnperf.System(\"primitives\", threads=N)", "torch/cpu")),
    (("--retime-slow", "fast"), ("--retime-slow takes a factor", "'fast'", "--retime-slow=FACTOR")),
    (("--retime-slow=0.5",), ("a factor of at least 1", "0.5")),
    (("--retime-slow", "--protocol", "sequential"), ("only the interleaved protocol times",)),
])
def test_profile_refuses_bad_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...],
                                       needles: tuple[str, ...]) -> None:
    net = tmp_path / "tiny.json"
    save_network(tiny_network(), net)
    code, _, err = run_cli(capsys, "primitives", "profile", str(net), "--db", str(tmp_path / "p.db"), *argv)
    assert_error(code, err, *needles)


def test_profile_refuses_a_thread_count_below_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, "primitives", "profile", "--threads", "0", "--db", str(tmp_path / "p.db"))
    assert exited.value.code == 2
    assert "--threads: expected a positive integer, got 0" in capsys.readouterr().err


def test_profile_on_cuda_without_a_gpu_says_so_and_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as on a machine without one, even with one
    net, db = tmp_path / "tiny.json", tmp_path / "p.db"
    save_network(tiny_network(), net)
    code, _, err = run_cli(capsys, "primitives", "profile", str(net), "--random", "0", "--device", "cuda", "--db",
                           str(db))
    assert_error(code, err, "nnperf: error: device cuda: torch.cuda.is_available() is False on this machine (torch ")


def test_train_takes_a_gpus_dataset_by_its_stored_system_not_by_device(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "primitives", "train", "--device", "cuda", "--db", str(tmp_path / "p.db"))
    assert_error(code, err, "train_primitive_model: the primitives are profiled on this CPU",
                 "not primitives/cuda[threads=1]; name a stored system of another device by its id or key (--system")


def test_the_api_refuses_primitives_named_for_output_activations(tmp_path: Path) -> None:
    from nnperf.api import profile_primitives

    with pytest.raises(NnperfError, match=r"the primitives named \(direct\) would not be timed"):
        profile_primitives([], store=tmp_path / "p.db", primitives=["direct"], output_activations=True)
