"""Parameter sweeps of one layer inside a three-layer profiling network (Osterwind et al., 3.3.1).

The pure parts: layer configurations, the profiling network and the in-context
timing of its middle layer, sweep specifications and results, and the choice of
the surrounding layers from their times. Measuring sweeps into the store
(``run_sweep``, ``load_sweep``, ``find_surround``, ...) is ``nnperf.campaign``.
"""

from nnperf.measure.sweep._config import (
    DEFAULTS,
    KINDS,
    PARAMETERS,
    LayerConfig,
    SweepInputError,
    check_kind,
    check_parameter,
    parse_fixed,
    parse_range,
)
from nnperf.measure.sweep._network import UNDER_TEST, profiling_network, time_in_context
from nnperf.measure.sweep._surround import (
    SURROUND_KIND,
    SURROUND_MARGIN,
    SURROUND_ROUNDS,
    SURROUND_WIDTHS,
    SurroundChoice,
    choose_width,
)
from nnperf.measure.sweep._sweep import (
    SWEEP_HARNESS,
    Sweep,
    SweepSpec,
    median_round,
    point_name,
    spec_from_dict,
)

__all__ = [
    "DEFAULTS", "KINDS", "PARAMETERS", "SURROUND_KIND", "SURROUND_MARGIN", "SURROUND_ROUNDS", "SURROUND_WIDTHS",
    "SWEEP_HARNESS", "UNDER_TEST",
    "LayerConfig", "SurroundChoice", "Sweep", "SweepInputError", "SweepSpec", "check_kind", "check_parameter",
    "choose_width", "median_round", "parse_fixed", "parse_range", "point_name", "profiling_network",
    "spec_from_dict", "time_in_context",
]
