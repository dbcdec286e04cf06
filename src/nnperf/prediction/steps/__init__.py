"""Step-function latency models (Osterwind et al., seed ``gpu-latency-steps-osterwind``).

One layer parameter swept inside a small profiling network shows a staircase:
:func:`detect_steps` finds its global step depth d and fluctuation period r,
:func:`fit_lines` and :func:`characterisation_points` characterise a new
configuration from about four measurements, :func:`compose` combines the
per-parameter models into a prediction for any configuration, and
:func:`predict_steps` does all three for a system's stored models.
:class:`StepModel` and :class:`ComposedModel` follow the predictor interface
(:class:`~nnperf.prediction.Predictor`, registered as 'step' and 'step-composed').
"""

from nnperf.prediction.steps._characterise import (
    CHARACTERISE_ROUNDS,
    STEPPED,
    Characterisation,
    characterise,
    global_shape,
)
from nnperf.prediction.steps._compose import ComposedModel, compose, effective, total_work, work
from nnperf.prediction.steps._detect import DetectionConfig, StepDetection, detect_steps
from nnperf.prediction.steps._fits import (
    FIT_KIND,
    MissingStepModelError,
    SweepFit,
    composed_model,
    composed_models,
    fit_sweep,
    global_fits,
    model_from_dict,
    save_fit,
    sweep_points,
)
from nnperf.prediction.steps._model import (
    Line,
    StepModel,
    StepModelError,
    StepShape,
    branch_of,
    characterisation_points,
    fit_lines,
    mape,
)
from nnperf.prediction.steps._predict import StepsPrediction, StepsVerification, predict_steps

__all__ = [
    "CHARACTERISE_ROUNDS", "FIT_KIND", "STEPPED", "Characterisation", "ComposedModel", "DetectionConfig", "Line",
    "MissingStepModelError", "StepDetection", "StepModel", "StepModelError", "StepShape", "StepsPrediction",
    "StepsVerification", "SweepFit", "branch_of", "characterisation_points", "characterise", "compose", "composed_model",
    "composed_models", "detect_steps", "effective", "fit_lines", "fit_sweep", "global_fits", "global_shape", "mape",
    "model_from_dict", "predict_steps", "save_fit", "sweep_points", "total_work", "work",
]
