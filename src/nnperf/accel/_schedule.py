"""CNNergy's computation-scheduling parameters of a layer (NeuPart IV-C, Fig. 7).

Follows the public model rule by rule (``docs/cnnergy.md`` section 2): initial
sets, channels and filters per pass from the PE array and register files; exception rules 1 to 5 in
order; spatial coverage, the batch n and the GLB allocation with exception rule 6. Pass counts may be
fractional, as in the reference (no ceilings). ``Schedule.rules`` lists the exception rules that
fired, in order, so ``nnperf accel energy --explain`` can show why a layer is scheduled as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nnperf.accel._layers import AccelLayer
from nnperf.accel._spec import AcceleratorSpec
from nnperf.errors import NnperfError

RULE_3_CHANNELS_PER_PASS = 72
"""The reference's fixed heuristic for 1x1 convolutions (rule 3)."""


class ScheduleError(NnperfError):
    """A layer that the accelerator cannot schedule (e.g. its GLB cannot hold one ifmap row)."""


@dataclass(frozen=True)
class Schedule:
    """How one layer is mapped onto the PE array and the GLB (NeuPart Table II); kB = 1024 bytes."""

    sets_per_pass: int
    """S = floor(J / R)"""
    channels_per_set: float
    channels_per_pass: float
    """c_pass"""
    filters_per_set: float
    filters_per_pass: float
    """f_pass"""
    all_channels_in_pass: bool
    """z: every channel is handled in one pass"""
    x_ifmap: float
    y_ifmap: float
    x_ofmap: float
    """ofmap width covered per pass (after halving to fit the GLB)"""
    y_ofmap: float
    """ofmap rows produced per PE-array pass"""
    y_ofmap_glb: float
    """y_comp: ofmap height kept in the GLB before a write-back to DRAM"""
    batch: int
    """n, images processed together"""
    batch_max: float
    """n_max, how many images the GLB could hold (the first simulation's n is floor(n_max))"""
    ifmap_kb: float
    psum_kb: float
    rules: tuple[int, ...]
    """exception rules that fired, in order"""

    @property
    def glb_used_kb(self) -> float:
        return self.ifmap_kb + self.psum_kb

    @property
    def y_passes(self) -> float:
        return self.y_ofmap_glb / self.y_ofmap

    def z_passes(self, layer: AccelLayer) -> float:
        return layer.channels / self.channels_per_pass

    def filter_passes(self, layer: AccelLayer) -> float:
        return layer.filters / self.filters_per_pass

    def y_tiles(self, layer: AccelLayer) -> float:
        return layer.ofmap_size / self.y_ofmap_glb

    def x_tiles(self, layer: AccelLayer) -> float:
        return layer.ofmap_size / self.x_ofmap


def schedule(layer: AccelLayer, spec: AcceleratorSpec, batch: int | None = None) -> Schedule:
    """The scheduling parameters of ``layer`` on ``spec``.

    ``batch`` is the n of the reference's second simulation; None keeps the model's own choice
    (its first simulation, floor(n_max), at least 1). Raises ScheduleError when the layer cannot be
    mapped at all: a filter taller than the PE array, register files too small for one filter row,
    a GLB that cannot hold one row of the ifmap, or one so small that halving the ifmap's width (as
    the reference does) leaves a tile narrower than the filter.
    """
    where = f"layer {layer.name!r}"
    passes = _passes(layer, spec, where)
    tile = _glb_tile(layer, spec, passes, where)
    n, y_comp = _batch_and_rule_6(layer, spec, passes, tile, where)
    bits_per_kb = 8 * 1024 / spec.bits
    psum_kb = tile.psum_kb
    if batch is not None:
        n = batch
    if not passes.z:
        psum_kb = n * tile.x_of * y_comp * passes.f_pass / bits_per_kb
    ifmap_total_kb = tile.ifmap_kb * n
    if passes.z and tile.n_max >= 1:
        psum_kb = spec.glb_kb - ifmap_total_kb
    return Schedule(
        sets_per_pass=passes.sets, channels_per_set=passes.c_set, channels_per_pass=passes.c_pass,
        filters_per_set=passes.f_set, filters_per_pass=passes.f_pass, all_channels_in_pass=passes.z,
        x_ifmap=tile.x_if, y_ifmap=tile.y_if, x_ofmap=tile.x_of, y_ofmap=tile.y_of, y_ofmap_glb=y_comp, batch=n,
        batch_max=tile.n_max, ifmap_kb=ifmap_total_kb, psum_kb=psum_kb, rules=tuple(passes.rules))


@dataclass
class _Passes:
    """Channels and filters per set and per PE-array pass, as the exception rules leave them."""

    sets: int
    c_set: float
    c_pass: float
    f_set: float
    f_pass: float
    z: bool
    rules: list[int]


@dataclass
class _Tile:
    """What one pass covers of the ifmap and the ofmap, and the GLB it takes (kB)."""

    x_if: float
    y_if: float
    x_of: float
    y_of: float
    ifmap_kb: float
    psum_kb: float
    n_max: float


