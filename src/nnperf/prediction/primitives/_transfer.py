"""Moving a primitive cost model to another platform (Mulder et al. 4.4 and 5.3).

The paper compares four ways to predict a target platform's times with a model trained on a source platform:

- direct use of the source model;
- :func:`factor_corrected`: one multiplicative factor per primitive (and here per layout transformation) from
  a small target sample (the paper's 1 %, about 25 times per primitive), ``t_target ~ factor * t_source``;
- :func:`fine_tuned`: the source networks trained further on 0.1-25 % of the target's training data with the
  learning rate lowered 10x (Table 3's note), early stopping as before;
- :func:`from_scratch`: a new model trained on the same target sample, which the paper expects to do worse.

Two more that work from a single configuration, where fine-tuning every layer has nothing to stop it early on
(``_ridge.py`` fits both in closed form, choosing their regularisation by leave-one-out error):

- :func:`residual_corrected`: the source model's times times exp(g(x)), g fitted on the sample's log residuals:
  what every column of a row shares (the row's level) and each column's part against it, each a median bias
  and a ridge on the features, or no change where leaving a row out says the fit would not help;
- :func:`fine_tuned_frozen`: the networks' last layer alone tuned toward the sample, regularised toward the
  source weights (weight decay toward them, at its optimum), the hidden layers frozen.

:func:`subsample` draws those random fractions (the paper repeats each fraction over 25 subsets) and
:func:`family_subset` keeps one primitive family, for fine-tuning on one family and scoring on every family
(Table 5). Every result is a plain :class:`PrimitiveCostModel`: it predicts seconds, is stored as the same
JSON document and goes wherever a fitted model goes (``mdrae``, ``nnperf select``); so they also compose:
``fine_tuned(factor_corrected(model, sample), sample)`` starts the networks from the rescaled model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction.primitives._columns import ColumnModel, CostModelKind
from nnperf.prediction.primitives._features import conv_features, transform_features
from nnperf.prediction.primitives._mlp import TrainingSettings
from nnperf.prediction.primitives._model import DatasetTooSmallError, PrimitiveCostModel, _holdout, _table
from nnperf.prediction.primitives._ridge import DEFAULT_RESIDUALS, ResidualSettings
from nnperf.prediction.primitives._targets import encode
from nnperf.primitives import Family, PrimitiveDataset, get_primitive

CORRECTION_STATISTICS = ("median", "geometric-mean")
"""How :func:`correction_factors` summarises a column's measured/predicted ratios."""


class NoSharedColumnsError(NnperfError):
    """A target sample with no time of any primitive or transformation that the source model predicts."""


# ------------------------------------------------------------------------------------------------ sampling

def _draw(n: int, fraction: float, rng: np.random.Generator) -> list[int]:
    """round(fraction * n) row numbers (at least one when fraction > 0 and n > 0), drawn without replacement
    and returned in their original order."""
    k = 0 if fraction == 0 or n == 0 else max(1, round(fraction * n))
    return sorted(int(i) for i in rng.permutation(n)[:k])


def subsample(dataset: PrimitiveDataset, fraction: float, seed: int = 0) -> PrimitiveDataset:
    """A random ``fraction`` of the configurations and, separately, of the activations of ``dataset``
    (Mulder et al. 4.4: 0.1 %, 1 %, 2.5 %, 5 %, 10 % and 25 % of the training set, drawn uniformly at random).

    round(fraction * n) rows of each (at least one where the fraction is above 0 and there is one), kept in
    the dataset's order; the columns are those that keep a time. The same dataset, fraction and seed give the
    same subset; different seeds give the paper's repeated random subsets.
    """
    fraction = float(fraction)
    if not 0 <= fraction <= 1:
        raise NnperfError(f"a subsample fraction must be between 0 and 1, got {fraction!r}")
    rng = np.random.default_rng(seed)
    conv = [dataset.conv[i] for i in _draw(len(dataset.conv), fraction, rng)]
    layout = [dataset.layout[i] for i in _draw(len(dataset.layout), fraction, rng)]
    return dataset.of_rows(conv, layout)


