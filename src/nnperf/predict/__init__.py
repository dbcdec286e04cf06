"""Prediction: PreVIous per-layer regression models fitted from a one-time calibration."""

from nnperf.predict._calibrate import (
    CALIBRATION_HARNESS,
    MissingCalibrationError,
    calibrate,
    calibration_networks,
    fit_system_model,
    load_stored_model,
    load_system_model,
)
from nnperf.predict._features import FEATURES, features, model_key
from nnperf.predict._model import (
    LayerPrediction,
    NetworkPrediction,
    SystemModel,
    UncoveredLayersError,
    fit_coefficient,
)
from nnperf.predict._ridge import RidgeModel, fit_ridge
from nnperf.predict._runs import MeasuredNetwork, measure_networks

__all__ = [
    "CALIBRATION_HARNESS",
    "FEATURES",
    "LayerPrediction",
    "MeasuredNetwork",
    "MissingCalibrationError",
    "NetworkPrediction",
    "RidgeModel",
    "SystemModel",
    "UncoveredLayersError",
    "calibrate",
    "calibration_networks",
    "features",
    "fit_coefficient",
    "fit_ridge",
    "fit_system_model",
    "load_stored_model",
    "load_system_model",
    "measure_networks",
    "model_key",
]
