"""nnperf's public functions: load a model, calibrate a system, predict, verify and profile.

The command line calls these; so can any Python program::

    import nnperf

    network = nnperf.load_model("resnet18")          # a zoo name, .onnx/.json file, Network or torch module
    nnperf.calibrate(backend="torch", if_needed=True)  # once per system, stored in ./nnperf.db
    prediction = nnperf.predict(network)               # per-layer and network latency, no run needed
    check = nnperf.verify(network)                     # measured against predicted
    program = nnperf.api.synthesize("digits-cnn", data="digits", budget=0.01, out="program")
"""

from nnperf.api._accel import AccelEnergy, AccelSweep, accel_energy, accel_spec, accel_sweep
from nnperf.api._advise import NetworkAdvice, advise
from nnperf.api._compare import compare
from nnperf.api._evaluate import EvaluationReport, evaluate
from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._partition import NetworkPartition, partition
from nnperf.api._predict import System, Verification, calibrate, predict, stored_calibration, verify
from nnperf.api._primitives import (
    LayerPrimitives,
    PrimitivePrediction,
    PrimitiveTraining,
    PrimitiveTransfer,
    dataset_configs,
    named_primitives,
    predict_primitives,
    profile_primitives,
    stored_primitive_model,
    train_primitive_model,
    transfer_primitive_model,
)
from nnperf.api._profile import profile
from nnperf.api._select import NetworkSelection, select_network_primitives
from nnperf.api._session import StoreLike, open_backend, opened_store
from nnperf.api._steps import StepFits, StepPrediction, fit_steps, predict_steps
from nnperf.api._sweep import LayerSweep, MeasuringSystem, sweep
from nnperf.api._synthesize import DIGITS_MODEL, Verified, parse_budget, synthesize, verify_program

__all__ = [
    "DIGITS_MODEL",
    "AccelEnergy",
    "AccelSweep",
    "EvaluationReport",
    "InputShape",
    "LayerPrimitives",
    "LayerSweep",
    "MeasuringSystem",
    "ModelLike",
    "NetworkAdvice",
    "NetworkPartition",
    "NetworkSelection",
    "PrimitivePrediction",
    "PrimitiveTraining",
    "PrimitiveTransfer",
    "StepFits",
    "StepPrediction",
    "StoreLike",
    "System",
    "Verification",
    "Verified",
    "accel_energy",
    "accel_spec",
    "accel_sweep",
    "advise",
    "calibrate",
    "compare",
    "dataset_configs",
    "evaluate",
    "fit_steps",
    "load_model",
    "named_primitives",
    "open_backend",
    "opened_store",
    "parse_budget",
    "partition",
    "predict",
    "predict_primitives",
    "predict_steps",
    "profile",
    "profile_primitives",
    "select_network_primitives",
    "stored_calibration",
    "stored_primitive_model",
    "sweep",
    "synthesize",
    "train_primitive_model",
    "transfer_primitive_model",
    "verify",
    "verify_program",
]
