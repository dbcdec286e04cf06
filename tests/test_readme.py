"""The README's Python example runs as written, on the fake backend instead of torch (a calibration in seconds), and
its table of commands names functions that :mod:`nnperf.api` has."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_block(marker: str) -> str:
    """The ```python block that follows ``<!-- readme-test: MARKER -->`` in the README."""
    found = re.search(rf"<!-- readme-test: {re.escape(marker)} -->\s*```python\n(.*?)```", README.read_text(), re.DOTALL)
    assert found is not None, f"README.md has no python block marked readme-test: {marker}"
    return found.group(1)


@pytest.mark.slow
def test_the_main_job_from_python_runs_as_the_readme_shows(tmp_path: Path) -> None:
    code = readme_block("main-job")
    system = 'nnperf.System("torch", threads=1)'
    assert code.count(system) == 1 and code.count("System(") == 1  # the one system calibrate, predict, verify use
    fake = code.replace(system, 'nnperf.System("fake", threads=1)')
    result = subprocess.run([sys.executable, "-c", fake], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"\d+\.\d\d ms; hotspots: \[.*\]", lines[0])
    assert re.fullmatch(r"error [+-]\d+\.\d% ; per layer \d+ errors".replace(" ;", ";"), lines[1])
    assert (tmp_path / "nnperf.db").exists()  # the calibration and the verification run were stored


def test_every_command_has_the_api_function_the_readme_names() -> None:
    import nnperf.api

    table = re.search(r"\| command \| function \|\n\|---\|---\|\n((?:\|.*\|\n)+)", README.read_text())
    assert table is not None, "README.md has no table of commands and their nnperf.api functions"
    named = re.findall(r"`nnperf\.api\.(\w+)`", table.group(1))
    commands = {row.split("`")[1].split()[1] for row in table.group(1).splitlines()}
    assert len(named) >= len(commands) >= 20
    missing = [name for name in named if not callable(getattr(nnperf.api, name, None))]
    assert not missing, f"README.md names nnperf.api functions that do not exist: {missing}"
    assert set(named) <= set(nnperf.api.__all__)


def test_every_command_of_the_parser_is_in_the_readme_table() -> None:
    from nnperf.cli._parser import COMMANDS

    text = README.read_text()
    table = text[text.index("| command | function |"):]
    table = table[:table.index("\n\n")]
    listed = {row.split("`")[1].split()[1] for row in table.splitlines()[2:]}
    shell_only = {"completion"}
    wanted = {module.__name__.rsplit(".", 1)[1].removesuffix("_cmd") for module in COMMANDS} - shell_only
    assert wanted <= listed, sorted(wanted - listed)
