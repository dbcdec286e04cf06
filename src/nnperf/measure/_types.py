"""What is measured (specs) kept apart from what was measured (timings, energies).

All times are seconds and all energies joules (STYLE.md habit 1).
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


class Method(str, enum.Enum):
    """How a time was obtained; the value is stored in the database."""

    WHOLE = "whole"  # the whole network, end to end
    ISOLATED = "isolated"  # one layer run alone on its real input shapes (PreVIous IV-C2)
    PROFILER = "profiler"  # per-node times from the framework's profiler during whole-network runs


@dataclass(frozen=True)
class TimingStats:
    """Robust statistics of per-execution times (seconds).

    ``ci_low_s``/``ci_high_s`` bound the median at ``confidence`` (distribution
    free, from order statistics); ``n_outliers`` counts samples outside
    [Q1 - 1.5 IQR, Q3 + 1.5 IQR]. Outliers are kept in the raw times.
    """

    n: int
    median_s: float
    q1_s: float
    q3_s: float
    mean_s: float
    std_s: float
    min_s: float
    max_s: float
    ci_low_s: float
    ci_high_s: float
    confidence: float
    n_outliers: int

    @property
    def iqr_s(self) -> float:
        return self.q3_s - self.q1_s

    @property
    def ci_rel(self) -> float:
        """Half-width of the median's confidence interval relative to the median."""
        return (self.ci_high_s - self.ci_low_s) / 2 / self.median_s if self.median_s > 0 else float("inf")

    @property
    def cv(self) -> float:
        """Coefficient of variation (std / mean)."""
        return self.std_s / self.mean_s if self.mean_s > 0 else float("inf")


@dataclass(frozen=True)
class Timing:
    """One adaptive measurement: raw per-execution times plus their statistics.

    Each raw time is one timed block divided by ``block_size`` executions.
    ``stop_reason`` is 'converged', 'budget' or 'max_samples'.
    """

    times_s: tuple[float, ...]
    block_size: int
    stats: TimingStats
    stop_reason: str
    wall_s: float
    started_at: float = 0.0  # Unix time of the first timed block (for power-trace windows)
    ended_at: float = 0.0  # Unix time after the last timed block

    @property
    def converged(self) -> bool:
        return self.stop_reason == "converged"


@dataclass(frozen=True)
class HostInfo:
    """The machine and software a measurement ran on."""

    hostname: str
    cpu_model: str
    logical_cores: int
    governor: str  # '' when not readable
    os: str
    python: str
    versions: tuple[tuple[str, str], ...]  # (package, version), sorted
    allocator_env: tuple[tuple[str, str], ...]  # MALLOC_* and similar variables in force
    cpu_details: str = ""  # vendor, family/model/stepping, vector extensions, caches; '' in older stores


def cpu_generation(cpu_details: str) -> str:
    """What of ``cpu_details`` (:func:`nnperf.measure.cpu_details`) tells one CPU generation from another: the
    vendor with family and model, and the vector extensions ('AuthenticAMD family 25 model 17; AVX-512, ...');
    the model name, the stepping and the caches are left out ('' for an empty text)."""
    parts = [part for part in cpu_details.split("; ")[1:] if not part.startswith(("L2 ", "L3 "))]
    return "; ".join(re.sub(r" stepping \S+", "", part) for part in parts)


@dataclass(frozen=True)
class SystemSpec:
    """A 'system' in PreVIous' sense: a device, a framework and its options.

    Models fitted on one system never mix in measurements of another; ``key``
    identifies the system (the hostname is metadata, not identity: two hosts
    with the same CPU and software are one system). A CPU is named by more than
    its model name, which a virtual machine often cuts to its family ('AMD
    EPYC' for Zen 3 and Zen 4 alike): by :func:`cpu_generation` of the host's
    ``cpu_details`` too. ``legacy_key`` is the key without it, which stores
    written before kept (``Store`` adopts such a system when its recorded CPU
    is this one).
    """

    backend: str
    device: str  # 'cpu' or 'cuda:N'
    device_name: str  # CPU model or GPU name
    options: tuple[tuple[str, str], ...]  # backend options (threads, memory format, ...), sorted
    host: HostInfo

    @property
    def key(self) -> str:
        generation = cpu_generation(self.host.cpu_details) if self.device == "cpu" else ""
        return self._hashed({"cpu": generation} if generation else {})

    @property
    def legacy_key(self) -> str:
        """The key as stores before the CPU's generation was part of it computed it."""
        return self._hashed({})

    def _hashed(self, extra: dict[str, str]) -> str:
        identity = {
            "backend": self.backend,
            "device": self.device,
            "device_name": self.device_name,
            "options": list(self.options),
            "versions": list(self.host.versions),
            "allocator_env": list(self.host.allocator_env),
            **extra,
        }
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        return f"{self.backend}/{self.device}" + (f"[{opts}]" if opts else "")


@dataclass(frozen=True)
class LayerMeasurement:
    """The time (and energy, when a meter measured it) of one IR layer.

    ``group`` names the framework node a layer ran inside when the framework
    fused several IR layers (e.g. ONNX Runtime's Conv+Relu): each member then
    carries the whole group's time, and ``group_size`` > 1 says so.
    """

    layer: str
    op: str
    method: Method
    timing: Timing
    group: str = ""
    group_size: int = 1
    energy_j: float | None = None
    power_meter: str = ""


@dataclass(frozen=True)
class NetworkMeasurement:
    """The end-to-end time (and energy) of a whole network."""

    timing: Timing
    energy_j: float | None = None
    power_meter: str = ""
    extra: dict[str, float] = field(default_factory=dict)  # e.g. profiler sum over run time


def fused_sum_s(layers: Sequence[LayerMeasurement], unattributed_s: Mapping[str, float] | None = None) -> float:
    """Sum of the layers' median times, each fused group counted once, plus framework nodes outside the IR."""
    groups = {m.group or m.layer: m.timing.stats.median_s for m in layers}
    return sum(groups.values()) + sum((unattributed_s or {}).values())
