"""Scoring a cost model by the two things a measurement can tell: absolute times and ratios to a reference.

:func:`evaluate` gives, for every primitive and transformation of a test set that the model predicts, the
median relative absolute error (MdRAE, Mulder et al. 3.3) of

- its time: |t^ - t| / t, what the paper reports; on a shared machine a measured time itself drifts 7-10%
  between repeats, so no model can be closer than that against one measurement;
- its ratio to the reference on the same row: |r^ - r| / r with r = t / t_ref and r^ = t^ / t^_ref. The
  dataset times a configuration's primitives in the same interleaved rounds, so these ratios repeat to about
  3%, and selecting a primitive depends on them alone.

A benchmark can print both beside the measurement's own repeat-to-repeat differences.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nnperf.prediction.primitives._model import PrimitiveCostModel
from nnperf.prediction.primitives._targets import choose_reference
from nnperf.primitives import PrimitiveDataset


@dataclass(frozen=True)
class ColumnError:
    """How one primitive or transformation scores on a test set: ``count`` test times and the MdRAE of the time
    (``absolute``); ``ratio_count`` rows where the ``reference`` was timed too and the MdRAE of the ratio to it
    there (``ratio``; None for the reference itself and for a column never timed beside it)."""

    name: str
    count: int
    absolute: float
    reference: str | None
    ratio_count: int
    ratio: float | None


@dataclass(frozen=True)
class Evaluation:
    """Every scored column's :class:`ColumnError` (primitives first, then transformations, in the test set's
    order) and the references the ratios were taken to."""

    columns: Mapping[str, ColumnError]
    reference: str | None
    transform_reference: str | None

    def median(self, names: Iterable[str] | None = None, ratio: bool = False) -> float | None:
        """The median over ``names`` (default: every column scored) of their absolute MdRAE, or of their ratio
        MdRAE (columns without one left out); None when no column has the figure."""
        chosen = self.columns if names is None else [n for n in names if n in self.columns]
        values = [self.columns[n].ratio if ratio else self.columns[n].absolute for n in chosen]
        present = [v for v in values if v is not None]
        return statistics.median(present) if present else None

    @property
    def primitives(self) -> list[str]:
        return [name for name in self.columns if "->" not in name]

    @property
    def transforms(self) -> list[str]:
        return [name for name in self.columns if "->" in name]


def _scores(names: Sequence[str], predicted: np.ndarray, rows: Sequence[Mapping[str, float]],
            reference: str | None) -> dict[str, ColumnError]:
    measured = np.array([[row.get(name, np.nan) for name in names] for row in rows], dtype=float)
    measured = measured.reshape(len(rows), len(names))
    out = {}
    ref = names.index(reference) if reference in names else None
    for j, name in enumerate(names):
        timed = ~np.isnan(measured[:, j])
        if not timed.any():
            continue
        absolute = float(np.median(np.abs(predicted[timed, j] - measured[timed, j]) / measured[timed, j]))
        ratio, paired = None, 0
        if ref is not None and j != ref:
            both = timed & ~np.isnan(measured[:, ref])
            paired = int(both.sum())
            if paired:
                r = measured[both, j] / measured[both, ref]
                r_hat = predicted[both, j] / predicted[both, ref]
                ratio = float(np.median(np.abs(r_hat - r) / r))
        out[name] = ColumnError(name, int(timed.sum()), absolute, reference, paired, ratio)
    return out


def _most_timed(names: Sequence[str], rows: Sequence[Mapping[str, float]]) -> str | None:
    counts = {name: sum(name in row for row in rows) for name in names}
    return choose_reference(list(names), counts) if names else None


def evaluate(model: PrimitiveCostModel, test: PrimitiveDataset, reference: str | None = None,
             transform_reference: str | None = None) -> Evaluation:
    """The absolute and ratio MdRAE of every column of ``test`` that ``model`` predicts (see the module docstring).

    Ratios are taken to ``reference`` (default: the model's own reference primitive, else the primitive the
    test set times on the most configurations) and, for transformations, to ``transform_reference`` (default:
    the model's, else the most timed transformation): pass the same reference to compare models of absolute
    and relative targets on the same ratios. A reference the model does not predict gives no ratios."""
    model.check_fitted()
    conv_names = [name for name in test.primitives if name in model.primitives_]
    rows = [s.times_s for s in test.conv]
    reference = reference or model.reference_ or _most_timed(conv_names, rows)
    columns: dict[str, ColumnError] = {}
    if conv_names and rows:
        predicted = model.predict([s.config for s in test.conv], conv_names, only_applicable=False)
        columns.update(_scores(conv_names, predicted, rows, reference))
    layout = model.transform_model_
    layout_names = [name for name in test.transforms if name in model.transforms_]
    layout_rows = [s.times_s for s in test.layout]
    transform_reference = (transform_reference or (layout.reference if layout is not None else None)
                           or _most_timed(layout_names, layout_rows))
    if layout_names and layout_rows:
        predicted = model.predict_transforms([(s.batch, s.c, s.im) for s in test.layout], layout_names)
        columns.update(_scores(layout_names, predicted, layout_rows, transform_reference))
    return Evaluation(columns, reference, transform_reference)
