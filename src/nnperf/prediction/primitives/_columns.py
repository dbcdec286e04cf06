"""One fitted table model: feature rows -> the time of every column (a primitive or a layout transformation).

A :class:`ColumnModel` is what Mulder et al. 4.2 train twice, once for the convolution primitives and once
for the layout transformations: standardise the log features, standardise each column's log time over its
present training entries (3.3), fit Lin, NN1 or NN2 on that, and predict seconds by undoing both.

Lin is ordinary least squares per column (with an intercept) on the rows where that column is present; with
the log features it is a power law in the sizes, MACs and output pixels. Collinear features (log MACs is a
sum of other features) are fine: ``numpy.linalg.lstsq`` returns the minimum-norm solution, whose predictions
within the span of the training rows are the same as any other's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nnperf.prediction._enums import TextEnum
from nnperf.prediction.primitives._arrays import decode_array, encode_array
from nnperf.prediction.primitives._features import Standardiser
from nnperf.prediction.primitives._mlp import MlpStack, TrainingLog, TrainingSettings, train_mlps


class CostModelKind(TextEnum):
    """The model kinds of Mulder et al. 4.2 (stored and chosen on the command line by their text)."""

    LIN = "lin"
    """Linear regression (least squares per column)."""
    NN1 = "nn1"
    """One network per column."""
    NN2 = "nn2"
    """One network for all columns (the paper's default)."""

    @property
    def per_column(self) -> bool:
        """Whether the kind trains one network per column (NN1's stack of single-output networks)."""
        return self is CostModelKind.NN1


KINDS: tuple[str, ...] = CostModelKind.values()
"""The model kinds' names: linear regression, one network per column, one network for all."""


def _lstsq(x: np.ndarray, z: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """(d + 1, m) coefficients (the last row is the intercept), each column fitted on its present rows.

    With ``start`` ((d + 1, m) coefficients) each column's least-squares solution is the one nearest to its
    start, ``start + lstsq(design, z - design @ start)`` (the minimum-norm change), which is where gradient
    descent from ``start`` converges; a column without a present row keeps its start. With enough rows to
    determine the fit it is the plain least-squares fit.
    """
    design = np.hstack([x, np.ones((len(x), 1))])
    coef = np.zeros((design.shape[1], z.shape[1])) if start is None else np.array(start, dtype=float)
    for j in range(z.shape[1]):
        rows = ~np.isnan(z[:, j])
        if start is None:
            coef[:, j] = np.linalg.lstsq(design[rows], z[rows, j], rcond=None)[0]
        elif rows.any():
            residual = z[rows, j] - design[rows] @ coef[:, j]
            coef[:, j] += np.linalg.lstsq(design[rows], residual, rcond=None)[0]
    return coef


@dataclass(frozen=True, eq=False)
class ColumnModel:
    """A fitted model of ``columns`` (``counts``: present entries of each it was fitted on).

    ``features`` and ``targets`` are the standardisations of the training rows; ``coef`` holds Lin's (d + 1, m)
    coefficients, ``mlp`` the NN1 stack (one member per column) or NN2 network, ``log`` how the network's
    training went (None for Lin); ``n_rows`` and ``n_validation_rows`` count the rows fitted on and monitored.
    """

    kind: CostModelKind
    columns: tuple[str, ...]
    counts: tuple[int, ...]
    features: Standardiser
    targets: Standardiser
    n_rows: int
    n_validation_rows: int
    coef: np.ndarray | None = None
    mlp: MlpStack | None = None
    log: TrainingLog | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CostModelKind(self.kind))

    @classmethod
    def fit(cls, kind: str, columns: Sequence[str], x: np.ndarray, times_s: np.ndarray, x_val: np.ndarray,
            times_val_s: np.ndarray, settings: TrainingSettings) -> ColumnModel:
        """Fits on raw features ``x`` (n, d) and times ``times_s`` (n, m; NaN where absent); the validation rows
        (``x_val``, ``times_val_s``) only decide when a network stops (Lin does not read them)."""
        features = Standardiser.fit(x)
        log_t = np.log(times_s)
        targets = Standardiser.fit(log_t)
        xs, z = features.transform(x), targets.transform(log_t)
        counts = tuple(int(n) for n in (~np.isnan(times_s)).sum(axis=0))
        model_kind = CostModelKind(kind)
        base = {"kind": model_kind, "columns": tuple(columns), "counts": counts, "features": features,
                "targets": targets, "n_rows": len(x), "n_validation_rows": len(x_val)}
        if model_kind is CostModelKind.LIN:
            return cls(**base, coef=_lstsq(xs, z))
        stack, log = train_mlps(xs, z, features.transform(x_val), targets.transform(np.log(times_val_s)),
                                model_kind.per_column, settings)
        return cls(**base, mlp=stack, log=log)

    def fine_tuned(self, x: np.ndarray, times_s: np.ndarray, x_val: np.ndarray, times_val_s: np.ndarray,
                   settings: TrainingSettings) -> ColumnModel:
        """A copy trained further on raw features ``x`` (n, d) and times ``times_s`` (n, m over ``columns``, NaN
        where absent), early-stopping on the validation rows (Mulder et al. 4.4); this model is not changed.

        The copy keeps this model's columns and standardisations (its weights were learnt on those scales) and
        starts from its weights: a network continues with ``settings`` (``settings.hidden`` must be this
        network's), Lin moves each column with target entries to the least-squares fit nearest to its
        coefficients. ``counts``, ``n_rows``, ``n_validation_rows`` and ``log`` then describe this training.
        """
        xs, z = self.features.transform(x), self.targets.transform(np.log(times_s))
        counts = tuple(int(n) for n in (~np.isnan(times_s)).sum(axis=0))
        tuned = replace(self, counts=counts, n_rows=len(x), n_validation_rows=len(x_val))
        if self.coef is not None:
            return replace(tuned, coef=_lstsq(xs, z, start=self.coef))
        stack, log = train_mlps(xs, z, self.features.transform(x_val), self.targets.transform(np.log(times_val_s)),
                                self.kind.per_column, settings, initial=self.mlp)
        return replace(tuned, mlp=stack, log=log)

    def predict_s(self, x: np.ndarray) -> np.ndarray:
        """The (n, m) times in seconds of every column for raw feature rows ``x`` (n, d)."""
        xs = self.features.transform(x)
        if self.coef is not None:
            z = np.hstack([xs, np.ones((len(xs), 1))]) @ self.coef
        else:
            assert self.mlp is not None
            out = self.mlp.forward(xs)
            z = out[:, :, 0].T if self.kind.per_column else out[0]
        return np.exp(self.targets.inverse(z.astype(float)))

    def to_dict(self) -> dict[str, Any]:
        model = {"coef": encode_array(self.coef)} if self.coef is not None else self.mlp.to_dict()  # type: ignore[union-attr]
        return {"kind": self.kind.value, "columns": list(self.columns), "counts": list(self.counts),
                "features": self.features.to_dict(), "targets": self.targets.to_dict(), "n_rows": self.n_rows,
                "n_validation_rows": self.n_validation_rows, "model": model,
                "training": self.log.to_dict() if self.log is not None else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ColumnModel:
        if str(data["kind"]) not in KINDS:
            raise ValueError(f"stored model kind {str(data['kind'])!r}; known: {', '.join(KINDS)}")
        kind = CostModelKind(str(data["kind"]))
        columns = tuple(map(str, data["columns"]))
        model = data["model"]
        coef = decode_array(model["coef"]) if kind is CostModelKind.LIN else None
        mlp = MlpStack.from_dict(model) if kind is not CostModelKind.LIN else None
        out_width = coef.shape[1] if coef is not None else (mlp.members if kind.per_column  # type: ignore[union-attr]
                                                            else mlp.weights[-1].shape[2])  # type: ignore[union-attr]
        if out_width != len(columns):
            raise ValueError(f"a stored {kind} model predicts {out_width} columns but names {len(columns)}")
        return cls(kind, columns, tuple(map(int, data["counts"])), Standardiser.from_dict(data["features"]),
                   Standardiser.from_dict(data["targets"]), int(data["n_rows"]), int(data["n_validation_rows"]),
                   coef, mlp, TrainingLog.from_dict(data["training"]) if data["training"] is not None else None)
