"""CNNergy's energy of a layer and of a network, recomputed by hand from the reference (docs/cnnergy.md, section 3).

The schedules fed to the formulas are the hand-derived ones of test_schedule.py, written here as
literals; the energies per access are rebuilt from the reference's base numbers, never taken from
nnperf, so a wrong constant or a wrong formula in the implementation changes the result.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from nnperf.accel import (
    AccelLayer,
    LayerEnergy,
    blocks,
    eyeriss_spec,
    layer_energy,
    network_energy,
    reference_network,
    schedule,
)

SCALE = (65 / 45) * (1 / 0.9) ** 2  # 45 nm / 0.9 V -> 65 nm / 1 V, 1.783265
E_MAC16 = (0.05 + 0.9) * 1e-12 * SCALE  # 1.69410 pJ

# (e_MAC, e_RF, e_PE, e_GLB, e_DRAM, RLC factor, Bw)
ENERGY16 = (E_MAC16, E_MAC16, 2 * E_MAC16, 6 * E_MAC16, 200 * E_MAC16, 3, 16)
ENERGY8 = ((0.05 / 2 + 0.9 / 4) * 1e-12 * SCALE, E_MAC16 / 2, 2 * E_MAC16 / 2, 6 * E_MAC16 / 2,
           200 * E_MAC16 / 2, 5, 8)
P_CLK, THROUGHPUT, C_PRCNT = 0.1063, 23.1e9, 0.15


def _row(network: str, name: str) -> AccelLayer:
    return {layer.name: layer for layer in reference_network(network)}[name]


def _reference(*, R: int, U: int, C: int, M: int, E: int, s_if: float, s_of: float, n: int, first: bool,
               c_set: float, c_pass: float, f_pass: float, x_if: float, y_if: float, x_of: float, y_of: float,
               y_comp: float, energy: tuple[float, ...] = ENERGY16) -> dict[str, float]:
    """Section 3 of the reference, term by term, for a hand-made schedule."""
    e_mac, e_rf, e_pe, e_glb, e_dram, rlc, bw = energy
    nz_if, nz_of = 1 - s_if, 1 - s_of
    v: dict[str, float] = {}
    v["W"] = W = f_pass * c_pass * R * R
    E_W = (e_dram + e_glb) * W
    v["I"] = I = x_if * y_if * c_pass
    v["I_ov"] = I_ov = x_if * (y_if - (R - U)) * c_pass
    if first:
        v["D_I"], v["D_Iov"] = D_I, D_Iov = I * n, I_ov * n
    else:
        v["D_I"] = D_I = (I * nz_if / rlc) * (64 / bw) * n
        v["D_Iov"] = D_Iov = (I_ov * nz_if / rlc) * (64 / bw) * n
    E_IDRAM, E_IovDRAM, E_IGLB = e_dram * D_I, e_dram * D_Iov, e_glb * I
    v["P"] = P = f_pass * x_of * y_of
    E_P = e_glb * P
    v["MAC_p"] = MAC_p = R * R * x_of * y_of * f_pass * c_pass
    v["NZ_p"] = NZ_p = MAC_p * nz_if
    E_c = e_mac * NZ_p
    v["h"] = h = math.ceil(R * c_pass / c_set)
    v["IPE"] = IPE = (h - 1) * x_of * f_pass * y_of
    E_d = 3 * e_rf * NZ_p + e_pe * IPE + e_rf * (NZ_p - IPE) + e_rf * (MAC_p - NZ_p)
    E_MAC = E_c + E_d
    y_pass = y_comp / y_of
    v["E_first"] = E_first = E_W + (E_IDRAM + (y_pass - 1) * E_IovDRAM) + n * y_pass * (E_IGLB + E_P + E_MAC)
    v["E_next"] = E_next = E_W + (E_IDRAM + (y_pass - 1) * E_IovDRAM) + n * y_pass * (E_IGLB + 2 * E_P + E_MAC)
    v["z_pass"] = z_pass = C / c_pass
    v["f_passes"] = f_passes = M / f_pass
    v["Y"] = Y = E / y_comp
    v["X"] = X = E / x_of
    E_passes = (E_first + (z_pass - 1) * E_next) * f_passes * Y * X
    v["D_O"] = D_O = (E * E * M * nz_of / rlc) * (64 / bw) * n
    E_O = e_dram * D_O
    v["E_img"] = E_img = (E_passes + E_O) / n
    E_DRAM_I = (E_IDRAM + (y_pass - 1) * E_IovDRAM) * z_pass * f_passes * Y * X
    E_DRAM_W = W * e_dram * z_pass * f_passes * Y * X
    v["G1"] = G1 = (E_passes - E_DRAM_I - E_DRAM_W) / n
    v["MACs"] = MACs = R * R * C * E * E * M
    v["E_clk"] = E_clk = P_CLK * MACs / THROUGHPUT
    v["E_ctl"] = E_ctl = C_PRCNT / (1 - C_PRCNT) * (G1 + E_clk)
    v["E_layer"] = E_img + E_clk + E_ctl
    v["dram_ifmap_words"] = (D_I + (y_pass - 1) * D_Iov) * z_pass * f_passes * Y * X / n
    v["dram_filter_words"] = W * z_pass * f_passes * Y * X / n
    return v


def _check_breakdown(result: LayerEnergy, v: dict[str, float], s_if: float, e_mac: float) -> None:
    parts = result.breakdown()
    assert sum(parts.values()) == pytest.approx(result.energy_j, rel=1e-12)
    assert result.mac_j == pytest.approx(e_mac * v["MACs"] * (1 - s_if), rel=1e-12)
    assert result.clock_j == pytest.approx(0.1063 * v["MACs"] / 23.1e9, rel=1e-12)
    assert result.control_j == pytest.approx(v["E_ctl"], rel=1e-12)
    assert result.macs == v["MACs"]


def test_alexnet_c1_first_layer_by_hand() -> None:
    # schedule (test_schedule): c_set = 1, c_pass = 1, f_pass = 20, x_if = 227, y_if = 63, x_of = 55, y_of = 14,
    # y_comp = 27.5; table n2 = 1; the image is read uncoded
    layer = _row("alexnet", "C1")
    v = _reference(R=11, U=4, C=3, M=96, E=55, s_if=0.0001, s_of=0.5102, n=1, first=True, c_set=1, c_pass=1,
                   f_pass=20, x_if=227, y_if=63, x_of=55, y_of=14, y_comp=27.5)
    assert v["W"] == 2420  # 20*1*11*11
    assert v["I"] == 14301  # 227*63*1
    assert v["I_ov"] == 12712  # 227*(63 - (11 - 4))*1
    assert (v["D_I"], v["D_Iov"]) == (14301, 12712)  # uncoded, n = 1
    assert v["P"] == 15400  # 20*55*14
    assert v["MAC_p"] == 1863400  # 11*11*55*14*20*1
    assert v["h"] == 11  # ceil(11*1/1)
    assert v["IPE"] == 154000  # (11 - 1)*55*20*14
    assert (v["z_pass"], v["f_passes"], v["Y"], v["X"]) == (3, 4.8, 2, 1)  # 3/1, 96/20, 55/27.5, 55/55
    assert v["MACs"] == 105415200  # 11*11*3*55*55*96
    assert v["D_O"] == pytest.approx(290400 * 0.4898 / 3 * 4, rel=1e-12)  # O = 55*55*96

    result = layer_energy(layer, eyeriss_spec(16), first_layer=True, batch=1)
    assert result.energy_j == pytest.approx(v["E_layer"], rel=1e-12)
    assert v["E_layer"] == pytest.approx(2.0133778e-3, rel=1e-6)  # about 2.01 mJ per image
    _check_breakdown(result, v, 0.0001, E_MAC16)
    # DRAM: dense filters, the image uncoded, the ofmap RLC-coded
    assert result.dram_words["filter"] == pytest.approx(v["dram_filter_words"], rel=1e-12)
    assert result.dram_words["ifmap"] == pytest.approx((14301 + (27.5 / 14 - 1) * 12712) * 3 * 4.8 * 2, rel=1e-12)
    assert result.dram_words["ofmap"] == pytest.approx(290400 * (1 - 0.5102) / 3 * (64 / 16), rel=1e-12)


def test_alexnet_fc8_rlc_ifmap_by_hand() -> None:
    # schedule: c_set = 12, c_pass = 144, f_pass = 18, x_if = y_if = x_of = y_of = y_comp = 1; table n2 = 18
    layer = _row("alexnet", "FC8")
    v = _reference(R=1, U=1, C=4096, M=1000, E=1, s_if=0.8125, s_of=0.0, n=18, first=False, c_set=12,
                   c_pass=144, f_pass=18, x_if=1, y_if=1, x_of=1, y_of=1, y_comp=1)
    assert v["W"] == 2592  # 18*144*1*1
    assert v["I"] == v["I_ov"] == 144  # 1*1*144; R - U = 0, nothing overlaps
    assert v["D_I"] == pytest.approx(648.0, rel=1e-12)  # 144*0.1875/3*(64/16)*18 = 27/3*4*18
    assert v["h"] == 12  # ceil(1*144/12)
    assert v["IPE"] == 198  # (12 - 1)*1*18*1
    assert v["z_pass"] == pytest.approx(4096 / 144, rel=1e-12)
    assert v["D_O"] == pytest.approx(24000.0, rel=1e-12)  # 1000*1/3*4*18

    result = layer_energy(layer, eyeriss_spec(16), batch=18)
    assert result.schedule.batch == 18
    assert result.energy_j == pytest.approx(v["E_layer"], rel=1e-12)
    _check_breakdown(result, v, 0.8125, E_MAC16)
    assert result.dram_words["ifmap"] == pytest.approx(648.0 * (4096 / 144) * (1000 / 18) / 18, rel=1e-12)
    assert result.dram_words["ofmap"] == pytest.approx(24000.0 / 18, rel=1e-12)


def test_squeezenet_fire2s_y_passes_and_inter_pe_by_hand() -> None:
    # schedule (rules 2+4): c_set = 12, c_pass = 64, f_pass = 16, x_if = 56, y_if = 14, x_of = 56, y_of = 14,
    # y_comp = 56 (so y_pass = 4 reads the non-overlapping rows three times); n2 = 1
    layer = _row("squeezenet_v11", "fire2s")
    v = _reference(R=1, U=1, C=64, M=16, E=56, s_if=0.176012, s_of=0.152097, n=1, first=False, c_set=12,
                   c_pass=64, f_pass=16, x_if=56, y_if=14, x_of=56, y_of=14, y_comp=56)
    assert v["h"] == 6  # ceil(1*64/12) = ceil(5.33)
    assert v["IPE"] == 62720  # 5*56*16*14
    assert (v["z_pass"], v["f_passes"], v["Y"], v["X"]) == (1, 1, 1, 1)
    result = layer_energy(layer, eyeriss_spec(16), batch=1)
    assert result.energy_j == pytest.approx(v["E_layer"], rel=1e-12)
    _check_breakdown(result, v, 0.176012, E_MAC16)
    assert result.inter_pe_j == pytest.approx(2 * E_MAC16 * 62720 * 4, rel=1e-12)  # e_PE * IPE * y_pass


def test_vgg_c1_2_fractional_tiles_by_hand() -> None:
    # schedule (x halving + rule 6): c_set = 4, c_pass = 16, f_pass = 14, x_if = 113, y_if = 16, x_of = 111,
    # y_of = 14, y_comp = 14 -> X = 224/111 and f_passes = 64/14 are fractional, as in the reference
    v = _reference(R=3, U=1, C=64, M=64, E=224, s_if=0.480420, s_of=0.313600, n=1, first=False, c_set=4,
                   c_pass=16, f_pass=14, x_if=113, y_if=16, x_of=111, y_of=14, y_comp=14)
    result = layer_energy(_row("vgg16", "C1-2"), eyeriss_spec(16), batch=1)
    assert result.energy_j == pytest.approx(v["E_layer"], rel=1e-12)
    _check_breakdown(result, v, 0.480420, E_MAC16)


def test_8_bit_layer_by_hand() -> None:
    # AlexNet FC8 at 8 bits, n = 18: c_set = 24, c_pass = 288, f_pass = 18 (test_schedule); RLC 5 per 64-bit word
    spec = eyeriss_spec(8)
    v = _reference(R=1, U=1, C=4096, M=1000, E=1, s_if=0.8125, s_of=0.0, n=18, first=False, c_set=24,
                   c_pass=288, f_pass=18, x_if=1, y_if=1, x_of=1, y_of=1, y_comp=1, energy=ENERGY8)
    assert v["D_I"] == pytest.approx(288 * 0.1875 / 5 * 8 * 18, rel=1e-12)  # 1555.2
    assert v["D_O"] == pytest.approx(28800.0, rel=1e-12)  # 1000*1/5*(64/8)*18
    result = layer_energy(_row("alexnet", "FC8"), spec, batch=18)
    assert result.energy_j == pytest.approx(v["E_layer"], rel=1e-12)
    _check_breakdown(result, v, 0.8125, ENERGY8[0])
    assert result.dram_words["ofmap"] == pytest.approx(1600.0, rel=1e-12)  # O*NZ_of/5*(64/8)*n / n


def test_ofmap_dram_words_are_rlc_coded() -> None:
    # VGG C1-2: E^2*M*(1 - s_of)/RLC*(64/Bw) = 224*224*64*0.6864/3*4 per image, whatever n
    expected = 224 * 224 * 64 * (1 - 0.3136) / 3 * 4
    layer = _row("vgg16", "C1-2")
    for n in (1, 2):
        assert layer_energy(layer, eyeriss_spec(16), batch=n).dram_words["ofmap"] == pytest.approx(expected, rel=1e-12)


def test_only_the_first_layer_reads_an_uncoded_ifmap() -> None:
    # AlexNet C1 coded would carry NZ_if/3*(64/16) = 0.9999*4/3 words per value instead of 1
    layer = _row("alexnet", "C1")
    uncoded = layer_energy(layer, eyeriss_spec(16), first_layer=True, batch=1).dram_words["ifmap"]
    coded = layer_energy(layer, eyeriss_spec(16), first_layer=False, batch=1).dram_words["ifmap"]
    assert uncoded == pytest.approx((14301 + (27.5 / 14 - 1) * 12712) * 3 * 4.8 * 2, rel=1e-12)
    assert coded == pytest.approx(uncoded * 0.9999 / 3 * 4, rel=1e-12)
    net = network_energy(reference_network("alexnet"), eyeriss_spec(16))
    assert net.layers[0].dram_words["ifmap"] == pytest.approx(uncoded, rel=1e-12)


def test_without_control_the_energy_is_data_and_compute_only() -> None:
    spec = replace(eyeriss_spec(16), clock_power_w=0.0, control_fraction=0.0)
    for layer in reference_network("squeezenet_v11")[:4]:
        result = layer_energy(layer, spec, batch=layer.batch)
        assert result.clock_j == 0.0
        assert result.control_j == 0.0
        assert result.energy_j == pytest.approx(
            result.mac_j + result.rf_j + result.inter_pe_j + result.glb_j + result.dram_j, rel=1e-12)


def test_control_is_the_reference_fraction_of_on_chip_and_clock() -> None:
    # E_layer = E_DRAM + (G1 + E_clk)/(1 - C%), G1 = MAC + RF + inter-PE + GLB
    for layer in reference_network("alexnet"):
        r = layer_energy(layer, eyeriss_spec(16), batch=layer.batch)
        on_chip = r.mac_j + r.rf_j + r.inter_pe_j + r.glb_j
        assert r.energy_j == pytest.approx(r.dram_j + (on_chip + r.clock_j) / 0.85, rel=1e-12)
        assert r.latency_s == pytest.approx(layer.macs / 23.1e9, rel=1e-12)


def test_network_cumulative_and_total() -> None:
    net = network_energy(reference_network("alexnet"), eyeriss_spec(16), name="alexnet")
    energies = [layer.energy_j for layer in net.layers]
    running = 0.0
    for energy, cumulative in zip(energies, net.cumulative_j(), strict=True):
        running += energy
        assert cumulative == pytest.approx(running, rel=1e-12)
    assert net.total_j == pytest.approx(sum(energies), rel=1e-12)
    assert net.cumulative_j()[-1] == pytest.approx(net.total_j, rel=1e-12)
    # each layer of the network is the single-layer result at the table's n2, the first one uncoded
    assert energies[0] == layer_energy(net.layers[0].layer, eyeriss_spec(16), first_layer=True, batch=1).energy_j
    assert energies[7] == layer_energy(net.layers[7].layer, eyeriss_spec(16), batch=18).energy_j
    assert [layer.schedule.batch for layer in net.layers] == [1, 2, 6, 6, 6, 18, 18, 18]
    assert sum(net.breakdown().values()) == pytest.approx(net.total_j, rel=1e-12)
    assert net.macs == sum(layer.layer.macs for layer in net.layers)


def test_network_batch_model_uses_the_first_simulation() -> None:
    net = network_energy(reference_network("alexnet"), eyeriss_spec(16), batch="model")
    assert [layer.schedule.batch for layer in net.layers] == [1, 2, 7, 7, 7, 316, 316, 316]
    with pytest.raises(ValueError, match="batch must be 'table' or 'model'"):
        network_energy(reference_network("alexnet"), eyeriss_spec(16), batch="n2")


def test_squeezenet_reporting_blocks() -> None:
    net = network_energy(reference_network("squeezenet_v11"), eyeriss_spec(16))
    names = [name for name, _ in net.blocks()]
    assert names == ["C1"] + [f"F{i}{part}" for i in range(2, 10) for part in ("s", "e")] + ["C10"]
    assert len(names) == 18
    expand = dict(net.blocks())["F2e"]
    assert [r.name for r in expand] == ["fire2e1", "fire2e3"]
    assert sum(r.energy_j for _, rows in net.blocks() for r in rows) == pytest.approx(net.total_j, rel=1e-12)


def test_googlenet_reporting_blocks() -> None:
    layers = reference_network("googlenet_v1")
    names = [name for name, _ in blocks(layers)]
    assert names == ["C1", "C2a", "C2b", "IC3a", "IC3b", "IC4a", "IC4b", "IC4c", "IC4d", "IC4e", "IC5a", "IC5b",
                     "FC"]
    assert [len(indices) for _, indices in blocks(layers)] == [1, 1, 1] + [6] * 9 + [1]
    net = network_energy(layers, eyeriss_spec(16))
    assert [name for name, _ in net.blocks()] == names


def test_glb_energy_sqrt_law() -> None:
    base = eyeriss_spec(16)
    small = replace(base, glb_kb=25.0, glb_energy_law="sqrt")
    # sqrt(25/100) = 0.5
    assert small.glb_access_energy_j == pytest.approx(base.glb_energy_j * 0.5, rel=1e-12)
    assert small.glb_access_energy_j == pytest.approx(6 * E_MAC16 * 0.5, rel=1e-12)
    assert replace(base, glb_kb=25.0).glb_access_energy_j == base.glb_energy_j
    assert replace(base, glb_kb=400.0, glb_energy_law="sqrt").glb_access_energy_j == pytest.approx(
        2 * base.glb_energy_j, rel=1e-12)
    # the law changes only the GLB energy per access, not the schedule
    layer = _row("alexnet", "C3")
    constant = layer_energy(layer, replace(base, glb_kb=25.0), batch=1)
    scaled = layer_energy(layer, small, batch=1)
    assert scaled.schedule == constant.schedule
    assert scaled.glb_j == pytest.approx(0.5 * constant.glb_j, rel=1e-12)
    assert scaled.dram_j == pytest.approx(constant.dram_j, rel=1e-12)


def test_schedule_of_layer_energy_is_the_schedule() -> None:
    layer = _row("googlenet_v1", "inc3a_3x3red")
    assert layer_energy(layer, eyeriss_spec(16), batch=1).schedule == schedule(layer, eyeriss_spec(16), batch=1)
