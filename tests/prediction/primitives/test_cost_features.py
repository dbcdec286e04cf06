"""The primitive cost models' inputs and loss: log features, standardisation, the masked MSE of NN2 and the
exact storage of arrays."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from nnperf.errors import NnperfError
from nnperf.prediction.primitives import (
    CONV_FEATURES,
    TRANSFORM_FEATURES,
    Standardiser,
    conv_features,
    masked_mse,
    transform_features,
)
from nnperf.prediction.primitives._arrays import decode_array, encode_array
from nnperf.primitives import ConvConfig


def test_conv_features_are_the_log2_of_the_sizes_and_their_products() -> None:
    # batch 2, 32 -> 64 channels in 4 groups, 20x10 input, 3x1 kernel, stride 2x1, padding (1, 0, 2, 0),
    # dilation 1x2: padded 23x10, out ((23 - 3) // 2 + 1) x (10 - 1 + 1) = 11x10
    config = ConvConfig(2, 32, 64, (20, 10), (3, 1), (2, 1), (1, 0, 2, 0), 4, (1, 2))
    assert config.out == (11, 10)
    macs = 2 * 64 * 11 * 10 * (32 // 4) * 3 * 1
    expected = [math.log2(v) for v in (32, 64, 20, 10, 3, 1, 2, 1, 4, 1, 2, 2, 1 + 3, macs, 11 * 10, 32 // 4)]
    row = conv_features([config])
    assert row.shape == (1, len(CONV_FEATURES)) == (1, 16)
    np.testing.assert_allclose(row[0], expected, rtol=0, atol=1e-12)
    assert conv_features([]).shape == (0, 16)


def test_transform_features_are_the_log2_of_the_activation_sizes() -> None:
    rows = transform_features([(1, 64, (56, 56)), (4, 3, (224, 112))])
    assert rows.shape == (2, len(TRANSFORM_FEATURES))
    np.testing.assert_allclose(rows[1], [2.0, math.log2(3), math.log2(224), math.log2(112),
                                         math.log2(4 * 3 * 224 * 112)], atol=1e-12)
    np.testing.assert_allclose(rows[0], [0.0, 6.0, math.log2(56), math.log2(56), math.log2(64 * 56 * 56)])
    with pytest.raises(NnperfError, match="positive"):
        transform_features([(1, 0, (7, 7))])


def test_standardiser_uses_present_entries_and_gives_a_constant_column_std_one() -> None:
    x = np.array([[1.0, 5.0, np.nan], [3.0, 5.0, 2.0], [5.0, 5.0, np.nan]])
    s = Standardiser.fit(x)
    # column 0: mean 3, population std sqrt((4 + 0 + 4) / 3); column 1 constant; column 2 a single entry
    assert s.mean == pytest.approx((3.0, 5.0, 2.0))
    assert s.std == pytest.approx((math.sqrt(8 / 3), 1.0, 1.0))
    z = s.transform(x)
    np.testing.assert_allclose(z[:, 0], np.array([-2.0, 0.0, 2.0]) / math.sqrt(8 / 3))
    assert np.all(z[:, 1] == 0) and np.isnan(z[0, 2]) and z[1, 2] == 0
    np.testing.assert_allclose(s.inverse(z), x)
    assert Standardiser.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_masked_mse_is_the_mean_over_present_entries_only() -> None:
    pred = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    target = torch.tensor([[0.0, 2.0, 1.0], [4.0, 1.0, 0.0]])
    mask = torch.tensor([[True, False, True], [True, True, False]])
    # present errors: 1 - 0 = 1, 3 - 1 = 2, 4 - 4 = 0, 5 - 1 = 4 -> (1 + 4 + 0 + 16) / 4
    loss = masked_mse(pred, target, mask)
    assert loss.item() == pytest.approx(21 / 4)
    loss.backward()
    # d/dpred of sum(e^2) / 4 = 2e / 4 on present entries, 0 elsewhere
    expected_grad = torch.tensor([[2 * 1 / 4, 0.0, 2 * 2 / 4], [0.0, 2 * 4 / 4, 0.0]])
    torch.testing.assert_close(pred.grad, expected_grad)
    # per-row means (NN1's one loss per network): row 0 (1 + 4) / 2, row 1 (0 + 16) / 2
    torch.testing.assert_close(masked_mse(pred.detach(), target, mask, dim=1), torch.tensor([2.5, 8.0]))


@pytest.mark.parametrize("garbage", [float("nan"), float("inf"), 1e30, -7.0])
def test_a_masked_entry_changes_neither_loss_nor_gradient(garbage: float) -> None:
    mask = torch.tensor([[True, False, True], [True, True, False]])
    target = torch.tensor([[0.0, 2.0, 1.0], [4.0, 1.0, 0.0]])
    spoiled = target.clone()
    spoiled[~mask] = garbage
    grads, losses = [], []
    for t in (target, spoiled):
        pred = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        loss = masked_mse(pred, t, mask)
        loss.backward()
        losses.append(loss.item())
        grads.append(pred.grad)
    assert losses[0] == losses[1] == 21 / 4
    assert torch.equal(grads[0], grads[1]) and torch.isfinite(grads[1]).all()


def test_masked_mse_of_nothing_present_is_zero() -> None:
    pred = torch.ones(2, 2, requires_grad=True)
    loss = masked_mse(pred, torch.full((2, 2), float("nan")), torch.zeros(2, 2, dtype=torch.bool))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(pred.grad, torch.zeros(2, 2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arrays_round_trip_exactly_through_json(dtype: type) -> None:
    a = (np.random.default_rng(3).normal(size=(2, 3, 5)) * 1e3).astype(dtype)
    a[0, 0, 0] = np.finfo(dtype).tiny
    stored = json.loads(json.dumps(encode_array(a)))
    assert stored["dtype"] == np.dtype(dtype).newbyteorder("<").str and stored["shape"] == [2, 3, 5]
    back = decode_array(stored)
    assert back.dtype == dtype and back.tobytes() == a.tobytes()
    itemsize = np.dtype(dtype).itemsize
    with pytest.raises(ValueError, match=f"needs {2 * 3 * 4 * itemsize} bytes, it has {2 * 3 * 5 * itemsize}"):
        decode_array({**stored, "shape": [2, 3, 4]})
