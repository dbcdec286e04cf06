"""The CLI's help and terminal output say what is true and fit the terminal: no stray '%%', no option a
command does not take, defaults with their reasons, one name per network, COLUMNS obeyed, nothing printed
by a progress bar outside a terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cli_helpers import run_cli
from nnperf.api import load_model
from nnperf.cli._main import build_parser
from nnperf.ir import network_to_dict


def every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    """(command path, parser) of the top level and every subcommand, however deep."""
    found = [("nnperf", build_parser())]
    for path, parser in found:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found.extend((f"{path} {name}", sub) for name, sub in action.choices.items())
    return found


def test_no_help_shows_a_doubled_percent_sign() -> None:
    # descriptions are printed as written: '95%%' in one showed as '95%%' in `nnperf sweep --help`
    texts = {path: parser.format_help() for path, parser in every_parser()}
    assert len(texts) > 20
    assert [path for path, text in texts.items() if "%%" in text] == []
    assert "95% confidence interval" in " ".join(texts["nnperf sweep"].split())


def test_only_a_command_that_takes_system_mentions_it() -> None:
    parsers = dict(every_parser())
    for path in ("nnperf accel energy", "nnperf accel sweep"):
        assert "--system" not in parsers[path].format_help(), path
    partition = parsers["nnperf partition"]
    assert any("--system" in action.option_strings for action in partition._actions)
    assert "--sparsity, --images or --system" in " ".join(partition.format_help().split())


@pytest.mark.parametrize(("path", "reason"), [
    ("nnperf accel energy", "default 16: the CNNergy reference model's width"),
    ("nnperf accel sweep", "default 8: NeuPart's design sweep"),
    ("nnperf partition", "default 8: NeuPart's partitioning results"),
])
def test_bits_defaults_say_why_they_differ(path: str, reason: str) -> None:
    assert reason in " ".join(dict(every_parser())[path].format_help().split())


@pytest.mark.parametrize(("alias", "name"), [("squeezenet_v11", "squeezenet1_1"), ("googlenet_v1", "googlenet"),
                                             ("SqueezeNet-v11", "squeezenet1_1")])
def test_the_accelerator_names_of_zoo_networks_load_the_same_network(alias: str, name: str) -> None:
    assert network_to_dict(load_model(alias)) == network_to_dict(load_model(name))


def test_piped_tables_obey_columns(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "90")
    code, out, _ = run_cli(capsys, "zoo")
    assert code == 0
    widths = {len(line) for line in out.splitlines() if line.strip()}
    assert max(widths) == 90  # was 200 when piped, whatever COLUMNS said
    monkeypatch.delenv("COLUMNS")
    code, out, _ = run_cli(capsys, "zoo")
    assert max(len(line) for line in out.splitlines()) <= 200


def test_profile_table_keeps_layer_names_whole_on_a_narrow_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run_cli(capsys, "profile", "resnet18", "--backend", "fake", "--budget-s", "0.01",
                             "--db", str(tmp_path / "m.db"))
    assert code == 0
    # before: 54 of the 69 names ended in an ellipsis while an empty 'fused group' column kept its width
    cells = {line.split("│")[2].strip() for line in out.splitlines() if line.startswith("│")}
    names = [layer.name for layer in load_model("resnet18").layers]
    assert set(names) <= cells
    assert "fused group" not in out  # the fake backend fuses nothing: no empty column
    assert all(len(line) <= 100 for line in out.splitlines())
    # outside a terminal the progress bar prints nothing at all (it left an empty line): only the warning
    assert err.splitlines() == ["nnperf: warning: the fake backend's times come from a cost model, not a measurement"]


def test_calibrate_starts_with_a_header(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from networks import residual_conv_net

    nets = [residual_conv_net(f"cal{c}", c, 8) for c in (4, 8)]
    for where in ("nnperf.campaign._calibration.calibration_networks", "nnperf.campaign.calibration_networks"):
        monkeypatch.setattr(where, lambda: nets)
    db = tmp_path / "c.db"
    code, out, err = run_cli(capsys, "calibrate", "--backend", "fake", "--budget-s", "0.01", "--db", str(db))
    assert code == 0, err
    first = " ".join(out.split("calibration of")[0].split())
    assert first == (f"calibrating fake on cpu (1 thread) into {db}: 2 calibration networks, 8 layers timed alone "
                     "and each network whole, then short profiler passes and the roofline peaks; every measurement "
                     "is stored as it is taken, so an interrupted calibration resumes")


def test_every_command_with_a_backend_defaults_to_torch_or_the_primitive_system() -> None:
    # profile required --backend while every other command defaulted to torch; the commands on convolution
    # primitives (primitives, select) measure the primitive system, so it is their default
    with_backend = {}
    for path, parser in every_parser():
        for action in parser._actions:
            if "--backend" in action.option_strings:
                with_backend[path] = action
    assert {"nnperf profile", "nnperf calibrate", "nnperf predict", "nnperf sweep", "nnperf select",
            "nnperf primitives train"} <= set(with_backend)
    on_primitives = {path for path in with_backend if path == "nnperf select" or path.startswith("nnperf primitives")}
    assert {path: (a.default, a.required) for path, a in with_backend.items()} == {
        path: ("primitives" if path in on_primitives else "torch", False) for path in with_backend}
