"""Split points from a CNNergy layer table and from an IR network (nnperf.optimize.partition._points).

Bits sent are RLC-coded: 64 bits per word, ``rlc_factor`` nonzeros per word (5 at 8 bits, 3 at 16), so a
tensor with NZ nonzeros costs 64 * NZ / rlc_factor bits. Every expected value is written as its arithmetic.
"""

from __future__ import annotations

import pytest

from nnperf.accel import AccelLayer, eyeriss_spec, network_energy
from nnperf.ir import AxisAttrs, ConvAttrs, Layer, LinearAttrs, Network, OpType, PoolAttrs, TensorSpec
from nnperf.optimize.partition import (
    InputCoding,
    PartitionInputError,
    SplitPoint,
    cloud_macs_per_s,
    network_points,
    table_points,
)

CLOUD = 92e12 / 2  # 92 TOPS at two operations per MAC
THROUGHPUT = 23.1e9  # the Eyeriss-like accelerator's MACs per second

# --- a hand-made three-row table -------------------------------------------------------------------------------
#
# A: conv 3x3, 3 -> 8 channels on a 10x10 padded input (8x8 with pad 1), E = 8; ofmap 8*8*8 = 512 values, half zero:
#    256 nonzeros -> 64*256/5 = 3276.8 bits.
# pooling 8x8 -> 4x4 leaves 4*4*8 = 128 values; say half of them zero: 64 nonzeros. B reads them padded to 6x6:
#    6*6*8 = 288 values of which 288 - 64 = 224 are zero: s_if = 224/288 -> 64*64/5 = 819.2 bits after the pool.
# B: conv 3x3, 8 -> 16, H = 6, E = 4; ofmap 4*4*16 = 256 values, a quarter zero: 192 nonzeros -> 2457.6 bits.
# C: FC over B's 4x4x16 map (R = H = 4, C = 16, M = 10); its input is B's ofmap unchanged: s_if = 0.25 -> 192 nonzeros.
# MACs R^2*C*E^2*M: A 9*3*64*8 = 13824, B 9*8*16*16 = 18432, C 16*16*1*10 = 2560; total 34816.

MACS_A, MACS_B, MACS_C = 13824, 18432, 2560
TOTAL_MACS = MACS_A + MACS_B + MACS_C


def three_rows(c_input_sparsity: float = 0.25) -> list[AccelLayer]:
    return [
        AccelLayer("A", 3, 8, 10, 3, 1, 8, 0.0, 0.5),
        AccelLayer("B", 3, 16, 6, 8, 1, 4, 224 / 288, 0.25),
        AccelLayer("C", 4, 10, 4, 16, 1, 1, c_input_sparsity, 0.0),
    ]


@pytest.fixture(scope="module")
def energy():  # type: ignore[no-untyped-def]
    return network_energy(three_rows(), eyeriss_spec(8))


def test_table_rows_are_what_the_comments_say() -> None:
    a, b, c = three_rows()
    assert [row.macs for row in (a, b, c)] == [MACS_A, MACS_B, MACS_C]
    assert a.ofmap_values == 512 and b.ifmap_values == 288 and b.ofmap_values == 256 and c.ifmap_values == 256
    assert eyeriss_spec(8).rlc_factor == 5 and eyeriss_spec(8).throughput_macs_per_s == THROUGHPUT


def test_table_points_both_by_hand(energy) -> None:  # type: ignore[no-untyped-def]
    points = table_points(energy, InputCoding(sparsity=0.4))
    # '+pool' only after A, where the pooled tensor has 64 nonzeros against the ofmap's 256; C reads B's ofmap as is
    assert [p.name for p in points] == ["input", "A", "A+pool", "B", "C"]
    # input: the first row's padded ifmap, 10*10*3 = 300 values, 40% zero -> 180 nonzeros -> 64*180/5 bits
    assert [p.sent_bits for p in points] == pytest.approx([64 * 180 / 5, 64 * 256 / 5, 64 * 64 / 5, 64 * 192 / 5, 0.0])
    assert [p.sent_bits for p in points][:4] == pytest.approx([2304.0, 3276.8, 819.2, 2457.6])

    e_a, e_b, e_c = (layer.energy_j for layer in energy.layers)
    assert e_a > 0 and e_b > 0 and e_c > 0
    assert [p.client_energy_j for p in points] == pytest.approx([0.0, e_a, e_a, e_a + e_b, e_a + e_b + e_c],
                                                                rel=1e-12)
    assert points[-1].client_energy_j == pytest.approx(energy.total_j, rel=1e-12)
    done = [0, MACS_A, MACS_A, MACS_A + MACS_B, TOTAL_MACS]
    assert [p.client_latency_s for p in points] == pytest.approx([m / THROUGHPUT for m in done], rel=1e-12)
    assert [p.cloud_latency_s for p in points] == pytest.approx([(TOTAL_MACS - m) / CLOUD for m in done], rel=1e-12)
    # the last point computes everything in situ: nothing left for the cloud, nothing sent
    assert points[-1].sent_bits == 0.0 and points[-1].cloud_latency_s == 0.0
    assert points[0].cloud_latency_s == pytest.approx(34816 / 46e12, rel=1e-12)


