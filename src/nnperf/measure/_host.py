"""Host metadata recorded with every measurement (CPU model, cores, governor, versions, allocator)."""

from __future__ import annotations

import os
import platform
import socket
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from nnperf.measure._types import HostInfo

PACKAGES = ("nnperf", "torch", "onnxruntime", "opencv-python-headless", "onnx", "numpy")
ALLOCATOR_VARIABLES = ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                       "LD_PRELOAD", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "DNNL_MAX_CPU_ISA",
                       "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")
"""Environment variables that change measured times (glibc malloc tuning, preloaded allocators, thread caps,
instruction-set caps of oneDNN and ATen)."""


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name ('AMD EPYC 9B14'), or the platform's processor string."""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def package_versions(packages: tuple[str, ...] = PACKAGES) -> tuple[tuple[str, str], ...]:
    """(package, version) of the installed packages among ``packages``, sorted."""
    found = []
    for name in packages:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(sorted(found))


def host_info() -> HostInfo:
    """This machine, now (the allocator variables are read from the current environment)."""
    return HostInfo(
        hostname=socket.gethostname(),
        cpu_model=cpu_model(),
        logical_cores=os.cpu_count() or 1,
        governor=_read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        os=f"{platform.system()} {platform.release()}",
        python=platform.python_version(),
        versions=package_versions(),
        allocator_env=tuple(sorted((k, os.environ[k]) for k in ALLOCATOR_VARIABLES if k in os.environ)),
    )
