"""nnperf in a shell: plain `nnperf` shows what it can do, a closed pipe ends it quietly, completion
scripts for bash/zsh/tcsh, and one name for every level of subcommands."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

import pytest

from cli_helpers import run_cli
from nnperf.cli._main import build_parser

NNPERF = [sys.executable, "-m", "nnperf"]


def test_plain_nnperf_prints_help_and_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys)  # exited 2 with 'the following arguments are required: COMMAND'
    assert code == 0 and err == ""
    assert out.startswith("usage: nnperf") and "calibrate" in out and "compare" in out


def test_a_reader_that_stops_early_ends_nnperf_quietly() -> None:
    # `nnperf ... | head` ended in 'nnperf: internal error: BrokenPipeError'
    proc = subprocess.Popen([*NNPERF, "inspect", "googlenet", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(16).startswith(b"{")
    proc.stdout.close()  # far less than the document (over 64 kB: it cannot all sit in the pipe)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""


def subcommand_actions(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.append(action)
            for sub in action.choices.values():
                found.extend(subcommand_actions(sub))
    return found


def test_every_level_of_subcommands_is_called_command() -> None:
    actions = subcommand_actions(build_parser())
    assert len(actions) == 6  # nnperf, accel, fleet, measurements, steps, primitives (was COMMAND, SUBCOMMAND, ACTION)
    assert {a.metavar for a in actions} == {"COMMAND"}


def test_bash_completion_knows_commands_and_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, script, err = run_cli(capsys, "completion", "bash")
    assert code == 0, err
    for word in ("calibrate", "compare", "--fail-if-slower", "--per-layer", "--backend"):
        assert word in script, word
    bash = shutil.which("bash")
    if bash:
        check = subprocess.run([bash, "-n"], check=False, input=script, text=True, capture_output=True)
        assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("shell", ["zsh", "tcsh"])
def test_zsh_and_tcsh_completion(capsys: pytest.CaptureFixture[str], shell: str) -> None:
    code, script, _ = run_cli(capsys, "completion", shell)
    assert code == 0 and "nnperf" in script and "calibrate" in script


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "completion", "fish")
    assert info.value.code == 2
    assert "invalid choice: 'fish'" in capsys.readouterr().err
