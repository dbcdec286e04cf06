"""Built-in networks, written in plain PyTorch with random weights.

``names()`` lists the reference networks (the ones to predict),
``calibration_names()`` the PreVIousNet calibration networks (the ones to
profile a system with), ``block_calibration_names()`` those ``nnperf calibrate
--blocks`` adds; ``get(name)`` finds any of them and returns a ZooEntry whose
``build(seed)`` makes the module and ``example_input(seed)`` a canonical input;
``zoo_network(name)`` is a network's IR.
"""

from nnperf.zoo._ir import zoo_network
from nnperf.zoo._registry import (
    ZooEntry,
    block_calibration_entries,
    block_calibration_names,
    calibration_entries,
    calibration_names,
    entries,
    get,
    names,
)

__all__ = [
    "ZooEntry",
    "block_calibration_entries",
    "block_calibration_names",
    "calibration_entries",
    "calibration_names",
    "entries",
    "get",
    "names",
    "zoo_network",
]