def test_table_points_ofmap_and_next_input(energy) -> None:  # type: ignore[no-untyped-def]
    ofmap = table_points(energy, InputCoding(sparsity=0.4), send="ofmap")
    assert [p.name for p in ofmap] == ["input", "A", "B", "C"]
    assert [p.sent_bits for p in ofmap] == pytest.approx([2304.0, 3276.8, 2457.6, 0.0])
    following = table_points(energy, InputCoding(sparsity=0.4), send="next-input")
    assert [p.name for p in following] == ["input", "A", "B", "C"]
    # A's point now sends what B reads (64 nonzeros after the pool); B's what C reads (192)
    assert [p.sent_bits for p in following] == pytest.approx([2304.0, 819.2, 2457.6, 0.0])
    # both variants cost the same on the client
    assert [p.client_energy_j for p in ofmap] == [p.client_energy_j for p in following]


@pytest.mark.parametrize(("factor", "pooled"), [(1.005, False), (1.015, True)])
def test_plus_pool_only_beyond_one_percent(factor: float, pooled: bool) -> None:
    # C's input holds 192*factor nonzeros of 256 values: 0.5% more than B's ofmap is the same tensor, 1.5% is not
    rows = three_rows(c_input_sparsity=1 - 192 * factor / 256)
    points = table_points(network_energy(rows, eyeriss_spec(8)), InputCoding(sparsity=0.4))
    names = [p.name for p in points]
    assert names == (["input", "A", "A+pool", "B", "B+pool", "C"] if pooled else ["input", "A", "A+pool", "B", "C"])
    if pooled:
        assert points[4].sent_bits == pytest.approx(64 * 192 * 1.015 / 5)  # 2494.464
        assert points[4].client_energy_j == points[3].client_energy_j


def test_table_points_input_values_and_cloud_rate(energy) -> None:  # type: ignore[no-untyped-def]
    points = table_points(energy, InputCoding(sparsity=0.4), "ofmap", cloud_rate_macs_per_s=1e6, input_values=1000)
    assert points[0].sent_bits == pytest.approx(64 * 1000 * 0.6 / 5)  # 7680
    assert points[0].cloud_latency_s == pytest.approx(34816 / 1e6)
    assert points[1].cloud_latency_s == pytest.approx((34816 - 13824) / 1e6)


def test_table_points_jpeg_input(energy) -> None:  # type: ignore[no-untyped-def]
    points = table_points(energy, InputCoding(jpeg_bytes=1500))
    assert points[0].sent_bits == 12000.0
    assert points[1].sent_bits == pytest.approx(3276.8)


def test_table_points_bad_send_mode(energy) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PartitionInputError, match="send must be one of both, ofmap, next-input, got 'pooled'"):
        table_points(energy, InputCoding(sparsity=0.4), send="pooled")


# --- InputCoding and the cloud's rate --------------------------------------------------------------------------


def test_input_coding_sparsity_and_jpeg() -> None:
    rlc = InputCoding(sparsity=0.608)
    # 227*227*3 = 154587 values, 39.2% nonzero, 5 per 64-bit word
    assert rlc.bits(154587, 5) == pytest.approx(64 * 154587 * 0.392 / 5)
    assert rlc.bits(154587, 5) == pytest.approx(775655.7312)
    assert rlc.bits(300, 3) == pytest.approx(64 * 300 * 0.392 / 3)
    assert rlc.label == "RLC-coded, input sparsity 60.80%"
    jpeg = InputCoding(jpeg_bytes=20000)
    assert jpeg.bits(154587, 5) == 160000.0  # 8 bits per byte whatever the image's size
    assert jpeg.bits(1, 3) == 160000.0
    assert jpeg.label == "JPEG of 20000 bytes"


