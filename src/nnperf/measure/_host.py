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


_VECTOR_FLAGS = (("amx_tile", "AMX"), ("avx512f", "AVX-512"), ("avx512_vnni", "AVX-512 VNNI"), ("avx2", "AVX2"),
                 ("fma", "FMA"), ("avx", "AVX"), ("sse4_2", "SSE4.2"), ("sse4_1", "SSE4.1"), ("asimd", "NEON"),
                 ("sve", "SVE"))


@lru_cache(maxsize=1)
def cpu_details() -> str:
    """The CPU as fully as the machine says: model name, vendor with family, model and stepping, the vector
    extensions that change kernel speed, and the caches ('AMD EPYC; AuthenticAMD family 25 model 1 stepping 1;
    AVX2, FMA, AVX, SSE4.2, SSE4.1; L2 512 KiB, L3 32768 KiB'). A virtual machine often names only the family
    ('AMD EPYC'); family and model tell the generation (AMD family 25 is Zen 3 or Zen 4)."""
    fields: dict[str, str] = {}
    for line in _read("/proc/cpuinfo").splitlines():
        if not line.strip():
            break  # the first processor is enough
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    parts = [cpu_model()]
    if "vendor_id" in fields:
        parts.append(f"{fields['vendor_id']} family {fields.get('cpu family', '?')} model {fields.get('model', '?')}"
                     f" stepping {fields.get('stepping', '?')}")
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    vector = [name for flag, name in _VECTOR_FLAGS if flag in flags]
    if vector:
        parts.append(", ".join(vector))
    caches = [f"{level} {_read(f'/sys/devices/system/cpu/cpu0/cache/index{i}/size')}"
              for i, level in ((2, "L2"), (3, "L3")) if _read(f"/sys/devices/system/cpu/cpu0/cache/index{i}/size")]
    if caches:
        parts.append(", ".join(caches))
    return "; ".join(parts)


def package_version(name: str) -> str:
    """The installed version of distribution ``name``, '' when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def package_versions(packages: tuple[str, ...] = PACKAGES) -> tuple[tuple[str, str], ...]:
    """(package, version) of the installed packages among ``packages``, sorted."""
    return tuple(sorted((name, package_version(name)) for name in packages if package_version(name)))


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
        cpu_details=cpu_details(),
    )
