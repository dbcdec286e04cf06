"""What every test shares: the GPU skip, calibrations without sampling, and, on pytest-xdist's workers, the terminal
width of a piped run. Helpers that tests import by name live in modules beside this one.

- ``cli_helpers``: the CLI run in-process (``run_cli``), its JSON (``run_json``) and the one-line user error
  (``assert_error``).
- ``harness_presets``: the short harness settings for tests that measure for real.
- ``networks``: tiny IR networks.

pytest does not import ``conftest.py`` as an ordinary module, so these are not defined here. The markers
(``slow``, ``gpu``) are declared once, in pyproject.toml; ``-m "not slow"`` leaves the slow tests out.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's workers get ``COLUMNS=80``: a worker prints to a pipe, as a serial run does, so it loses
    that width and tables are as wide as piped output is (200 columns), whatever ran them."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.pop("COLUMNS", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skips the tests marked ``gpu`` where torch sees no CUDA device."""
    gpu_tests = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_tests:
        return
    import torch  # only when a GPU test was collected: importing torch takes a second or two

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in gpu_tests:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def _calibrate_without_sampling(monkeypatch: pytest.MonkeyPatch) -> None:
    """A calibration a test starts samples nothing unless the test asks (``sample_budget_s``, ``--sample-budget``):
    the default budget is wall-clock seconds (40) whatever the backend, and would dominate the suite. A
    calibration in a subprocess passes ``--sample-budget 0`` itself."""
    monkeypatch.setattr("nnperf.api._predict.DEFAULT_SAMPLE_BUDGET_S", 0.0)  # what calibrate() falls back on
    monkeypatch.setattr("nnperf.api.DEFAULT_SAMPLE_BUDGET_S", 0.0)  # what the CLI reads to say what it samples