def family_subset(dataset: PrimitiveDataset, family: Family | str) -> PrimitiveDataset:
    """The times of ``family``'s primitives only (Mulder et al. Table 5's fine-tuning on one family): each
    configuration keeps those times (one without any is dropped) and no layout transformation is kept.
    Every primitive name must be in the primitive registry (it tells the family)."""
    family = Family(family)
    names = {p for p in dataset.primitives if get_primitive(p).family is family}
    conv = [replace(s, times_s={n: t for n, t in s.times_s.items() if n in names}) for s in dataset.conv]
    return dataset.of_rows([s for s in conv if s.times_s], [])


# ------------------------------------------------------------------------------------------------ helpers

def _check_sample(sample: PrimitiveDataset, what: str) -> None:
    if sample.n_samples == 0:
        raise DatasetTooSmallError(f"the {what} holds no times: it has {len(sample.conv)} configuration(s) and "
                                   f"{len(sample.layout)} activation(s) without a measured time")


def _shared(model: PrimitiveCostModel, sample: PrimitiveDataset) -> tuple[list[str], list[str]]:
    """The model's primitives and transformations that have a time in ``sample`` (the model's order)."""
    counts = sample.counts()
    primitives = [p for p in model.primitives_ if counts.get(p, 0) > 0]
    transforms = [t for t in model.transforms_ if counts.get(t, 0) > 0]
    if not primitives and not transforms:
        known = ", ".join((*model.primitives_, *model.transforms_))
        have = ", ".join(name for name, n in counts.items() if n > 0)
        raise NoSharedColumnsError(f"the target sample times none of what the source model predicts; "
                                   f"it times: {have}; the model predicts: {known}")
    return primitives, transforms


def _copy(model: PrimitiveCostModel, conv: ColumnModel, layout: ColumnModel | None,
          **params: Any) -> PrimitiveCostModel:
    """A new fitted model: ``model``'s parameters (``params`` changing some) and state with these sub-models."""
    out = PrimitiveCostModel(**{**model.get_params(), **params})
    state = model.fitted_state()
    state["primitives"] = conv.to_dict()
    state["transforms"] = layout.to_dict() if layout is not None else None
    out.load_fitted_state(state)
    return out


# --------------------------------------------------------------------------------------- factor correction

def correction_factors(model: PrimitiveCostModel, target_sample: PrimitiveDataset,
                       statistic: str = "median") -> dict[str, float]:
    """Per primitive and transformation of ``model``, the factor that scales its predictions to the target
    platform (Mulder et al. 4.4, "factor-corrected"): the median of measured / predicted over the target
    sample's times of that column (or their geometric mean, ``statistic="geometric-mean"``); 1 for a column
    without a target time.

    The median is the default: a factor from about 25 times (the paper's 1 %) should not follow one noisy
    measurement or one configuration the source model gets badly wrong, and the models are scored by a median
    (MdRAE). The geometric mean, exp(mean log ratio), is the least-squares factor in log time, the scale the
    models are trained on; on noiseless data both give the same factor.
    """
    model.check_fitted()
    if statistic not in CORRECTION_STATISTICS:
        raise NnperfError(f"unknown correction statistic {statistic!r}; known: {', '.join(CORRECTION_STATISTICS)}")
    _check_sample(target_sample, "target sample")
    primitives, transforms = _shared(model, target_sample)
    summarise: Callable[[np.ndarray], float] = (
        (lambda r: float(np.median(r))) if statistic == "median" else (lambda r: float(np.exp(np.log(r).mean()))))
    factors = {name: 1.0 for name in (*model.primitives_, *model.transforms_)}
    tables = [(primitives, [s.times_s for s in target_sample.conv],
               lambda names: model.predict([s.config for s in target_sample.conv], names, only_applicable=False)),
              (transforms, [s.times_s for s in target_sample.layout],
               lambda names: model.predict_transforms([(s.batch, s.c, s.im) for s in target_sample.layout], names))]
    for names, rows, predict in tables:
        if not names:
            continue
        predicted = predict(names)
        for j, name in enumerate(names):
            ratios = np.array([row[name] / predicted[i, j] for i, row in enumerate(rows) if name in row])
            factors[name] = summarise(ratios)
    return factors


