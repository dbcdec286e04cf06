"""Synthesising an optimised, deployable inference program for this device (Cappuccino, Motamedi et al.).

From a trained network and validation data, :func:`synthesize` measures the programs Table I's stages lead to
(single-thread fp32; threads and executors; a layout kept end to end; layers made inexact, int8 in ONNX Runtime
and bf16 in torch where native, chosen by the paper's greedy search or an exact ILP within an accuracy budget) and
writes the fastest as a folder: the model file, a standalone ``run.py`` and a manifest. The speed-ups it reports
come from the baseline and the stages' programs timed in the same rounds (:func:`compare_programs`). :class:`ValidationSet`
holds the data: :func:`digits_set` (scikit-learn's digits), :func:`photo_set` (the photographs bundled with
scikit-learn and matplotlib, a proxy for networks with random weights) or :func:`load_validation` (files);
:func:`train_digits` and :func:`cached_digits` train the digits CNN that needs no download; :func:`glyph_network`,
:func:`train_glyph_network` and :func:`glyph_set` the glyph classifiers of the bench scripts (``bench/``).
"""

from nnperf.optimize.synthesize._artifact import CHECK_TOLERANCE, MANIFEST_FORMAT, read_manifest
from nnperf.optimize.synthesize._boundaries import border_count, fit_mixed_cost, int8_edges
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
from nnperf.optimize.synthesize._data import ValidationSet, digits_set, glyph_set, load_validation, photo_set
from nnperf.optimize.synthesize._digits import TrainedDigits, cached_digits, train_digits
from nnperf.optimize.synthesize._errors import BudgetError, SynthesisError, UnsupportedModeError, ValidationDataError
from nnperf.optimize.synthesize._glyph_nets import FAMILIES as GLYPH_FAMILIES
from nnperf.optimize.synthesize._glyph_nets import glyph_network, train_glyph_network
from nnperf.optimize.synthesize._glyphs import font_files, split_fonts
from nnperf.optimize.synthesize._inexact import PROBE_SHARES, shared_by_macs, slow_pool_counter
from nnperf.optimize.synthesize._onnx import OrtSettings, node_macs, ort_session, run_session
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
    program_timer,
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
from nnperf.optimize.synthesize._torch import torch_runner

__all__ = [
    "CHECK_TOLERANCE", "GLYPH_FAMILIES", "INEXACT_MODE", "KEPT_LAYOUT", "MANIFEST_FORMAT", "PROBE_SHARES", "PROTOCOLS",
    "RUNTIMES", "SEARCHES", "STAGES", "SYNTHESIS_HARNESS", "SYNTHESIS_ROUNDS", "Accuracy", "BudgetError", "Comparison",
    "InexactSearch", "LayerEffect", "Measured", "OrtSettings", "Predict", "ProgramSpec", "Progress", "SearchResult",
    "Sources", "Stage", "SynthesisError", "SynthesisResult", "TrainedDigits", "UnsupportedModeError",
    "ValidationDataError", "ValidationSet", "accuracy_of", "border_count", "cached_digits", "check_budget",
    "check_protocol", "check_sample_shape", "compare_programs", "compare_timings", "digits_set", "fit_mixed_cost",
    "font_files", "glyph_network", "glyph_set", "greedy_search", "ilp_search", "int8_edges", "load_program",
    "load_validation", "make_sources", "measure_program", "node_macs", "ort_session", "photo_set", "program_timer",
    "read_manifest", "run_session", "shared_by_macs", "slow_pool_counter", "split_fonts", "synthesize", "torch_runner",
    "train_digits", "train_glyph_network",
]
