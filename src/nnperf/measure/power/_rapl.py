"""CPU package energy through Linux powercap RAPL counters.

Reads ``<root>/intel-rapl:N/energy_uj`` for every top-level domain whose
``name`` starts with ``package`` (AMD CPUs appear under ``intel-rapl`` too) and
sums them. Sub-domains (``intel-rapl:N:M``, cores/uncore/dram) are parts of a
package and ``psys`` overlaps the packages, so neither is added.

Each counter wraps at ``max_energy_range_uj``; a wrap is detected as a value
below the previous reading, which assumes the meter is read at least once per
wrap period (minutes at typical package power).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nnperf.measure.power._base import PowerMeter
from nnperf.registry import Availability, UnavailableError

_TOP_LEVEL = re.compile(r"^intel-rapl:\d+$")


@dataclass
class _Domain:
    energy_path: Path
    max_range_uj: int
    last_uj: int
    total_uj: int


class RaplMeter(PowerMeter):
    """Summed RAPL package energy (joules) under ``root`` (default ``/sys/class/powercap``).

    The counters update about every millisecond (``sample_period_s`` = 0.001).
    Since Linux 5.10 ``energy_uj`` is readable by root only; a udev rule or
    ``chmod`` can open it to a user.
    """

    name = "rapl"
    sample_period_s = 0.001

    def __init__(self, root: Path = Path("/sys/class/powercap")) -> None:
        self.root = Path(root)
        self._domains: list[_Domain] | None = None
        self._availability: Availability | None = None

    def availability(self) -> Availability:
        if self._availability is None:
            self._availability = self._open()
        return self._availability

    def read_energy_j(self) -> float:
        avail = self.availability()
        if not avail.ok or self._domains is None:
            raise UnavailableError(f"power meter {self.name!r} cannot run here: {avail.reason}")
        for dom in self._domains:
            try:
                raw_uj = int(dom.energy_path.read_text().strip())
            except (OSError, ValueError) as err:
                raise UnavailableError(f"power meter {self.name!r}: cannot read {dom.energy_path}: {err}") from err
            delta_uj = raw_uj - dom.last_uj
            if delta_uj < 0:
                delta_uj += dom.max_range_uj
            dom.last_uj = raw_uj
            dom.total_uj += delta_uj
        return sum(dom.total_uj for dom in self._domains) / 1e6

    def domain_names(self) -> list[str]:
        """The package domains summed (their ``intel-rapl:N`` directory names); empty when unavailable."""
        if not self.availability().ok or self._domains is None:
            return []
        return [dom.energy_path.parent.name for dom in self._domains]

    def _open(self) -> Availability:
        dirs = (
            sorted(p for p in self.root.glob("intel-rapl:*") if _TOP_LEVEL.match(p.name)) if self.root.is_dir() else []
        )
        if not dirs:
            return Availability.no(f"the kernel exposes no RAPL counters ({self.root}/intel-rapl:* missing)")
        domains = []
        for d in dirs:
            try:
                label = (d / "name").read_text().strip()
            except OSError:
                continue
            if not label.startswith("package"):
                continue
            energy_path = d / "energy_uj"
            try:
                raw_uj = int(energy_path.read_text().strip())
            except (OSError, ValueError):
                return Availability.no(f"RAPL energy_uj is not readable (needs root or a udev rule): {energy_path}")
            try:
                max_range_uj = int((d / "max_energy_range_uj").read_text().strip())
            except (OSError, ValueError):
                return Availability.no(f"RAPL max_energy_range_uj is not readable: {d / 'max_energy_range_uj'}")
            domains.append(_Domain(energy_path, max_range_uj, raw_uj, raw_uj))
        if not domains:
            return Availability.no(
                f"no RAPL package domain under {self.root} (no intel-rapl:N/name starting 'package')"
            )
        self._domains = domains
        return Availability.yes()
