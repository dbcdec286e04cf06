"""NeuPart partitioning: transmit model (Eq. 24-25), split choice (Eq. 1, 26), Algorithm 2, sweeps, reports."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from rich.console import Console

from nnperf.errors import NnperfError
from nnperf.optimize.partition import (
    NEUPART_INPUT_SPARSITIES,
    Channel,
    PartitionInputError,
    RuntimePartitioner,
    SplitPoint,
    jpeg_bits,
    pareto_front,
    parse_bitrate,
    parse_power,
    partition,
    quartile_table,
    rlc_bits,
    sweep_channels,
)
from nnperf.report.partition import (
    partition_table,
    plot_delay,
    plot_energy_cost,
    plot_pareto,
    plot_savings,
    quartile_rich_table,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def four_points(input_bits: float = 1.2e6, l2_cloud_s: float = 1e-4) -> list[SplitPoint]:
    """input -> L1 -> L2 -> L3: cumulative client energy 0/1/3/6 mJ, client time 0/1/2/3 ms, bits 1.2M/240k/60k/0."""
    return [
        SplitPoint("input", 0.0, client_latency_s=0.0, cloud_latency_s=4e-4, sent_bits=input_bits),
        SplitPoint("L1", 1e-3, client_latency_s=1e-3, cloud_latency_s=3e-4, sent_bits=2.4e5),
        SplitPoint("L2", 3e-3, client_latency_s=2e-3, cloud_latency_s=l2_cloud_s, sent_bits=6e4),
        SplitPoint("L3", 6e-3, client_latency_s=3e-3, cloud_latency_s=0.0, sent_bits=0.0),
    ]


# --- transmission (Eq. 24, 25) ---------------------------------------------------------------------------------

def test_rlc_bits_count_64_bit_words_of_nonzeros() -> None:
    # 1000 values, 70% zero -> 300 nonzeros; 3 per 64-bit word (16-bit data) -> 100 words = 6400 bits
    assert rlc_bits(1000, 0.7, 3) == pytest.approx(6400.0)
    # 5 per word (8-bit data) -> 60 words = 3840 bits
    assert rlc_bits(1000, 0.7, 5) == pytest.approx(3840.0)
    assert rlc_bits(0, 0.0, 3) == 0.0
    assert jpeg_bits(1500) == 12000.0


def test_channel_transmit_energy_and_time() -> None:
    channel = Channel(60e6, 0.5)
    # Eq. 24: P_tx * bits / B_e = 0.5 W * 6400 bit / 60e6 bit/s = 53.33 uJ, over 106.7 us
    assert channel.transmit_energy_j(6400) == pytest.approx(0.5 * 6400 / 60e6)
    assert channel.transmit_energy_j(6400) == pytest.approx(5.3333e-5, rel=1e-4)
    assert channel.transmit_time_s(6400) == pytest.approx(6400 / 60e6)
    assert Channel(60_000_000, 1).bitrate_bps == 60e6 and isinstance(Channel(60_000_000, 1).tx_power_w, float)


@pytest.mark.parametrize(("text", "bps"), [("60Mbps", 60e6), ("60 Mbit/s", 60e6), ("1.5Gbps", 1.5e9),
                                           ("800kbps", 8e5), ("60e6", 60e6), (" 100 Kbps ", 1e5), ("2 b/s", 2.0)])
def test_parse_bitrate(text: str, bps: float) -> None:
    assert parse_bitrate(text) == pytest.approx(bps)


@pytest.mark.parametrize(("text", "watts"), [("0.5W", 0.5), ("500mW", 0.5), ("0.5", 0.5), ("1.3 W", 1.3)])
def test_parse_power(text: str, watts: float) -> None:
    assert parse_power(text) == pytest.approx(watts)


# --- partition (Eq. 1, 26) -------------------------------------------------------------------------------------

def test_partition_picks_an_intermediate_point_by_hand() -> None:
    # 60 Mbit/s, 0.5 W: transmit energy = bits / 1.2e8 J
    #   input: 0     + 1.2e6/1.2e8 = 0.01      J
    #   L1:    0.001 + 2.4e5/1.2e8 = 0.003     J   <- optimum
    #   L2:    0.003 + 6e4/1.2e8   = 0.0035    J
    #   L3:    0.006 + 0           = 0.006     J
    # savings: vs FCC 1 - 0.003/0.01 = 0.7; vs FISC 1 - 0.003/0.006 = 0.5
    result = partition(four_points(), Channel(60e6, 0.5))
    assert result.energy_cost_j == pytest.approx((0.01, 0.003, 0.0035, 0.006))
    assert result.transmit_energy_j == pytest.approx((0.01, 0.002, 0.0005, 0.0))
    assert result.best == 1 and result.best_point.name == "L1"
    assert result.savings_vs_fcc == pytest.approx(0.7)
    assert result.savings_vs_fisc == pytest.approx(0.5)
    # Eq. 26, transmit time bits / 60e6: input 0 + 20 ms + 0.4 ms; L1 1 + 4 + 0.3; L2 2 + 1 + 0.1; L3 3 + 0 + 0 (ms)
    assert result.delay_s == pytest.approx((0.0204, 0.0053, 0.0031, 0.003))


def test_partition_fcc_wins_on_a_fast_link() -> None:
    # 1 Gbit/s, 0.5 W: transmit = bits * 5e-10 J -> costs 6e-4, 1.12e-3, 3.03e-3, 6e-3
    result = partition(four_points(), Channel(1e9, 0.5))
    assert result.energy_cost_j == pytest.approx((6e-4, 1.12e-3, 3.03e-3, 6e-3))
    assert result.best == 0
    assert result.savings_vs_fcc == 0.0
    assert result.savings_vs_fisc == pytest.approx(1 - 6e-4 / 6e-3)  # 0.9


def test_partition_fisc_wins_on_a_slow_link() -> None:
    # 1 Mbit/s, 0.5 W: transmit = bits * 5e-7 J -> costs 0.6, 0.121, 0.033, 0.006
    result = partition(four_points(), Channel(1e6, 0.5))
    assert result.energy_cost_j == pytest.approx((0.6, 0.121, 0.033, 0.006))
    assert result.best == 3
    assert result.savings_vs_fcc == pytest.approx(1 - 0.006 / 0.6)  # 0.99
    assert result.savings_vs_fisc == 0.0


def test_ties_go_to_the_earliest_point() -> None:
    # 1 bit/s at 1 W: a bit costs 1 J; input 0 + 2 = 2 J, A 1 + 1 = 2 J, B 3 J
    points = [SplitPoint("input", 0.0, sent_bits=2), SplitPoint("A", 1.0, sent_bits=1), SplitPoint("B", 3.0)]
    assert partition(points, Channel(1.0, 1.0)).best == 0
    assert RuntimePartitioner.from_points(points).decide(Channel(1.0, 1.0)) == 0


def test_result_to_dict_is_json_ready_with_units() -> None:
    document = json.loads(json.dumps(partition(four_points(), Channel(60e6, 0.5)).to_dict()))
    assert document["format"] == "nnperf-partition" and document["version"] == 1
    assert document["best"] == "L1" and document["best_index"] == 1
    assert document["channel"] == {"bitrate_bps": 60e6, "tx_power_w": 0.5}
    assert document["points"][0]["energy_cost_j"] == pytest.approx(0.01)
    assert document["points"][0]["transmit_time_s"] == pytest.approx(0.02)
    assert document["savings_vs_fcc"] == pytest.approx(0.7)


# --- Algorithm 2 -----------------------------------------------------------------------------------------------

def test_runtime_partitioner_agrees_with_partition_on_random_channels() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(2, 12))
        energy = np.cumsum(np.r_[0.0, rng.uniform(0, 5e-3, n - 1)])
        bits = np.r_[rng.uniform(1e5, 5e6), rng.uniform(0, 2e6, n - 2), 0.0]
        points = [SplitPoint(f"p{i}", e, sent_bits=b) for i, (e, b) in enumerate(zip(energy, bits, strict=True))]
        runtime = RuntimePartitioner.from_points(points)
        for _ in range(25):
            channel = Channel(10 ** rng.uniform(5, 10), rng.uniform(0.1, 3.0))
            assert runtime.decide(channel) == partition(points, channel).best
            input_bits = float(rng.uniform(0, 5e6))
            changed = [SplitPoint("p0", 0.0, sent_bits=input_bits), *points[1:]]
            assert runtime.decide(channel, input_bits=input_bits) == partition(changed, channel).best


def test_runtime_partitioner_input_bits_by_hand() -> None:
    runtime = RuntimePartitioner.from_points(four_points())
    channel = Channel(60e6, 0.5)
    assert runtime.names == ("input", "L1", "L2", "L3")
    assert runtime.decide(channel) == 1
    # a well-compressed image: 2.4e5 bits -> FCC costs 0.002 J < L1's 0.003 J
    assert runtime.decide(channel, input_bits=2.4e5) == 0
    assert runtime.energy_cost_j(channel, input_bits=2.4e5) == pytest.approx([0.002, 0.003, 0.0035, 0.006])
    assert not runtime.sent_bits.flags.writeable


# --- Pareto front ----------------------------------------------------------------------------------------------

def test_pareto_front_by_hand() -> None:
    # (cost J, delay s): input (0.01, 0.0204) is beaten by L1 (0.003, 0.0053) in both; L1, L2 (0.0035, 0.0031),
    # L3 (0.006, 0.003) each trade energy for delay
    assert pareto_front(partition(four_points(), Channel(60e6, 0.5))) == [1, 2, 3]
    # with 10 ms of cloud time after L2 its delay is 2 + 1 + 10 = 13 ms > L1's 5.3 ms at more energy: dominated
    assert pareto_front(partition(four_points(l2_cloud_s=0.01), Channel(60e6, 0.5))) == [1, 3]


# --- sweeps and Table IV ---------------------------------------------------------------------------------------

def test_sweep_channels_matches_partition_cell_by_cell() -> None:
    points = four_points()
    rates, powers = [1e6, 60e6, 1e9], [0.5, 1.3]
    sweep = sweep_channels(points, rates, powers)
    assert sweep.best_name[0] == ("L3", "L1", "input")  # 0.5 W: the three hand-computed cases above
    assert sweep.savings_vs_fcc[0] == pytest.approx((0.99, 0.7, 0.0))
    assert sweep.savings_vs_fisc[0] == pytest.approx((0.0, 0.5, 0.9))
    for p, power in enumerate(powers):
        for b, rate in enumerate(rates):
            result = partition(points, Channel(rate, power))
            assert sweep.best[p][b] == result.best
            assert sweep.energy_cost_j[p][b] == pytest.approx(result.energy_cost_j[result.best])
            assert sweep.savings_vs_fcc[p][b] == pytest.approx(result.savings_vs_fcc)
            assert sweep.savings_vs_fisc[p][b] == pytest.approx(result.savings_vs_fisc)
            assert sweep.delay_s[p][b] == pytest.approx(result.delay_s[result.best])
    assert sweep.fcc_delay_s == pytest.approx((1.2004, 0.0204, 0.0016))  # 1.2e6 / rate + 0.4 ms
    assert sweep.fisc_delay_s == pytest.approx((0.003,) * 3)
    assert json.loads(json.dumps(sweep.to_dict()))["best"][0] == ["L3", "L1", "input"]


def test_quartile_table_by_hand() -> None:
    # input bits proportional to the nonzero fraction, 2.4e6 * (1 - s); 60 Mbit/s, 0.5 W
    def points_for(s: float) -> list[SplitPoint]:
        return four_points(input_bits=2.4e6 * (1 - s))

    rows = quartile_table(points_for, [0.5, 0.9], Channel(60e6, 0.5))
    # s = 0.5: 1.2e6 bits, the hand case above: L1, 70% vs FCC, 50% vs FISC
    assert (rows[0].best_name, rows[0].best_index) == ("L1", 1)
    assert (rows[0].savings_vs_fcc, rows[0].savings_vs_fisc) == pytest.approx((0.7, 0.5))
    assert rows[0].fcc_energy_j == pytest.approx(0.01) and rows[0].fisc_energy_j == pytest.approx(0.006)
    # s = 0.9: 2.4e5 bits cost 0.002 J < 0.003 J, so FCC; it saves 1 - 0.002/0.006 = 2/3 against FISC
    assert rows[1].best_name == "input" and rows[1].savings_vs_fcc == 0.0
    assert rows[1].savings_vs_fisc == pytest.approx(2 / 3)
    assert NEUPART_INPUT_SPARSITIES == (0.5199, 0.6080, 0.6909)
    assert len(quartile_table(points_for, NEUPART_INPUT_SPARSITIES, Channel(60e6, 0.5))) == 3


# --- bad inputs ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("make", "match"), [
    (lambda: Channel(0, 0.5), r"bitrate_bps.*bit rate must be .*> 0 bit/s, got 0"),
    (lambda: Channel(math.inf, 0.5), r"bitrate_bps"),
    (lambda: Channel(60e6, -0.5), r"tx_power_w.*got -0\.5"),
    (lambda: rlc_bits(1000, 1.0, 3), r"sparsity.*got 1\.0"),
    (lambda: rlc_bits(1000, -0.1, 3), r"sparsity.*got -0\.1"),
    (lambda: rlc_bits(-1, 0.5, 3), r"values"),
    (lambda: rlc_bits(1000, 0.5, 0), r"rlc_factor.*got 0"),
    (lambda: jpeg_bits(0), r"size_bytes"),
    (lambda: parse_bitrate("fast"), r"bitrate.*'fast'"),
    (lambda: parse_bitrate("60MB/s"), r"bitrate.*bytes"),
    (lambda: parse_bitrate("0Mbps"), r"bitrate.*> 0"),
    (lambda: parse_power("-1W"), r"power.*> 0"),
    (lambda: parse_power("1 horsepower"), r"power.*unknown unit"),
    (lambda: SplitPoint("C1", -1e-3), r"client_energy_j of split point 'C1'"),
    (lambda: SplitPoint("C1", 1e-3, sent_bits=math.nan), r"sent_bits of split point 'C1'"),
    (lambda: partition([SplitPoint("input", 0.0)], Channel(1e6, 1)), r"points: need at least 2"),
    (lambda: partition([SplitPoint("a", 0.0), SplitPoint("a", 1.0)], Channel(1e6, 1)), r"'a' appears twice"),
    (lambda: partition([SplitPoint("input", 0.0), SplitPoint("C1", 2e-3), SplitPoint("C2", 1e-3)], Channel(1e6, 1)),
     r"client_energy_j of split point 'C2'.*must not decrease"),
    (lambda: RuntimePartitioner(["input", "C1"], [0.0, 1.0], [1.0]), r"one entry per split point"),
    (lambda: RuntimePartitioner.from_points(four_points()).decide(Channel(1e6, 1), input_bits=-1), r"input_bits"),
    (lambda: sweep_channels(four_points(), [], [0.5]), r"bitrates_bps"),
    (lambda: sweep_channels(four_points(), [1e6], [0.0]), r"tx_power_w"),
    (lambda: quartile_table(four_points, [1.5], Channel(1e6, 1)), r"input_sparsities"),
])
def test_bad_inputs_name_the_parameter(make, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PartitionInputError, match=match):
        make()
    assert issubclass(PartitionInputError, NnperfError)


# --- reports ---------------------------------------------------------------------------------------------------

def test_partition_table_marks_the_optimum() -> None:
    console = Console(record=True, width=200)
    console.print(partition_table(partition(four_points(), Channel(60e6, 0.5)), "tiny"))
    console.print(quartile_rich_table(quartile_table(four_points, [0.5], Channel(60e6, 0.5)), "Table IV"))
    text = console.export_text()
    optimum_row = next(line for line in text.splitlines() if "<- optimum" in line)
    assert "L1" in optimum_row and "3 " in optimum_row  # energy cost 3 mJ
    assert "saves 70.0% against FCC (input) and 50.0% against FISC (L3)" in text
    assert "60 Mbit/s, 0.5 W" in text and "70.0%" in text


def test_plots_write_png_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = partition(four_points(), Channel(60e6, 0.5))
    sweep = sweep_channels(four_points(), np.geomspace(1e6, 1e9, 12).tolist(), [0.5, 1.3])
    written = [plot_energy_cost(result, tmp_path / "fig10.png"), plot_savings(sweep, tmp_path / "fig12.png"),
               plot_delay(sweep, tmp_path / "fig13a.png"), plot_pareto(result, tmp_path / "sub" / "pareto.png")]
    for path in written:
        assert path.is_file() and path.read_bytes()[:8] == PNG_SIGNATURE
    assert written[-1] == tmp_path / "sub" / "pareto.png"
