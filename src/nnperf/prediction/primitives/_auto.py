"""Choosing a cost model's regressor and targets on validation data (the ``auto`` kind).

Mulder et al. 4.2 chose NN2 over Lin and NN1 by its validation error; ``auto`` does the same over more
candidates: every regressor of :data:`AUTO_KINDS` with absolute and/or relative targets, each fitted on the
training rows, scored on the validation rows and the best kept. The test rows are never read. The score is the
validation MdRAE (the median over columns of each column's median relative absolute error, Mulder et al. 3.3)
of the times, plus, where relative targets are among the candidates, that of every column's ratio to the
reference on the same row: on a shared machine a measured time drifts with the machine's speed, which no
candidate can predict and which hides their differences, while the ratios, timed in the same rounds, are what a
selection decides on. The ensemble candidate is made of the NN2 and GB candidates already fitted (with more NN2
seeds when the ensemble asks for them), so it costs only its extra networks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from nnperf.prediction.primitives._columns import ColumnModel, CostModelKind, FitOptions
from nnperf.prediction.primitives._targets import TargetKind

AUTO = "auto"
"""The ``kind`` (and ``targets``) that is chosen on validation data."""

AUTO_KINDS = (CostModelKind.LIN, CostModelKind.NN2, CostModelKind.GB, CostModelKind.ENS)
"""The regressors ``auto`` tries, simplest first (the first of equal scores wins). NN1 is left out: it was
no better than NN2 in the paper nor here, and it trains one network per column."""


@dataclass(frozen=True)
class Candidate:
    """A regressor and its targets: ``reference`` names the reference column of relative targets (None:
    absolute)."""

    kind: CostModelKind
    reference: str | None

    @property
    def label(self) -> str:
        """``kind/targets``, e.g. ``gb/relative``."""
        return f"{self.kind}/{TargetKind.ABSOLUTE if self.reference is None else TargetKind.RELATIVE}"


def _medians(errors: np.ndarray) -> list[float]:
    return [float(np.median(errors[~np.isnan(errors[:, j]), j])) for j in range(errors.shape[1])
            if (~np.isnan(errors[:, j])).any()]


def validation_mdrae(model: ColumnModel, x: np.ndarray, times_s: np.ndarray, reference: int | None = None) -> float:
    """The median over columns with a time of each column's median |predicted - measured| / measured on raw
    feature rows ``x`` and times ``times_s`` (NaN where absent), plus with a ``reference`` column the same of
    every other column's ratio to it on the rows where both were timed; NaN when no column has a time."""
    predicted = model.predict_s(x)
    medians = _medians(np.abs(predicted - times_s) / times_s)
    if not medians:
        return float("nan")
    score = float(np.median(medians))
    if reference is not None:
        ratio = times_s / times_s[:, [reference]]
        ratio_hat = predicted / predicted[:, [reference]]
        others = np.delete(np.abs(ratio_hat - ratio) / ratio, reference, axis=1)
        ratio_medians = _medians(others)
        score += float(np.median(ratio_medians)) if ratio_medians else 0.0
    return score


def _ensemble(networks: ColumnModel, trees: ColumnModel, x: np.ndarray, times_s: np.ndarray, x_val: np.ndarray,
              times_val_s: np.ndarray, options: FitOptions) -> ColumnModel:
    """The ensemble of a fitted NN2 and GB of the same targets, with ``options.ensemble_networks - 1`` more
    networks (seeds after the first's) trained as the first was."""
    xs, xs_val = networks.features.transform(x), networks.features.transform(x_val)
    z = networks.targets.transform(networks.encode(times_s))
    z_val = networks.targets.transform(networks.encode(times_val_s))
    bare = replace(networks, mlp=None, log=None)
    extra = [bare.trained(xs, z, xs_val, z_val,
                          replace(options, settings=replace(options.settings, seed=options.settings.seed + i)))
             for i in range(1, options.ensemble_networks)]
    return replace(bare, kind=CostModelKind.ENS, members=(networks, *extra, trees))


def choose(candidates: Sequence[Candidate], columns: Sequence[str], x: np.ndarray, times_s: np.ndarray,
           x_val: np.ndarray, times_val_s: np.ndarray,
           options: FitOptions) -> tuple[ColumnModel, dict[str, float]]:
    """The candidate with the lowest :func:`validation_mdrae` (on the training rows when there is no validation
    row; with the ratios to the relative candidates' reference when there is one), fitted on the training rows,
    and every candidate's score by its :attr:`Candidate.label`."""
    fitted: dict[Candidate, ColumnModel] = {}
    ordered = sorted(candidates, key=lambda c: c.kind is CostModelKind.ENS)  # an ensemble reuses its members
    for candidate in ordered:
        own = replace(options, reference=candidate.reference)
        networks = fitted.get(Candidate(CostModelKind.NN2, candidate.reference))
        trees = fitted.get(Candidate(CostModelKind.GB, candidate.reference))
        if candidate.kind is CostModelKind.ENS and networks is not None and trees is not None:
            fitted[candidate] = _ensemble(networks, trees, x, times_s, x_val, times_val_s, own)
        else:
            fitted[candidate] = ColumnModel.fit(candidate.kind, columns, x, times_s, x_val, times_val_s, own)
    scored_x, scored_t = (x_val, times_val_s) if len(x_val) else (x, times_s)
    reference = next((list(columns).index(c.reference) for c in candidates if c.reference is not None), None)
    scores = {c.label: validation_mdrae(fitted[c], scored_x, scored_t, reference) for c in candidates}
    best = min(candidates, key=lambda c: (np.nan_to_num(scores[c.label], nan=np.inf), list(candidates).index(c)))
    return fitted[best], scores
