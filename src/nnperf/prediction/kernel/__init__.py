"""nnperf's kernel-aware prediction (issue 21): a regressor per kernel kind, chosen by cross-validation, on
in-network layer times, composed the way the backend runs them.

- :class:`KernelModel`, the network predictor ``kernel`` fitted at calibration next to PreVIous' (``_model.py``);
- :func:`kernel_kind` and :func:`kernel_features`: which kernel runs a layer and what tells kernels of one kind
  apart (``_kinds.py``);
- :func:`choose`, :func:`fit_regressor` and :class:`StoredRegressor`: the candidate regressors, stored as
  numbers, never pickles (``_regressors.py``);
- :func:`sample_layers` with :class:`ConvSample` and :class:`PoolSample`: calibration by adaptive sampling of
  convolution and pooling configurations within a time budget (``_sampling.py``).
"""

from nnperf.prediction.kernel._kinds import CONV_FEATURES, CONV_KINDS, LAYER_FEATURES, kernel_features, kernel_kind
from nnperf.prediction.kernel._model import LAYER_SAMPLES, KernelModel
from nnperf.prediction.kernel._regressors import REGRESSORS, choose
from nnperf.prediction.kernel._regressors import Stored as StoredRegressor
from nnperf.prediction.kernel._regressors import fit as fit_regressor
from nnperf.prediction.kernel._sampling import (
    PRIOR,
    SAMPLE_CAMPAIGN,
    SAMPLED_KINDS,
    ConvSample,
    PoolSample,
    draw,
    neighbours,
    sample_from_name,
    sample_layers,
)

__all__ = [
    "CONV_FEATURES",
    "CONV_KINDS",
    "LAYER_FEATURES",
    "LAYER_SAMPLES",
    "PRIOR",
    "REGRESSORS",
    "SAMPLED_KINDS",
    "SAMPLE_CAMPAIGN",
    "ConvSample",
    "KernelModel",
    "PoolSample",
    "StoredRegressor",
    "choose",
    "draw",
    "fit_regressor",
    "kernel_features",
    "kernel_kind",
    "neighbours",
    "sample_from_name",
    "sample_layers",
]
