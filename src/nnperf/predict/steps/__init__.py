"""Step-function latency models (Osterwind et al., seed ``gpu-latency-steps-osterwind``).

One layer parameter swept inside a small profiling network shows a staircase:
:func:`detect_steps` finds its global step depth d and fluctuation period r,
:func:`fit_lines` and :func:`characterisation_points` characterise a new
configuration from about four measurements, :func:`compose` combines the
per-parameter models into a prediction for any configuration.
"""

from nnperf.predict.steps._compose import ComposedModel, compose, effective, work
from nnperf.predict.steps._detect import DetectionConfig, StepDetection, detect_steps
from nnperf.predict.steps._fits import (
    FIT_KIND,
    MissingStepModelError,
    SweepFit,
    composed_model,
    fit_sweep,
    latest_fits,
    model_from_dict,
    save_fit,
    sweep_points,
)
from nnperf.predict.steps._model import (
    Line,
    StepModel,
    StepModelError,
    StepShape,
    characterisation_points,
    fit_lines,
    mape,
)

__all__ = [
    "FIT_KIND", "ComposedModel", "DetectionConfig", "Line", "MissingStepModelError", "StepDetection", "StepModel",
    "StepModelError", "StepShape", "SweepFit", "characterisation_points", "compose", "composed_model",
    "detect_steps", "effective", "fit_lines", "fit_sweep", "latest_fits", "mape", "model_from_dict", "save_fit",
    "sweep_points", "work",
]
