"""nnperf's kernel-aware prediction: a regressor per kernel kind, chosen by cross-validation, on
in-network layer times, composed the way the backend runs them.

- :class:`KernelModel`, the network predictor ``kernel`` fitted at calibration next to PreVIous' (``_model.py``);
- :func:`kernel_kind`, :class:`ConvKernel` and :func:`kernel_features`: which kernel runs a layer and what tells
  kernels of one kind apart (``_kinds.py``);
- :class:`Regressor`, :func:`choose`, :func:`choose_with_extra`, :func:`fit_regressor` and
  :class:`StoredRegressor`: the candidate regressors, stored as numbers, never pickles (``_regressors.py``);
- :class:`ConvSample`, :class:`PoolSample` and :class:`LinearSample`, :func:`grid_draw` and :func:`next_round`: where calibration by
  adaptive sampling places convolution and pooling configurations (``_sampling.py``; ``nnperf.campaign.sample_layers``
  measures them);
- :class:`LayerPrior` and :func:`zoo_prior`: the configurations real networks contain, that sampling draws from,
  with held-out networks excluded (``_prior.py``);
- :class:`AdaptedPrior` and :func:`adapt_prior`: configurations near a user's example networks, that an adaptation
  to their search space samples (``_adapt.py``), and :class:`AdaptedModel`, the predictor it fits: the
  composition with its layer predictions corrected per kind by those samples (``_adapted.py``).
"""

from nnperf.prediction.kernel._adapt import AdaptedPrior, adapt_prior
from nnperf.prediction.kernel._adapted import (
    ADAPTED_NETWORKS,
    ADAPTED_SAMPLES,
    AdaptedModel,
    adapted_triples,
    fit_adaptation,
)
from nnperf.prediction.kernel._kinds import (
    CONV_FEATURES,
    CONV_KINDS,
    LAYER_FEATURES,
    ConvKernel,
    kernel_features,
    kernel_kind,
)
from nnperf.prediction.kernel._model import LAYER_SAMPLES, MIN_LINE_PAIRS, SAMPLED_CONTEXTS, SAMPLED_LAYERS, KernelModel
from nnperf.prediction.kernel._prior import LayerPrior, layer_sample, zoo_prior
from nnperf.prediction.kernel._regressors import REGRESSORS, Chosen, Regressor, choose, choose_with_extra
from nnperf.prediction.kernel._regressors import Stored as StoredRegressor
from nnperf.prediction.kernel._regressors import fit as fit_regressor
from nnperf.prediction.kernel._sampling import (
    FIRST_ROUND,
    PRIOR,
    ROUND,
    SAMPLED_KINDS,
    ConvSample,
    Drawer,
    GridPrior,
    LinearSample,
    PoolSample,
    Sample,
    grid_draw,
    interleaved_draws,
    neighbours,
    next_round,
    sample_from_name,
)

__all__ = [
    "ADAPTED_NETWORKS",
    "ADAPTED_SAMPLES",
    "CONV_FEATURES",
    "CONV_KINDS",
    "FIRST_ROUND",
    "LAYER_FEATURES",
    "LAYER_SAMPLES",
    "MIN_LINE_PAIRS",
    "PRIOR",
    "REGRESSORS",
    "ROUND",
    "SAMPLED_CONTEXTS",
    "SAMPLED_KINDS",
    "SAMPLED_LAYERS",
    "AdaptedModel",
    "AdaptedPrior",
    "Chosen",
    "ConvKernel",
    "ConvSample",
    "Drawer",
    "GridPrior",
    "KernelModel",
    "LayerPrior",
    "LinearSample",
    "PoolSample",
    "Regressor",
    "Sample",
    "StoredRegressor",
    "adapt_prior",
    "adapted_triples",
    "choose",
    "choose_with_extra",
    "fit_adaptation",
    "fit_regressor",
    "grid_draw",
    "interleaved_draws",
    "kernel_features",
    "kernel_kind",
    "layer_sample",
    "neighbours",
    "next_round",
    "sample_from_name",
    "zoo_prior",
]
