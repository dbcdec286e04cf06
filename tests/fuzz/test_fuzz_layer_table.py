"""Fuzzing of the layer-table reader: edited shipped tables, random text and bytes either read or raise an
NnperfError; random valid rows written as a table read back unchanged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import FUZZ, PARSERS, parses_or_refuses
from nnperf.accel import AccelLayer, parse_table, write_table

LAYER_CSV = PARSERS["layer_csv"]


@FUZZ
@given(LAYER_CSV.inputs)
def test_any_layer_table_reads_or_is_refused(data: bytes) -> None:
    layers = parses_or_refuses(LAYER_CSV, data)
    if layers is not None:
        assert layers and len({layer.name for layer in layers}) == len(layers)


@st.composite
def layer_rows(draw) -> list[AccelLayer]:  # type: ignore[no-untyped-def]
    rows = []
    for index in range(draw(st.integers(1, 5))):
        r, u = draw(st.integers(1, 11)), draw(st.integers(1, 4))
        h = draw(st.integers(r, 300))
        sparsity = st.floats(0, 0.999)
        rows.append(AccelLayer(
            name=f"L{index}", filter_size=r, filters=draw(st.integers(1, 1024)), ifmap_size=h,
            channels=draw(st.integers(1, 1024)), stride=u, ofmap_size=(h - r) // u + 1,
            ifmap_sparsity=round(draw(sparsity), 4), ofmap_sparsity=round(draw(sparsity), 4),
            batch=draw(st.none() | st.integers(1, 64)), groups=draw(st.integers(1, 4)), output=draw(st.booleans())))
    return rows


@FUZZ
@given(layer_rows())
def test_valid_rows_read_back_unchanged(rows: list[AccelLayer]) -> None:
    assert parse_table(write_table(rows), "t.csv") == rows
