"""Helpers shared by the CLI tests: run the command in-process, read its JSON, check a user error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nnperf.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def assert_error(code: int, err: str, *needles: str) -> str:
    """A user error: exit code 1 (not the internal-error code 3), exactly one line on stderr starting
    'nnperf: error:', naming each needle; returns that line."""
    assert code == 1, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("nnperf: error:"), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]
