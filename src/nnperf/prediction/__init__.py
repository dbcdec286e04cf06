"""Prediction: one predictor interface, PreVIous per-layer regression models fitted from a one-time calibration,
nnperf's composition and the baselines. This package fits and predicts; it measures nothing (the calibration
that measures and then fits here is ``nnperf.campaign.calibrate``).

Every model that predicts is a :class:`Predictor` (scikit-learn conventions:
``fit`` returns ``self``, ``predict``, ``get_params``, versioned JSON with
``to_dict``/``from_dict``) registered by name in :data:`PREDICTORS`; the
network-level ones (:class:`NetworkPredictor`) are fitted on every
calibration and compared by the evaluation.
"""

from nnperf.prediction import steps
from nnperf.prediction._base import (
    PREDICTORS,
    CalibrationSet,
    FittedOn,
    NetworkInput,
    NetworkPredictor,
    NotFittedError,
    Predictor,
    PredictorCategory,
    fit_network_predictors,
    network_predictor_classes,
    network_predictor_names,
    predictor_class,
    register_predictor,
)
from nnperf.prediction._calibrate import (
    RIDGE_SAMPLED_TYPES,
    MissingCalibrationError,
    fit_system_model,
    load_stored_model,
    load_system_model,
    missing_calibration,
)
from nnperf.prediction._composition import Composition, FusionRules, fit_composition, learn_fusion
from nnperf.prediction._features import FEATURES, SharedKey, features, layer_signature, model_key
from nnperf.prediction._model import (
    MODEL_KIND,
    LayerPrediction,
    NetworkPrediction,
    SystemModel,
    UncoveredLayersError,
)
from nnperf.prediction._previous import PreviousModel, fit_coefficient
from nnperf.prediction._ridge import RidgeModel, fit_ridge
from nnperf.prediction._runs import MeasuredNetwork
from nnperf.prediction._verification import Verification
from nnperf.prediction.baselines import MacsModel, RooflineModel, fit_macs_model, layer_bytes
from nnperf.prediction.primitives import (
    DatasetTooSmallError,
    NoTransformModelError,
    PrimitiveCostModel,
    UnknownColumnError,
)

__all__ = [
    "FEATURES",
    "MODEL_KIND",
    "PREDICTORS",
    "RIDGE_SAMPLED_TYPES",
    "CalibrationSet",
    "Composition",
    "DatasetTooSmallError",
    "FittedOn",
    "FusionRules",
    "LayerPrediction",
    "MacsModel",
    "MeasuredNetwork",
    "MissingCalibrationError",
    "NetworkInput",
    "NetworkPrediction",
    "NetworkPredictor",
    "NoTransformModelError",
    "NotFittedError",
    "Predictor",
    "PredictorCategory",
    "PreviousModel",
    "PrimitiveCostModel",
    "RidgeModel",
    "RooflineModel",
    "SharedKey",
    "SystemModel",
    "UncoveredLayersError",
    "UnknownColumnError",
    "Verification",
    "features",
    "fit_coefficient",
    "fit_composition",
    "fit_macs_model",
    "fit_network_predictors",
    "fit_ridge",
    "fit_system_model",
    "layer_bytes",
    "layer_signature",
    "learn_fusion",
    "load_stored_model",
    "load_system_model",
    "missing_calibration",
    "model_key",
    "network_predictor_classes",
    "network_predictor_names",
    "predictor_class",
    "register_predictor",
    "steps",
]
