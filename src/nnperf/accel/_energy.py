"""Energy of one layer and of a network on the accelerator (NeuPart IV-D, Algorithm 1, Eq. 2-4, 16-20).

Follows the public CNNergy model (``docs/cnnergy.md`` sections 3 and 4): per
pass, the filters stream DRAM -> GLB -> RF once for the batch; the ifmap is read from DRAM (RLC-coded
except for the network's first layer, whose input is the image) and re-read for every filter pass
and spatial tile; psums move between GLB and RF (written in the first channel pass, read and written
in later ones); zero ifmap values skip the MAC and its filter and psum RF accesses. The ofmap is
written back to DRAM once, RLC-coded. Clock energy is the clock-tree power times MACs / throughput,
and other control is C% of control plus on-chip energy.

All energies are joules per image.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nnperf.accel._layers import AccelLayer, blocks
from nnperf.accel._schedule import Schedule, schedule
from nnperf.accel._spec import AcceleratorSpec

COMPONENTS = ("mac", "rf", "inter_pe", "glb", "dram", "clock", "control")


@dataclass(frozen=True)
class LayerEnergy:
    """One layer's energy per image with its breakdown, access counts (in data words) and schedule."""

    layer: AccelLayer
    schedule: Schedule
    energy_j: float
    """the reference's total: data and compute energy plus clock and other control"""
    mac_j: float
    rf_j: float
    inter_pe_j: float
    glb_j: float
    dram_j: float
    clock_j: float
    control_j: float
    macs: float
    nonzero_macs: float
    glb_words: dict[str, float]
    """GLB accesses per image by data type: filter, ifmap, psum"""
    dram_words: dict[str, float]
    """DRAM accesses per image by data type: filter, ifmap, ofmap (RLC-coded words where coded)"""
    latency_s: float
    """MACs / throughput, the time the clock energy is charged for"""

    @property
    def name(self) -> str:
        return self.layer.name

    def breakdown(self) -> dict[str, float]:
        """Energy by component in joules; the values sum to ``energy_j``."""
        return {c: getattr(self, f"{c}_j") for c in COMPONENTS}

    def to_dict(self) -> dict[str, Any]:
        s = self.schedule
        return {
            "name": self.name, "block": self.layer.block, "energy_j": self.energy_j,
            "breakdown_j": self.breakdown(), "macs": self.macs, "nonzero_macs": self.nonzero_macs,
            "latency_s": self.latency_s, "glb_words": self.glb_words, "dram_words": self.dram_words,
            "schedule": {"batch": s.batch, "batch_max": s.batch_max, "sets_per_pass": s.sets_per_pass,
                         "channels_per_set": s.channels_per_set, "channels_per_pass": s.channels_per_pass,
                         "filters_per_set": s.filters_per_set, "filters_per_pass": s.filters_per_pass,
                         "all_channels_in_pass": s.all_channels_in_pass, "x_ofmap": s.x_ofmap,
                         "y_ofmap": s.y_ofmap, "y_ofmap_glb": s.y_ofmap_glb, "ifmap_kb": s.ifmap_kb,
                         "psum_kb": s.psum_kb, "rules": list(s.rules)},
        }


@dataclass(frozen=True)
class _Pass:
    """One pass of a layer (Eq. 13-15), in data words for the batch of ``n`` images: the filter weights, the
    ifmap and its rows not shared with the pass before (``ifmap_new``), both as read from DRAM, the psums, the
    inter-PE psum moves, and the energy of its MACs and RF and inter-PE accesses (J)."""

    n: int
    weights: float
    ifmap: float
    dram_ifmap: float
    dram_ifmap_new: float
    psums: float
    inter_pe: float
    mac_j: float


