"""Layer rows, the input of CNNergy: one convolution (or FC as an R x R convolution) per row.

A layer table is a CSV file with a header and one row per layer::

    name,R,M,H,C,U,E,s_if,s_of,n

R filter height/width, M filters, H padded ifmap height/width, C channels (per group for grouped
convolutions, as the reference treats AlexNet's), U stride, E ofmap height/width, s_if and s_of the
fractions of zeros in the padded ifmap and in the ofmap, n the images processed together (empty: the
model's choice). Optional columns: ``groups`` (1) and ``out`` (1), which only change what a split
after the row would transmit, and ``block`` (the row's own name), the reporting layer a row belongs
to (SqueezeNet's expand 1x1 and 3x3 are one reporting layer, as are the six convolutions of an
inception module). ``out = 0`` marks a row whose ofmap stays inside its block (an inception
module's 1x1 reductions).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from nnperf.errors import NnperfError

REQUIRED_COLUMNS = ("name", "R", "M", "H", "C", "U", "E", "s_if", "s_of", "n")
OPTIONAL_COLUMNS = ("groups", "out", "block")
REFERENCE_NETWORKS = {"alexnet": "alexnet.csv", "vgg16": "vgg16.csv", "squeezenet_v11": "squeezenet_v11.csv",
                      "googlenet_v1": "googlenet_v1.csv"}
NETWORK_ALIASES = {"vgg-16": "vgg16", "squeezenet": "squeezenet_v11", "squeezenet1_1": "squeezenet_v11",
                   "squeezenet-v1.1": "squeezenet_v11", "googlenet": "googlenet_v1", "googlenet-v1": "googlenet_v1"}


class LayerTableError(NnperfError):
    """A layer table or layer row that cannot be used (names the file, row and column)."""


@dataclass(frozen=True)
class AccelLayer:
    """One CNNergy layer row (NeuPart Table I); sizes are square, H is the padded ifmap."""

    name: str
    filter_size: int
    """R"""
    filters: int
    """M"""
    ifmap_size: int
    """H, padded"""
    channels: int
    """C, per group"""
    stride: int
    """U"""
    ofmap_size: int
    """E"""
    ifmap_sparsity: float
    """s_if, zeros in the padded ifmap volume"""
    ofmap_sparsity: float
    """s_of, zeros in the ofmap volume"""
    batch: int | None = None
    """n, images processed together; None lets the model choose (its first simulation)"""
    groups: int = 1
    output: bool = True
    block: str = ""

    def __post_init__(self) -> None:
        where = f"layer {self.name!r}"
        for label, value in (("R", self.filter_size), ("M", self.filters), ("H", self.ifmap_size),
                             ("C", self.channels), ("U", self.stride), ("E", self.ofmap_size),
                             ("groups", self.groups)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise LayerTableError(f"{where}: {label} must be a whole number >= 1, got {value!r}")
        if self.batch is not None and (isinstance(self.batch, bool) or not isinstance(self.batch, int)
                                       or self.batch < 1):
            raise LayerTableError(f"{where}: n must be a whole number >= 1 or empty, got {self.batch!r}")
        for label, value in (("s_if", self.ifmap_sparsity), ("s_of", self.ofmap_sparsity)):
            if not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value < 1:
                raise LayerTableError(f"{where}: sparsity {label} must be in [0, 1), got {value!r}")
        if self.filter_size > self.ifmap_size:
            raise LayerTableError(f"{where}: filter R={self.filter_size} is larger than the padded ifmap "
                                  f"H={self.ifmap_size}")
        expected = (self.ifmap_size - self.filter_size) // self.stride + 1
        if self.ofmap_size != expected:
            raise LayerTableError(f"{where}: E={self.ofmap_size} does not follow from H={self.ifmap_size}, "
                                  f"R={self.filter_size}, U={self.stride} (expected {expected})")
        if not self.block:
            object.__setattr__(self, "block", self.name)

    @property
    def macs(self) -> int:
        """R^2 C E^2 M multiply-accumulates per image (grouped: C is per group, so this is exact)."""
        return self.filter_size ** 2 * self.channels * self.ofmap_size ** 2 * self.filters

    @property
    def ifmap_values(self) -> int:
        """Values of the padded ifmap over all groups; padding adds zeros only, so nonzeros are the input's."""
        return self.ifmap_size ** 2 * self.channels * self.groups

    @property
    def ofmap_values(self) -> int:
        return self.ofmap_size ** 2 * self.filters

    def row(self) -> dict[str, str]:
        """The row as CSV cells."""
        return {"name": self.name, "R": str(self.filter_size), "M": str(self.filters), "H": str(self.ifmap_size),
                "C": str(self.channels), "U": str(self.stride), "E": str(self.ofmap_size),
                "s_if": f"{self.ifmap_sparsity:.6g}", "s_of": f"{self.ofmap_sparsity:.6g}",
                "n": "" if self.batch is None else str(self.batch), "groups": str(self.groups),
                "out": "1" if self.output else "0", "block": self.block}


