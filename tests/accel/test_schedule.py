"""CNNergy's scheduling parameters, computed by hand from the reference rules (docs/cnnergy.md, section 2).

Eyeriss-like 16-bit spec throughout unless noted: J = 12 PE rows, K = 14 PE columns, GLB = 100 kB,
filter RF 224, ifmap RF 12, psum RF 24 entries. A kB of 16-bit words is 8192 / 16 = 512 words, so
``kB = words / 512``. Every expected value below is written as the arithmetic that produces it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nnperf.accel import AccelLayer, Schedule, ScheduleError, eyeriss_spec, reference_network, schedule

SPEC16 = eyeriss_spec(16)


def _row(network: str, name: str) -> AccelLayer:
    rows = {layer.name: layer for layer in reference_network(network)}
    return rows[name]


def _check(sch: Schedule, **expected: object) -> None:
    for field, value in expected.items():
        actual = getattr(sch, field)
        if isinstance(value, float):
            assert actual == pytest.approx(value, rel=1e-12), field
        else:
            assert actual == value, field


def test_alexnet_c1_first_layer_no_rule_halves_the_ofmap_height() -> None:
    # R=11, M=96, H=227, C=3, U=4, E=55
    # S = floor(12/11) = 1; c_set = floor(12/11) = 1; F_tot = floor(224/11) = 20; f_set = floor(20/1) = 20
    # rule 1: 1 >= 3? no -> c_pass = 1*1 = 1, f_pass = 20, z = 0; rule 2: 1 > 3? no; R != 1; 20 > 96? no;
    # rule 5: 24 < 20? no.
    # y = 4*(14-1) + 11 = 63 < 227 -> y_if = 63, y_of = K = 14
    # ifmap = 227*63*1/512 = 27.931640625 kB; psum = 55*55*20/512 = 118.1640625 kB
    # n_max = 100/(27.931640625 + 118.1640625) = 0.68448...
    # y-adjustment (z = 0): y_comp = 27.5: 100/(27.93 + 55*27.5*20/512 = 59.08) = 1.149 >= 1 -> n = 1
    # rule 6: 27.5 < 14? no.  Final psum = 1*55*27.5*20/512 = 59.08203125 kB
    _check(schedule(_row("alexnet", "C1"), SPEC16),
           sets_per_pass=1, channels_per_set=1, channels_per_pass=1, filters_per_set=20, filters_per_pass=20,
           all_channels_in_pass=False, x_ifmap=227.0, y_ifmap=63.0, x_ofmap=55.0, y_ofmap=14.0,
           y_ofmap_glb=27.5, batch=1, batch_max=100 / (227 * 63 / 512 + 55 * 55 * 20 / 512),
           ifmap_kb=27.931640625, psum_kb=59.08203125, rules=())


def test_alexnet_c3_no_rule_takes_seven_images() -> None:
    # R=3, M=384, H=15, C=256, U=1, E=13
    # S = floor(12/3) = 4; c_set = floor(12/3) = 4; F_tot = floor(224/3) = 74; f_set = floor(74/4) = 18
    # rule 1: 4 >= 256? no -> c_pass = 4*4 = 16, f_pass = 18, z = 0; no other rule (18 <= 384, 24 >= 18)
    # y = 13 + 3 = 16 >= 15 -> y_if = 15, y_of = E = 13
    # ifmap = 15*15*16/512 = 7.03125 kB; psum = 13*13*18/512 = 5.94140625 kB
    # n_max = 100/12.97265625 = 7.7086 -> n = 7, y_comp = E = 13
    # final: ifmap = 7*7.03125 = 49.21875 kB; psum = 7*13*13*18/512 = 41.58984375 kB
    sch = schedule(_row("alexnet", "C3"), SPEC16)
    _check(sch, sets_per_pass=4, channels_per_set=4, channels_per_pass=16, filters_per_set=18,
           filters_per_pass=18, all_channels_in_pass=False, x_ifmap=15.0, y_ifmap=15.0, x_ofmap=13.0,
           y_ofmap=13.0, y_ofmap_glb=13.0, batch=7, batch_max=100 / 12.97265625, ifmap_kb=49.21875,
           psum_kb=41.58984375, rules=())
    assert sch.glb_used_kb == pytest.approx(49.21875 + 41.58984375, rel=1e-12)
    # second simulation, n2 = 6: psum = 6*13*13*18/512 = 35.6484375; ifmap = 6*7.03125 = 42.1875
    _check(schedule(_row("alexnet", "C3"), SPEC16, batch=6), batch=6, ifmap_kb=42.1875, psum_kb=35.6484375)


def test_googlenet_1x1_fires_rule_3() -> None:
    # inc3a_3x3red: R=1, M=96, H=28, C=192, U=1, E=28
    # S = 12; c_set = 12; F_tot = 224; f_set = floor(224/12) = 18
    # rule 1: 12 >= 192? no -> c_pass = 144, f_pass = 18, z = 0; rule 2: 144 > 192? no
    # rule 3 (R = 1, E = 28 != 1, z = 0): c_pass = 72; k = ceil(72/12) = 6; SS = floor(12/6) = 2;
    #   M = 96 >= 36 -> f_pass = 18*2 = 36 (f_set stays 18)
    # rule 4: 36 > 96? no; rule 5: 24 < 18? no
    # y = 13 + 1 = 14 < 28 -> y_if = 14, y_of = 14
    # ifmap = 28*14*72/512 = 55.125 kB; psum = 28*28*36/512 = 55.125 kB; n_max = 100/110.25 = 0.907
    # y-adjustment: y_comp = 14: 100/(55.125 + 28*14*36/512 = 27.5625) = 1.209 >= 1 -> n = 1; rule 6: 14 < 14? no
    sch = schedule(_row("googlenet_v1", "inc3a_3x3red"), SPEC16)
    _check(sch, sets_per_pass=12, channels_per_set=12, channels_per_pass=72, filters_per_set=18,
           filters_per_pass=36, all_channels_in_pass=False, x_ifmap=28.0, y_ifmap=14.0, x_ofmap=28.0,
           y_ofmap=14.0, y_ofmap_glb=14.0, batch=1, batch_max=100 / 110.25, ifmap_kb=55.125,
           psum_kb=27.5625, rules=(3,))
    # passes: y_pass = 14/14 = 1; z_pass = 192/72; f_passes = 96/36; Y = 28/14 = 2; X = 28/28 = 1
    layer = _row("googlenet_v1", "inc3a_3x3red")
    assert sch.y_passes == 1.0
    assert sch.z_passes(layer) == pytest.approx(192 / 72, rel=1e-12)
    assert sch.filter_passes(layer) == pytest.approx(96 / 36, rel=1e-12)
    assert sch.y_tiles(layer) == 2.0
    assert sch.x_tiles(layer) == 1.0


def test_googlenet_1x1_with_few_filters_takes_them_all() -> None:
    # inc3a_5x5red: R=1, M=16, H=28, C=192: rule 3 with M <= 18 -> f_set = f_pass = 16 (no rule 4: 16 > 16? no)
    sch = schedule(_row("googlenet_v1", "inc3a_5x5red"), SPEC16)
    _check(sch, channels_per_pass=72, filters_per_set=16, filters_per_pass=16, rules=(3,))


def test_squeezenet_fire2s_rules_2_and_4() -> None:
    # fire2s: R=1, M=16, H=56, C=64, U=1, E=56
    # S = 12; c_set = 12; f_set = floor(224/12) = 18
    # rule 1: 12 >= 64? no -> c_pass = 144, f_pass = 18
    # rule 2 (12 < 64 and 144 > 64): c_pass = 64; k = ceil(64/12) = 6; SS = floor(12/6) = 2; f_pass = 18*2 = 36; z = 1
    # rule 3: z = 1 -> no. rule 4 (36 > 16): f_set = 16/12 = 1.333..., f_pass = (16/12)*12 = 16
    # rule 5: 24 < 1.33? no
    # y = 14 < 56 -> y_if = 14, y_of = 14
    # ifmap = 56*14*64/512 = 98 kB; psum = 56*56*16/512 = 98 kB; n_max = 100/196 = 0.5102
    # n_max < 1 and z = 1 -> y_comp = E = 56, n = 1, psum = 100 - 98 = 2 kB
    _check(schedule(_row("squeezenet_v11", "fire2s"), SPEC16),
           sets_per_pass=12, channels_per_set=12, channels_per_pass=64, filters_per_set=16 / 12,
           filters_per_pass=16.0, all_channels_in_pass=True, x_ifmap=56.0, y_ifmap=14.0, x_ofmap=56.0,
           y_ofmap=14.0, y_ofmap_glb=56.0, batch=1, batch_max=100 / 196, ifmap_kb=98.0, psum_kb=2.0,
           rules=(2, 4))


def test_squeezenet_fire6e1_all_channels_fill_the_glb_with_psums() -> None:
    # fire6e1: R=1, M=192, H=14, C=48, U=1, E=14
    # rule 2 (12 < 48 and 144 > 48): c_pass = 48; k = ceil(48/12) = 4; SS = floor(12/4) = 3; f_pass = 18*3 = 54; z = 1
    # rule 4: 54 > 192? no; rule 5: 24 < 18? no
    # y = 14 >= 14 -> y_if = 14, y_of = 14
    # ifmap = 14*14*48/512 = 18.375 kB; psum = 14*14*54/512 = 20.671875 kB; n_max = 100/39.046875 = 2.561 -> n = 2
    # final (z = 1, n_max >= 1): ifmap = 2*18.375 = 36.75 kB; psum = 100 - 36.75 = 63.25 kB
    _check(schedule(_row("squeezenet_v11", "fire6e1"), SPEC16),
           channels_per_pass=48, filters_per_set=18, filters_per_pass=54, all_channels_in_pass=True,
           y_ofmap=14.0, y_ofmap_glb=14.0, batch=2, batch_max=100 / 39.046875, ifmap_kb=36.75, psum_kb=63.25,
           rules=(2,))


def test_vgg_c1_1_rules_1_and_4() -> None:
    # C1-1: R=3, M=64, H=226, C=3, U=1, E=224
    # S = 4; c_set = 4; F_tot = 74; f_set = floor(74/4) = 18
    # rule 1 (4 >= 3): c_set = 3, c_pass = 3, z = 1, f_set = floor(74/3) = 24, f_pass = 24*4 = 96
    # rule 2: 3 < 3? no. rule 4 (96 > 64): f_set = 64/4 = 16, f_pass = 16*4 = 64; rule 5: 24 < 16? no
    # y = 13 + 3 = 16 < 226 -> y_if = 16, y_of = 14
    # ifmap = 226*16*3/512 = 21.1875 kB; psum = 224*224*64/512 = 6272 kB; n_max = 100/6293.1875 = 0.0159
    # n_max < 1, z = 1 -> y_comp = 224, n = 1, psum = 100 - 21.1875 = 78.8125 kB
    _check(schedule(_row("vgg16", "C1-1"), SPEC16),
           sets_per_pass=4, channels_per_set=3, channels_per_pass=3, filters_per_set=16.0, filters_per_pass=64.0,
           all_channels_in_pass=True, x_ifmap=226.0, y_ifmap=16.0, x_ofmap=224.0, y_ofmap=14.0,
           y_ofmap_glb=224.0, batch=1, batch_max=100 / 6293.1875, ifmap_kb=21.1875, psum_kb=78.8125,
           rules=(1, 4))


def test_vgg_fc1_rule_5_and_701_images() -> None:
    # FC1: R=7, M=4096, H=7, C=512, U=1, E=1
    # S = floor(12/7) = 1; c_set = floor(12/7) = 1; F_tot = floor(224/7) = 32; f_set = floor(32/1) = 32
    # rule 1: 1 >= 512? no -> c_pass = 1, f_pass = 32, z = 0; rule 2: 1 > 512? no; R = 7; 32 > 4096? no
    # rule 5 (24 < 32): f_set = 24, f_pass = 24*1 = 24
    # y = 13 + 7 = 20 >= 7 -> y_if = 7, y_of = E = 1
    # ifmap = 7*7*1/512 = 0.095703125 kB; psum = 1*1*24/512 = 0.046875 kB
    # n_max = 100/0.142578125 = 701.37 -> n = 701
    # final: ifmap = 701*49/512 = 67.087890625 kB; psum = 701*1*1*24/512 = 32.859375 kB
    _check(schedule(_row("vgg16", "FC1"), SPEC16),
           sets_per_pass=1, channels_per_set=1, channels_per_pass=1, filters_per_set=24, filters_per_pass=24,
           all_channels_in_pass=False, x_ifmap=7.0, y_ifmap=7.0, x_ofmap=1.0, y_ofmap=1.0, y_ofmap_glb=1.0,
           batch=701, batch_max=100 / 0.142578125, ifmap_kb=67.087890625, psum_kb=32.859375, rules=(5,))


def test_googlenet_conv1_rule_5_and_y_adjustment() -> None:
    # conv1: R=7, M=64, H=229, C=3, U=2, E=112
    # S = 1; c_set = 1; F_tot = 32; f_set = 32; rule 1: 1 >= 3? no -> c_pass = 1, f_pass = 32, z = 0
    # rule 4: 32 > 64? no; rule 5 (24 < 32): f_set = 24, f_pass = 24
    # y = 2*13 + 7 = 33 < 229 -> y_if = 33, y_of = 14
    # ifmap = 229*33/512 = 14.759765625 kB; psum = 112*112*24/512 = 588 kB; n_max = 100/602.76 = 0.166
    # y-adjustment: y_comp 56 -> psum 294 (no), 28 -> 147 (no), 14 -> 73.5: 100/88.26 >= 1 -> y_comp = 14, n = 1
    # rule 6: 14 < 14? no
    _check(schedule(_row("googlenet_v1", "conv1"), SPEC16),
           sets_per_pass=1, channels_per_set=1, channels_per_pass=1, filters_per_set=24, filters_per_pass=24,
           all_channels_in_pass=False, x_ifmap=229.0, y_ifmap=33.0, x_ofmap=112.0, y_ofmap=14.0,
           y_ofmap_glb=14.0, batch=1, batch_max=100 / (7557 / 512 + 588), ifmap_kb=14.759765625,
           psum_kb=73.5, rules=(5,))


def test_vgg_c1_2_x_halving_and_rule_6() -> None:
    # C1-2: R=3, M=64, H=226, C=64, U=1, E=224
    # S = 4; c_set = 4; f_set = 18; rule 1: 4 >= 64? no -> c_pass = 16, f_pass = 18, z = 0; rule 2: 16 > 64? no
    # y = 16 < 226 -> y_if = 16, y_of = 14
    # ifmap = 226*16*16/512 = 113 kB >= 100 -> x-adjustment: x_if = 113, ifmap = 56.5 kB, x_of = (113-3)/1 + 1 = 111,
    #   psum = 111*224*18/512 = 874.125 kB, n_max = 100/930.625 = 0.1075
    # y-adjustment (z = 0): psum of x_of*y_comp*18/512: 112 -> 437.06, 56 -> 218.53, 28 -> 109.27, 14 -> 54.63
    #   (100/111.13 < 1), 7 -> 27.32: 100/83.82 >= 1 -> y_comp = 7, n = 1
    # rule 6 (7 < 14): y_comp = 14; f_pass 17 -> 100/(56.5 + 111*14*17/512 = 51.60) < 1, 16 -> 48.56 (< 1),
    #   15 -> 45.53 (< 1), 14 -> 42.49: 100/98.99 >= 1 -> f_pass = 14 (f_set stays 18)
    # final: psum = 1*111*14*14/512 = 42.4921875 kB; ifmap = 56.5 kB
    _check(schedule(_row("vgg16", "C1-2"), SPEC16),
           sets_per_pass=4, channels_per_set=4, channels_per_pass=16, filters_per_set=18, filters_per_pass=14,
           all_channels_in_pass=False, x_ifmap=113.0, y_ifmap=16.0, x_ofmap=111.0, y_ofmap=14.0,
           y_ofmap_glb=14.0, batch=1, batch_max=100 / 930.625, ifmap_kb=56.5, psum_kb=42.4921875, rules=(6,))


def test_alexnet_fc7_is_1x1_but_fc_so_rule_3_does_not_fire() -> None:
    # FC7: R=1, M=4096, H=1, C=4096, U=1, E=1
    # S = 12; c_set = 12; f_set = 18; rule 1: no -> c_pass = 144, f_pass = 18, z = 0; rule 2: 144 > 4096? no
    # rule 3 needs E != 1: E = 1 -> no; rule 4: no; rule 5: 24 < 18? no
    # y = 14 >= 1 -> y_if = 1, y_of = 1
    # ifmap = 144/512 = 0.28125 kB; psum = 18/512 = 0.03515625 kB; n_max = 100/0.31640625 = 316.05 -> n = 316
    # final: ifmap = 316*0.28125 = 88.875 kB; psum = 316*18/512 = 11.109375 kB
    _check(schedule(_row("alexnet", "FC7"), SPEC16),
           sets_per_pass=12, channels_per_set=12, channels_per_pass=144, filters_per_set=18, filters_per_pass=18,
           all_channels_in_pass=False, x_ifmap=1.0, y_ifmap=1.0, x_ofmap=1.0, y_ofmap=1.0, y_ofmap_glb=1.0,
           batch=316, batch_max=100 / 0.31640625, ifmap_kb=88.875, psum_kb=11.109375, rules=())


def test_8_bit_registers_change_the_schedule() -> None:
    # AlexNet FC8 at 8 bits: ifmap RF 24, filter RF 448, psum RF 48; a kB holds 1024 8-bit words
    # S = 12; c_set = floor(24/1) = 24; F_tot = 448; f_set = floor(448/24) = 18
    # c_pass = 24*12 = 288, f_pass = 18; rule 5: 48 < 18? no
    # ifmap = 288/1024 kB; psum = 18/1024 kB; n_max = 102400/306 = 334.64 -> n = 334
    _check(schedule(_row("alexnet", "FC8"), eyeriss_spec(8)),
           sets_per_pass=12, channels_per_set=24, channels_per_pass=288, filters_per_set=18, filters_per_pass=18,
           batch=334, batch_max=102400 / 306, ifmap_kb=334 * 288 / 1024, psum_kb=334 * 18 / 1024, rules=())


def test_glb_too_small_for_one_ifmap_row_is_a_schedule_error() -> None:
    # VGG C1-2: one ifmap row = 226 values * 16 bits = 226/512 = 0.44 kB > 0.4 kB
    with pytest.raises(ScheduleError, match=r"C1-2.*GLB of 0.4 kB cannot hold one row of the ifmap.*226 values"):
        schedule(_row("vgg16", "C1-2"), replace(SPEC16, glb_kb=0.4))


def test_glb_halving_follows_the_reference_until_the_tile_is_narrower_than_the_filter() -> None:
    # VGG C1-2 at 5 kB (c_pass = 16, y_if = 16): the reference halves x_if 226 -> 113 -> 56.5 -> 28.25 -> 14.125
    # -> 7.0625 (ifmap 7.0625*16*16/512 = 3.53 kB < 5), x_of = (7.0625 - 3)/1 + 1 = 5.0625
    sch = schedule(_row("vgg16", "C1-2"), replace(SPEC16, glb_kb=5.0))
    assert sch.x_ifmap == 7.0625 and sch.x_ofmap == 5.0625
    # at 1 kB the halving reaches x_if = 1.765625 (0.88 kB), narrower than the 3-wide filter
    with pytest.raises(ScheduleError, match=r"C1-2.*GLB of 1 kB cannot hold an ifmap tile as wide as the filter"):
        schedule(_row("vgg16", "C1-2"), replace(SPEC16, glb_kb=1.0))


def test_filter_taller_than_the_pe_array_is_a_schedule_error() -> None:
    # AlexNet C1 has R = 11 > 10 rows: S = floor(10/11) = 0
    with pytest.raises(ScheduleError, match=r"R=11 exceeds the PE array's 10 rows"):
        schedule(_row("alexnet", "C1"), replace(SPEC16, pe_rows=10))


def test_register_file_smaller_than_a_filter_row_is_a_schedule_error() -> None:
    # R = 11 with 8 ifmap RF entries: c_set = floor(8/11) = 0
    with pytest.raises(ScheduleError, match=r"register files of 8 ifmap.*R=11"):
        schedule(_row("alexnet", "C1"), replace(SPEC16, ifmap_rf_entries=8))