def _one_pass(layer: AccelLayer, spec: AcceleratorSpec, sch: Schedule, first_layer: bool) -> _Pass:
    """The words and MAC energy of one pass; ``first_layer`` reads an uncoded image from DRAM, every other layer
    an RLC-coded ifmap whose zeros skip the MAC and its filter and psum RF accesses."""
    R, U, n = layer.filter_size, layer.stride, sch.batch
    nz_if = 1 - layer.ifmap_sparsity
    words_per_rlc = 64 / spec.bits
    e_rf, e_pe = spec.rf_energy_j, spec.inter_pe_energy_j
    weights = sch.filters_per_pass * sch.channels_per_pass * R * R
    ifmap = sch.x_ifmap * sch.y_ifmap * sch.channels_per_pass
    ifmap_new = sch.x_ifmap * (sch.y_ifmap - (R - U)) * sch.channels_per_pass  # rows not shared with the last pass
    if first_layer:
        dram_ifmap, dram_ifmap_new = ifmap * n, ifmap_new * n
    else:
        dram_ifmap = ifmap * nz_if / spec.rlc_factor * words_per_rlc * n
        dram_ifmap_new = ifmap_new * nz_if / spec.rlc_factor * words_per_rlc * n
    psums = sch.filters_per_pass * sch.x_ofmap * sch.y_ofmap
    macs_pass = R * R * sch.x_ofmap * sch.y_ofmap * sch.filters_per_pass * sch.channels_per_pass
    nz_macs_pass = macs_pass * nz_if
    psum_rows = math.ceil(R * (sch.channels_per_pass / sch.channels_per_set))
    inter_pe = (psum_rows - 1) * sch.x_ofmap * sch.filters_per_pass * sch.y_ofmap
    mac_pass_j = (spec.mac_energy_j * nz_macs_pass + 3 * e_rf * nz_macs_pass + e_pe * inter_pe
                  + e_rf * (nz_macs_pass - inter_pe) + e_rf * (macs_pass - nz_macs_pass))
    return _Pass(n, weights, ifmap, dram_ifmap, dram_ifmap_new, psums, inter_pe, mac_pass_j)


@dataclass(frozen=True)
class _Passes:
    """Every pass of a layer for the batch (Eq. 16-18): ``y_passes`` stacked, ``z_passes`` over the channels,
    ``repeats`` over the filters and spatial tiles; the DRAM energy of the ifmap in one y-stack and the energy of
    all passes (J)."""

    y_passes: int
    z_passes: int
    repeats: int
    dram_ifmap_j: float
    passes_j: float


def _all_passes(layer: AccelLayer, spec: AcceleratorSpec, sch: Schedule, one: _Pass) -> _Passes:
    """A y-stack of passes, then all channels, filters and spatial tiles; psums are written in the first channel
    pass and read and written in later ones."""
    e_glb, e_dram, n = spec.glb_access_energy_j, spec.dram_energy_j, one.n
    y_pass = sch.y_passes
    dram_ifmap_j = e_dram * (one.dram_ifmap + (y_pass - 1) * one.dram_ifmap_new)
    common = (e_dram + e_glb) * one.weights + dram_ifmap_j + n * y_pass * (e_glb * one.ifmap + one.mac_j)
    first = common + n * y_pass * e_glb * one.psums
    later = common + n * y_pass * 2 * e_glb * one.psums
    z_passes = sch.z_passes(layer)
    repeats = sch.filter_passes(layer) * sch.y_tiles(layer) * sch.x_tiles(layer)
    passes_j = (first + (z_passes - 1) * later) * repeats
    return _Passes(y_pass, z_passes, repeats, dram_ifmap_j, passes_j)


def _words(one: _Pass, passes: _Passes, ofmap_words: float) -> tuple[dict[str, float], dict[str, float]]:
    """GLB and DRAM accesses per image by data type (the reference's reported MB, in words)."""
    n, y_pass, z_passes, repeats = one.n, passes.y_passes, passes.z_passes, passes.repeats
    glb_words = {"filter": one.weights * z_passes * repeats / n,
                 "ifmap": one.ifmap * n * y_pass * z_passes * repeats / n,
                 "psum": (one.psums * n * y_pass + 2 * one.psums * n * y_pass * (z_passes - 1)) * repeats / n}
    dram_words = {"filter": one.weights * z_passes * repeats / n,
                  "ifmap": (one.dram_ifmap + (y_pass - 1) * one.dram_ifmap_new) * z_passes * repeats / n,
                  "ofmap": ofmap_words / n}
    return glb_words, dram_words


