"""Machine-speed tracking: a reference workload timed beside whatever is measured.

A reading of the reference says how fast the machine is now; the ratio of a workload to the reference, taken
in the same round, says how long the workload takes at the speed the reference was read at. A reference only
follows workloads of its own size and kind: on the AMD VM a CPU hog sharing the measured core made ResNet-18
2.1x slower but a 2 ms convolution 2.9x slower, so the ratio of a network to that small kernel moved by 27%,
while the ratio of MobileNet v2 to ResNet-18 moved by 1%. :data:`REFERENCE_CANDIDATES` are the workloads
``bench/reference_choice.py`` judges (the one whose per-round ratio to whole networks moves least across slow and
fast phases wins); :data:`REFERENCE` is the winner, with the figures in its docstring.

Every candidate is built from IR and timed by the measuring backend itself, so the reference runs in the same
framework, threads and allocator as what it tracks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, LinearAttrs, Network, OpType
from nnperf.measure._harness import HarnessConfig

if TYPE_CHECKING:
    from nnperf.measure._harness import Timer
    from nnperf.measure.backends import Backend


def _conv() -> Layer:
    return Layer("reference_conv", OpType.CONV, ("x",), ((1, 32, 28, 28),), (1, 32, 28, 28),
                 ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))


def _gemm() -> Layer:
    return Layer("reference_gemm", OpType.LINEAR, ("x",), ((64, 1024),), (64, 1024), LinearAttrs())


def _memory() -> Layer:
    shape = (1, 128, 128, 128)  # 8 MiB per operand, 24 MiB moved per execution: beyond a core's share of L3
    return Layer("reference_memory", OpType.ADD, ("x", "y"), (shape, shape), shape)


def _zoo_at(name: str, side: int) -> Network:
    """Zoo network ``name`` at a ``side`` x ``side`` input: the same layers, a quarter of the work at half size."""
    import torch

    from nnperf.ir.importers import from_torch
    from nnperf.zoo import get

    entry = get(name)
    with torch.device("meta"):
        module = entry.factory()
    return from_torch(module, torch.empty((1, 3, side, side), device="meta"), name=f"{entry.name}@{side}")


@dataclass(frozen=True)
class ReferenceWorkload:
    """A candidate reference: a name, what it is, and how to build its IR parts (layers timed alone, networks
    whole; a block of the reference runs every part once)."""

    name: str
    description: str
    parts: Callable[[], tuple[Layer | Network, ...]]

    def timer(self, backend: Backend) -> Timer:
        """A timer of this workload on ``backend``."""
        timers = [backend.network_timer(p) if isinstance(p, Network) else backend.layer_timer(p)
                  for p in _built(self)]
        return timers[0] if len(timers) == 1 else SumTimer(tuple(timers))


class SumTimer:
    """Runs several timers' blocks one after the other as one block (a mixed workload)."""

    def __init__(self, timers: Sequence[Timer]) -> None:
        self.timers = tuple(timers)

    def time_block(self, n: int) -> float:
        return sum(t.time_block(n) for t in self.timers)


REFERENCE_CANDIDATES: Mapping[str, ReferenceWorkload] = {w.name: w for w in (
    ReferenceWorkload("conv", "a 3x3 convolution, 32 channels at 28x28 (7.2 M MACs; the old drift sentinel)",
                      lambda: (_conv(),)),
    ReferenceWorkload("gemm", "a fully connected layer, 64x1024 by 1024x1024 (67 M MACs)", lambda: (_gemm(),)),
    ReferenceWorkload("memory", "an elementwise add of two 8 MiB tensors (memory bound)", lambda: (_memory(),)),
    ReferenceWorkload("mobilenet_v2@112", "MobileNet v2 at a 112x112 input (depthwise and 1x1 convolutions)",
                      lambda: (_zoo_at("mobilenet_v2", 112),)),
    ReferenceWorkload("resnet18@112", "ResNet-18 at a 112x112 input (dense 3x3 convolutions)",
                      lambda: (_zoo_at("resnet18", 112),)),
    ReferenceWorkload("mix", "MobileNet v2 and ResNet-18 at 112x112, the GEMM and the memory-bound add in one block",
                      lambda: (_zoo_at("mobilenet_v2", 112), _zoo_at("resnet18", 112), _gemm(), _memory())),
)}
"""The workloads judged as the machine-speed reference, by name."""

REFERENCE = "resnet18@112"
"""The reference workload nnperf times beside every comparison and calibration: ResNet-18 at 112x112.

Chosen by ``bench/measurement_interference.py``: over 10 sets
of interleaved rounds in 32 minutes, with no injector, a CPU hog on the measured core, a memory hog on the other
core and a periodic slowdown, seven networks' times scaled by their per-round ratio to each candidate moved by a
median 31.8% with this one, 34.5% with the small convolution, 37.5% with the mix, 40.2-59.1% with the others
(304% unscaled); the calibrated model's error on those networks against the scaled times was 8.8% with it (9.5% with the mix, 10.0% with the
convolution). It also costs a third of the mix's time per round."""


@cache
def _built(workload: ReferenceWorkload) -> tuple[Layer | Network, ...]:
    """A workload's IR parts, built once per process (importing a zoo network takes about a second)."""
    return workload.parts()


def reference_workload(name: str = REFERENCE) -> ReferenceWorkload:
    """The candidate called ``name``; a :class:`NnperfError` listing the candidates otherwise."""
    try:
        return REFERENCE_CANDIDATES[name]
    except KeyError:
        raise NnperfError(f"no reference workload {name!r}; the candidates: "
                          f"{', '.join(REFERENCE_CANDIDATES)}") from None


def reference_timer(backend: str, options: Any, name: str = REFERENCE, seed: int = 0) -> Timer:
    """A timer of reference workload ``name`` on a new ``backend`` with ``options``; module level, so that
    ``partial(reference_timer, ...)`` is a picklable factory for the duet protocol."""
    from nnperf.measure.backends import create_backend

    return reference_workload(name).timer(create_backend(backend, options, seed))


READING_HARNESS = HarnessConfig(warmup_s=0.3, min_block_s=0.02, target_ci=0.01, budget_s=2.0)
"""One reading of the reference: a 0.3 s warm-up, then up to 2 s of 20 ms blocks."""


def read_reference(backend: Backend, name: str = REFERENCE, harness: HarnessConfig = READING_HARNESS) -> float:
    """The reference workload's median time on ``backend`` now (seconds per execution)."""
    from nnperf.measure._harness import measure

    return measure(reference_workload(name).timer(backend), harness).stats.median_s


@dataclass(frozen=True)
class SpeedReading:
    """The reference's time (seconds per execution) at calibration and now; ``factor`` > 1: the machine is
    slower now than when it was calibrated."""

    reference: str
    calibration_s: float
    current_s: float

    @property
    def factor(self) -> float:
        return self.current_s / self.calibration_s if self.calibration_s > 0 else math.nan

    def at_current_speed(self, latency_s: float) -> float:
        """A time taken (or predicted) at calibration speed, scaled to the machine's speed now."""
        return latency_s * self.factor

    def to_dict(self) -> dict[str, float | str]:
        return {"reference": self.reference, "calibration_s": self.calibration_s, "current_s": self.current_s,
                "factor": self.factor}
