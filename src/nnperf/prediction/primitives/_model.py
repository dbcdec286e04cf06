"""The primitive cost model of Mulder et al. (3.3, 4.2, Table 3): the time of every convolution primitive on a
layer and of every layout transformation on an activation, predicted from their shapes.

:class:`PrimitiveCostModel` is one :class:`~nnperf.prediction.Predictor` of a ``kind`` (a
:class:`CostModelKind` or its text) -- ``"lin"`` (the paper's linear baseline), ``"nn1"`` (one network per
column) or ``"nn2"`` (one network for all columns, the paper's default) -- holding two sub-models of that kind,
one for the primitives and one for the transformations, as the paper trains them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction._base import FittedOn, Predictor, PredictorCategory, register_predictor
from nnperf.prediction.primitives._columns import KINDS, ColumnModel, CostModelKind
from nnperf.prediction.primitives._features import ActivationShape, conv_features, transform_features
from nnperf.prediction.primitives._mlp import TrainingSettings
from nnperf.primitives import ConvConfig, PrimitiveDataset, get_primitive

if TYPE_CHECKING:
    from typing import Self

VALIDATION_FRACTION = 1 / 9
"""The share of the training configurations (and activations) held out for early stopping when ``fit`` is given
no validation set: the paper's 10 % validation split taken from its 90 % of training and validation."""


class DatasetTooSmallError(NnperfError):
    """A training set with too few convolution configurations (or no primitive with enough samples) to fit."""


class UnknownColumnError(NnperfError):
    """A primitive or transformation that the fitted model does not predict (the message lists those it does)."""


class NoTransformModelError(NnperfError):
    """Transformation times asked of a model fitted without (enough) transformation samples."""


@dataclass(frozen=True)
class Hyperparameters:
    """The training settings of a network kind (Mulder et al. Table 3): hidden layer widths, Adam's learning
    rate and weight decay, the mini-batch size and the early-stopping patience in optimiser steps."""

    hidden: tuple[int, ...]
    learning_rate: float
    weight_decay: float
    batch_size: int
    patience: int


PAPER_HYPERPARAMETERS: Mapping[str, Hyperparameters] = {
    CostModelKind.NN1: Hyperparameters((16, 64, 64, 16), 0.003, 0.0, 1024, 250),
    CostModelKind.NN2: Hyperparameters((128, 512, 512, 128), 0.001, 1e-5, 1024, 250),
}
"""Table 3's settings; the paper's input width 5 is ours :data:`~nnperf.prediction.primitives.CONV_FEATURES`'."""


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise NnperfError(message)


def _table(keys: Sequence[Mapping[str, float]], columns: Sequence[str], what: Sequence[str]) -> np.ndarray:
    """(n, m) times in seconds, NaN where a row has no time for a column; a time that is not a positive finite
    number is refused (its log is the target)."""
    times = np.full((len(keys), len(columns)), np.nan)
    index = {name: j for j, name in enumerate(columns)}
    for i, row in enumerate(keys):
        for name, value in row.items():
            if name in index:
                if not (np.isfinite(value) and value > 0):
                    raise NnperfError(f"the time of {name} on {what[i]} is {value!r}; times must be positive seconds")
                times[i, index[name]] = value
    return times


