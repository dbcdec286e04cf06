"""Performance models of convolution primitives and layout transformations (Mulder et al. 3.3 and 4.2).

:class:`PrimitiveCostModel` (registry name ``primitive-cost``) learns, from a profiled
:class:`~nnperf.primitives.PrimitiveDataset`, the time in seconds of every primitive on a layer configuration
and of every layout transformation on an activation: Lin (least squares), NN1 (a network per primitive), NN2
(one network for all, with the masked loss :func:`masked_mse`), boosted trees per column (:class:`BoostedTrees`)
or an ensemble of NN2 and trees -- the kinds of :class:`CostModelKind`, or ``auto``, the best on validation
data -- on standardised log features (:func:`conv_features`, :func:`transform_features`) and standardised log
times, absolute or relative to a reference primitive timed in the same rounds (:class:`TargetKind`).
:func:`config_spread` and :func:`shape_spread` say where an ensemble's members disagree and
:func:`most_uncertain` picks what to profile next there (active learning). :func:`split_dataset` makes the paper's
80/10/10 split; :func:`mdrae` scores a model on the test part and
:func:`evaluate` gives both the absolute and the ratio-to-reference MdRAE. :func:`factor_corrected`,
:func:`fine_tuned`, :func:`from_scratch`, :func:`residual_corrected` and :func:`fine_tuned_frozen` move a model
to another platform from a :func:`subsample` of its data (4.4, 5.3). torch is imported only to train a network
and scikit-learn only to grow trees; predicting needs NumPy alone.
"""

from nnperf.prediction.primitives._active import (
    CROWDING_RADIUS,
    NotAnEnsembleError,
    committee_spread,
    config_spread,
    most_uncertain,
    shape_spread,
)
from nnperf.prediction.primitives._auto import AUTO, AUTO_KINDS
from nnperf.prediction.primitives._columns import KINDS, ColumnModel, CostModelKind
from nnperf.prediction.primitives._evaluate import ColumnError, Evaluation, evaluate
from nnperf.prediction.primitives._features import (
    CONV_FEATURES,
    EXTENDED_CONV_FEATURES,
    EXTENDED_TRANSFORM_FEATURES,
    FEATURE_SETS,
    TRANSFORM_FEATURES,
    ActivationShape,
    Standardiser,
    conv_feature_names,
    conv_features,
    transform_feature_names,
    transform_features,
)
from nnperf.prediction.primitives._mlp import MlpStack, TrainingLog, TrainingSettings, masked_mse, train_mlps
from nnperf.prediction.primitives._model import (
    PAPER_HYPERPARAMETERS,
    VALIDATION_FRACTION,
    DatasetTooSmallError,
    Hyperparameters,
    NoTransformModelError,
    PrimitiveCostModel,
    UnknownColumnError,
)
from nnperf.prediction.primitives._ridge import Correction, ResidualSettings
from nnperf.prediction.primitives._split import mdrae, relative_errors, split_dataset
from nnperf.prediction.primitives._targets import TARGET_KINDS, TargetKind
from nnperf.prediction.primitives._transfer import (
    CORRECTION_STATISTICS,
    NoSharedColumnsError,
    correction_factors,
    factor_corrected,
    family_subset,
    fine_tuned,
    fine_tuned_frozen,
    from_scratch,
    residual_corrected,
    subsample,
)
from nnperf.prediction.primitives._trees import BoostedTrees, BoostingSettings

__all__ = [
    "AUTO",
    "AUTO_KINDS",
    "CONV_FEATURES",
    "CORRECTION_STATISTICS",
    "CROWDING_RADIUS",
    "EXTENDED_CONV_FEATURES",
    "EXTENDED_TRANSFORM_FEATURES",
    "FEATURE_SETS",
    "KINDS",
    "PAPER_HYPERPARAMETERS",
    "TARGET_KINDS",
    "TRANSFORM_FEATURES",
    "VALIDATION_FRACTION",
    "ActivationShape",
    "BoostedTrees",
    "BoostingSettings",
    "ColumnError",
    "ColumnModel",
    "Correction",
    "CostModelKind",
    "DatasetTooSmallError",
    "Evaluation",
    "Hyperparameters",
    "MlpStack",
    "NoSharedColumnsError",
    "NoTransformModelError",
    "NotAnEnsembleError",
    "PrimitiveCostModel",
    "ResidualSettings",
    "Standardiser",
    "TargetKind",
    "TrainingLog",
    "TrainingSettings",
    "UnknownColumnError",
    "committee_spread",
    "config_spread",
    "conv_feature_names",
    "conv_features",
    "correction_factors",
    "evaluate",
    "factor_corrected",
    "family_subset",
    "fine_tuned",
    "fine_tuned_frozen",
    "from_scratch",
    "masked_mse",
    "mdrae",
    "most_uncertain",
    "relative_errors",
    "residual_corrected",
    "shape_spread",
    "split_dataset",
    "subsample",
    "train_mlps",
    "transform_feature_names",
    "transform_features",
]
