"""Parameter sweeps of one layer inside a three-layer profiling network (Osterwind et al., 3.3.1).

:func:`find_surround` chooses the surrounding layers, :func:`run_sweep`
measures a layer parameter over a range and stores every point as it is taken.
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
    SURROUND_MARGIN,
    SURROUND_ROUNDS,
    SURROUND_WIDTHS,
    SurroundChoice,
    choose_width,
    find_surround,
    recorded_surround,
    surround_width,
)
from nnperf.measure.sweep._sweep import SWEEP_HARNESS, Sweep, SweepSpec, load_sweep, run_sweep, sweep_runs

__all__ = [
    "DEFAULTS", "KINDS", "PARAMETERS", "SURROUND_MARGIN", "SURROUND_ROUNDS", "SURROUND_WIDTHS", "SWEEP_HARNESS",
    "UNDER_TEST",
    "LayerConfig", "SurroundChoice", "Sweep", "SweepInputError", "SweepSpec", "check_kind", "check_parameter",
    "choose_width", "find_surround", "load_sweep", "parse_fixed", "parse_range", "profiling_network",
    "recorded_surround", "run_sweep", "surround_width", "sweep_runs", "time_in_context",
]
