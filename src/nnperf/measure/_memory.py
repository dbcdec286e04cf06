"""A memory check before a network or layer is built for measurement.

The weights, inputs and every layer output are allocated (in float32) when a
backend builds a network, and the weights twice: drawn in NumPy, then copied
into the framework (torch parameters, an ONNX model). One beyond the machine's
free memory would end in an allocator error or the kernel's out-of-memory
killer; :func:`require_memory` refuses it first, naming what would not fit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from nnperf.errors import InsufficientMemoryError
from nnperf.ir import Layer, numel
from nnperf.ir.metrics import layer_metrics

FLOAT32_BYTES = 4

MEMORY_HEADROOM = 0.8
"""The fraction of the free memory a build may take: the framework, copies and the rest of the process need
the remainder."""


def available_memory_bytes() -> int | None:
    """Memory the machine can give without swapping (Linux's MemAvailable), or None where it is unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def build_bytes(layers: Iterable[Layer]) -> int:
    """Bytes (float32) of the weights (twice: drawn, then copied into the framework) and the outputs of
    ``layers``: an upper bound on what building and running them allocates, as every output is counted as if
    kept."""
    total = 0
    for layer in layers:
        metrics = layer_metrics(layer)
        total += 2 * metrics.params + metrics.n_output
    return total * FLOAT32_BYTES


def require_memory(layers: Iterable[Layer], input_shapes: Iterable[tuple[int, ...]], what: str,
                   available_bytes: int | None = None) -> None:
    """Raise :class:`InsufficientMemoryError` when building ``layers`` fed with ``input_shapes`` needs more than
    ``MEMORY_HEADROOM`` of the free memory (``available_bytes``, read from the machine when None)."""
    needed = build_bytes(layers) + sum(numel(s) for s in input_shapes) * FLOAT32_BYTES
    free = available_memory_bytes() if available_bytes is None else available_bytes
    if free is None or needed <= free * MEMORY_HEADROOM:
        return
    raise InsufficientMemoryError(
        f"{what} needs about {needed / 2**30:.1f} GiB for its weights and tensors (float32), but this machine "
        f"has {free / 2**30:.1f} GiB free (a build may take {MEMORY_HEADROOM:.0%} of it); "
        "use a smaller input shape or a machine with more memory"
    )