def test_input_coding_needs_exactly_one() -> None:
    with pytest.raises(PartitionInputError, match="either a sparsity"):
        InputCoding()
    with pytest.raises(PartitionInputError, match="not both"):
        InputCoding(sparsity=0.5, jpeg_bytes=1000)
    with pytest.raises(PartitionInputError, match=r"sparsity: zero fraction must be in \[0, 1\)"):
        InputCoding(sparsity=1.0).bits(100, 3)
    with pytest.raises(PartitionInputError, match="size_bytes"):
        InputCoding(jpeg_bytes=0).bits(100, 3)


def test_cloud_macs_per_s() -> None:
    assert cloud_macs_per_s(92) == 46e12
    assert cloud_macs_per_s() == 46e12
    assert cloud_macs_per_s(1) == 0.5e12
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(PartitionInputError, match="cloud throughput must be > 0 TOPS"):
            cloud_macs_per_s(bad)


# --- network_points on hand-built IR networks ------------------------------------------------------------------


def chain_network() -> Network:
    """x 1x3x8x8 -> conv1 3->4 k3 p1 -> relu1 -> pool 2 -> conv2 4->8 k3 p1 -> relu2 -> flatten -> fc 128->10."""
    x, c1, p, c2 = (1, 3, 8, 8), (1, 4, 8, 8), (1, 4, 4, 4), (1, 8, 4, 4)
    return Network("chain", (TensorSpec("x", x),), (
        Layer("conv1", OpType.CONV, ("x",), (x,), c1, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("relu1", OpType.RELU, ("conv1",), (c1,), c1),
        Layer("pool", OpType.MAX_POOL, ("relu1",), (c1,), p, PoolAttrs((2, 2), (2, 2))),
        Layer("conv2", OpType.CONV, ("pool",), (p,), c2, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("relu2", OpType.RELU, ("conv2",), (c2,), c2),
        Layer("flatten", OpType.FLATTEN, ("relu2",), (c2,), (1, 128), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 128),), (1, 10), LinearAttrs()),
    ), ("fc",))


def residual_network() -> Network:
    """x -> conv_a -> relu_a -> conv_b -> relu_b -> add(relu_b, relu_a) -> flatten -> fc 256->10; maps 1x4x8x8."""
    x, a = (1, 3, 8, 8), (1, 4, 8, 8)
    return Network("residual", (TensorSpec("x", x),), (
        Layer("conv_a", OpType.CONV, ("x",), (x,), a, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("relu_a", OpType.RELU, ("conv_a",), (a,), a),
        Layer("conv_b", OpType.CONV, ("relu_a",), (a,), a, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("relu_b", OpType.RELU, ("conv_b",), (a,), a),
        Layer("add", OpType.ADD, ("relu_b", "relu_a"), (a, a), a),
        Layer("flatten", OpType.FLATTEN, ("add",), (a,), (1, 256), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 256),), (1, 10), LinearAttrs()),
    ), ("fc",))


def test_network_points_chain_by_hand() -> None:
    net = chain_network()
    sparsity = {"x": 0.1, "conv1": 0.0, "relu1": 0.5, "pool": 0.25, "conv2": 0.0, "relu2": 0.75, "flatten": 0.75,
                "fc": 0.0}
    energy = {"conv1": 3e-6, "conv2": 2e-6, "fc": 1e-6}
    latency = {"conv1": 3e-3, "conv2": 2e-3, "fc": 1e-3}
    points = network_points(net, energy, latency, sparsity, InputCoding(sparsity=0.5), 3, 1e9)
    # no split between a conv and its relu: conv1 and conv2 are not points
    assert [p.name for p in points] == ["input", "relu1", "pool", "relu2", "flatten", "fc"]
    # bits, 64 per 3 nonzeros: input 3*8*8 = 192 values at the coding's 0.5 -> 96; relu1 4*8*8 = 256 at 0.5 -> 128;
    # pool 4*4*4 = 64 at 0.25 -> 48; relu2 and flatten 8*4*4 = 128 at 0.75 -> 32; fc the last point: 0
    assert [p.sent_bits for p in points] == pytest.approx(
        [64 * 96 / 3, 64 * 128 / 3, 64 * 48 / 3, 64 * 32 / 3, 64 * 32 / 3, 0.0])
    assert [p.client_energy_j for p in points] == pytest.approx([0.0, 3e-6, 3e-6, 5e-6, 5e-6, 6e-6])
    assert [p.client_latency_s for p in points] == pytest.approx([0.0, 3e-3, 3e-3, 5e-3, 5e-3, 6e-3])
    # the IR's MACs count a conv's bias add: conv1 9*3*64*4 + 4*64 = 7168, conv2 9*4*16*8 + 8*16 = 4736, fc 128*10
    # = 1280; total 13184, at 1e9 MACs/s in the cloud
    assert [p.cloud_latency_s for p in points] == pytest.approx(
        [13184e-9, (13184 - 7168) * 1e-9, (13184 - 7168) * 1e-9, 1280e-9, 1280e-9, 0.0])


