"""Performance models of convolution primitives and layout transformations (Mulder et al. 3.3 and 4.2).

:class:`PrimitiveCostModel` (registry name ``primitive-cost``) learns, from a profiled
:class:`~nnperf.primitives.PrimitiveDataset`, the time in seconds of every primitive on a layer configuration
and of every layout transformation on an activation: Lin (least squares), NN1 (a network per primitive) or
NN2 (one network for all, with the masked loss :func:`masked_mse`), the kinds of :class:`CostModelKind`, each on
standardised log features (:func:`conv_features`, :func:`transform_features`) and standardised log times.
:func:`split_dataset` makes the paper's 80/10/10 split and :func:`mdrae` scores a model on the test part.
:func:`factor_corrected`, :func:`fine_tuned` and :func:`from_scratch` move a model to another platform from a
:func:`subsample` of its data (4.4, 5.3). torch is imported only to train a network; predicting needs NumPy alone.
"""

from nnperf.prediction.primitives._columns import KINDS, ColumnModel, CostModelKind
from nnperf.prediction.primitives._features import (
    CONV_FEATURES,
    TRANSFORM_FEATURES,
    ActivationShape,
    Standardiser,
    conv_features,
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
from nnperf.prediction.primitives._split import mdrae, relative_errors, split_dataset
from nnperf.prediction.primitives._transfer import (
    CORRECTION_STATISTICS,
    NoSharedColumnsError,
    correction_factors,
    factor_corrected,
    family_subset,
    fine_tuned,
    from_scratch,
    subsample,
)

__all__ = [
    "CONV_FEATURES", "CORRECTION_STATISTICS", "KINDS", "PAPER_HYPERPARAMETERS", "TRANSFORM_FEATURES",
    "VALIDATION_FRACTION", "ActivationShape", "ColumnModel", "CostModelKind", "DatasetTooSmallError",
    "Hyperparameters", "MlpStack", "NoSharedColumnsError", "NoTransformModelError", "PrimitiveCostModel", "Standardiser", "TrainingLog",
    "TrainingSettings", "UnknownColumnError", "conv_features", "correction_factors", "factor_corrected",
    "family_subset", "fine_tuned", "from_scratch", "masked_mse", "mdrae", "relative_errors", "split_dataset",
    "subsample", "train_mlps", "transform_features",
]