def _scaled(column_model: ColumnModel, factors: Mapping[str, float]) -> ColumnModel:
    """The sub-model whose every column predicts ``factor`` times as long: a model predicts
    exp(decode(z * std + mean)), so adding the encoded ln(factors) (for absolute targets ln(factor) itself; for
    relative ones the reference's ln(factor) and every other column's ln(factor / reference's factor)) to the
    target means multiplies each column's time by its factor."""
    log_factors = np.log([[factors.get(name, 1.0) for name in column_model.columns]])
    return column_model.shifted(encode(log_factors, column_model.reference_index)[0])


def factor_corrected(model: PrimitiveCostModel, target_sample: PrimitiveDataset,
                     statistic: str = "median") -> PrimitiveCostModel:
    """A copy of ``model`` whose every primitive and transformation predicts its
    :func:`correction_factors` times as long (Mulder et al. 4.4 and 5.3, "Factor Intel").

    The copy is an ordinary :class:`PrimitiveCostModel` of the same kind, parameters and weights: each factor
    is folded into the column's target standardisation (ln(factor) added to its mean), so it predicts and is
    stored as any other model, and ``exp(copy.conv_model_.targets.mean - model.conv_model_.targets.mean)``
    gives the factors back. ``model`` is not changed. An empty ``target_sample`` raises
    :class:`DatasetTooSmallError`; one timing nothing the model predicts, :class:`NoSharedColumnsError`.
    """
    factors = correction_factors(model, target_sample, statistic)
    layout = model.transform_model_
    return _copy(model, _scaled(model.conv_model_, factors), _scaled(layout, factors) if layout is not None else None)


# ------------------------------------------------------------------------------------------------ fine-tuning

def _tuned(column_model: ColumnModel, keys: list[Any], times: list[Mapping[str, float]], val_keys: list[Any] | None,
           val_times: list[Mapping[str, float]], rng: np.random.Generator, settings: TrainingSettings,
           featurise: Callable[[Any], np.ndarray]) -> ColumnModel:
    """``column_model`` trained further on these rows (their times of its columns; other names are ignored),
    early-stopping on the validation rows, or on 1/9 of these rows drawn from ``rng`` when ``val_keys`` is None
    (a network's, as :meth:`PrimitiveCostModel.fit` does)."""
    columns = list(column_model.columns)
    table = _table(times, columns, [str(k) for k in keys])
    present = ~np.isnan(table).all(axis=1)
    x, table = featurise([k for k, p in zip(keys, present) if p]), table[present]
    if val_keys is None:
        if column_model.kind in (CostModelKind.LIN, CostModelKind.GB):
            x_val, table_val = x[:0], table[:0]
        else:
            fit_rows, val_rows = _holdout(len(x), rng)
            x_val, table_val, x, table = x[val_rows], table[val_rows], x[fit_rows], table[fit_rows]
    else:
        table_val = _table(val_times, columns, [str(k) for k in val_keys])
        present_val = ~np.isnan(table_val).all(axis=1)
        x_val, table_val = featurise([k for k, p in zip(val_keys, present_val) if p]), table_val[present_val]
    return column_model.fine_tuned(x, table, x_val, table_val, settings)


