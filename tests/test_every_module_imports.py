"""Every module of the package imports under the interpreter running the tests, which CI runs with the oldest
Python ``pyproject.toml`` declares (``requires-python``): a module using a newer language or library feature at
import time fails here, not on a user's machine."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import tomllib
from pathlib import Path

import pytest

import nnperf

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _modules() -> list[str]:
    """Every module but ``nnperf.__main__``, which runs the command line when imported."""
    return sorted(m.name for m in pkgutil.walk_packages(nnperf.__path__, "nnperf.") if m.name != "nnperf.__main__")


def test_the_declared_minimum_is_the_interpreter_ci_runs() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["requires-python"]
    minimum = tuple(int(part) for part in re.fullmatch(r">=\s*(\d+)\.(\d+)", declared).groups())  # type: ignore[union-attr]
    assert minimum == (3, 11)
    assert sys.version_info[:2] >= minimum


@pytest.mark.parametrize("module", _modules())
def test_the_module_imports(module: str) -> None:
    importlib.import_module(module)
