"""nnperf's public functions: one per command of the command line, which calls them; so can any Python program::

    import nnperf

    network = nnperf.load_model("resnet18")   # a zoo name, .onnx/.json file, Network or torch module
    system = nnperf.System("torch", threads=1)  # the settings that make a system on this host
    nnperf.calibrate(system, if_needed=True)   # once per system, stored in ./nnperf.db
    prediction = nnperf.predict(network, system)  # per-layer and network latency, no run needed
    check = nnperf.verify(network, system)        # measured against predicted
    program = nnperf.api.synthesize("digits-cnn", data="digits", budget=0.01, out="program")

Arguments come in one order: the model(s), the system, the store, then keyword options. A system is a
:class:`~nnperf.measure.System` (settings on this host; a function that measures also takes a backend name) or,
where a function only reads a calibration, a :data:`StoredSystem` (a stored system's id or key prefix, or a
fitted ``SystemModel``). The store is a ``Store``, a path, or None for ``$NNPERF_DB``, else ``./nnperf.db``.
"""

from nnperf.api._accel import AccelEnergy, AccelSweep, accel_energy, accel_spec, accel_spec_yaml, accel_sweep
from nnperf.api._adapt import DEFAULT_ADAPT_BUDGET_S, SAMPLED_NETWORKS, Sampler, adapt
from nnperf.api._advise import NetworkAdvice, advise
from nnperf.api._catalog import (
    Available,
    Backends,
    Exported,
    Inspection,
    Zoo,
    ZooNetwork,
    backends,
    export,
    inspect,
    zoo,
)
from nnperf.api._compare import compare
from nnperf.api._evaluate import EvaluationReport, evaluate
from nnperf.api._fleet import FleetStatus, fleet_down, fleet_runner, fleet_runners, fleet_status, fleet_up
from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._machine import CheckResult, ThreadSettings, check, thread_settings
from nnperf.api._partition import NetworkPartition, partition
from nnperf.api._predict import (
    DEFAULT_SAMPLE_BUDGET_S,
    Verification,
    calibrate,
    calibrated_model,
    predict,
    predict_many,
    stored_calibration,
    verify,
)
from nnperf.api._primitives import (
    PRIMITIVES,
    LayerPrimitives,
    PrimitiveCatalog,
    PrimitiveEntry,
    PrimitivePrediction,
    PrimitiveTraining,
    PrimitiveTransfer,
    dataset_configs,
    export_primitive_dataset,
    find_primitive_system,
    import_primitive_dataset,
    named_primitives,
    predict_primitives,
    primitive_catalog,
    profile_primitives,
    stored_primitive_model,
    train_primitive_model,
    transfer_primitive_model,
)
from nnperf.api._profile import TRACE_RUNS, attach_power_trace, profile, profile_trace_source, writes_trace
from nnperf.api._records import StoredSystems, export_measurements, systems
from nnperf.api._runtimes import rank_runtimes
from nnperf.api._select import NetworkSelection, select
from nnperf.api._session import StoredSystem
from nnperf.api._steps import StepFits, StepPrediction, fit_steps, predict_steps
from nnperf.api._sweep import LayerSweep, MeasuringSystem, sweep
from nnperf.api._synthesize import DIGITS_MODEL, Verified, synthesize, verify_program
from nnperf.measure import ComparisonProtocol, HarnessConfig, System
from nnperf.prediction import SystemModel
from nnperf.store import Store, default_store_path

__all__ = [
    "DEFAULT_ADAPT_BUDGET_S",
    "DEFAULT_SAMPLE_BUDGET_S",
    "DIGITS_MODEL",
    "PRIMITIVES",
    "SAMPLED_NETWORKS",
    "TRACE_RUNS",
    "AccelEnergy",
    "AccelSweep",
    "Available",
    "Backends",
    "CheckResult",
    "ComparisonProtocol",
    "EvaluationReport",
    "Exported",
    "FleetStatus",
    "HarnessConfig",
    "InputShape",
    "Inspection",
    "LayerPrimitives",
    "LayerSweep",
    "MeasuringSystem",
    "ModelLike",
    "NetworkAdvice",
    "NetworkPartition",
    "NetworkSelection",
    "PrimitiveCatalog",
    "PrimitiveEntry",
    "PrimitivePrediction",
    "PrimitiveTraining",
    "PrimitiveTransfer",
    "Sampler",
    "StepFits",
    "StepPrediction",
    "Store",
    "StoredSystem",
    "StoredSystems",
    "System",
    "SystemModel",
    "ThreadSettings",
    "Verification",
    "Verified",
    "Zoo",
    "ZooNetwork",
    "accel_energy",
    "accel_spec",
    "accel_spec_yaml",
    "accel_sweep",
    "adapt",
    "advise",
    "attach_power_trace",
    "backends",
    "calibrate",
    "calibrated_model",
    "check",
    "compare",
    "dataset_configs",
    "default_store_path",
    "evaluate",
    "export",
    "export_measurements",
    "export_primitive_dataset",
    "find_primitive_system",
    "fit_steps",
    "fleet_down",
    "fleet_runner",
    "fleet_runners",
    "fleet_status",
    "fleet_up",
    "import_primitive_dataset",
    "inspect",
    "load_model",
    "named_primitives",
    "partition",
    "predict",
    "predict_many",
    "predict_primitives",
    "predict_steps",
    "primitive_catalog",
    "profile",
    "profile_primitives",
    "profile_trace_source",
    "rank_runtimes",
    "select",
    "stored_calibration",
    "stored_primitive_model",
    "sweep",
    "synthesize",
    "systems",
    "thread_settings",
    "train_primitive_model",
    "transfer_primitive_model",
    "verify",
    "verify_program",
    "writes_trace",
    "zoo",
]
