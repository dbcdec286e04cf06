"""One fitted table model: feature rows -> the time of every column (a primitive or a layout transformation).

A :class:`ColumnModel` is what Mulder et al. 4.2 train twice, once for the convolution primitives and once
for the layout transformations: standardise the log features, encode each row's log times as targets
(absolute, or relative to a reference column: ``_targets.py``), standardise each target column over its
present training entries (3.3), fit a regressor on that, and predict seconds by undoing all three.

The regressors (:class:`CostModelKind`): Lin is ordinary least squares per column (with an intercept) on the
rows where that column is present; with the log features it is a power law in the sizes. Collinear features
(log MACs is a sum of other features) are fine: ``numpy.linalg.lstsq`` returns the minimum-norm solution,
whose predictions within the span of the training rows are the same as any other's. NN1 and NN2 are the
paper's networks (``_mlp.py``), GB boosted trees per column (``_trees.py``), and an ensemble the mean, in log
time, of NN2 networks of several seeds and the boosted trees: their errors are partly independent, so the
mean's is smaller than either's.

A fitted model may carry a :class:`~nnperf.prediction.primitives._ridge.Correction` in its target space, added
after the regressor (transfer to another platform: ``_transfer.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nnperf.prediction._enums import TextEnum
from nnperf.prediction.primitives._arrays import decode_array, encode_array
from nnperf.prediction.primitives._features import FEATURE_SETS, Standardiser
from nnperf.prediction.primitives._mlp import MlpStack, TrainingLog, TrainingSettings, train_mlps
from nnperf.prediction.primitives._ridge import DEFAULT_RESIDUALS, Correction, ResidualSettings, fit_residuals
from nnperf.prediction.primitives._targets import decode, encode, reference_index
from nnperf.prediction.primitives._trees import DEFAULT_BOOSTING, BoostedTrees, BoostingSettings


class CostModelKind(TextEnum):
    """The regressors of a cost model (stored and chosen on the command line by their text): Mulder et al.
    4.2's three, then boosted trees and an ensemble."""

    LIN = "lin"
    """Linear regression (least squares per column)."""
    NN1 = "nn1"
    """One network per column."""
    NN2 = "nn2"
    """One network for all columns (the paper's default)."""
    GB = "gb"
    """Gradient-boosted regression trees per column."""
    ENS = "ens"
    """The mean, in log time, of NN2 networks of several seeds and GB."""

    @property
    def per_column(self) -> bool:
        """Whether the kind trains one network per column (NN1's stack of single-output networks)."""
        return self is CostModelKind.NN1

    @property
    def network(self) -> bool:
        """Whether the kind is one neural network (NN1's stack counts as one)."""
        return self in (CostModelKind.NN1, CostModelKind.NN2)


KINDS: tuple[str, ...] = CostModelKind.values()
"""The model kinds' names: linear regression, one network per column, one network for all, boosted trees, the
ensemble."""


@dataclass(frozen=True)
class FitOptions:
    """How a :class:`ColumnModel` is fitted: the networks' ``settings``, the trees' ``boosting``, the
    ``reference`` column of relative targets (None: absolute), the ``feature_set`` the rows were made with
    (recorded so that predictions use the same) and the ensemble's number of networks."""

    settings: TrainingSettings
    boosting: BoostingSettings = DEFAULT_BOOSTING
    reference: str | None = None
    feature_set: int = 1
    ensemble_networks: int = 2


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
            if rows.any():
                coef[:, j] = np.linalg.lstsq(design[rows], z[rows, j], rcond=None)[0]
        elif rows.any():
            residual = z[rows, j] - design[rows] @ coef[:, j]
            coef[:, j] += np.linalg.lstsq(design[rows], residual, rcond=None)[0]
    return coef


def _counts(targets: np.ndarray) -> tuple[int, ...]:
    return tuple(int(n) for n in (~np.isnan(targets)).sum(axis=0))


