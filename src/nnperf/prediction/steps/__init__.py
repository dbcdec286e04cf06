"""Step-function latency models (Osterwind et al., seed ``gpu-latency-steps-osterwind``).

One layer parameter swept inside a small profiling network shows a staircase:
:func:`detect_steps` finds its global step depth d and fluctuation period r,
:func:`fit_lines` and :func:`characterisation_points` characterise a new
configuration from about four measurements, :func:`compose` combines the
per-parameter models into a prediction for any configuration, and
:func:`load_sweep` reads a stored sweep back. Measuring (sweeps,
characterisation points, a verified prediction: ``nnperf.campaign.predict_steps``)
is a campaign.
:class:`StepModel` and :class:`ComposedModel` follow the predictor interface
(:class:`~nnperf.prediction.Predictor`, registered as 'step' and 'step-composed').
"""

from nnperf.prediction.steps._characterise import (
    CHARACTERISE_ROUNDS,
    STEPPED,
    Characterisation,
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
from nnperf.prediction.steps._predict import StepsPrediction, StepsVerification, steps_verification
from nnperf.prediction.steps._sweeps import SWEEP_CAMPAIGN, load_sweep, sweep_runs

__all__ = [
    "CHARACTERISE_ROUNDS", "FIT_KIND", "STEPPED", "SWEEP_CAMPAIGN", "Characterisation", "ComposedModel", "DetectionConfig", "Line",
    "MissingStepModelError", "StepDetection", "StepModel", "StepModelError", "StepShape", "StepsPrediction",
    "StepsVerification", "SweepFit", "branch_of", "characterisation_points", "compose", "composed_model",
    "composed_models", "detect_steps", "effective", "fit_lines", "fit_sweep", "global_fits", "global_shape", "load_sweep",
    "mape", "model_from_dict", "save_fit", "steps_verification", "sweep_points", "sweep_runs", "total_work", "work",
]