def read_table(path: str | Path) -> list[AccelLayer]:
    """Reads a layer table CSV; errors name the file, the row (as numbered in the file) and the column."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise LayerTableError(f"{path}: cannot read the layer table: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise LayerTableError(f"{path}: cannot read the layer table: not UTF-8 text "
                              f"(byte {exc.start}); expected a CSV file") from None
    return parse_table(text, str(path))


def parse_table(text: str, source: str) -> list[AccelLayer]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        fieldnames = reader.fieldnames
    except csv.Error as exc:
        raise LayerTableError(f"{source}, row 1: not a CSV row ({exc})") from None
    header = [h.strip() for h in (fieldnames or [])]
    if not header:
        raise LayerTableError(f"{source}: empty file; expected a header {','.join(REQUIRED_COLUMNS)}")
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise LayerTableError(f"{source}: missing column(s) {', '.join(missing)}; the header must hold "
                              f"{','.join(REQUIRED_COLUMNS)} (optional: {', '.join(OPTIONAL_COLUMNS)})")
    unknown = [c for c in header if c not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        raise LayerTableError(f"{source}: unknown column(s) {', '.join(unknown)}")
    reader.fieldnames = header
    layers: list[AccelLayer] = []
    for line, raw in enumerate(_rows(reader, source), start=2):
        if raw.get(None):
            raise LayerTableError(f"{source}, row {line}: more cells than columns")
        cells = {k: (v or "").strip() for k, v in raw.items() if k is not None}
        if not any(cells.values()):
            continue
        where = f"{source}, row {line}"
        # csv fills the cells of a short row with None; only an empty cell (a trailing comma) means empty
        short = [c for c in REQUIRED_COLUMNS if raw.get(c) is None]
        if short:
            raise LayerTableError(f"{where}: missing cell(s) for {', '.join(short)} (the row has fewer cells "
                                  f"than the header; leave n empty with a trailing comma for the model's choice)")
        name = cells["name"] or f"L{len(layers) + 1}"

        try:
            layers.append(AccelLayer(
                name=name, filter_size=_whole(cells, "R", where), filters=_whole(cells, "M", where),
                ifmap_size=_whole(cells, "H", where), channels=_whole(cells, "C", where),
                stride=_whole(cells, "U", where), ofmap_size=_whole(cells, "E", where),
                ifmap_sparsity=_number(cells, "s_if", where), ofmap_sparsity=_number(cells, "s_of", where),
                batch=None if cells["n"] == "" else _whole(cells, "n", where),
                groups=_whole(cells, "groups", where, default=1),
                output=bool(_whole(cells, "out", where, default=1)), block=cells.get("block", "") or name))
        except LayerTableError as exc:
            message = str(exc)
            prefix = f"layer {name!r}: "
            raise LayerTableError(f"{where}: {message.removeprefix(prefix)}" if message.startswith(prefix)
                                  else message) from None
    if not layers:
        raise LayerTableError(f"{source}: no layer rows")
    _check_unique(layers, source)
    return layers


def _rows(reader: csv.DictReader[str], source: str) -> Iterator[dict[str | Any, str | Any]]:
    """The reader's rows; csv's own refusals (a cell over its field size limit) become LayerTableErrors."""
    try:
        yield from reader
    except csv.Error as exc:
        raise LayerTableError(f"{source}, row {reader.reader.line_num}: not a CSV row ({exc})") from None


def write_table(layers: Iterable[AccelLayer]) -> str:
    """The layers as a CSV table that ``parse_table`` reads back unchanged."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(REQUIRED_COLUMNS + OPTIONAL_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for layer in layers:
        writer.writerow(layer.row())
    return buffer.getvalue()


def reference_network(name: str) -> list[AccelLayer]:
    """One of the public CNNergy model's four networks (the reference's layer tables, see docs/cnnergy.md), shipped as package data."""
    key = NETWORK_ALIASES.get(name.lower(), name.lower())
    if key not in REFERENCE_NETWORKS:
        raise LayerTableError(f"unknown reference network {name!r}; choose one of "
                              f"{', '.join(REFERENCE_NETWORKS)}")
    text = resources.files("nnperf.accel").joinpath("tables", REFERENCE_NETWORKS[key]).read_text(encoding="utf-8")
    return parse_table(text, f"{key} (shipped table)")


def blocks(layers: Sequence[AccelLayer]) -> list[tuple[str, list[int]]]:
    """Reporting layers in order: (block name, indices of its rows); a block's rows must be contiguous."""
    out: list[tuple[str, list[int]]] = []
    for index, layer in enumerate(layers):
        if out and out[-1][0] == layer.block:
            out[-1][1].append(index)
        elif any(name == layer.block for name, _ in out):
            raise LayerTableError(f"block {layer.block!r}: its rows are not contiguous (row of {layer.name!r})")
        else:
            out.append((layer.block, [index]))
    return out


def _number(cells: dict[str, str], column: str, where: str) -> float:
    cell = cells.get(column, "")
    if cell == "":
        raise LayerTableError(f"{where}, column {column}: empty cell")
    try:
        return float(cell)
    except ValueError:
        raise LayerTableError(f"{where}, column {column}: {cell!r} is not a number") from None


def _whole(cells: dict[str, str], column: str, where: str, default: int | None = None) -> int:
    if cells.get(column, "") == "" and default is not None:
        return default
    value = _number(cells, column, where)
    if not value.is_integer():
        raise LayerTableError(f"{where}, column {column}: {cells[column]!r} must be a whole number")
    return int(value)


def _check_unique(layers: Sequence[AccelLayer], source: str) -> None:
    seen: set[str] = set()
    for layer in layers:
        if layer.name in seen:
            raise LayerTableError(f"{source}: layer name {layer.name!r} appears twice")
        seen.add(layer.name)