def fine_tuned(model: PrimitiveCostModel, target_train: PrimitiveDataset,
               target_validation: PrimitiveDataset | None = None, learning_rate_factor: float = 0.1, seed: int = 0,
               *, patience: int | None = None, max_iterations: int | None = None,
               batch_size: int | None = None) -> PrimitiveCostModel:
    """A copy of ``model`` trained further on the target platform's times (Mulder et al. 4.4 and 5.3).

    NN1 and NN2 continue from the source weights with Adam at ``learning_rate_factor`` (default 0.1: Table 3's
    "for fine tuning the learning rate was lowered by a factor of 10") times the source's learning rate, and
    stop early as a fit does: on ``target_validation``, or on 1/9 of ``target_train``'s configurations and
    activations held out with ``seed`` when it is None. Each network keeps its best weights, which may be the
    source's own (a fine-tuned model is never worse than the source on the monitored rows). Lin has no
    training to continue: each column with target times moves to the least-squares fit on them nearest to its
    source coefficients (the plain refit once the target determines it) on all of ``target_train``.

    The features and log times stay standardised with the *source's* statistics: the weights were learnt on
    that scale, and refitting it would change the function the networks start from (on a 0.1 % sample the
    statistics themselves would be noise); a platform that is uniformly slower only shifts the standardised
    targets, which the last layer's biases absorb.

    Only the columns ``model`` predicts are trained (a network cannot grow an output); target times of other
    names are ignored. An NN1 network or Lin column without a target time keeps its source weights exactly; NN2
    shares its layers, so every column moves (Table 5's question). A sub-model (primitives or transformations)
    with no target time is kept as it is. ``patience``, ``max_iterations`` and ``batch_size`` default to the
    source's. The copy's parameters are the source's with this ``seed``, the lowered ``learning_rate`` and
    these overrides; ``model`` is not changed. Repeatable for a seed (on the same number of threads).
    """
    model.check_fitted()
    factor = float(learning_rate_factor)
    if not (np.isfinite(factor) and factor > 0):
        raise NnperfError(f"learning_rate_factor must be a positive number, got {learning_rate_factor!r}")
    _check_sample(target_train, "target training sample")
    primitives, transforms = _shared(model, target_train)
    params: dict[str, Any] = {"seed": seed}
    used = model.hyperparameters()
    if used is not None:
        params["learning_rate"] = used.learning_rate * factor
    for name, value in (("patience", patience), ("max_iterations", max_iterations), ("batch_size", batch_size)):
        if value is not None:
            params[name] = value
    settings = PrimitiveCostModel(**{**model.get_params(), **params})._settings()
    rng = np.random.default_rng(seed)
    validation = target_validation
    conv, layout = model.conv_model_, model.transform_model_
    if primitives:
        conv_set = conv.feature_set
        conv = _tuned(conv, [s.config for s in target_train.conv], [s.times_s for s in target_train.conv],
                      [s.config for s in validation.conv] if validation is not None else None,
                      [s.times_s for s in validation.conv] if validation is not None else [], rng, settings,
                      lambda keys: conv_features(keys, conv_set))
    if transforms and layout is not None:
        layout_set = layout.feature_set
        layout = _tuned(layout, [(s.batch, s.c, s.im) for s in target_train.layout],
                        [s.times_s for s in target_train.layout],
                        [(s.batch, s.c, s.im) for s in validation.layout] if validation is not None else None,
                        [s.times_s for s in validation.layout] if validation is not None else [], rng, settings,
                        lambda keys: transform_features(keys, layout_set))
    return _copy(model, conv, layout, **params)


# ------------------------------------------------------------------------------- corrections for small samples

def _adapted(model: PrimitiveCostModel, target_sample: PrimitiveDataset,
             adapt: Callable[[ColumnModel, np.ndarray, np.ndarray], ColumnModel]) -> PrimitiveCostModel:
    """A copy of ``model`` whose sub-models with a time in ``target_sample`` are ``adapt(sub-model, raw
    features, times)`` of the sample's rows with a time of theirs (the others are kept)."""
    model.check_fitted()
    _check_sample(target_sample, "target sample")
    primitives, transforms = _shared(model, target_sample)
    conv, layout = model.conv_model_, model.transform_model_
    if primitives:
        table = _table([s.times_s for s in target_sample.conv], conv.columns, [str(s.config) for s in target_sample.conv])
        rows = ~np.isnan(table).all(axis=1)
        x = conv_features([s.config for s, keep in zip(target_sample.conv, rows) if keep], conv.feature_set)
        conv = adapt(conv, x, table[rows])
    if transforms and layout is not None:
        shapes = [(s.batch, s.c, s.im) for s in target_sample.layout]
        table = _table([s.times_s for s in target_sample.layout], layout.columns, [str(k) for k in shapes])
        rows = ~np.isnan(table).all(axis=1)
        x = transform_features([k for k, keep in zip(shapes, rows) if keep], layout.feature_set)
        layout = adapt(layout, x, table[rows])
    return _copy(model, conv, layout)


