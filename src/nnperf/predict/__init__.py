"""Prediction: one predictor interface, PreVIous per-layer regression models fitted from a one-time calibration,
nnperf's composition and the baselines.

Every model that predicts is a :class:`Predictor` (scikit-learn conventions:
``fit`` returns ``self``, ``predict``, ``get_params``, versioned JSON with
``to_dict``/``from_dict``) registered by name in :data:`PREDICTORS`; the
network-level ones (:class:`NetworkPredictor`) are fitted on every
calibration and compared by the evaluation.
"""

from nnperf.predict._base import (
    PREDICTORS,
    CalibrationSet,
    NetworkInput,
    NetworkPredictor,
    NotFittedError,
    Predictor,
    fit_network_predictors,
    network_predictor_names,
    register_predictor,
)
from nnperf.predict._calibrate import (
    CALIBRATION_HARNESS,
    MissingCalibrationError,
    calibrate,
    calibration_networks,
    fit_system_model,
    load_stored_model,
    load_system_model,
)
from nnperf.predict._composition import Composition, FusionRules, fit_composition, learn_fusion
from nnperf.predict._features import FEATURES, features, model_key
from nnperf.predict._model import (
    LayerPrediction,
    NetworkPrediction,
    SystemModel,
    UncoveredLayersError,
)
from nnperf.predict._previous import PreviousModel, fit_coefficient
from nnperf.predict._ridge import RidgeModel, fit_ridge
from nnperf.predict._runs import MeasuredNetwork, measure_networks
from nnperf.predict._verification import Verification
from nnperf.predict.baselines import MacsModel, RooflineModel, fit_macs_model, measure_roofline

__all__ = [
    "CALIBRATION_HARNESS", "FEATURES", "PREDICTORS", "CalibrationSet", "Composition", "FusionRules",
    "LayerPrediction", "MacsModel", "MeasuredNetwork", "MissingCalibrationError", "NetworkInput",
    "NetworkPrediction", "NetworkPredictor", "NotFittedError", "Predictor", "PreviousModel", "RidgeModel",
    "RooflineModel", "SystemModel", "UncoveredLayersError", "Verification", "calibrate", "calibration_networks", "features",
    "fit_coefficient", "fit_composition", "fit_macs_model", "fit_network_predictors", "fit_ridge",
    "fit_system_model", "learn_fusion", "load_stored_model", "load_system_model", "measure_networks",
    "measure_roofline", "model_key", "network_predictor_names", "register_predictor",
]