def test_network_points_residual_sends_every_live_tensor() -> None:
    net = residual_network()
    sparsity = {"x": 0.0, "conv_a": 0.0, "relu_a": 0.5, "conv_b": 0.0, "relu_b": 0.625, "add": 0.5, "flatten": 0.5,
                "fc": 0.0}
    points = network_points(net, {"conv_a": 1.0, "conv_b": 2.0, "fc": 4.0}, {}, sparsity, InputCoding(jpeg_bytes=100),
                            5)
    assert [p.name for p in points] == ["input", "relu_a", "relu_b", "add", "flatten", "fc"]
    # 12.8 bits per nonzero; relu_a 256 values at 0.5 -> 128 nonzeros; relu_b at 0.625 -> 96; add at 0.5 -> 128.
    # Inside the branch (after relu_b) both relu_b and relu_a, which the add still reads, must go: 128 + 96.
    assert [p.sent_bits for p in points] == pytest.approx([800.0, 128 * 12.8, (128 + 96) * 12.8, 128 * 12.8,
                                                           128 * 12.8, 0.0])
    assert points[2].sent_bits == pytest.approx(2867.2)
    assert [p.client_energy_j for p in points] == [0.0, 1.0, 3.0, 3.0, 3.0, 7.0]
    assert all(p.client_latency_s == 0.0 for p in points)  # no latencies given
    # default cloud: 46e12 MACs/s; conv MACs 9*3*64*4 + 256 = 7168 and 9*4*64*4 + 256 = 9472, fc 2560
    assert points[0].cloud_latency_s == pytest.approx((7168 + 9472 + 2560) / 46e12)
    assert points[2].cloud_latency_s == pytest.approx(2560 / 46e12)


def test_network_points_on_the_shared_tiny_network() -> None:
    from networks import tiny_network

    net = tiny_network()
    points = network_points(net, {}, {}, {"relu1": 0.5}, InputCoding(sparsity=0.0), 3)
    # conv1 -> bn1 -> relu1 is one chain; conv2 feeds the add (not an activation), so a split may follow it
    assert [p.name for p in points] == ["input", "relu1", "conv2", "add", "pool", "dw", "cat", "gap", "flatten", "fc",
                                        "softmax"]
    by_name = {p.name: p for p in points}
    # maps 8*16*16 = 2048 values, pooled 8*8*8 = 512; unknown tensors count as dense
    assert by_name["input"].sent_bits == pytest.approx(64 * 3 * 256 / 3)
    assert by_name["relu1"].sent_bits == pytest.approx(64 * 1024 / 3)
    assert by_name["conv2"].sent_bits == pytest.approx(64 * (2048 + 1024) / 3)  # conv2 and relu1 (the add reads both)
    assert by_name["dw"].sent_bits == pytest.approx(64 * (512 + 512) / 3)  # dw and pool (the concat reads both)
    assert by_name["fc"].sent_bits == pytest.approx(64 * 10 / 3)
    assert by_name["softmax"].sent_bits == 0.0
    assert all(p.client_energy_j == 0.0 for p in points)


def test_network_points_feed_partition_checks() -> None:
    # the points are valid SplitPoints (names unique, energy non-decreasing), as partition() requires
    from nnperf.optimize.partition import Channel, partition

    points = network_points(chain_network(), {"conv1": 3e-6, "conv2": 2e-6, "fc": 1e-6}, {}, {},
                            InputCoding(sparsity=0.5), 3)
    assert all(isinstance(p, SplitPoint) for p in points)
    result = partition(points, Channel(1e6, 1.0))
    # at 1 W and 1 Mbit/s a bit costs 1 uJ: input 64*96/3 = 2048 bits = 2.048 mJ; fc 6 uJ and nothing sent
    assert result.energy_cost_j[0] == pytest.approx(2.048e-3)
    assert result.best_point.name == "fc"
