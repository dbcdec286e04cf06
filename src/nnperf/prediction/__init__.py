"""Prediction: one predictor interface, PreVIous per-layer regression models fitted from a one-time calibration,
nnperf's composition and the baselines.

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
    NetworkInput,
    NetworkPredictor,
    NotFittedError,
    Predictor,
    fit_network_predictors,
    network_predictor_names,
    predictor_class,
    register_predictor,
)
from nnperf.prediction._calibrate import (
    CALIBRATION_HARNESS,
    MissingCalibrationError,
    calibrate,
    calibration_networks,
    fit_system_model,
    load_stored_model,
    load_system_model,
    missing_calibration,
    sentinel_reference_s,
)
from nnperf.prediction._composition import Composition, FusionRules, fit_composition, learn_fusion
from nnperf.prediction._features import FEATURES, features, model_key
from nnperf.prediction._model import (
    LayerPrediction,
    NetworkPrediction,
    SystemModel,
    UncoveredLayersError,
)
from nnperf.prediction._previous import PreviousModel, fit_coefficient
from nnperf.prediction._ridge import RidgeModel, fit_ridge
from nnperf.prediction._runs import MeasuredNetwork, measure_networks
from nnperf.prediction._verification import Verification
from nnperf.prediction.baselines import MacsModel, RooflineModel, fit_macs_model, measure_roofline
from nnperf.prediction.primitives import (
    DatasetTooSmallError,
    NoTransformModelError,
    PrimitiveCostModel,
    UnknownColumnError,
)

__all__ = [
    "CALIBRATION_HARNESS",
    "FEATURES",
    "PREDICTORS",
    "CalibrationSet",
    "Composition",
    "DatasetTooSmallError",
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
    "PreviousModel",
    "PrimitiveCostModel",
    "RidgeModel",
    "RooflineModel",
    "SystemModel",
    "UncoveredLayersError",
    "UnknownColumnError",
    "Verification",
    "calibrate",
    "calibration_networks",
    "features",
    "fit_coefficient",
    "fit_composition",
    "fit_macs_model",
    "fit_network_predictors",
    "fit_ridge",
    "fit_system_model",
    "learn_fusion",
    "load_stored_model",
    "load_system_model",
    "measure_networks",
    "measure_roofline",
    "missing_calibration",
    "model_key",
    "network_predictor_names",
    "predictor_class",
    "register_predictor",
    "sentinel_reference_s",
    "steps",
]
