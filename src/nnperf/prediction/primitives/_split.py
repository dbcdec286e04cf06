"""Splitting the profiled dataset and scoring a cost model on it (Mulder et al. 4.2 and 3.3).

The paper shuffles its dataset and splits it 80/10/10 into training, validation and test sets, and scores a
model by the median relative absolute error |y^ - y| / y (MdRAE) of each primitive and transformation on the
test set.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction.primitives._model import PrimitiveCostModel
from nnperf.primitives import PrimitiveDataset

T = TypeVar("T")


def _cut(items: Sequence[T], fractions: tuple[float, float, float], rng: random.Random) -> list[list[T]]:
    """``items`` shuffled and cut at round(n * cumulative fraction): the parts' sizes add up to n."""
    order = list(items)
    rng.shuffle(order)
    n = len(order)
    first = round(n * fractions[0])
    second = round(n * (fractions[0] + fractions[1]))
    return [order[:first], order[first:second], order[second:]]


def split_dataset(dataset: PrimitiveDataset, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
                  seed: int = 0) -> tuple[PrimitiveDataset, PrimitiveDataset, PrimitiveDataset]:
    """(train, validation, test): the configurations and the activations each shuffled (seeded, separately) and
    cut by ``fractions`` (Mulder et al. 4.2's 80/10/10). The same dataset and seed give the same split."""
    parts = tuple(float(f) for f in fractions)
    if len(parts) != 3 or min(parts) < 0 or abs(sum(parts) - 1) > 1e-9:
        raise NnperfError(f"split fractions must be three non-negative numbers that sum to 1, got {fractions!r}")
    rng = random.Random(seed)
    conv = _cut(dataset.conv, parts, rng)  # type: ignore[arg-type]
    layout = _cut(dataset.layout, parts, rng)  # type: ignore[arg-type]
    train, validation, test = (dataset.of_rows(c, t) for c, t in zip(conv, layout))
    return train, validation, test


def relative_errors(model: PrimitiveCostModel, test: PrimitiveDataset) -> dict[str, np.ndarray]:
    """|y^ - y| / y of every time in ``test`` that the model predicts, by primitive or transformation name.

    Columns of ``test`` that the model does not predict (left out at fit time, or transformations of a model
    without them) are not in the result; a name's array has one entry per test time of it (its test count).
    """
    model.check_fitted()
    errors: dict[str, np.ndarray] = {}
    tables = [(test.primitives, model.primitives_, [s.times_s for s in test.conv],
               lambda names: model.predict([s.config for s in test.conv], names, only_applicable=False))]
    if model.transform_model_ is not None:
        tables.append((test.transforms, model.transforms_, [s.times_s for s in test.layout],
                       lambda names: model.predict_transforms([(s.batch, s.c, s.im) for s in test.layout], names)))
    for names_in_test, known, rows, predict in tables:
        names = [n for n in names_in_test if n in known]
        if not names or not rows:
            continue
        predicted = predict(names)
        for j, name in enumerate(names):
            pairs = [(predicted[i, j], row[name]) for i, row in enumerate(rows) if name in row]
            y_hat, y = np.array(pairs, dtype=float).reshape(-1, 2).T
            errors[name] = np.abs(y_hat - y) / y
    return errors


def mdrae(model: PrimitiveCostModel, test: PrimitiveDataset) -> dict[str, float]:
    """The median relative absolute error (Mulder et al. 3.3) of every column of ``test`` the model predicts."""
    return {name: float(np.median(e)) for name, e in relative_errors(model, test).items() if len(e)}
