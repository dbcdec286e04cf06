"""The Winograd transform matrices: Lavin's F(2,3) and F(4,3), and exact 1-D correlations for all three."""

from __future__ import annotations

import numpy as np
import pytest

from nnperf.primitives._winograd import winograd_matrices


def test_f23_is_lavins_up_to_the_sign_at_infinity() -> None:
    at, g, bt = winograd_matrices(2, 3)
    # Lavin & Gray (2016) eq. 7 with G's 1/2 moved into B^T and the infinity row's sign flipped
    assert np.allclose(bt, [[1, 0, -1, 0], [0, 0.5, 0.5, 0], [0, -0.5, 0.5, 0], [0, -1, 0, 1]])
    assert np.allclose(g, [[1, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 1]])
    assert np.allclose(at, [[1, 1, 1, 0], [0, 1, -1, 1]])


def test_f43_input_transform_has_lavins_last_row() -> None:
    _, _, bt = winograd_matrices(4, 3)
    assert np.allclose(bt[-1], [0, 4, 0, -5, 0, 1])  # Lavin & Gray eq. 11, B^T's last row


@pytest.mark.parametrize(("m", "r"), [(2, 3), (4, 3), (2, 5)])
def test_one_dimensional_correlation_is_exact(m: int, r: int) -> None:
    rng = np.random.default_rng(0)
    d, g = rng.standard_normal(m + r - 1), rng.standard_normal(r)
    at, gm, bt = winograd_matrices(m, r)
    expected = [sum(g[j] * d[i + j] for j in range(r)) for i in range(m)]
    assert np.allclose(at @ ((gm @ g) * (bt @ d)), expected, atol=1e-12)
