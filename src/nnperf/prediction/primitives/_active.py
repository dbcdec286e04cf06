"""Choosing what to profile next where an ensemble cost model is least sure (active learning by query by
committee).

An ensemble (``kind="ens"``) averages several NN2 networks and boosted trees fitted on the same rows. Where they
agree the rows around a configuration pinned the model down; where they disagree it is extrapolating, and a time
measured there teaches it most. The disagreement of a row is the standard deviation across the members of what
each predicts in the model's own target space (log times, or log ratios to the reference for relative targets),
so 0.05 reads as members about 5% apart; a row's spread is the mean of that over the columns that apply to it.

:func:`most_uncertain` picks a batch from a pool by spread, optionally per second of profiling it would cost,
and keeps the batch from crowding into one corner of the pool (each pick lowers the spread of the rows close to it
in the model's standardised features).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction.primitives._columns import ColumnModel
from nnperf.prediction.primitives._features import ActivationShape, conv_features, transform_features
from nnperf.prediction.primitives._model import NoTransformModelError, PrimitiveCostModel
from nnperf.primitives import ConvConfig, get_primitive

CROWDING_RADIUS = 0.5
"""How close (Euclidean distance in the model's standardised features) a pool row must be to a row already
picked for its spread to be lowered, by a factor 1 - exp(-d^2 / (2 r^2)): a row on top of a picked one counts
for nothing, one a radius away for 39% of its spread, two radii away for 86%."""


class NotAnEnsembleError(NnperfError):
    """The model has a single regressor, so no committee to disagree."""


def committee_spread(model: ColumnModel, x: np.ndarray, applies: np.ndarray | None = None) -> np.ndarray:
    """(n,) the mean over columns of the standard deviation across ``model``'s ensemble members of their
    predicted targets for raw feature rows ``x`` (n, d); ``applies`` (n, m booleans) keeps only the columns that
    apply to each row (a row where none applies has spread 0)."""
    if not model.members:
        raise NotAnEnsembleError(f"committee spread needs an ensemble cost model (kind 'ens'); this one is "
                                 f"{model.kind!s}, a single regressor")
    xs = model.features.transform(x)
    spread = np.std(np.stack([member.encoded(xs) for member in model.members]), axis=0)
    if applies is None:
        return spread.mean(axis=1)
    kept = applies.sum(axis=1)
    return np.where(kept > 0, (spread * applies).sum(axis=1) / np.maximum(kept, 1), 0.0)


def config_spread(model: PrimitiveCostModel, configs: Sequence[ConvConfig], only_applicable: bool = True
                  ) -> np.ndarray:
    """(len(configs),) the primitives' committee spread on each configuration, over the primitives that apply
    to it (over every primitive with ``only_applicable=False``: asking some primitives whether they apply builds
    a graph, too slow for a pool of thousands)."""
    model.check_fitted()
    configs = list(configs)
    applies = None
    if only_applicable:
        found = [get_primitive(name) for name in model.primitives_]
        applies = np.array([[p.applies(c) for p in found] for c in configs], dtype=bool).reshape(len(configs), -1)
    return committee_spread(model.conv_model_, conv_features(configs, model.conv_model_.feature_set), applies)


def shape_spread(model: PrimitiveCostModel, shapes: Sequence[ActivationShape]) -> np.ndarray:
    """(len(shapes),) the layout transformations' committee spread on each activation (batch, c, (h, w))."""
    model.check_fitted()
    if model.transform_model_ is None:
        raise NoTransformModelError("this primitive cost model has no transformation model to ask")
    layout = model.transform_model_
    return committee_spread(layout, transform_features(list(shapes), layout.feature_set))


def most_uncertain(spread: np.ndarray, n: int, features: np.ndarray | None = None,
                   cost_s: np.ndarray | None = None, radius: float = CROWDING_RADIUS) -> list[int]:
    """The indices of ``n`` pool rows to profile next, in the order picked: each time the row of the largest
    spread (per second of ``cost_s``, the row's estimated profiling cost, when given), then, with ``features``
    (the rows' standardised features), every other row's spread lowered by its closeness to it
    (:data:`CROWDING_RADIUS`). Fewer than ``n`` rows gives them all."""
    spread = np.asarray(spread, dtype=float)
    if n < 0:
        raise NnperfError(f"the batch size must be at least 0, got {n}")
    if cost_s is not None and (len(cost_s) != len(spread) or np.any(np.asarray(cost_s) <= 0)):
        raise NnperfError("cost_s must give every pool row a positive profiling cost")
    score = spread / np.asarray(cost_s, dtype=float) if cost_s is not None else spread.copy()
    picked: list[int] = []
    left = np.ones(len(score), dtype=bool)
    for _ in range(min(n, len(score))):
        i = int(np.argmax(np.where(left, score, -np.inf)))
        picked.append(i)
        left[i] = False
        if features is not None:
            d2 = ((features - features[i]) ** 2).sum(axis=1)
            score = score * (1 - np.exp(-d2 / (2 * radius ** 2)))
    return picked