@dataclass(frozen=True, eq=False)
class ColumnModel:
    """A fitted model of ``columns`` (``counts``: present targets of each it was fitted on).

    ``features`` and ``targets`` are the standardisations of the training rows' features and (encoded)
    targets; ``reference`` names the reference column of relative targets (None: absolute), ``feature_set`` the
    features the rows are made of. The regressor is one of: ``coef`` (Lin's (d + 1, m) coefficients), ``mlp``
    (the NN1 stack or the NN2 network, ``log`` how its training went), ``trees`` (GB) or ``members`` (the
    ensemble's models, sharing these standardisations). ``correction`` is added in the target space after it.
    ``n_rows`` and ``n_validation_rows`` count the rows fitted on and monitored.
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
    trees: BoostedTrees | None = None
    members: tuple[ColumnModel, ...] = ()
    reference: str | None = None
    feature_set: int = 1
    correction: Correction | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CostModelKind(self.kind))

    @property
    def reference_index(self) -> int | None:
        return reference_index(self.columns, self.reference)

    def encode(self, times_s: np.ndarray) -> np.ndarray:
        """(n, m) unstandardised targets of times ``times_s`` (n, m seconds over ``columns``; NaN where absent)."""
        return encode(np.log(times_s), self.reference_index)

    # ---------------------------------------------------------------------------------------------- fitting

    @classmethod
    def fit(cls, kind: str, columns: Sequence[str], x: np.ndarray, times_s: np.ndarray, x_val: np.ndarray,
            times_val_s: np.ndarray, options: FitOptions) -> ColumnModel:
        """Fits on raw features ``x`` (n, d) and times ``times_s`` (n, m; NaN where absent); the validation rows
        (``x_val``, ``times_val_s``) only decide when a network stops (the other kinds do not read them)."""
        ref = reference_index(columns, options.reference)
        targets_raw = encode(np.log(times_s), ref)
        features, targets = Standardiser.fit(x), Standardiser.fit(targets_raw)
        base = cls(CostModelKind(kind), tuple(columns), _counts(targets_raw), features, targets, len(x), len(x_val),
                   reference=options.reference, feature_set=options.feature_set)
        z_val = targets.transform(encode(np.log(times_val_s), ref))
        return base.trained(features.transform(x), targets.transform(targets_raw), features.transform(x_val), z_val,
                            options)

    def trained(self, xs: np.ndarray, z: np.ndarray, xs_val: np.ndarray, z_val: np.ndarray,
                options: FitOptions) -> ColumnModel:
        """This model's ``kind`` trained from scratch on standardised features and targets (its standardisations
        kept); an ensemble trains each of its members."""
        if self.kind is CostModelKind.LIN:
            return replace(self, coef=_lstsq(xs, z))
        if self.kind is CostModelKind.GB:
            return replace(self, trees=BoostedTrees.fit(xs, z, options.boosting))
        if self.kind is CostModelKind.ENS:
            networks = [replace(self, kind=CostModelKind.NN2).trained(
                xs, z, xs_val, z_val, replace(options, settings=replace(options.settings, seed=options.settings.seed + i)))
                for i in range(options.ensemble_networks)]
            trees = replace(self, kind=CostModelKind.GB).trained(xs, z, xs_val, z_val, options)
            return replace(self, members=(*networks, trees))
        stack, log = train_mlps(xs, z, xs_val, z_val, self.kind.per_column, options.settings)
        return replace(self, mlp=stack, log=log)

    # ------------------------------------------------------------------------------------------- predicting

    def _regressor(self, xs: np.ndarray) -> np.ndarray:
        """The (n, m) standardised targets the regressor itself predicts (no ensemble, no correction)."""
        if self.coef is not None:
            return np.hstack([xs, np.ones((len(xs), 1))]) @ self.coef
        if self.trees is not None:
            return self.trees.predict(xs)
        assert self.mlp is not None
        out = self.mlp.forward(xs)
        return (out[:, :, 0].T if self.kind.per_column else out[0]).astype(float)

    def encoded(self, xs: np.ndarray) -> np.ndarray:
        """The (n, m) unstandardised targets predicted for standardised feature rows ``xs``."""
        if self.members:
            out = np.mean([member.encoded(xs) for member in self.members], axis=0)
        else:
            out = self.targets.inverse(self._regressor(xs).astype(float))
        if self.correction is not None:
            out = out + self.correction.shift(xs)
        return out

    def predict_s(self, x: np.ndarray) -> np.ndarray:
        """The (n, m) times in seconds of every column for raw feature rows ``x`` (n, d)."""
        return np.exp(decode(self.encoded(self.features.transform(x)), self.reference_index))

    # ------------------------------------------------------------------------------------------- adapting

    def shifted(self, shift: np.ndarray) -> ColumnModel:
        """A copy whose targets are ``shift`` (m,) higher: each ensemble member's (or its own) target mean moves,
        so the copy predicts exp(shift) times as long in the target space."""
        if self.members:
            return replace(self, members=tuple(member.shifted(shift) for member in self.members))
        mean = tuple(map(float, np.asarray(self.targets.mean) + shift))
        return replace(self, targets=Standardiser(mean, self.targets.std))

    def fine_tuned(self, x: np.ndarray, times_s: np.ndarray, x_val: np.ndarray, times_val_s: np.ndarray,
                   settings: TrainingSettings) -> ColumnModel:
        """A copy trained further on raw features ``x`` (n, d) and times ``times_s`` (n, m over ``columns``, NaN
        where absent), early-stopping on the validation rows (Mulder et al. 4.4); this model is not changed.

        The copy keeps this model's columns and standardisations (its weights were learnt on those scales) and
        starts from its weights: a network continues with ``settings`` (``settings.hidden`` must be this
        network's), Lin moves each column with target entries to the least-squares fit nearest to its
        coefficients, boosted trees (which cannot continue) get a :meth:`corrected` residual correction, and an
        ensemble tunes each member. ``counts``, ``n_rows``, ``n_validation_rows`` and ``log`` then describe
        this training.
        """
        xs, xs_val = self.features.transform(x), self.features.transform(x_val)
        targets, targets_val = self.encode(times_s), self.encode(times_val_s)
        tuned = self._tuned(xs, targets, xs_val, targets_val, settings)
        return replace(tuned, counts=_counts(targets), n_rows=len(x), n_validation_rows=len(x_val))

    def _tuned(self, xs: np.ndarray, targets: np.ndarray, xs_val: np.ndarray, targets_val: np.ndarray,
               settings: TrainingSettings) -> ColumnModel:
        if self.correction is not None:  # the regressor learns what the correction leaves
            targets, targets_val = targets - self.correction.shift(xs), targets_val - self.correction.shift(xs_val)
        if self.members:
            return replace(self, members=tuple(m._tuned(xs, targets, xs_val, targets_val, settings)
                                               for m in self.members))
        if self.trees is not None:
            fixed = replace(self, correction=None)
            return replace(self, correction=fixed._fitted_correction(xs, targets, DEFAULT_RESIDUALS).plus(
                self.correction))
        z, z_val = self.targets.transform(targets), self.targets.transform(targets_val)
        if self.coef is not None:
            return replace(self, coef=_lstsq(xs, z, start=self.coef))
        stack, log = train_mlps(xs, z, xs_val, z_val, self.kind.per_column, settings, initial=self.mlp)
        return replace(self, mlp=stack, log=log)

    def _fitted_correction(self, xs: np.ndarray, targets: np.ndarray, settings: ResidualSettings,
                           design: np.ndarray | None = None) -> Correction:
        """The target-space correction of this model's residuals on ``targets`` (unstandardised, NaN where
        absent) over ``design`` rows (default: the standardised features).

        The residuals are fitted in log time, where a machine that is uniformly slower is one bias shared by
        every column, and the fit is then encoded: encoding is linear, so the reference's correction stays and
        every other column's becomes its own less the reference's (``_targets.py``)."""
        ref = self.reference_index
        residual = decode(targets, ref) - decode(self.encoded(xs), ref)
        fitted = fit_residuals(xs if design is None else design, residual, settings)
        return Correction(encode(fitted.bias[None], ref)[0], encode(fitted.coef, ref))

    def corrected(self, x: np.ndarray, times_s: np.ndarray, settings: ResidualSettings) -> ColumnModel:
        """A copy whose predictions are multiplied by exp(g(x)), g fitted on the log residuals of times
        ``times_s`` (n, m; NaN where absent) on raw features ``x`` (``_ridge.fit_residuals``)."""
        xs = self.features.transform(x)
        correction = self._fitted_correction(xs, self.encode(times_s), settings)
        return replace(self, correction=correction.plus(self.correction))

    def head_tuned(self, x: np.ndarray, times_s: np.ndarray, settings: ResidualSettings) -> ColumnModel:
        """A copy whose last layer alone is tuned to times ``times_s`` on raw features ``x`` (transfer with the
        hidden layers frozen): the residuals are fitted on the last hidden layer's activations with the
        regularised fit of ``_ridge.fit_residuals`` (its ridge toward the source weights is the optimum of weight
        decay toward them) and folded into the last layer; Lin folds a fit on the features into its
        coefficients; boosted trees get :meth:`corrected`'s correction; an ensemble tunes each member."""
        return self._head_tuned(self.features.transform(x), self.encode(times_s), settings)

    def _head_tuned(self, xs: np.ndarray, targets: np.ndarray, settings: ResidualSettings) -> ColumnModel:
        if self.members:
            own = targets - self.correction.shift(xs) if self.correction is not None else targets
            return replace(self, members=tuple(m._head_tuned(xs, own, settings) for m in self.members))
        if self.mlp is None:
            correction = self._fitted_correction(xs, targets, settings)
            if self.coef is None:
                return replace(self, correction=correction.plus(self.correction))
            std = np.asarray(self.targets.std)
            return replace(self, coef=self.coef + np.vstack([correction.coef, correction.bias[None]]) / std)
        hidden = self.mlp.hidden(xs).astype(float)
        correction = self._fitted_correction(xs, targets, settings, hidden if self.kind.per_column else hidden[0])
        std = np.asarray(self.targets.std)
        weight, bias = self.mlp.weights[-1].astype(float), self.mlp.biases[-1].astype(float)
        if self.kind.per_column:
            weight[:, :, 0] += (correction.coef / std).T
            bias[:, 0] += correction.bias / std
        else:
            weight[0] += correction.coef / std
            bias[0] += correction.bias / std
        return replace(self, mlp=self.mlp.with_last_layer(weight, bias))

    # ---------------------------------------------------------------------------------------------- storage

    def _model_dict(self) -> dict[str, Any]:
        if self.members:
            return {"members": [m.to_dict() for m in self.members]}
        if self.coef is not None:
            return {"coef": encode_array(self.coef)}
        if self.trees is not None:
            return self.trees.to_dict()
        assert self.mlp is not None
        return self.mlp.to_dict()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "columns": list(self.columns), "counts": list(self.counts),
                "features": self.features.to_dict(), "targets": self.targets.to_dict(), "n_rows": self.n_rows,
                "n_validation_rows": self.n_validation_rows, "model": self._model_dict(),
                "training": self.log.to_dict() if self.log is not None else None, "reference": self.reference,
                "feature_set": self.feature_set,
                "correction": self.correction.to_dict() if self.correction is not None else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ColumnModel:
        """The model ``to_dict`` stored; a document of the first models (no reference, feature set or correction)
        reads as absolute targets on feature set 1."""
        if str(data["kind"]) not in KINDS:
            raise ValueError(f"stored model kind {str(data['kind'])!r}; known: {', '.join(KINDS)}")
        kind = CostModelKind(str(data["kind"]))
        columns = tuple(map(str, data["columns"]))
        feature_set = int(data.get("feature_set", 1))
        if feature_set not in FEATURE_SETS:
            raise ValueError(f"stored feature set {feature_set}; known: {', '.join(map(str, FEATURE_SETS))}")
        model = data["model"]
        regressor: dict[str, Any] = {}
        if kind is CostModelKind.ENS:
            regressor["members"] = tuple(cls.from_dict(m) for m in model["members"])
        elif kind is CostModelKind.LIN:
            regressor["coef"] = decode_array(model["coef"])
        elif kind is CostModelKind.GB:
            regressor["trees"] = BoostedTrees.from_dict(model)
        else:
            regressor["mlp"] = MlpStack.from_dict(model)
        built = cls(kind, columns, tuple(map(int, data["counts"])), Standardiser.from_dict(data["features"]),
                    Standardiser.from_dict(data["targets"]), int(data["n_rows"]), int(data["n_validation_rows"]),
                    log=TrainingLog.from_dict(data["training"]) if data.get("training") is not None else None,
                    reference=data.get("reference"), feature_set=feature_set,
                    correction=Correction.from_dict(data["correction"]) if data.get("correction") else None,
                    **regressor)
        built._check_width()
        return built

    def _check_width(self) -> None:
        if self.members:
            widths = [len(m.columns) for m in self.members]
        elif self.coef is not None:
            widths = [self.coef.shape[1]]
        elif self.trees is not None:
            widths = [self.trees.columns]
        else:
            assert self.mlp is not None
            widths = [self.mlp.members if self.kind.per_column else self.mlp.weights[-1].shape[2]]
        if self.correction is not None:
            widths.append(len(self.correction.bias))
        for width in widths:
            if width != len(self.columns):
                raise ValueError(f"a stored {self.kind} model predicts {width} columns but names {len(self.columns)}")
        reference_index(self.columns, self.reference)
