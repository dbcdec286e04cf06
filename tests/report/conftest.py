"""Figures built by the report tests are closed after each test: pyplot keeps every figure it opened until
then, and warns past twenty."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    import matplotlib.pyplot as plt

    plt.close("all")
