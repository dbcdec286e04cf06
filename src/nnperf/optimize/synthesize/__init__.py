"""Synthesising an optimised, deployable inference program for this device (Cappuccino, Motamedi et al.).

From a trained network and validation data, :func:`synthesize` measures the programs Table I's stages lead to
(single-thread fp32; threads and executors; a layout kept end to end; layers made inexact, int8 in ONNX Runtime
and bf16 in torch where native, chosen by the paper's greedy search or an exact ILP within an accuracy budget) and
writes the fastest as a folder: the model file, a standalone ``run.py`` and a manifest. The speed-ups it reports
come from the baseline and the stages' programs timed in the same rounds (:func:`compare_programs`). :class:`ValidationSet`
holds the data: :func:`digits_set` (scikit-learn's digits), :func:`photo_set` (the photographs bundled with
scikit-learn and matplotlib, a proxy for networks with random weights) or :func:`load_validation` (files);
:func:`train_digits` and :func:`cached_digits` train the digits CNN that needs no download.
"""

from nnperf.optimize.synthesize._artifact import CHECK_TOLERANCE, MANIFEST_FORMAT, read_manifest
from nnperf.optimize.synthesize._candidates import Predict, Progress
from nnperf.optimize.synthesize._compare import (
    PROTOCOLS,
    SYNTHESIS_HARNESS,
    SYNTHESIS_ROUNDS,
    Comparison,
    check_protocol,
    compare_programs,
    compare_timings,
)
from nnperf.optimize.synthesize._data import ValidationSet, digits_set, load_validation, photo_set
from nnperf.optimize.synthesize._digits import TrainedDigits, cached_digits, train_digits
from nnperf.optimize.synthesize._errors import BudgetError, SynthesisError, UnsupportedModeError, ValidationDataError
from nnperf.optimize.synthesize._package import load_program
from nnperf.optimize.synthesize._program import (
    INEXACT_MODE,
    KEPT_LAYOUT,
    RUNTIMES,
    Accuracy,
    ProgramSpec,
    Sources,
    accuracy_of,
    measure_program,
)
from nnperf.optimize.synthesize._result import STAGES, InexactSearch, Measured, Stage, SynthesisResult
from nnperf.optimize.synthesize._search import (
    SEARCHES,
    LayerEffect,
    SearchResult,
    check_budget,
    greedy_search,
    ilp_search,
)
from nnperf.optimize.synthesize._synthesize import check_sample_shape, make_sources, synthesize

__all__ = [
    "CHECK_TOLERANCE", "INEXACT_MODE", "KEPT_LAYOUT", "MANIFEST_FORMAT", "PROTOCOLS", "RUNTIMES", "SEARCHES",
    "STAGES", "SYNTHESIS_HARNESS", "SYNTHESIS_ROUNDS", "Accuracy", "BudgetError", "Comparison", "InexactSearch",
    "LayerEffect", "Measured", "Predict", "ProgramSpec", "Progress", "SearchResult", "Sources", "Stage",
    "SynthesisError", "SynthesisResult", "TrainedDigits", "UnsupportedModeError", "ValidationDataError",
    "ValidationSet", "accuracy_of", "cached_digits", "check_budget", "check_protocol", "check_sample_shape",
    "compare_programs", "compare_timings", "digits_set", "greedy_search", "ilp_search", "load_program",
    "load_validation", "make_sources", "measure_program", "photo_set", "read_manifest", "synthesize",
    "train_digits",
]
