"""Accelerator specs (defaults, 8-bit scaling, YAML files) and layer tables (CSV, the four shipped networks).

The reference rows below are copied from the reference's layer tables (the public CNNergy model's layer tables,
CNNergy commit 96f56ef): name, R, M, H (padded), C, U, E, s_if (padded), s_of, n2 (shipped batch),
n1 (first-simulation batch at 16 bits) and the exception rules that fire.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nnperf.accel import (
    AcceleratorSpec,
    AcceleratorSpecError,
    AccelLayer,
    LayerTableError,
    blocks,
    eyeriss_spec,
    load_spec,
    parse_table,
    read_table,
    reference_network,
    schedule,
    spec_from_dict,
    spec_yaml,
    write_table,
)

SCALE = (65 / 45) * (1 / 0.9) ** 2
E_MAC16 = (0.05 + 0.9) * 1e-12 * SCALE

# name, R, M, H, C, U, E, s_if, s_of, n2, n1, rules
Row = tuple[str, int, int, int, int, int, int, float, float, int, int, tuple[int, ...]]
REFERENCE_ROWS: dict[str, list[Row]] = {
    "alexnet": [
        ("C1", 11, 96, 227, 3, 4, 55, 0.000100, 0.510200, 1, 1, ()),
        ("C2", 5, 256, 31, 48, 1, 27, 0.387000, 0.806600, 2, 2, ()),
        ("C3", 3, 384, 15, 256, 1, 13, 0.725000, 0.724400, 6, 7, ()),
        ("C4", 3, 384, 15, 192, 1, 13, 0.793000, 0.701800, 6, 7, ()),
        ("C5", 3, 256, 15, 192, 1, 13, 0.776000, 0.905000, 6, 7, ()),
        ("FC6", 6, 4096, 6, 256, 1, 1, 0.711300, 0.831200, 18, 316, ()),
        ("FC7", 1, 4096, 1, 4096, 1, 1, 0.831200, 0.812500, 18, 316, ()),
        ("FC8", 1, 1000, 1, 4096, 1, 1, 0.812500, 0.000000, 18, 316, ()),
    ],
    "vgg16": [
        ("C1-1", 3, 64, 226, 3, 1, 224, 0.017621, 0.471100, 1, 1, (1, 4)),
        ("C1-2", 3, 64, 226, 64, 1, 224, 0.480420, 0.313600, 1, 1, (6,)),
        ("C2-1", 3, 128, 114, 64, 1, 112, 0.213539, 0.339600, 1, 1, (6,)),
        ("C2-2", 3, 128, 114, 128, 1, 112, 0.362569, 0.519900, 1, 1, (6,)),
        ("C3-1", 3, 256, 58, 128, 1, 56, 0.353503, 0.479500, 1, 1, ()),
        ("C3-2", 3, 256, 58, 256, 1, 56, 0.514778, 0.488600, 1, 1, ()),
        ("C3-3", 3, 256, 58, 256, 1, 56, 0.523261, 0.699100, 1, 1, ()),
        ("C4-1", 3, 512, 30, 256, 1, 28, 0.580037, 0.653300, 2, 2, ()),
        ("C4-2", 3, 512, 30, 512, 1, 28, 0.697986, 0.707500, 2, 2, ()),
        ("C4-3", 3, 512, 30, 512, 1, 28, 0.745200, 0.873000, 2, 2, ()),
        ("C5-1", 3, 512, 16, 512, 1, 14, 0.815102, 0.765100, 6, 6, ()),
        ("C5-2", 3, 512, 16, 512, 1, 14, 0.820155, 0.797700, 6, 6, ()),
        ("C5-3", 3, 512, 16, 512, 1, 14, 0.845114, 0.932000, 6, 6, ()),
        ("FC1", 7, 4096, 7, 512, 1, 1, 0.875500, 0.753000, 18, 701, (5,)),
        ("FC2", 1, 4096, 1, 4096, 1, 1, 0.753000, 0.741300, 18, 316, ()),
        ("FC3", 1, 1000, 1, 4096, 1, 1, 0.741300, 0.000000, 18, 316, ()),
    ],
    "squeezenet_v11": [
        ("conv1", 3, 64, 227, 3, 2, 113, 0.026257, 0.502391, 1, 1, (1, 4)),
        ("fire2s", 1, 16, 56, 64, 1, 56, 0.176012, 0.152097, 1, 1, (2, 4)),
        ("fire2e1", 1, 64, 56, 16, 1, 56, 0.152097, 0.475267, 1, 1, (2, 4)),
        ("fire2e3", 3, 64, 58, 16, 1, 56, 0.209565, 0.623960, 1, 1, ()),
        ("fire3s", 1, 16, 56, 128, 1, 56, 0.549613, 0.189080, 1, 1, (2, 4)),
        ("fire3e1", 1, 64, 56, 16, 1, 56, 0.189080, 0.493887, 1, 1, (2, 4)),
        ("fire3e3", 3, 64, 58, 16, 1, 56, 0.244041, 0.727778, 1, 1, ()),
        ("fire4s", 1, 32, 28, 128, 1, 28, 0.263605, 0.226806, 1, 1, (2,)),
        ("fire4e1", 1, 128, 28, 32, 1, 28, 0.226806, 0.529740, 1, 1, (2,)),
        ("fire4e3", 3, 128, 30, 32, 1, 28, 0.326462, 0.715212, 2, 2, ()),
        ("fire5s", 1, 32, 28, 256, 1, 28, 0.622476, 0.279566, 1, 1, (3,)),
        ("fire5e1", 1, 128, 28, 32, 1, 28, 0.279566, 0.605182, 1, 1, (2,)),
        ("fire5e3", 3, 128, 30, 32, 1, 28, 0.372422, 0.852510, 2, 2, ()),
        ("fire6s", 1, 48, 14, 256, 1, 14, 0.421290, 0.268536, 2, 2, (3,)),
        ("fire6e1", 1, 192, 14, 48, 1, 14, 0.268536, 0.638111, 2, 2, (2,)),
        ("fire6e3", 3, 192, 16, 48, 1, 14, 0.439973, 0.779156, 6, 6, ()),
        ("fire7s", 1, 48, 14, 384, 1, 14, 0.708634, 0.329450, 2, 2, (3,)),
        ("fire7e1", 1, 192, 14, 48, 1, 14, 0.329450, 0.720625, 2, 2, (2,)),
        ("fire7e3", 3, 192, 16, 48, 1, 14, 0.486610, 0.864284, 6, 6, ()),
        ("fire8s", 1, 64, 14, 384, 1, 14, 0.792455, 0.467703, 2, 2, (3,)),
        ("fire8e1", 1, 256, 14, 64, 1, 14, 0.467703, 0.540051, 2, 2, (2,)),
        ("fire8e3", 3, 256, 16, 64, 1, 14, 0.592460, 0.696982, 6, 6, ()),
        ("fire9s", 1, 64, 14, 512, 1, 14, 0.618516, 0.430885, 2, 2, (3,)),
        ("fire9e1", 1, 256, 14, 64, 1, 14, 0.430885, 0.918611, 2, 2, (2,)),
        ("fire9e3", 3, 256, 16, 64, 1, 14, 0.564272, 0.949485, 6, 6, ()),
        ("conv10", 1, 1000, 14, 512, 1, 14, 0.934048, 0.234872, 2, 2, (3,)),
    ],
    "googlenet_v1": [
        ("conv1", 7, 64, 229, 3, 2, 112, 0.043191, 0.507950, 1, 1, (5,)),
        ("conv2red", 1, 64, 56, 64, 1, 56, 0.168190, 0.462630, 1, 1, (2,)),
        ("conv2", 3, 192, 58, 64, 1, 56, 0.499051, 0.781040, 1, 1, ()),
        ("inc3a_3x3red", 1, 96, 28, 192, 1, 28, 0.447730, 0.447900, 1, 1, (3,)),
        ("inc3a_5x5red", 1, 16, 28, 192, 1, 28, 0.447730, 0.223500, 1, 1, (3,)),
        ("inc3a_1x1", 1, 64, 28, 192, 1, 28, 0.447730, 0.395390, 1, 1, (3,)),
        ("inc3a_3x3", 3, 128, 30, 96, 1, 28, 0.519060, 0.564040, 2, 2, ()),
        ("inc3a_5x5", 5, 32, 32, 16, 1, 28, 0.405492, 0.566690, 2, 2, ()),
        ("inc3a_poolproj", 1, 32, 28, 192, 1, 28, 0.176170, 0.519600, 1, 1, (3,)),
        ("inc3b_3x3red", 1, 128, 28, 256, 1, 28, 0.516660, 0.550380, 1, 1, (3,)),
        ("inc3b_5x5red", 1, 32, 28, 256, 1, 28, 0.516660, 0.426440, 1, 1, (3,)),
        ("inc3b_1x1", 1, 128, 28, 256, 1, 28, 0.516660, 0.795240, 1, 1, (3,)),
        ("inc3b_3x3", 3, 192, 30, 128, 1, 28, 0.608331, 0.876950, 2, 2, ()),
        ("inc3b_5x5", 5, 96, 32, 32, 1, 28, 0.560868, 0.890920, 2, 2, ()),
        ("inc3b_poolproj", 1, 64, 28, 256, 1, 28, 0.193230, 0.832400, 1, 1, (3,)),
        ("inc4a_3x3red", 1, 96, 14, 480, 1, 14, 0.604540, 0.456040, 2, 2, (3,)),
        ("inc4a_5x5red", 1, 16, 14, 480, 1, 14, 0.604540, 0.323020, 2, 2, (3,)),
        ("inc4a_1x1", 1, 192, 14, 480, 1, 14, 0.604540, 0.752570, 2, 2, (3,)),
        ("inc4a_3x3", 3, 208, 16, 96, 1, 14, 0.583531, 0.861530, 6, 6, ()),
        ("inc4a_5x5", 5, 48, 18, 16, 1, 14, 0.590469, 0.785900, 6, 9, ()),
        ("inc4a_poolproj", 1, 64, 14, 480, 1, 14, 0.272550, 0.853510, 2, 2, (3,)),
        ("inc4b_3x3red", 1, 112, 14, 512, 1, 14, 0.812580, 0.419210, 2, 2, (3,)),
        ("inc4b_5x5red", 1, 24, 14, 512, 1, 14, 0.812580, 0.312600, 2, 2, (3,)),
        ("inc4b_1x1", 1, 160, 14, 512, 1, 14, 0.812580, 0.454150, 2, 2, (3,)),
        ("inc4b_3x3", 3, 224, 16, 112, 1, 14, 0.555333, 0.586840, 6, 6, ()),
        ("inc4b_5x5", 5, 64, 18, 24, 1, 14, 0.584165, 0.658850, 6, 9, ()),
        ("inc4b_poolproj", 1, 64, 14, 512, 1, 14, 0.525070, 0.646910, 2, 2, (3,)),
        ("inc4c_3x3red", 1, 128, 14, 512, 1, 14, 0.561880, 0.494960, 2, 2, (3,)),
        ("inc4c_5x5red", 1, 24, 14, 512, 1, 14, 0.561880, 0.421490, 2, 2, (3,)),
        ("inc4c_1x1", 1, 128, 14, 512, 1, 14, 0.561880, 0.513850, 2, 2, (3,)),
        ("inc4c_3x3", 3, 256, 16, 128, 1, 14, 0.613329, 0.650750, 6, 6, ()),
        ("inc4c_5x5", 5, 64, 18, 24, 1, 14, 0.650037, 0.661160, 6, 9, ()),
        ("inc4c_poolproj", 1, 64, 14, 512, 1, 14, 0.249350, 0.703120, 2, 2, (3,)),
        ("inc4d_3x3red", 1, 144, 14, 512, 1, 14, 0.624360, 0.613350, 2, 2, (3,)),
        ("inc4d_5x5red", 1, 32, 14, 512, 1, 14, 0.624360, 0.436160, 2, 2, (3,)),
        ("inc4d_1x1", 1, 112, 14, 512, 1, 14, 0.624360, 0.701450, 2, 2, (3,)),
        ("inc4d_3x3", 3, 288, 16, 144, 1, 14, 0.703971, 0.795980, 6, 6, ()),
        ("inc4d_5x5", 5, 64, 18, 32, 1, 14, 0.658912, 0.816790, 6, 9, ()),
        ("inc4d_poolproj", 1, 64, 14, 512, 1, 14, 0.347010, 0.864870, 2, 2, (3,)),
        ("inc4e_3x3red", 1, 160, 14, 528, 1, 14, 0.786810, 0.413130, 2, 2, (3,)),
        ("inc4e_5x5red", 1, 32, 14, 528, 1, 14, 0.786810, 0.346450, 2, 2, (3,)),
        ("inc4e_1x1", 1, 256, 14, 528, 1, 14, 0.786810, 0.808160, 2, 2, (3,)),
        ("inc4e_3x3", 3, 320, 16, 160, 1, 14, 0.550678, 0.858280, 6, 6, ()),
        ("inc4e_5x5", 5, 128, 18, 32, 1, 14, 0.604643, 0.817000, 6, 9, ()),
        ("inc4e_poolproj", 1, 128, 14, 528, 1, 14, 0.567320, 0.799550, 2, 2, (3,)),
        ("inc5a_3x3red", 1, 160, 7, 832, 1, 7, 0.633260, 0.405290, 6, 9, (3,)),
        ("inc5a_5x5red", 1, 32, 7, 832, 1, 7, 0.633260, 0.365270, 6, 10, (3,)),
        ("inc5a_1x1", 1, 256, 7, 832, 1, 7, 0.633260, 0.609790, 6, 9, (3,)),
        ("inc5a_3x3", 3, 320, 9, 160, 1, 7, 0.640237, 0.731720, 18, 23, ()),
        ("inc5a_5x5", 5, 128, 11, 32, 1, 7, 0.742961, 0.755410, 18, 32, ()),
        ("inc5a_poolproj", 1, 128, 7, 832, 1, 7, 0.330070, 0.700200, 6, 9, (3,)),
        ("inc5b_3x3red", 1, 192, 7, 832, 1, 7, 0.693000, 0.745580, 6, 9, (3,)),
        ("inc5b_5x5red", 1, 48, 7, 832, 1, 7, 0.693000, 0.594450, 6, 9, (3,)),
        ("inc5b_1x1", 1, 384, 7, 832, 1, 7, 0.693000, 0.856060, 6, 9, (3,)),
        ("inc5b_3x3", 3, 384, 9, 192, 1, 7, 0.846092, 0.837310, 18, 23, ()),
        ("inc5b_5x5", 5, 128, 11, 48, 1, 7, 0.835769, 0.869470, 18, 32, ()),
        ("inc5b_poolproj", 1, 128, 7, 832, 1, 7, 0.456580, 0.900200, 6, 9, (3,)),
        ("fc", 1, 1000, 1, 1024, 1, 1, 0.372380, 0.000000, 36, 316, ()),
    ],
}
CASES = [(network, row) for network, rows in REFERENCE_ROWS.items() for row in rows]
HEADER = "name,R,M,H,C,U,E,s_if,s_of,n\n"


def test_reference_tables_have_108_rows() -> None:
    assert {name: len(rows) for name, rows in REFERENCE_ROWS.items()} == {
        "alexnet": 8, "vgg16": 16, "squeezenet_v11": 26, "googlenet_v1": 58}
    assert len(CASES) == 108
    for network, rows in REFERENCE_ROWS.items():
        assert [layer.name for layer in reference_network(network)] == [row[0] for row in rows]


@pytest.mark.parametrize(("network", "row"), CASES, ids=[f"{network}-{row[0]}" for network, row in CASES])
def test_shipped_row_and_first_simulation(network: str, row: Row) -> None:
    name, R, M, H, C, U, E, s_if, s_of, n2, n1, rules = row
    layer = {layer.name: layer for layer in reference_network(network)}[name]
    assert (layer.filter_size, layer.filters, layer.ifmap_size, layer.channels, layer.stride,
            layer.ofmap_size) == (R, M, H, C, U, E)
    assert layer.ifmap_sparsity == pytest.approx(s_if, abs=1e-9)
    assert layer.ofmap_sparsity == pytest.approx(s_of, abs=1e-9)
    assert layer.batch == n2
    sch = schedule(layer, eyeriss_spec(16))  # no batch: the reference's first simulation
    assert sch.batch == n1
    assert sch.rules == rules
    # the second simulation keeps the schedule's rules and takes the shipped n2
    second = schedule(layer, eyeriss_spec(16), batch=n2)
    assert second.batch == n2
    assert second.rules == rules


def test_reference_network_aliases_and_unknown_name() -> None:
    assert reference_network("googlenet") == reference_network("googlenet_v1")
    assert reference_network("SqueezeNet") == reference_network("squeezenet_v11")
    with pytest.raises(LayerTableError, match=r"unknown reference network 'resnet50'"):
        reference_network("resnet50")


# --- accelerator spec ------------------------------------------------------------------------------------------


def test_16_bit_defaults() -> None:
    spec = eyeriss_spec(16)
    assert spec == AcceleratorSpec()
    assert SCALE == pytest.approx(1.783265, rel=1e-6)
    assert (spec.pe_rows, spec.pe_cols, spec.glb_kb) == (12, 14, 100.0)
    assert (spec.filter_rf_entries, spec.ifmap_rf_entries, spec.psum_rf_entries, spec.rlc_factor) == (224, 12, 24, 3)
    assert spec.mac_energy_j == pytest.approx(E_MAC16, rel=1e-12)
    assert spec.mac_energy_j == pytest.approx(1.69410e-12, rel=1e-5)
    assert spec.rf_energy_j == pytest.approx(E_MAC16, rel=1e-12)
    assert spec.inter_pe_energy_j == pytest.approx(2 * E_MAC16, rel=1e-12)
    assert spec.glb_energy_j == pytest.approx(6 * E_MAC16, rel=1e-12)
    assert spec.dram_energy_j == pytest.approx(200 * E_MAC16, rel=1e-12)
    assert spec.dram_energy_j == pytest.approx(338.821e-12, rel=1e-5)
    assert (spec.clock_power_w, spec.throughput_macs_per_s, spec.control_fraction) == (0.1063, 23.1e9, 0.15)
    assert spec.glb_access_energy_j == spec.glb_energy_j


def test_8_bit_scaling() -> None:
    spec = eyeriss_spec(8)
    assert spec.bits == 8
    assert (spec.filter_rf_entries, spec.ifmap_rf_entries, spec.psum_rf_entries, spec.rlc_factor) == (448, 24, 48, 5)
    # add scales linearly, multiply quadratically: (0.05/2 + 0.9/4) = 0.25 pJ at 45 nm
    assert spec.mac_energy_j == pytest.approx((0.025 + 0.225) * 1e-12 * SCALE, rel=1e-12)
    assert spec.mac_energy_j == pytest.approx(0.44582e-12, rel=1e-4)
    assert spec.rf_energy_j == pytest.approx(E_MAC16 / 2, rel=1e-12)
    assert spec.inter_pe_energy_j == pytest.approx(E_MAC16, rel=1e-12)
    assert spec.glb_energy_j == pytest.approx(3 * E_MAC16, rel=1e-12)
    assert spec.dram_energy_j == pytest.approx(100 * E_MAC16, rel=1e-12)
    assert spec.dram_energy_j == pytest.approx(169.410e-12, rel=1e-5)
    # everything else is the 16-bit accelerator
    assert (spec.pe_rows, spec.pe_cols, spec.glb_kb, spec.clock_power_w) == (12, 14, 100.0, 0.1063)


def test_spec_yaml_round_trip(tmp_path: Path) -> None:
    for spec in (eyeriss_spec(16), eyeriss_spec(8), replace(eyeriss_spec(16), glb_kb=88.0, glb_energy_law="sqrt")):
        path = tmp_path / "spec.yaml"
        path.write_text(spec_yaml(spec), encoding="utf-8")
        assert load_spec(path) == spec


def test_spec_from_dict_fills_defaults_for_its_bit_width() -> None:
    assert spec_from_dict({"version": 1, "bits": 8}) == eyeriss_spec(8)
    spec = spec_from_dict({"format": "nnperf-accelerator", "version": 1, "glb_kb": 50})
    assert spec.glb_kb == 50.0 and isinstance(spec.glb_kb, float)
    assert spec.mac_energy_j == eyeriss_spec(16).mac_energy_j


def test_spec_bits_must_be_16_or_8() -> None:
    with pytest.raises(AcceleratorSpecError, match=r"bits must be 16 or 8, got 12"):
        AcceleratorSpec(bits=12)
    with pytest.raises(AcceleratorSpecError, match=r"bits must be 16 or 8, got 12"):
        eyeriss_spec(12)
    with pytest.raises(AcceleratorSpecError, match=r"bits must be 16 or 8, got 12"):
        spec_from_dict({"version": 1, "bits": 12})


def test_spec_pe_rows_must_be_positive() -> None:
    with pytest.raises(AcceleratorSpecError, match=r"pe_rows must be a whole number >= 1, got 0"):
        AcceleratorSpec(pe_rows=0)
    with pytest.raises(AcceleratorSpecError, match=r"my\.yaml: pe_rows must be a whole number >= 1, got 0"):
        spec_from_dict({"version": 1, "pe_rows": 0}, "my.yaml")


def test_spec_other_impossible_values() -> None:
    with pytest.raises(AcceleratorSpecError, match=r"glb_kb must be a finite number > 0"):
        AcceleratorSpec(glb_kb=0.0)
    with pytest.raises(AcceleratorSpecError, match=r"control_fraction must be in \[0, 1\), got 1.0"):
        AcceleratorSpec(control_fraction=1.0)
    with pytest.raises(AcceleratorSpecError, match=r"glb_energy_law must be one of constant, sqrt, got 'cube'"):
        AcceleratorSpec(glb_energy_law="cube")
    with pytest.raises(AcceleratorSpecError, match=r"field pe_rows must be a int, got '12'"):
        spec_from_dict({"version": 1, "pe_rows": "12"})
    with pytest.raises(AcceleratorSpecError, match=r"expected a mapping of fields, got list"):
        spec_from_dict([1, 2])


def test_spec_without_version() -> None:
    with pytest.raises(AcceleratorSpecError, match=r"missing 'version' \(this nnperf reads version 1\)"):
        spec_from_dict({"bits": 16})


def test_spec_with_a_newer_version() -> None:
    with pytest.raises(AcceleratorSpecError, match=r"version 2 is not supported"):
        spec_from_dict({"version": 2})


def test_spec_with_an_unknown_field() -> None:
    with pytest.raises(AcceleratorSpecError, match=r"unknown field\(s\) glb_mb"):
        spec_from_dict({"version": 1, "glb_mb": 0.1})


def test_load_spec_invalid_yaml(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nglb_kb: [100\n", encoding="utf-8")
    with pytest.raises(AcceleratorSpecError, match=r"bad\.yaml: not valid YAML"):
        load_spec(path)


def test_load_spec_invalid_yaml_is_one_line_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nglb_kb: [100\n", encoding="utf-8")
    with pytest.raises(AcceleratorSpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: not valid YAML")
    assert "line 3, column 1" in message


def test_load_spec_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(AcceleratorSpecError, match=r"bin\.yaml: cannot read the accelerator spec: not UTF-8 text"):
        load_spec(path)


def test_load_spec_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AcceleratorSpecError, match=r"absent\.yaml: cannot read the accelerator spec"):
        load_spec(tmp_path / "absent.yaml")


# --- layer tables ----------------------------------------------------------------------------------------------


def test_parse_table_with_empty_n_leaves_the_batch_to_the_model() -> None:
    layers = parse_table(HEADER + "A,3,64,16,8,1,14,0.1,0.2,\nB,3,64,16,64,1,14,0.3,0.4,2\n", "t.csv")
    assert layers == [AccelLayer("A", 3, 64, 16, 8, 1, 14, 0.1, 0.2, None),
                      AccelLayer("B", 3, 64, 16, 64, 1, 14, 0.3, 0.4, 2)]
    assert layers[0].batch is None
    assert (layers[0].groups, layers[0].output, layers[0].block) == (1, True, "A")
    assert layers[0].macs == 3 * 3 * 8 * 14 * 14 * 64


def test_table_missing_column() -> None:
    with pytest.raises(LayerTableError, match=r"t\.csv: missing column\(s\) s_of"):
        parse_table("name,R,M,H,C,U,E,s_if,n\nA,3,64,16,8,1,14,0.1,\n", "t.csv")


def test_table_unknown_column() -> None:
    with pytest.raises(LayerTableError, match=r"unknown column\(s\) pad"):
        parse_table("name,R,M,H,C,U,E,s_if,s_of,n,pad\nA,3,64,16,8,1,14,0.1,0.2,,1\n", "t.csv")


def test_table_non_numeric_cell_names_the_row() -> None:
    # the header is row 1 of the file, so the second layer is row 3
    with pytest.raises(LayerTableError, match=r"t\.csv, row 3.*'abc' is not a number"):
        parse_table(HEADER + "A,3,64,16,8,1,14,0.1,0.2,\nB,3,abc,16,8,1,14,0.1,0.2,1\n", "t.csv")


def test_table_non_numeric_cell_names_the_column() -> None:
    with pytest.raises(LayerTableError, match=r"t\.csv, row 3, column M: 'abc' is not a number"):
        parse_table(HEADER + "A,3,64,16,8,1,14,0.1,0.2,\nB,3,abc,16,8,1,14,0.1,0.2,1\n", "t.csv")


@pytest.mark.parametrize(("cells", "message"), [
    ("A,3,64,16,8,1,14,1.0,0.2,", r"t\.csv, row 2: sparsity s_if must be in \[0, 1\), got 1\.0"),
    ("A,3,64,16,8,1,14,0.1,-0.1,", r"t\.csv, row 2: sparsity s_of must be in \[0, 1\), got -0\.1"),
])
def test_table_sparsity_out_of_range(cells: str, message: str) -> None:
    with pytest.raises(LayerTableError, match=message):
        parse_table(HEADER + cells + "\n", "t.csv")


def test_table_ofmap_size_must_follow_from_the_shape() -> None:
    # (16 - 3)//2 + 1 = 7, not 14
    with pytest.raises(LayerTableError, match=r"row 2: E=14 does not follow from H=16, R=3, U=2 \(expected 7\)"):
        parse_table(HEADER + "A,3,64,16,8,2,14,0.1,0.2,\n", "t.csv")


def test_table_duplicate_names() -> None:
    with pytest.raises(LayerTableError, match=r"layer name 'A' appears twice"):
        parse_table(HEADER + "A,3,64,16,8,1,14,0.1,0.2,\nA,3,64,16,64,1,14,0.1,0.2,\n", "t.csv")


def test_table_fractional_whole_number_and_empty_file() -> None:
    with pytest.raises(LayerTableError, match=r"row 2.*'6\.5' must be a whole number"):
        parse_table(HEADER + "A,3,6.5,16,8,1,14,0.1,0.2,\n", "t.csv")
    with pytest.raises(LayerTableError, match=r"t\.csv: empty file"):
        parse_table("", "t.csv")
    with pytest.raises(LayerTableError, match=r"t\.csv: no layer rows"):
        parse_table(HEADER, "t.csv")


def test_read_table_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "bin.csv"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(LayerTableError, match=r"bin\.csv: cannot read the layer table: not UTF-8 text"):
        read_table(path)


def test_table_row_missing_cells_is_refused_but_an_empty_n_is_not() -> None:
    with pytest.raises(LayerTableError, match=r"t\.csv, row 3: missing cell\(s\) for n"):
        parse_table(HEADER + "A,3,64,16,8,1,14,0.1,0.2,\nB,3,64,16,64,1,14,0.3,0.4\n", "t.csv")
    with pytest.raises(LayerTableError, match=r"t\.csv, row 2: missing cell\(s\) for s_of, n"):
        parse_table(HEADER + "A,3,64,16,8,1,14,0.1\n", "t.csv")
    assert parse_table(HEADER + "A,3,64,16,8,1,14,0.1,0.2,\n", "t.csv")[0].batch is None


def test_read_table_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LayerTableError, match=r"absent\.csv: cannot read the layer table"):
        read_table(tmp_path / "absent.csv")


@pytest.mark.parametrize("network", list(REFERENCE_ROWS))
def test_write_then_parse_round_trip(network: str, tmp_path: Path) -> None:
    layers = reference_network(network)
    text = write_table(layers)
    assert parse_table(text, "round-trip") == layers
    path = tmp_path / f"{network}.csv"
    path.write_text(text, encoding="utf-8")
    assert read_table(path) == layers


def test_blocks_must_be_contiguous() -> None:
    a = AccelLayer("a", 1, 8, 4, 8, 1, 4, 0.0, 0.0, block="X")
    b = AccelLayer("b", 1, 8, 4, 8, 1, 4, 0.0, 0.0, block="Y")
    c = AccelLayer("c", 1, 8, 4, 8, 1, 4, 0.0, 0.0, block="X")
    assert blocks([a, c, b]) == [("X", [0, 1]), ("Y", [2])]
    with pytest.raises(LayerTableError, match=r"block 'X': its rows are not contiguous"):
        blocks([a, b, c])


# --- inputs found by the parser fuzzing (tests/fuzz) ----------------------------------------------------------


def test_table_cell_over_the_csv_field_limit_names_the_row() -> None:
    # csv refuses a field over 131072 characters with its own csv.Error
    with pytest.raises(LayerTableError, match=r"^t\.csv, row 2: not a CSV row \(field larger than field limit"):
        parse_table(HEADER + '"' + "a" * 140_000 + '",3,64,16,8,1,14,0.1,0.2,\n', "t.csv")
    with pytest.raises(LayerTableError, match=r"^t\.csv, row 1: not a CSV row"):
        parse_table('"' + "a" * 140_000 + '"\n', "t.csv")


@pytest.mark.parametrize("keys", ["1: 2\na: 3\n", "null: 1\n", "true: 1\n", "2.5: 1\n"])
def test_spec_with_unknown_fields_that_are_not_text(tmp_path: Path, keys: str) -> None:
    # YAML keys may be numbers, booleans or null: the unknown ones are still named, sorted as text
    path = tmp_path / "keys.yaml"
    path.write_text("version: 1\n" + keys, encoding="utf-8")
    with pytest.raises(AcceleratorSpecError, match=r"keys\.yaml: unknown field\(s\) "):
        load_spec(path)


@pytest.mark.parametrize("text", ["- " * 10_000, "[" * 10_000, "{a: " * 10_000])
def test_spec_nested_too_deeply_is_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AcceleratorSpecError) as info:
        load_spec(path)
    assert str(info.value) == f"{path}: not valid YAML for a spec: nested too deeply"
