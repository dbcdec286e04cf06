"""Built-in networks, written in plain PyTorch with random weights.

``names()`` lists them, ``get(name)`` returns a ZooEntry whose ``build(seed)``
makes the module and ``example_input(seed)`` a canonical input.
"""

from nnperf.zoo._registry import ZooEntry, entries, get, names

__all__ = ["ZooEntry", "entries", "get", "names"]
