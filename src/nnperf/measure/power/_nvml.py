"""NVIDIA GPU energy through NVML's total-energy counter (``nvidia-ml-py``).

``nvmlDeviceGetTotalEnergyConsumption`` counts millijoules since the driver was
loaded (Volta and newer). ``pynvml`` is imported only when the meter is used.
"""

from __future__ import annotations

from typing import Any

from nnperf.measure.power._base import PowerMeter
from nnperf.registry import Availability, UnavailableError


class NvmlMeter(PowerMeter):
    """Energy of NVIDIA GPU ``device_index`` (default 0), in joules.

    ``sample_period_s`` = 0.02 is an assumption, not an NVML guarantee: recent
    GPUs update the energy counter at about 50 Hz (older boards more slowly).
    """

    name = "nvml"
    sample_period_s = 0.02

    def __init__(self, device_index: int = 0) -> None:
        self.device_index = device_index
        self._handle: Any = None
        self._availability: Availability | None = None

    def availability(self) -> Availability:
        if self._availability is None:
            self._availability = self._open()
        return self._availability

    def read_energy_j(self) -> float:
        avail = self.availability()
        if not avail.ok:
            raise UnavailableError(f"power meter {self.name!r} cannot run here: {avail.reason}")
        import pynvml

        return float(pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)) / 1000.0

    def _open(self) -> Availability:
        try:
            import pynvml
        except ImportError:
            return Availability.no("nvidia-ml-py is not installed (pip install nvidia-ml-py)")
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as err:
            return Availability.no(f"no NVIDIA driver/GPU: {err}")
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.device_index)
        except pynvml.NVMLError as err:
            return Availability.no(f"no NVIDIA GPU with index {self.device_index}: {err}")
        try:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except pynvml.NVMLError_NotSupported:
            return Availability.no(f"NVIDIA GPU {self.device_index} has no total-energy counter (needs Volta or newer)")
        except pynvml.NVMLError as err:
            return Availability.no(f"NVIDIA GPU {self.device_index}: energy counter not readable: {err}")
        self._handle = handle
        return Availability.yes()
