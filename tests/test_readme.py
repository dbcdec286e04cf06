"""The README's Python example runs as written, on the fake backend instead of torch (a calibration in seconds)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_block(marker: str) -> str:
    """The ```python block that follows ``<!-- readme-test: MARKER -->`` in the README."""
    found = re.search(rf"<!-- readme-test: {re.escape(marker)} -->\s*```python\n(.*?)```", README.read_text(), re.DOTALL)
    assert found is not None, f"README.md has no python block marked readme-test: {marker}"
    return found.group(1)


def test_the_main_job_from_python_runs_as_the_readme_shows(tmp_path: Path) -> None:
    code = readme_block("main-job")
    assert code.count('backend="torch"') == 3  # calibrate, predict, verify: the substitution below covers them
    fake = code.replace('backend="torch"', 'backend="fake"')
    result = subprocess.run([sys.executable, "-c", fake], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"\d+\.\d\d ms; hotspots: \[.*\]", lines[0])
    assert re.fullmatch(r"error [+-]\d+\.\d% ; per layer \d+ errors".replace(" ;", ";"), lines[1])
    assert (tmp_path / "nnperf.db").exists()  # the calibration and the verification run were stored