def residual_corrected(model: PrimitiveCostModel, target_sample: PrimitiveDataset,
                       settings: ResidualSettings = DEFAULT_RESIDUALS) -> PrimitiveCostModel:
    """A copy of ``model`` whose predictions are its own times exp(g(x)), g fitted on the target sample's log
    residuals (``_ridge.fit_residuals``): the rows' level (each row's median residual, which every column gets,
    so a uniformly slower platform moves every column, the untimed ones too) plus each column's own part against
    the level (so one odd primitive moves only itself), each a median bias and, with enough rows, a ridge on the
    standardised features; each part keeps no change where leaving a row out says the fit would not help. For
    relative targets the fit is encoded like the targets (the reference's correction, and each other column's
    less the reference's), so the copy stays a model of the reference's time and ratios.

    Works from one configuration (then only biases move); nothing is held out. Any kind; the copy is an
    ordinary :class:`PrimitiveCostModel` (the correction is stored with it). An empty sample raises
    :class:`DatasetTooSmallError`; one timing nothing the model predicts, :class:`NoSharedColumnsError`.
    """
    return _adapted(model, target_sample, lambda sub, x, times: sub.corrected(x, times, settings))


def fine_tuned_frozen(model: PrimitiveCostModel, target_sample: PrimitiveDataset,
                      settings: ResidualSettings = DEFAULT_RESIDUALS) -> PrimitiveCostModel:
    """A copy of ``model`` fine-tuned on the target sample with every hidden layer frozen: only the networks'
    last layer moves (Mulder et al. 4.4's fine-tuning, restricted to what a few samples can determine).

    The last layer is linear in the frozen hidden activations h(x), so training it with weight decay toward
    the source weights has a closed-form optimum: the ridge fit of the residuals on h(x) that
    ``_ridge.fit_residuals`` makes (bias shrunk toward the group's, slopes penalised toward zero change, the
    penalty chosen per column by leave-one-out error), folded into the last layer's weights and biases. No step
    count or early stopping is needed, nothing is held out, and one configuration is enough. A column without
    a target time keeps its source weights exactly. Lin folds the same fit on its features into its
    coefficients; boosted trees, which have no layer to tune, get :func:`residual_corrected`'s correction; an
    ensemble tunes each member. Errors as for :func:`residual_corrected`.
    """
    return _adapted(model, target_sample, lambda sub, x, times: sub.head_tuned(x, times, settings))


# ------------------------------------------------------------------------------------------------ baseline

def from_scratch(kind: str, target_train: PrimitiveDataset, target_validation: PrimitiveDataset | None = None,
                 seed: int = 0, **params: Any) -> PrimitiveCostModel:
    """A new ``kind`` model fitted on the target sample alone: the baseline fine-tuning is compared against
    (Mulder et al. 4.4, Figure 9 a-b), ``PrimitiveCostModel(kind, seed=seed, **params).fit(...)``.

    A sample with fewer configurations than ``min_configs`` (default 20; the paper's 0.1 % and 1 % samples)
    would be refused by ``fit``; then ``min_configs`` is lowered to the sample's number of configurations and
    ``min_samples`` to 1, so that every primitive and transformation with a time is fitted, as fine-tuning
    learns from every time. The returned model's ``min_configs`` and ``min_samples`` say what was used. An
    empty sample raises :class:`DatasetTooSmallError`.
    """
    _check_sample(target_train, "target training sample")
    model = PrimitiveCostModel(kind, seed=seed, **params)
    n = len(target_train.conv)
    if n < model.min_configs:
        model.min_configs, model.min_samples = max(n, 1), 1
    return model.fit(target_train, target_validation)

