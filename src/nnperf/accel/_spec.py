"""The accelerator a CNNergy energy estimate is for: PE array, storage, energy per operation, control.

Defaults are the Eyeriss-like values of the public CNNergy model (NeuPart, Table III;
``docs/cnnergy.md`` section 1): a 12 x 14 PE array, 100 kB of global buffer
(GLB) for ifmaps and psums, 16-bit data, energies per access in the ratio 1 : 2 : 6 : 200
(RF : inter-PE : GLB : DRAM) of a 16-bit MAC scaled from 45 nm / 0.9 V to 65 nm / 1 V.

8-bit data follows the reference's scaling rules (section 5): register files hold twice as many
entries, the MAC's adder scales linearly and its multiplier quadratically, every access energy
halves, and a 64-bit RLC word carries 5 nonzeros instead of 3.

A spec is loaded from a versioned YAML file (``version: 1``); any field left out keeps the
default for the file's bit width. ``kB`` is 1024 bytes throughout, as in the reference.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from nnperf.errors import NnperfError

SPEC_FORMAT = "nnperf-accelerator"
SPEC_VERSION = 1

TECHNOLOGY_SCALE = (65 / 45) * (1 / 0.9) ** 2
"""45 nm / 0.9 V -> 65 nm / 1 V energy scaling of the reference, 1.783265."""

ADD_ENERGY_16_J = 0.05e-12 * TECHNOLOGY_SCALE
MULT_ENERGY_16_J = 0.9e-12 * TECHNOLOGY_SCALE
MAC_ENERGY_16_J = ADD_ENERGY_16_J + MULT_ENERGY_16_J
"""One 16-bit add plus multiply at 65 nm (Horowitz' 45 nm figures, scaled): 1.69410 pJ."""

GLB_LAWS = ("constant", "sqrt")


class AcceleratorSpecError(NnperfError):
    """An accelerator spec (or spec file) with a missing, unknown or impossible value."""


@dataclass(frozen=True)
class AcceleratorSpec:
    """A row-stationary CNN accelerator as CNNergy models it (NeuPart Table II and III).

    Storage is counted in data elements of ``bits`` bits; energies are joules per access or
    per MAC; the GLB holds ifmaps and psums only (filters stream DRAM -> GLB -> RF).
    """

    name: str = "eyeriss-like"
    bits: int = 16
    pe_rows: int = 12
    """J, the PE array's height."""
    pe_cols: int = 14
    """K, the PE array's width."""
    glb_kb: float = 100.0
    """GLB for ifmaps and psums, in kB of 1024 bytes."""
    filter_rf_entries: int = 224
    ifmap_rf_entries: int = 12
    psum_rf_entries: int = 24
    rlc_factor: int = 3
    """Nonzero values carried by one 64-bit run-length-coded word."""
    mac_energy_j: float = MAC_ENERGY_16_J
    rf_energy_j: float = MAC_ENERGY_16_J
    inter_pe_energy_j: float = 2 * MAC_ENERGY_16_J
    glb_energy_j: float = 6 * MAC_ENERGY_16_J
    """Energy of one GLB <-> RF access at ``glb_reference_kb``."""
    dram_energy_j: float = 200 * MAC_ENERGY_16_J
    clock_power_w: float = 0.1063
    """Clock-tree power (the reference's H-tree model gives 0.106267 W; its mains use 0.1063)."""
    throughput_macs_per_s: float = 23.1e9
    """Eyeriss' measured AlexNet rate: 665.8 M conv MACs at 34.7 frames/s."""
    control_fraction: float = 0.15
    """C%: control energy other than the clock, as a fraction of all control plus on-chip energy."""
    glb_energy_law: str = "constant"
    """How GLB energy per access follows the GLB size: 'constant' (the public model) or 'sqrt'."""
    glb_reference_kb: float = 100.0
    """The GLB size at which ``glb_energy_j`` holds; other sizes scale by the law."""

    def __post_init__(self) -> None:
        for name in ("pe_rows", "pe_cols", "filter_rf_entries", "ifmap_rf_entries", "psum_rf_entries",
                     "rlc_factor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AcceleratorSpecError(f"accelerator spec: {name} must be a whole number >= 1, got {value!r}")
        if self.bits not in (8, 16):
            raise AcceleratorSpecError(f"accelerator spec: bits must be 16 or 8, got {self.bits!r}")
        for name in ("glb_kb", "mac_energy_j", "rf_energy_j", "inter_pe_energy_j", "glb_energy_j", "dram_energy_j",
                     "throughput_macs_per_s", "glb_reference_kb"):
            value = getattr(self, name)
            if not _finite(value) or value <= 0:
                raise AcceleratorSpecError(f"accelerator spec: {name} must be a finite number > 0, got {value!r}")
        if not _finite(self.clock_power_w) or self.clock_power_w < 0:
            raise AcceleratorSpecError(f"accelerator spec: clock_power_w must be >= 0, got {self.clock_power_w!r}")
        if not _finite(self.control_fraction) or not 0 <= self.control_fraction < 1:
            raise AcceleratorSpecError(
                f"accelerator spec: control_fraction must be in [0, 1), got {self.control_fraction!r}")
        if self.glb_energy_law not in GLB_LAWS:
            raise AcceleratorSpecError(
                f"accelerator spec: glb_energy_law must be one of {', '.join(GLB_LAWS)}, got {self.glb_energy_law!r}")

    @property
    def glb_access_energy_j(self) -> float:
        """GLB energy per access at this GLB size.

        'constant' keeps ``glb_energy_j`` whatever the size (the public model, so it cannot show the
        paper's 88 kB optimum). 'sqrt' scales it with the square root of the capacity: in CACTI the
        energy of an SRAM access is dominated by bit- and word-line wires whose length grows with the
        side of the array, i.e. with sqrt(capacity) at a fixed aspect ratio.
        """
        if self.glb_energy_law == "constant":
            return self.glb_energy_j
        return self.glb_energy_j * math.sqrt(self.glb_kb / self.glb_reference_kb)

    def to_dict(self) -> dict[str, Any]:
        return {"format": SPEC_FORMAT, "version": SPEC_VERSION, **asdict(self)}


def eyeriss_spec(bits: int = 16) -> AcceleratorSpec:
    """The reference's Eyeriss-like accelerator at 16 or 8 bits (docs/cnnergy.md, sections 1 and 5)."""
    if bits == 16:
        return AcceleratorSpec()
    if bits != 8:
        raise AcceleratorSpecError(f"bits must be 16 or 8, got {bits!r}")
    half = MAC_ENERGY_16_J / 2
    return AcceleratorSpec(
        bits=8, filter_rf_entries=448, ifmap_rf_entries=24, psum_rf_entries=48, rlc_factor=5,
        mac_energy_j=ADD_ENERGY_16_J / 2 + MULT_ENERGY_16_J / 4,
        rf_energy_j=half, inter_pe_energy_j=2 * half, glb_energy_j=6 * half, dram_energy_j=200 * half)


def spec_from_dict(data: Any, source: str = "accelerator spec") -> AcceleratorSpec:
    """A spec from a mapping such as a parsed YAML file; missing fields take the defaults for its ``bits``."""
    if not isinstance(data, dict):
        raise AcceleratorSpecError(f"{source}: expected a mapping of fields, got {type(data).__name__}")
    data = dict(data)
    data.pop("format", None)
    version = data.pop("version", None)
    if version is None:
        raise AcceleratorSpecError(f"{source}: missing 'version' (this nnperf reads version {SPEC_VERSION})")
    if version != SPEC_VERSION:
        raise AcceleratorSpecError(f"{source}: version {version!r} is not supported (this nnperf reads "
                                   f"version {SPEC_VERSION}; a newer nnperf may have written it)")
    known = {f.name for f in fields(AcceleratorSpec)}
    unknown = sorted(str(key) for key in data if key not in known)  # YAML keys may be numbers, booleans or null
    if unknown:
        raise AcceleratorSpecError(f"{source}: unknown field(s) {', '.join(unknown)}; "
                                   f"known fields: {', '.join(sorted(known))}")
    base = eyeriss_spec(_bits(data.get("bits", 16), source))
    for name, value in data.items():
        expected = type(getattr(base, name))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or isinstance(value, bool):
            raise AcceleratorSpecError(f"{source}: field {name} must be a {expected.__name__}, got {value!r}")
        data[name] = value
    try:
        return replace(base, **data)
    except AcceleratorSpecError as exc:
        raise AcceleratorSpecError(f"{source}: {str(exc).removeprefix('accelerator spec: ')}") from None


def load_spec(path: str | Path) -> AcceleratorSpec:
    """Reads a YAML spec file (``version: 1``; see ``nnperf accel spec`` for a complete example)."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AcceleratorSpecError(f"{path}: cannot read the accelerator spec: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise AcceleratorSpecError(f"{path}: cannot read the accelerator spec: not UTF-8 text "
                                   f"(byte {exc.start}); expected a YAML file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AcceleratorSpecError(f"{path}: not valid YAML: {_yaml_problem(exc)}") from None
    except RecursionError:  # yaml's composer and constructor recurse once per nesting level
        raise AcceleratorSpecError(f"{path}: not valid YAML for a spec: nested too deeply") from None
    return spec_from_dict(data, str(path))


def spec_yaml(spec: AcceleratorSpec) -> str:
    """The spec as a YAML document that ``load_spec`` reads back unchanged."""
    import yaml

    return yaml.safe_dump(spec.to_dict(), sort_keys=False)


def _yaml_problem(exc: Exception) -> str:
    """A YAML error in one line: yaml's own message spans several lines and quotes the source."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem:
        text = str(problem)
        if mark is not None:
            text += f" (line {mark.line + 1}, column {mark.column + 1})"
        return text
    return " ".join(str(exc).split())


def _bits(value: Any, source: str) -> int:
    if value not in (8, 16) or isinstance(value, bool):
        raise AcceleratorSpecError(f"{source}: bits must be 16 or 8, got {value!r}")
    return int(value)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