def layer_energy(layer: AccelLayer, spec: AcceleratorSpec, first_layer: bool = False,
                 batch: int | None = None) -> LayerEnergy:
    """CNNergy's energy per image of one layer; ``first_layer`` reads an uncoded image from DRAM."""
    sch = schedule(layer, spec, batch)
    n = sch.batch
    e_glb, e_dram, e_rf, e_pe = spec.glb_access_energy_j, spec.dram_energy_j, spec.rf_energy_j, spec.inter_pe_energy_j
    one = _one_pass(layer, spec, sch, first_layer)
    passes = _all_passes(layer, spec, sch, one)
    ofmap_words = layer.ofmap_values * (1 - layer.ofmap_sparsity) / spec.rlc_factor * (64 / spec.bits) * n
    data_j = (passes.passes_j + e_dram * ofmap_words) / n

    # control (Eq. 19-21): clock for MACs / throughput, other control a fraction of the rest
    dram_in_passes_j = (passes.dram_ifmap_j + e_dram * one.weights) * passes.z_passes * passes.repeats
    on_chip_j = (passes.passes_j - dram_in_passes_j) / n
    macs = float(layer.macs)
    latency_s = macs / spec.throughput_macs_per_s
    clock_j = spec.clock_power_w * latency_s
    control_j = spec.control_fraction / (1 - spec.control_fraction) * (on_chip_j + clock_j)

    glb_words, dram_words = _words(one, passes, ofmap_words)
    nonzero_macs = macs * (1 - layer.ifmap_sparsity)
    inter_pe_total = one.inter_pe * n * passes.y_passes * passes.z_passes * passes.repeats / n
    return LayerEnergy(
        layer=layer, schedule=sch, energy_j=data_j + clock_j + control_j,
        mac_j=spec.mac_energy_j * nonzero_macs, rf_j=e_rf * (macs + 3 * nonzero_macs - inter_pe_total),
        inter_pe_j=e_pe * inter_pe_total, glb_j=e_glb * sum(glb_words.values()),
        dram_j=e_dram * sum(dram_words.values()), clock_j=clock_j, control_j=control_j, macs=macs,
        nonzero_macs=nonzero_macs, glb_words=glb_words, dram_words=dram_words, latency_s=latency_s)


@dataclass(frozen=True)
class NetworkEnergy:
    """Every layer's energy per image on one accelerator, in order, with cumulative and block totals."""

    name: str
    spec: AcceleratorSpec
    layers: tuple[LayerEnergy, ...]

    @property
    def total_j(self) -> float:
        return float(sum(layer.energy_j for layer in self.layers))

    @property
    def latency_s(self) -> float:
        return float(sum(layer.latency_s for layer in self.layers))

    @property
    def macs(self) -> float:
        return float(sum(layer.macs for layer in self.layers))

    def cumulative_j(self) -> list[float]:
        """Energy of the network up to and including each layer (NeuPart Eq. 2)."""
        total, out = 0.0, []
        for layer in self.layers:
            total += layer.energy_j
            out.append(total)
        return out

    def breakdown(self) -> dict[str, float]:
        return {c: float(sum(layer.breakdown()[c] for layer in self.layers)) for c in COMPONENTS}

    def blocks(self) -> list[tuple[str, list[LayerEnergy]]]:
        """Reporting layers (SqueezeNet's fire expand, GoogLeNet's inception modules) with their rows."""
        rows = [layer.layer for layer in self.layers]
        return [(name, [self.layers[i] for i in indices]) for name, indices in blocks(rows)]

    def to_dict(self) -> dict[str, Any]:
        cumulative = self.cumulative_j()
        return {
            "format": "nnperf-accel-energy", "version": 1, "network": self.name, "spec": self.spec.to_dict(),
            "total_energy_j": self.total_j, "latency_s": self.latency_s, "macs": self.macs,
            "breakdown_j": self.breakdown(),
            "layers": [{**layer.to_dict(), "cumulative_energy_j": c} for layer, c in zip(self.layers, cumulative,
                                                                                         strict=True)],
            "blocks": [{"name": name, "layers": [r.name for r in rows],
                        "energy_j": float(sum(r.energy_j for r in rows))} for name, rows in self.blocks()],
        }


def network_energy(layers: Sequence[AccelLayer], spec: AcceleratorSpec, name: str = "network",
                   batch: str = "table") -> NetworkEnergy:
    """Every layer's energy; the first row reads the uncoded image.

    ``batch`` is 'table' (each row's n; an empty n takes the model's own choice) or 'model' (the model's
    own choice everywhere, the reference's first simulation; use it when the spec differs from the one
    the table's n was picked for, as in a design-space sweep).
    """
    if batch not in ("table", "model"):
        raise ValueError(f"batch must be 'table' or 'model', got {batch!r}")
    results = tuple(layer_energy(layer, spec, first_layer=(i == 0),
                                 batch=layer.batch if batch == "table" else None)
                    for i, layer in enumerate(layers))
    return NetworkEnergy(name=name, spec=spec, layers=results)
