"""The channel between a client and the cloud: transmit energy and time (NeuPart Sec. VI, Eq. 24-25).

Everything is SI: bits, bit/s, watts, joules, seconds. Parsers for human-written bit rates and powers
("60Mbps", "500mW") live here too, so the CLI and tests share one grammar.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nnperf.errors import NnperfError

__all__ = [
    "RLC_FACTOR_8BIT",
    "RLC_FACTOR_16BIT",
    "RLC_WORD_BITS",
    "Channel",
    "PartitionInputError",
    "jpeg_bits",
    "parse_bitrate",
    "parse_power",
    "rlc_bits",
]

RLC_WORD_BITS = 64
"""Width of one run-length-coded word (CNNergy's DRAM word), bits."""
RLC_FACTOR_16BIT = 3
"""Nonzeros carried by one 64-bit RLC word for 16-bit data (CNNergy ``RLC = 3``)."""
RLC_FACTOR_8BIT = 5
"""Nonzeros carried by one 64-bit RLC word for 8-bit data (CNNergy 8-bit variant, ``RLC = 5``)."""


class PartitionInputError(NnperfError):
    """A bad input to partitioning: the message names the parameter and the value it got."""


def _positive(name: str, what: str, unit: str, value: object) -> float:
    """``value`` as a float if it is finite and > 0, else a PartitionInputError naming ``name``."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise PartitionInputError(f"{name}: {what} must be a number > 0 {unit}, got {value!r}") from None
    if not (math.isfinite(number) and number > 0):
        raise PartitionInputError(f"{name}: {what} must be a finite number > 0 {unit}, got {value!r}")
    return number


def _non_negative(name: str, what: str, unit: str, value: object) -> float:
    """``value`` as a float if it is finite and >= 0, else a PartitionInputError naming ``name``."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise PartitionInputError(f"{name}: {what} must be a number >= 0 {unit}, got {value!r}") from None
    if not (math.isfinite(number) and number >= 0):
        raise PartitionInputError(f"{name}: {what} must be a finite number >= 0 {unit}, got {value!r}")
    return number


def check_sparsity(value: object, name: str = "sparsity") -> float:
    """A zero fraction in [0, 1) as a float; 1.0 is refused (nothing would be left to send or compute)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise PartitionInputError(f"{name}: zero fraction must be a number in [0, 1), got {value!r}") from None
    if not 0.0 <= number < 1.0:
        raise PartitionInputError(f"{name}: zero fraction must be in [0, 1), got {value!r}")
    return number


@dataclass(frozen=True)
class Channel:
    """A client's uplink: effective bit rate ``bitrate_bps`` (bit/s, B_e) and transmit power ``tx_power_w`` (W, P_tx).

    Both must be finite and > 0 (PartitionInputError otherwise); they are stored as floats.
    """

    bitrate_bps: float
    tx_power_w: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "bitrate_bps", _positive("bitrate_bps", "bit rate", "bit/s", self.bitrate_bps))
        object.__setattr__(self, "tx_power_w", _positive("tx_power_w", "transmit power", "W", self.tx_power_w))

    def transmit_energy_j(self, bits: float) -> float:
        """Client energy to send ``bits``: ``P_tx * bits / B_e`` joules (NeuPart Eq. 24)."""
        return self.tx_power_w * bits / self.bitrate_bps

    def transmit_time_s(self, bits: float) -> float:
        """Time to send ``bits`` at the effective bit rate: ``bits / B_e`` seconds (the T_trans term of Eq. 26)."""
        return bits / self.bitrate_bps


def rlc_bits(values: float, sparsity: float, rlc_factor: int) -> float:
    """Run-length-coded size, in bits, of a tensor of ``values`` elements of which ``sparsity`` are zero.

    ``64 * values * (1 - sparsity) / rlc_factor``: one 64-bit RLC word carries ``rlc_factor`` nonzeros
    (3 for 16-bit data, 5 for 8-bit; the remaining bits code the zero runs), as CNNergy codes DRAM traffic
    (reference model sections 4 and 8; NeuPart Eq. 25). ``values`` >= 0, 0 <= ``sparsity`` < 1,
    ``rlc_factor`` an integer >= 1.
    """
    count = _non_negative("values", "element count", "elements", values)
    zero_fraction = check_sparsity(sparsity)
    if isinstance(rlc_factor, bool) or not isinstance(rlc_factor, int) or rlc_factor < 1:
        raise PartitionInputError(f"rlc_factor: nonzeros per 64-bit RLC word must be an integer >= 1, "
                                  f"got {rlc_factor!r}")
    return RLC_WORD_BITS * count * (1.0 - zero_fraction) / rlc_factor


def jpeg_bits(size_bytes: float) -> float:
    """Bits sent for a compressed input image of ``size_bytes`` bytes (the FCC point): ``8 * size_bytes``."""
    return 8.0 * _positive("size_bytes", "image size", "bytes", size_bytes)


_NUMBER = r"(?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_BITRATE_PREFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BITRATE_UNITS = ("bps", "bit/s", "bits/s", "b/s")
_POWER_UNITS = {"": 1.0, "W": 1.0, "mW": 1e-3, "uW": 1e-6, "\u00b5W": 1e-6, "kW": 1e3}


def _split_quantity(name: str, text: object, examples: str) -> tuple[float, str]:
    match = re.fullmatch(_NUMBER + r"\s*(?P<unit>[^\s\d.+-]*)", text.strip()) if isinstance(text, str) else None
    if match is None:
        raise PartitionInputError(f"{name}: cannot read {text!r}; write e.g. {examples}")
    return float(match["number"]), match["unit"]


def parse_bitrate(text: str) -> float:
    """A bit rate in bit/s from text: "60Mbps", "60 Mbit/s", "1.5Gbps", "800kbps", "60e6" (a plain number is bit/s).

    Prefixes k/K, M, G, T; units bps, bit/s, bits/s, b/s. Byte rates ("MB/s") are refused rather than guessed.
    Raises PartitionInputError on anything else and on values <= 0.
    """
    examples = "'60Mbps', '60 Mbit/s', '1.5Gbps', '800kbps' or '60e6' (bit/s)"
    number, unit = _split_quantity("bitrate", text, examples)
    scale = None
    if unit == "":
        scale = 1.0
    else:
        for suffix in _BITRATE_UNITS:
            if unit.endswith(suffix) and unit[: -len(suffix)] in _BITRATE_PREFIXES:
                scale = _BITRATE_PREFIXES[unit[: -len(suffix)]]
                break
    if scale is None:
        hint = " (bytes are not accepted: give bits per second)" if "B" in unit.lstrip("kKMGT") else ""
        raise PartitionInputError(f"bitrate: unknown unit {unit!r} in {text!r}{hint}; write e.g. {examples}")
    if not number > 0:
        raise PartitionInputError(f"bitrate: bit rate must be > 0 bit/s, got {text!r}")
    return _positive("bitrate", "bit rate", "bit/s", number * scale)


def parse_power(text: str) -> float:
    """A power in watts from text: "0.5W", "500mW", "0.5" (a plain number is watts); also uW and kW.

    Raises PartitionInputError on anything else and on values <= 0.
    """
    examples = "'0.5W', '500mW' or '0.5' (W)"
    number, unit = _split_quantity("power", text, examples)
    if unit not in _POWER_UNITS:
        raise PartitionInputError(f"power: unknown unit {unit!r} in {text!r}; write e.g. {examples}")
    if not number > 0:
        raise PartitionInputError(f"power: transmit power must be > 0 W, got {text!r}")
    return _positive("power", "transmit power", "W", number * _POWER_UNITS[unit])
