"""The command line starts without importing the API, which loads PyTorch: ``nnperf --help`` takes a fraction of
a second, and options whose choices only the API knows (``--protocol``) still check their values."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nnperf.cli._main import main


def test_building_the_parser_imports_neither_the_api_nor_torch() -> None:
    code = ("import sys; from nnperf.cli._parser import build_parser; build_parser(); "
            "print(sorted(m for m in ('torch', 'nnperf.api') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(("command", "allowed"), [
    ("predict", "'auto', 'sequential', 'interleaved', 'duet')"),
    ("evaluate", "'auto', 'sequential', 'interleaved', 'duet', 'none')"),
])
def test_an_unknown_protocol_is_refused_with_the_choices(command: str, allowed: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "resnet18", "--protocol", "bogus"])
    assert exit_info.value.code == 2
    assert f"invalid choice: 'bogus' (choose from {allowed}" in capsys.readouterr().err