def _holdout(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, validation rows): round(n / 9) rows drawn at random for validation, the rest in order."""
    chosen = np.zeros(n, dtype=bool)
    chosen[rng.permutation(n)[:round(n * VALIDATION_FRACTION)]] = True
    return np.flatnonzero(~chosen), np.flatnonzero(chosen)


@register_predictor
class PrimitiveCostModel(Predictor):
    """Times (seconds) of convolution primitives and layout transformations from their shapes (Mulder et al.).

    Parameters
    ----------
    kind : {'lin', 'nn1', 'nn2'}, default 'nn2'
        Linear regression, one network per column (NN1) or one network for all columns (NN2).
    seed : int, default 0
        Seeds the validation hold-out, the initial weights and the mini-batches: a fit is repeatable.
    hidden, learning_rate, weight_decay : default None
        The networks' hidden layer widths and Adam's settings; None takes Table 3's value for ``kind``
        (:data:`PAPER_HYPERPARAMETERS`). Lin reads none of them.
    batch_size : int, default 1024
        Rows per mini-batch (Table 3).
    patience : int, default 250
        Early stopping: stop once the validation loss has not improved for this many optimiser steps (Table 3).
    max_iterations : int, default 6000
        The most optimiser steps (the paper gives none; early stopping ends a fit of its datasets well before).
    min_samples : int, default 8
        A primitive or transformation with fewer present entries in ``train`` is left out (``skipped_``).
    min_configs : int, default 20
        Fewer convolution configurations in ``train`` raise :class:`DatasetTooSmallError`.
    threads : int or None, default 1
        torch threads while training (restored afterwards); None leaves torch's setting. These networks are
        small: on a 2-core machine busy with other work, NN1 took 48 s on one thread and over 10 minutes on
        two; and a fit is repeatable only on the same number of threads.

    After ``fit``: ``primitives_`` and ``transforms_`` (the names it predicts, in the dataset's order),
    ``skipped_`` (name -> its number of training entries, for the columns left out), ``conv_model_`` and
    ``transform_model_`` (:class:`ColumnModel`; the latter None without transformation samples).
    """

    name = "primitive-cost"
    label = "primitive cost"
    description = ("Mulder et al.: time of every convolution primitive and layout transformation from the "
                   "layer shape (Lin, NN1 or NN2)")
    category = PredictorCategory.PRIMITIVE
    version = 1

    def __init__(self, kind: str = CostModelKind.NN2.value, seed: int = 0, hidden: Sequence[int] | None = None,
                 learning_rate: float | None = None, weight_decay: float | None = None, batch_size: int = 1024,
                 patience: int = 250, max_iterations: int = 6000, min_samples: int = 8,
                 min_configs: int = 20, threads: int | None = 1) -> None:
        self.kind = kind
        self.seed = seed
        self.hidden = tuple(hidden) if hidden is not None else None
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.patience = patience
        self.max_iterations = max_iterations
        self.min_samples = min_samples
        self.min_configs = min_configs
        self.threads = threads

    # ------------------------------------------------------------------------------------------- parameters

    def hyperparameters(self) -> Hyperparameters | None:
        """The networks' settings with Table 3's filling what was left None (None for Lin)."""
        if self.kind not in PAPER_HYPERPARAMETERS:
            return None
        paper = PAPER_HYPERPARAMETERS[self.kind]
        return Hyperparameters(
            self.hidden if self.hidden is not None else paper.hidden,
            self.learning_rate if self.learning_rate is not None else paper.learning_rate,
            self.weight_decay if self.weight_decay is not None else paper.weight_decay,
            self.batch_size, self.patience)

    def retuned(self) -> tuple[str, ...]:
        """The names of the settings that differ from Table 3's for this kind (empty for Lin)."""
        used = self.hyperparameters()
        if used is None:
            return ()
        paper = PAPER_HYPERPARAMETERS[self.kind]
        return tuple(name for name in Hyperparameters.__dataclass_fields__
                     if getattr(used, name) != getattr(paper, name))

    def params_to_dict(self) -> dict[str, Any]:
        params = self.get_params()
        params["hidden"] = list(self.hidden) if self.hidden is not None else None
        return params

    def _settings(self) -> TrainingSettings:
        _check(self.kind in KINDS, f"unknown primitive cost model kind {self.kind!r}; known: {', '.join(KINDS)}")
        for name in ("batch_size", "patience", "max_iterations", "min_samples", "min_configs"):
            value = getattr(self, name)
            _check(isinstance(value, int) and value >= 1, f"{name} must be a positive integer, got {value!r}")
        used = self.hyperparameters() or PAPER_HYPERPARAMETERS[CostModelKind.NN2]
        _check(len(used.hidden) > 0 and all(isinstance(h, int) and h >= 1 for h in used.hidden),
               f"hidden must be positive layer widths, got {self.hidden!r}")
        _check(used.learning_rate > 0, f"learning_rate must be positive, got {used.learning_rate!r}")
        _check(used.weight_decay >= 0, f"weight_decay must not be negative, got {used.weight_decay!r}")
        _check(self.threads is None or (isinstance(self.threads, int) and self.threads >= 1),
               f"threads must be a positive integer or None, got {self.threads!r}")
        return TrainingSettings(used.hidden, used.learning_rate, used.weight_decay, self.batch_size,
                                self.patience, self.max_iterations, self.seed, self.threads)

    # ---------------------------------------------------------------------------------------------- fitting

    def fit(self, train: PrimitiveDataset, validation: PrimitiveDataset | None = None) -> Self:
        """Fits both sub-models on ``train``; ``validation`` only decides when the networks stop.

        Without ``validation``, 1/9 of the training configurations and activations (seeded) are held out for
        early stopping and the networks train on the rest (Lin, which does not stop early, uses all).
        """
        settings = self._settings()
        n = len(train.conv)
        if n < self.min_configs:
            raise DatasetTooSmallError(f"the training set has {n} convolution configuration{'s' * (n != 1)}; "
                                       f"fitting a primitive cost model needs at least {self.min_configs} "
                                       "(min_configs)")
        counts = train.counts()
        kept = {name for name, count in counts.items() if count >= self.min_samples}
        skipped = {name: counts[name] for name in (*train.primitives, *train.transforms) if name not in kept}
        primitives = [p for p in train.primitives if p in kept]
        if not primitives:
            raise DatasetTooSmallError(f"no primitive has {self.min_samples} training times (min_samples); "
                                       f"the most any has is {max((counts[p] for p in train.primitives), default=0)}")
        rng = np.random.default_rng(self.seed)
        held_out = validation is None and self.kind != CostModelKind.LIN
        conv = self._fit_table(
            [s.config for s in train.conv], [s.times_s for s in train.conv], primitives,
            [s.config for s in validation.conv] if validation else [],
            [s.times_s for s in validation.conv] if validation else [], held_out, rng, settings, conv_features)
        transforms = [t for t in train.transforms if t in kept]
        layout = None
        if transforms:
            layout = self._fit_table(
                [(s.batch, s.c, s.im) for s in train.layout], [s.times_s for s in train.layout], transforms,
                [(s.batch, s.c, s.im) for s in validation.layout] if validation else [],
                [s.times_s for s in validation.layout] if validation else [], held_out, rng, settings,
                transform_features)
        self.conv_model_ = conv
        self.transform_model_ = layout
        self.skipped_ = skipped
        self.primitives_ = conv.columns
        self.transforms_ = layout.columns if layout is not None else ()
        return self

    def _fit_table(self, keys: list[Any], times: list[Mapping[str, float]], columns: list[str],
                   val_keys: list[Any], val_times: list[Mapping[str, float]], held_out: bool,
                   rng: np.random.Generator, settings: TrainingSettings, featurise: Callable[[Any], np.ndarray]) -> ColumnModel:
        table = _table(times, columns, [str(k) for k in keys])
        x = featurise(keys)
        if held_out:
            fit_rows, val_rows = _holdout(len(keys), rng)
            x_val, table_val = x[val_rows], table[val_rows]
            x, table = x[fit_rows], table[fit_rows]
        else:
            x_val = featurise(val_keys)
            table_val = _table(val_times, columns, [str(k) for k in val_keys])
        present = ~np.isnan(table).all(axis=1)
        present_val = ~np.isnan(table_val).all(axis=1)
        return ColumnModel.fit(self.kind, columns, x[present], table[present], x_val[present_val],
                               table_val[present_val], settings)

    # ------------------------------------------------------------------------------------------- predicting

    def _columns(self, asked: Sequence[str] | None, known: tuple[str, ...], what: str) -> list[str]:
        names = list(known) if asked is None else [asked] if isinstance(asked, str) else list(asked)
        for name in names:
            if name in known:
                continue
            if name in self.skipped_:
                raise UnknownColumnError(f"the model has no {what} {name!r}: it had {self.skipped_[name]} training "
                                         f"time(s), fewer than min_samples={self.min_samples}")
            raise UnknownColumnError(f"the model has no {what} {name!r}; it predicts: "
                                     f"{', '.join(known) or '(none)'}")
        return names

    def predict(self, configs: Sequence[ConvConfig], primitives: Sequence[str] | None = None,
                only_applicable: bool = True) -> np.ndarray:
        """The (len(configs), len(primitives)) times in seconds of ``primitives`` (default ``primitives_``, in
        that order) on every configuration, in one batched pass.

        An entry is NaN where the primitive does not apply to the configuration
        (``nnperf.primitives.get_primitive(name).applies``; a name the registry does not know raises its
        :class:`~nnperf.registry.UnknownPluginError`); ``only_applicable=False`` predicts every entry and needs
        no registry. No configuration gives a (0, len(primitives)) array. A network's times are float32
        forward passes: a configuration predicted alone may differ from the same one in a batch in the
        seventh significant digit (a one-row product sums in another order).
        """
        self.check_fitted()
        names = self._columns(primitives, self.primitives_, "primitive")
        configs = list(configs)
        if not configs:
            return np.empty((0, len(names)))
        index = {name: j for j, name in enumerate(self.primitives_)}
        times = self.conv_model_.predict_s(conv_features(configs))[:, [index[n] for n in names]]
        if only_applicable:
            found = [get_primitive(n) for n in names]
            applies = np.array([[p.applies(c) for p in found] for c in configs], dtype=bool)
            times[~applies] = np.nan
        return times

    def predict_transforms(self, shapes: Sequence[ActivationShape], transforms: Sequence[str] | None = None
                           ) -> np.ndarray:
        """The (len(shapes), len(transforms)) times in seconds of ``transforms`` (default ``transforms_``) on
        activations (batch, c, (h, w)); an identity (``"hwc->hwc"``) costs 0 (Mulder et al. 3.2.2)."""
        self.check_fitted()
        if self.transform_model_ is None:
            left = {t: n for t, n in self.skipped_.items() if "->" in t}
            why = (f"every transformation had fewer than min_samples={self.min_samples} training times "
                   f"({', '.join(f'{t}: {n}' for t, n in left.items())})" if left else
                   "its training set held no layout transformation times")
            raise NoTransformModelError(f"this primitive cost model cannot predict transformations: {why}")
        asked = None if transforms is None else [transforms] if isinstance(transforms, str) else list(transforms)
        identities = {t for t in asked or () if t.count("->") == 1 and len(set(t.split("->"))) == 1}
        names = self._columns(None if asked is None else [t for t in asked if t not in identities],
                              self.transforms_, "transformation")
        shapes = list(shapes)
        columns = asked if asked is not None else names
        out = np.zeros((len(shapes), len(columns)))
        if not shapes or not names:
            return out
        index = {name: j for j, name in enumerate(self.transforms_)}
        times = self.transform_model_.predict_s(transform_features(shapes))
        for j, name in enumerate(columns):
            if name not in identities:
                out[:, j] = times[:, index[name]]
        return out

    # ------------------------------------------------------------------------------------------- describing

    def summary(self) -> str:
        """The kind, and how many primitives and transformations it predicts."""
        self.check_fitted()
        return (f"{self.kind}: {len(self.primitives_)} primitive(s), {len(self.transforms_)} "
                f"transformation(s), {len(self.skipped_)} left out")

    def fitted_on(self) -> FittedOn:
        self.check_fitted()
        return FittedOn(self.conv_model_.n_rows, "convolution configurations")

    # ---------------------------------------------------------------------------------------------- storage

    def fitted_state(self) -> dict[str, Any]:
        return {"primitives": self.conv_model_.to_dict(),
                "transforms": self.transform_model_.to_dict() if self.transform_model_ is not None else None,
                "skipped": dict(self.skipped_)}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.conv_model_ = ColumnModel.from_dict(state["primitives"])
        self.transform_model_ = (ColumnModel.from_dict(state["transforms"]) if state["transforms"] is not None
                                 else None)
        self.skipped_ = {str(k): int(v) for k, v in state["skipped"].items()}
        self.primitives_ = self.conv_model_.columns
        self.transforms_ = self.transform_model_.columns if self.transform_model_ is not None else ()