def _passes(layer: AccelLayer, spec: AcceleratorSpec, where: str) -> _Passes:
    """Initial sets from the PE array and register files, then exception rules 1 to 5 in order."""
    R, C, M, E = layer.filter_size, layer.channels, layer.filters, layer.ofmap_size
    sets = spec.pe_rows // R
    if sets < 1:
        raise ScheduleError(f"{where}: filter height R={R} exceeds the PE array's {spec.pe_rows} rows")
    c_set: float = spec.ifmap_rf_entries // R
    filter_rows_per_set = spec.filter_rf_entries // R
    if c_set < 1 or filter_rows_per_set < 1:
        raise ScheduleError(f"{where}: register files of {spec.ifmap_rf_entries} ifmap and {spec.filter_rf_entries} "
                            f"filter entries cannot hold one filter row of R={R}")
    f_set: float = filter_rows_per_set // c_set
    rules: list[int] = []

    if c_set >= C:  # rule 1: every channel fits in one set
        rules.append(1)
        c_set = C
        c_pass: float = C
        z = True
        f_set = filter_rows_per_set // c_set
        f_pass: float = f_set * sets
    else:
        c_pass = c_set * sets
        f_pass = f_set
        z = False
    if c_set < C < c_pass:  # rule 2: all channels fit in part of the array; super-sets take more filters
        rules.append(2)
        c_pass = C
        super_sets = sets // math.ceil(c_pass / c_set)
        f_pass = f_set * super_sets
        z = True
    if R == 1 and E != 1 and not z:  # rule 3: 1x1 convolutions (not FC) take a fixed 72 channels
        rules.append(3)
        c_pass = RULE_3_CHANNELS_PER_PASS
        super_sets = sets // math.ceil(c_pass / c_set)
        if M <= 18:
            f_set = M
            f_pass = f_set
        elif M < 36:
            f_set = M / super_sets
            f_pass = f_set * super_sets
        else:
            f_pass = f_set * super_sets
    if f_pass > M:  # rule 4: too few filters; spread them equally over the sets
        rules.append(4)
        f_set = M / sets
        f_pass = f_set * sets
    if spec.psum_rf_entries < f_set:  # rule 5: the psum RF limits the filters per set
        rules.append(5)
        f_set = spec.psum_rf_entries
        f_pass = f_set * sets
    return _Passes(sets=sets, c_set=c_set, c_pass=c_pass, f_set=f_set, f_pass=f_pass, z=z, rules=rules)


def _glb_tile(layer: AccelLayer, spec: AcceleratorSpec, passes: _Passes, where: str) -> _Tile:
    """Spatial coverage of a pass, then the x-adjustment: halve the ifmap width until the pass fits the GLB."""
    R, E, H, U = layer.filter_size, layer.ofmap_size, layer.ifmap_size, layer.stride
    bits_per_kb = 8 * 1024 / spec.bits
    glb = spec.glb_kb
    row_kb = H / bits_per_kb
    if row_kb >= glb:
        raise ScheduleError(f"{where}: the GLB of {glb:g} kB cannot hold one row of the ifmap "
                            f"({H} values at {spec.bits} bits = {row_kb:.3g} kB)")
    x_if: float = H
    y_span = U * (spec.pe_cols - 1) + R
    if y_span >= H:
        y_if, y_of = float(H), float(E)
    else:
        y_if, y_of = float(y_span), float(spec.pe_cols)
    ifmap_kb = x_if * y_if * passes.c_pass / bits_per_kb
    psum_kb = E * E * passes.f_pass / bits_per_kb
    n_max = glb / (ifmap_kb + psum_kb)

    x_of: float = E
    while ifmap_kb >= glb:  # x-adjustment: halve the ifmap width until the pass fits
        x_if /= 2
        ifmap_kb = x_if * y_if * passes.c_pass / bits_per_kb
        x_of = (x_if - R) / U + 1
        if x_of < 1:
            raise ScheduleError(f"{where}: the GLB of {glb:g} kB cannot hold an ifmap tile as wide as the "
                                f"filter (R={R}) for the pass's {passes.c_pass:g} channels and {y_if:g} rows")
        psum_kb = x_of * E * passes.f_pass / bits_per_kb
        n_max = glb / (ifmap_kb + psum_kb)
    return _Tile(x_if=x_if, y_if=y_if, x_of=x_of, y_of=y_of, ifmap_kb=ifmap_kb, psum_kb=psum_kb, n_max=n_max)


def _batch_and_rule_6(layer: AccelLayer, spec: AcceleratorSpec, passes: _Passes, tile: _Tile,
                      where: str) -> tuple[int, float]:
    """(n, y_comp): the batch the GLB holds, with the y-adjustment, then exception rule 6.

    Rule 6 may take filters from ``passes`` and GLB room from ``tile``'s psums; both are updated.
    """
    E = layer.ofmap_size
    bits_per_kb = 8 * 1024 / spec.bits
    glb = spec.glb_kb
    if tile.n_max >= 1:
        n = math.floor(tile.n_max)
        y_comp: float = E
    elif passes.z:
        y_comp = E
        n = 1
        tile.psum_kb = glb - tile.ifmap_kb
    else:  # y-adjustment: halve the ofmap height kept in the GLB until one image fits
        y_comp = E
        n_new = tile.n_max
        while n_new < 1:
            y_comp /= 2
            n_new = glb / (tile.ifmap_kb + tile.x_of * y_comp * passes.f_pass / bits_per_kb)
        n = 1
    if y_comp < tile.y_of:  # rule 6: keep every PE column busy; make room by taking fewer filters
        passes.rules.append(6)
        y_comp = tile.y_of
        if not passes.z:
            fits = 0.0
            while fits < 1:
                passes.f_pass -= 1
                if passes.f_pass <= 0:
                    raise ScheduleError(f"{where}: the GLB of {glb:g} kB cannot hold the psums of one filter "
                                        f"for {tile.y_of:g} ofmap rows")
                fits = glb / (tile.ifmap_kb + tile.x_of * tile.y_of * passes.f_pass / bits_per_kb)
        else:
            tile.psum_kb = glb - tile.ifmap_kb
    return n, y_comp
