"""Step-function latency models (Osterwind et al., seed ``gpu-latency-steps-osterwind``).

One layer parameter swept inside a small profiling network shows a staircase:
:func:`detect_steps` finds its global step depth d and fluctuation period r,
:func:`fit_lines` and :func:`characterisation_points` characterise a new
configuration from about four measurements.
"""

from nnperf.predict.steps._detect import DetectionConfig, StepDetection, detect_steps
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
    "DetectionConfig", "Line", "StepDetection", "StepModel", "StepModelError", "StepShape",
    "characterisation_points", "detect_steps", "fit_lines", "mape",
]
