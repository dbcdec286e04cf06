"""The primitive cost model of Mulder et al. (3.3, 4.2, Table 3): the time of every convolution primitive on a
layer and of every layout transformation on an activation, predicted from their shapes.

:class:`PrimitiveCostModel` is one :class:`~nnperf.prediction.Predictor` of a ``kind`` (a
:class:`CostModelKind` or its text) -- ``"lin"`` (the paper's linear baseline), ``"nn1"`` (one network per
column), ``"nn2"`` (one network for all columns, the paper's default), ``"gb"`` (boosted trees per column),
``"ens"`` (NN2 networks and GB averaged) or ``"auto"`` (the best of several on validation data, ``_auto.py``)
-- learning ``targets`` that are absolute log times (the paper's) or relative to a reference primitive
(``_targets.py``), holding two sub-models, one for the primitives and one for the transformations, as the
paper trains them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction._base import FittedOn, Predictor, PredictorCategory, register_predictor
from nnperf.prediction.primitives._auto import AUTO, AUTO_KINDS, Candidate, choose
from nnperf.prediction.primitives._columns import KINDS, ColumnModel, CostModelKind, FitOptions
from nnperf.prediction.primitives._features import (
    FEATURE_SETS,
    ActivationShape,
    conv_features,
    transform_features,
)
from nnperf.prediction.primitives._mlp import TrainingSettings
from nnperf.prediction.primitives._targets import TARGET_KINDS, TargetKind, choose_reference
from nnperf.prediction.primitives._trees import BoostingSettings
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
    kind : {'lin', 'nn1', 'nn2', 'gb', 'ens', 'auto'}, default 'nn2'
        Linear regression, one network per column (NN1), one network for all columns (NN2), boosted trees per
        column, the ensemble of NN2 networks and boosted trees, or the best of lin, nn2, gb and ens on the
        validation rows (``selection_`` keeps every candidate's score: the validation MdRAE of the times, plus
        that of the ratios to the reference when relative targets are among the candidates; ``_auto.py``).
    seed : int, default 0
        Seeds the validation hold-out, the initial weights and the mini-batches: a fit is repeatable.
    hidden, learning_rate, weight_decay : default None
        The networks' hidden layer widths and Adam's settings; None takes Table 3's value for ``kind`` (NN2's
        for the ensemble and ``auto``; :data:`PAPER_HYPERPARAMETERS`). Lin and GB read none of them.
    batch_size : int, default 1024
        Rows per mini-batch (Table 3).
    patience : int, default 250
        Early stopping: stop once the validation loss has not improved for this many optimiser steps (Table 3).
    max_iterations : int, default 6000
        The most optimiser steps (the paper gives none; early stopping ends a fit of its datasets well before).
    min_samples : int, default 8
        A primitive or transformation with fewer present entries in ``train`` (for relative targets: fewer
        entries on rows where the reference was timed too) is left out (``skipped_``).
    min_configs : int, default 20
        Fewer convolution configurations in ``train`` raise :class:`DatasetTooSmallError`.
    threads : int or None, default 1
        torch threads while training (restored afterwards); None leaves torch's setting. These networks are
        small: on a 2-core machine busy with other work, NN1 took 48 s on one thread and over 10 minutes on
        two; and a fit is repeatable only on the same number of threads.
    targets : {'absolute', 'relative', 'auto'}, default 'absolute'
        Learn each column's log time (Mulder et al.), or the reference primitive's log time and every other
        primitive's log ratio to it on the same configuration (the transformations likewise, relative to the
        transformation timed on the most activations), or choose on the validation rows.
    reference : str or None, default None
        The reference primitive of relative targets; None takes the primitive timed on the most training
        configurations (the first in the dataset's order on a tie). A name that is not a kept primitive of the
        training set raises an error.
    feature_set : {1, 2}, default 2
        The features (``_features.py``): set 1, the first models' 16 (5 for a transformation), or set 2, 27
        (8) with the bytes moved, GEMM sizes, a depthwise flag and the blocked layouts' padding.
    n_trees, tree_depth, tree_learning_rate : default 300, 4, 0.05
        The boosted trees of GB and the ensemble (``_trees.BoostingSettings``).
    ensemble_networks : int, default 2
        The ensemble's NN2 networks (seeds ``seed``, ``seed + 1``, ...), averaged with one GB.

    After ``fit``: ``primitives_`` and ``transforms_`` (the names it predicts, in the dataset's order),
    ``skipped_`` (name -> its number of training entries, for the columns left out), ``conv_model_`` and
    ``transform_model_`` (:class:`ColumnModel`; the latter None without transformation samples: their
    ``kind`` and ``reference`` say what was fitted), ``selection_`` (with ``auto``: "primitives" and
    "transforms" -> candidate label -> validation score; else empty) and ``reference_`` (the primitives'
    reference, None for absolute targets).
    """

    name = "primitive-cost"
    label = "primitive cost"
    description = ("Mulder et al.: time of every convolution primitive and layout transformation from the "
                   "layer shape (Lin, NN1, NN2, boosted trees or their ensemble; absolute or relative times)")
    category = PredictorCategory.PRIMITIVE
    version = 2

    def __init__(self, kind: str = CostModelKind.NN2.value, seed: int = 0, hidden: Sequence[int] | None = None,
                 learning_rate: float | None = None, weight_decay: float | None = None, batch_size: int = 1024,
                 patience: int = 250, max_iterations: int = 6000, min_samples: int = 8,
                 min_configs: int = 20, threads: int | None = 1, targets: str = TargetKind.ABSOLUTE.value,
                 reference: str | None = None, feature_set: int = 2, n_trees: int = 300, tree_depth: int = 4,
                 tree_learning_rate: float = 0.05, ensemble_networks: int = 2) -> None:
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
        self.targets = targets
        self.reference = reference
        self.feature_set = feature_set
        self.n_trees = n_trees
        self.tree_depth = tree_depth
        self.tree_learning_rate = tree_learning_rate
        self.ensemble_networks = ensemble_networks

    # ------------------------------------------------------------------------------------------- parameters

    def _network_kind(self) -> str | None:
        """Whose Table 3 settings the networks take: NN1's, NN2's (for NN2, the ensemble and auto), or None."""
        if self.kind in (CostModelKind.NN1, CostModelKind.NN2):
            return str(self.kind)
        return CostModelKind.NN2.value if self.kind in (CostModelKind.ENS, AUTO) else None

    def hyperparameters(self) -> Hyperparameters | None:
        """The networks' settings with Table 3's filling what was left None (None for Lin and GB)."""
        network = self._network_kind()
        if network is None:
            return None
        paper = PAPER_HYPERPARAMETERS[network]
        return Hyperparameters(
            self.hidden if self.hidden is not None else paper.hidden,
            self.learning_rate if self.learning_rate is not None else paper.learning_rate,
            self.weight_decay if self.weight_decay is not None else paper.weight_decay,
            self.batch_size, self.patience)

    def retuned(self) -> tuple[str, ...]:
        """The names of the settings that differ from Table 3's for this kind (empty for Lin and GB)."""
        used = self.hyperparameters()
        if used is None:
            return ()
        paper = PAPER_HYPERPARAMETERS[self._network_kind()]  # type: ignore[index]
        return tuple(name for name in Hyperparameters.__dataclass_fields__
                     if getattr(used, name) != getattr(paper, name))

    def params_to_dict(self) -> dict[str, Any]:
        params = self.get_params()
        params["hidden"] = list(self.hidden) if self.hidden is not None else None
        return params

    def _check_params(self) -> None:
        _check(self.kind in (*KINDS, AUTO), f"unknown primitive cost model kind {self.kind!r}; known: "
                                            f"{', '.join((*KINDS, AUTO))}")
        _check(self.targets in (*TARGET_KINDS, AUTO), f"unknown targets {self.targets!r}; known: "
                                                      f"{', '.join((*TARGET_KINDS, AUTO))}")
        _check(self.feature_set in FEATURE_SETS, f"unknown feature_set {self.feature_set!r}; known: "
                                                 f"{', '.join(map(str, FEATURE_SETS))}")
        for name in ("batch_size", "patience", "max_iterations", "min_samples", "min_configs", "n_trees",
                     "tree_depth", "ensemble_networks"):
            value = getattr(self, name)
            _check(isinstance(value, int) and value >= 1, f"{name} must be a positive integer, got {value!r}")
        _check(self.tree_learning_rate > 0, f"tree_learning_rate must be positive, got {self.tree_learning_rate!r}")
        _check(self.threads is None or (isinstance(self.threads, int) and self.threads >= 1),
               f"threads must be a positive integer or None, got {self.threads!r}")

    def _settings(self) -> TrainingSettings:
        self._check_params()
        used = self.hyperparameters() or PAPER_HYPERPARAMETERS[CostModelKind.NN2]
        _check(len(used.hidden) > 0 and all(isinstance(h, int) and h >= 1 for h in used.hidden),
               f"hidden must be positive layer widths, got {self.hidden!r}")
        _check(used.learning_rate > 0, f"learning_rate must be positive, got {used.learning_rate!r}")
        _check(used.weight_decay >= 0, f"weight_decay must not be negative, got {used.weight_decay!r}")
        return TrainingSettings(used.hidden, used.learning_rate, used.weight_decay, self.batch_size,
                                self.patience, self.max_iterations, self.seed, self.threads)

    def _options(self) -> FitOptions:
        return FitOptions(self._settings(), BoostingSettings(self.n_trees, self.tree_depth, self.tree_learning_rate,
                                                             seed=self.seed),
                          feature_set=self.feature_set, ensemble_networks=self.ensemble_networks)

    def _candidates(self, reference: str | None) -> list[Candidate]:
        """What is fitted: one candidate, or ``auto``'s kinds and/or both targets (``reference``: the reference
        relative targets would use)."""
        kinds = list(AUTO_KINDS) if self.kind == AUTO else [CostModelKind(self.kind)]
        targets = {TargetKind.ABSOLUTE.value: [None], TargetKind.RELATIVE.value: [reference],
                   AUTO: [None, reference]}[self.targets]
        return [Candidate(kind, ref) for ref in targets for kind in kinds]

    # ---------------------------------------------------------------------------------------------- fitting

    def _kept(self, rows: Sequence[Mapping[str, float]], names: Sequence[str],
              preferred: str | None) -> tuple[list[str], str | None, dict[str, int]]:
        """(the columns fitted, their reference (None for absolute targets), the columns left out with their
        counts): a column needs ``min_samples`` times, on rows where the reference was timed for relative
        targets (the reference only its own)."""
        counts = {name: sum(name in row for row in rows) for name in names}
        kept = [name for name in names if counts[name] >= self.min_samples]
        reference = None
        if self.targets != TargetKind.ABSOLUTE and kept:
            if preferred is not None and preferred not in kept:
                raise NnperfError(f"the reference primitive {preferred!r} is not among the {len(kept)} primitives "
                                  f"with {self.min_samples} training times (min_samples): {', '.join(kept)}")
            reference = choose_reference(kept, counts, preferred)
            counts = {name: counts[name] if name == reference else sum(name in row and reference in row
                                                                        for row in rows) for name in names}
            kept = [name for name in kept if counts[name] >= self.min_samples]
        return kept, reference, {name: counts[name] for name in names if name not in kept}

    def fit(self, train: PrimitiveDataset, validation: PrimitiveDataset | None = None) -> Self:
        """Fits both sub-models on ``train``; ``validation`` decides when the networks stop and, with ``auto``,
        which candidate is kept.

        Without ``validation``, 1/9 of the training configurations and activations (seeded) are held out for
        those and the rest is fitted on (Lin and GB alone, which need neither, use all).
        """
        options = self._options()
        n = len(train.conv)
        if n < self.min_configs:
            raise DatasetTooSmallError(f"the training set has {n} convolution configuration{'s' * (n != 1)}; "
                                       f"fitting a primitive cost model needs at least {self.min_configs} "
                                       "(min_configs)")
        primitives, reference, skipped = self._kept([s.times_s for s in train.conv], train.primitives,
                                                    self.reference)
        if not primitives:
            counts = train.counts()
            raise DatasetTooSmallError(f"no primitive has {self.min_samples} training times (min_samples); "
                                       f"the most any has is {max((counts[p] for p in train.primitives), default=0)}")
        transforms, layout_reference, skipped_layout = self._kept([s.times_s for s in train.layout],
                                                                  train.transforms, None)
        rng = np.random.default_rng(self.seed)
        held_out = validation is None and self.kind not in (CostModelKind.LIN, CostModelKind.GB)
        conv, conv_scores = self._fit_table(
            [s.config for s in train.conv], [s.times_s for s in train.conv], primitives, reference,
            [s.config for s in validation.conv] if validation else [],
            [s.times_s for s in validation.conv] if validation else [], held_out, rng, options,
            lambda keys: conv_features(keys, self.feature_set))
        layout, layout_scores = None, {}
        if transforms:
            layout, layout_scores = self._fit_table(
                [(s.batch, s.c, s.im) for s in train.layout], [s.times_s for s in train.layout], transforms,
                layout_reference, [(s.batch, s.c, s.im) for s in validation.layout] if validation else [],
                [s.times_s for s in validation.layout] if validation else [], held_out, rng, options,
                lambda keys: transform_features(keys, self.feature_set))
        self.conv_model_ = conv
        self.transform_model_ = layout
        self.skipped_ = {name: count for name, count in {**skipped, **skipped_layout}.items()}
        self.selection_ = {"primitives": conv_scores, "transforms": layout_scores} if conv_scores else {}
        self._set_names()
        return self

    def _fit_table(self, keys: list[Any], times: list[Mapping[str, float]], columns: list[str], reference: str | None,
                   val_keys: list[Any], val_times: list[Mapping[str, float]], held_out: bool,
                   rng: np.random.Generator, options: FitOptions,
                   featurise: Callable[[Any], np.ndarray]) -> tuple[ColumnModel, dict[str, float]]:
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
        fitted = (x[present], table[present], x_val[present_val], table_val[present_val])
        candidates = self._candidates(reference)
        if len(candidates) == 1:
            only = candidates[0]
            model = ColumnModel.fit(only.kind, columns, *fitted, replace(options, reference=only.reference))
            return model, {}
        return choose(candidates, columns, *fitted, options)

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
        features = conv_features(configs, self.conv_model_.feature_set)
        times = self.conv_model_.predict_s(features)[:, [index[n] for n in names]]
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
        times = self.transform_model_.predict_s(transform_features(shapes, self.transform_model_.feature_set))
        for j, name in enumerate(columns):
            if name not in identities:
                out[:, j] = times[:, index[name]]
        return out

    # ------------------------------------------------------------------------------------------- describing

    def summary(self) -> str:
        """The kind fitted (and its targets), and how many primitives and transformations it predicts."""
        self.check_fitted()
        targets = f"relative to {self.reference_}" if self.reference_ is not None else "absolute"
        return (f"{self.conv_model_.kind} ({targets}): {len(self.primitives_)} primitive(s), {len(self.transforms_)} "
                f"transformation(s), {len(self.skipped_)} left out")

    def fitted_on(self) -> FittedOn:
        self.check_fitted()
        return FittedOn(self.conv_model_.n_rows, "convolution configurations")

    # ---------------------------------------------------------------------------------------------- storage

    def _set_names(self) -> None:
        self.primitives_ = self.conv_model_.columns
        self.transforms_ = self.transform_model_.columns if self.transform_model_ is not None else ()
        self.reference_ = self.conv_model_.reference

    def fitted_state(self) -> dict[str, Any]:
        return {"primitives": self.conv_model_.to_dict(),
                "transforms": self.transform_model_.to_dict() if self.transform_model_ is not None else None,
                "skipped": dict(self.skipped_), "selection": self.selection_}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.conv_model_ = ColumnModel.from_dict(state["primitives"])
        self.transform_model_ = (ColumnModel.from_dict(state["transforms"]) if state["transforms"] is not None
                                 else None)
        self.skipped_ = {str(k): int(v) for k, v in state["skipped"].items()}
        self.selection_ = {str(table): {str(k): float(v) for k, v in scores.items()}
                           for table, scores in state["selection"].items()}
        self._set_names()

    @classmethod
    def migrated_state(cls, state_version: object, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """Version 1 (Lin, NN1 and NN2 of absolute times on feature set 1) reads as version 2: its sub-models
        already read so (``ColumnModel.from_dict``), and it chose no candidate."""
        if state_version == 1:
            return {**state, "selection": {}}
        return None
