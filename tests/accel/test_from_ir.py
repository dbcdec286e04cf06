"""Accelerator rows from IR networks, and the sparsity of every tensor (nnperf.accel._from_ir, _measure_sparsity).

Every expected value is written as the arithmetic that produces it. A row's s_if is its input's zeros in
the padded volume: (s * h*h + (H*H - h*h)) / (H*H) with h the unpadded and H = h + 2p the padded size.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nnperf.accel import (
    AccelLayer,
    AccelMappingError,
    chain_end,
    energy_layers,
    image_files,
    map_network,
    measure_sparsity,
    propagate,
    read_sparsity,
    reference_network,
    sample_images,
    table_sparsity,
)
from nnperf.accel._measure_sparsity import load_image
from nnperf.api import load_model
from nnperf.ir import (
    AxisAttrs,
    BatchNormAttrs,
    ConvAttrs,
    Layer,
    LinearAttrs,
    Network,
    OpType,
    PoolAttrs,
    ScaleAttrs,
    TensorSpec,
)
from nnperf.ir.metrics import layer_metrics


def small_network(channels: int = 3) -> Network:
    """x 1x3x8x8 -> conv1 3->4 k3 p1 -> relu1 -> pool 2 -> conv2 4->8 k3 p1 groups=2 -> relu2 -> flatten -> fc 128->10."""
    x, c1, p, c2 = (1, channels, 8, 8), (1, 4, 8, 8), (1, 4, 4, 4), (1, 8, 4, 4)
    return Network("small", (TensorSpec("x", x),), (
        Layer("conv1", OpType.CONV, ("x",), (x,), c1, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("relu1", OpType.RELU, ("conv1",), (c1,), c1),
        Layer("pool", OpType.MAX_POOL, ("relu1",), (c1,), p, PoolAttrs((2, 2), (2, 2))),
        Layer("conv2", OpType.CONV, ("pool",), (p,), c2, ConvAttrs((3, 3), padding=(1,) * 4, groups=2)),
        Layer("relu2", OpType.RELU, ("conv2",), (c2,), c2),
        Layer("flatten", OpType.FLATTEN, ("relu2",), (c2,), (1, 128), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 128),), (1, 10), LinearAttrs()),
    ), ("fc",))


@pytest.fixture(scope="module")
def alexnet() -> Network:
    return load_model("alexnet")


# --- 1. map_network on the zoo AlexNet -------------------------------------------------------------------------


def test_alexnet_rows_geometry_and_macs(alexnet: Network) -> None:
    sparsity = {name: 0.5 for name in propagate(alexnet, {}, 0.0)}
    mapping = map_network(alexnet, sparsity)
    rows = {row.name: row for row in mapping.rows}
    assert len(mapping.rows) == 8
    assert mapping.sources == ("features.0", "features.3", "features.6", "features.8", "features.10",
                               "classifier.1", "classifier.4", "classifier.6")
    # each conv/linear writes back its ReLU; FC8 has none after it
    assert mapping.written == ("features.1", "features.4", "features.7", "features.9", "features.11",
                               "classifier.2", "classifier.5", "classifier.6")

    def geometry(row: AccelLayer) -> tuple[int, ...]:
        return (row.filter_size, row.filters, row.ifmap_size, row.channels, row.stride, row.ofmap_size, row.groups)

    #                                          R    M    H    C  U   E groups
    assert geometry(rows["features.0"]) == (11, 64, 224 + 2 + 2, 3, 4, 55, 1)
    assert geometry(rows["features.3"]) == (5, 192, 27 + 2 + 2, 64, 1, 27, 1)
    assert geometry(rows["features.6"]) == (3, 384, 13 + 1 + 1, 192, 1, 13, 1)
    assert geometry(rows["features.8"]) == (3, 256, 15, 384, 1, 13, 1)
    assert geometry(rows["features.10"]) == (3, 256, 15, 256, 1, 13, 1)
    # FC6 is a 6x6 conv over the flattened 256x6x6 map; FC7 and FC8 are 1x1 convs
    assert geometry(rows["classifier.1"]) == (6, 4096, 6, 256, 1, 1, 1)
    assert geometry(rows["classifier.4"]) == (1, 4096, 1, 4096, 1, 1, 1)
    assert geometry(rows["classifier.6"]) == (1, 1000, 1, 4096, 1, 1, 1)

    # uniform s = 0.5: conv1 pads 224 -> 228, so s_if = (0.5*224^2 + (228^2 - 224^2)) / 228^2
    #   = (25088 + 1808) / 51984 = 26896 / 51984
    assert rows["features.0"].ifmap_sparsity == pytest.approx(26896 / 51984, rel=1e-12)
    # conv2: (0.5*27^2 + (31^2 - 27^2)) / 31^2 = (364.5 + 232) / 961
    assert rows["features.3"].ifmap_sparsity == pytest.approx(596.5 / 961, rel=1e-12)
    # FC layers have no padding: s_if = s
    assert rows["classifier.1"].ifmap_sparsity == pytest.approx(0.5)
    assert all(row.ofmap_sparsity == 0.5 for row in mapping.rows)

    # MACs R^2 C E^2 M:
    #   conv1 121*3*3025*64 = 70,276,800      conv2 25*64*729*192 = 223,948,800
    #   conv3 9*192*169*384 = 112,140,288     conv4 9*384*169*256 = 149,520,384
    #   conv5 9*256*169*256 = 99,680,256      FC6 36*256*4096 = 37,748,736
    #   FC7 4096*4096 = 16,777,216            FC8 4096*1000 = 4,096,000
    #   total 714,188,480 (about 0.714 GMACs)
    total = sum(row.macs for row in mapping.rows)
    assert total == 714_188_480
    # the IR counts a conv's bias add as one MAC per output (linear biases are not counted):
    #   64*55^2 + 192*27^2 + 384*13^2 + 256*13^2 + 256*13^2 = 193,600 + 139,968 + 64,896 + 43,264 + 43,264 = 484,992
    ir_macs = sum(layer_metrics(layer).macs for layer in energy_layers(alexnet))
    bias = sum(layer.output_shape[1] * layer.output_shape[2] * layer.output_shape[3]
               for layer in energy_layers(alexnet) if layer.op is OpType.CONV)
    assert bias == 484_992
    assert total == ir_macs - bias


# --- 2. padded sparsity and chain ends on a small hand-built network -------------------------------------------


def test_small_network_rows_use_padded_input_and_chain_end_sparsity() -> None:
    net = small_network()
    sparsity = {"x": 0.1, "conv1": 0.0, "relu1": 0.6, "pool": 0.7, "conv2": 0.0, "relu2": 0.55,
                "flatten": 0.4, "fc": 0.0}
    mapping = map_network(net, sparsity)
    conv1, conv2, fc = mapping.rows
    assert mapping.written == ("relu1", "relu2", "fc")

    # conv1: h = 8, p = 1, H = 10: s_if = (0.1*64 + (100 - 64)) / 100 = 42.4 / 100
    assert (conv1.filter_size, conv1.filters, conv1.ifmap_size, conv1.channels, conv1.stride, conv1.ofmap_size,
            conv1.groups) == (3, 4, 10, 3, 1, 8, 1)
    assert conv1.ifmap_sparsity == pytest.approx(0.424, rel=1e-12)
    assert conv1.ofmap_sparsity == 0.6  # relu1, not conv1's 0.0
    # conv2 (groups=2): C = 4/2 = 2; h = 4, H = 6: s_if = (0.7*16 + (36 - 16)) / 36 = 31.2 / 36
    assert (conv2.filter_size, conv2.filters, conv2.ifmap_size, conv2.channels, conv2.stride, conv2.ofmap_size,
            conv2.groups) == (3, 8, 6, 2, 1, 4, 2)
    assert conv2.ifmap_sparsity == pytest.approx(31.2 / 36, rel=1e-12)
    assert conv2.ofmap_sparsity == 0.55
    # fc: a 4x4 conv over the 8x4x4 map it flattens, no padding: s_if = s(flatten) = 0.4
    assert (fc.filter_size, fc.filters, fc.ifmap_size, fc.channels, fc.stride, fc.ofmap_size, fc.groups) == \
        (4, 10, 4, 8, 1, 1, 1)
    assert fc.ifmap_sparsity == pytest.approx(0.4, rel=1e-12)
    assert fc.ofmap_sparsity == 0.0
    # MACs: conv1 9*3*64*4 = 6912; conv2 9*2*16*8 = 2304 (exact for the grouped conv); fc 16*8*1*10 = 1280
    assert [row.macs for row in mapping.rows] == [6912, 2304, 1280]
    # ifmap values over all groups: conv2 6*6*2*2 = 144
    assert conv2.ifmap_values == 144


def test_linear_after_global_pool_is_a_1x1_row() -> None:
    from networks import tiny_network

    net = tiny_network()
    mapping = map_network(net, propagate(net, {}, 0.0))
    fc = mapping.rows[-1]
    # gap 1x16x1x1 -> flatten -> fc 16 -> 10: R = H = 1, C = 16
    assert (fc.filter_size, fc.filters, fc.ifmap_size, fc.channels, fc.ofmap_size) == (1, 10, 1, 16, 1)
    # depthwise conv 8 -> 8 groups=8: C = 1 per group, groups = 8
    dw = mapping.rows[mapping.sources.index("dw")]
    assert (dw.channels, dw.groups, dw.filters, dw.ifmap_size) == (1, 8, 8, 10)


# --- 3. chain_end ----------------------------------------------------------------------------------------------


def test_chain_end_follows_bn_scale_relu() -> None:
    a = (1, 4, 8, 8)
    net = Network("chain", (TensorSpec("x", (1, 3, 8, 8)),), (
        Layer("conv", OpType.CONV, ("x",), ((1, 3, 8, 8),), a, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("bn", OpType.BATCH_NORM, ("conv",), (a,), a, BatchNormAttrs()),
        Layer("scale", OpType.SCALE, ("bn",), (a,), a, ScaleAttrs()),
        Layer("relu", OpType.RELU, ("scale",), (a,), a),
        Layer("pool", OpType.MAX_POOL, ("relu",), (a,), (1, 4, 4, 4), PoolAttrs((2, 2), (2, 2))),
    ), ("pool",))
    assert chain_end(net, "conv") == "relu"  # pooling is not part of the chain


def test_chain_end_stops_at_a_layer_with_two_consumers() -> None:
    a = (1, 4, 8, 8)
    net = Network("fork", (TensorSpec("x", (1, 3, 8, 8)),), (
        Layer("conv", OpType.CONV, ("x",), ((1, 3, 8, 8),), a, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("bn", OpType.BATCH_NORM, ("conv",), (a,), a, BatchNormAttrs()),
        Layer("relu", OpType.RELU, ("bn",), (a,), a),
        Layer("add", OpType.ADD, ("bn", "relu"), (a, a), a),
    ), ("add",))
    # bn feeds both relu and add: the chain ends at bn
    assert chain_end(net, "conv") == "bn"


def test_chain_end_on_the_shared_tiny_network() -> None:
    from networks import tiny_network

    net = tiny_network()
    assert chain_end(net, "conv1") == "relu1"  # conv1 -> bn1 -> relu1 (relu1 has two consumers but is included)
    assert chain_end(net, "conv2") == "conv2"  # its consumer is an add
    assert chain_end(net, "fc") == "fc"  # softmax is not an activation the accelerator applies


# --- 4. propagate ----------------------------------------------------------------------------------------------


def concat_network() -> Network:
    """x 1x2x4x4 -> a (conv 2->2) / b (conv 2->6) -> relus -> concat 1x8x4x4 -> pool -> flatten -> fc."""
    x, a, b, c = (1, 2, 4, 4), (1, 2, 4, 4), (1, 6, 4, 4), (1, 8, 4, 4)
    return Network("cat", (TensorSpec("x", x),), (
        Layer("a", OpType.CONV, ("x",), (x,), a, ConvAttrs((1, 1))),
        Layer("ra", OpType.RELU, ("a",), (a,), a),
        Layer("b", OpType.CONV, ("x",), (x,), b, ConvAttrs((1, 1))),
        Layer("rb", OpType.RELU, ("b",), (b,), b),
        Layer("cat", OpType.CONCAT, ("ra", "rb"), (a, b), c, AxisAttrs(1)),
        Layer("pool", OpType.MAX_POOL, ("cat",), (c,), (1, 8, 2, 2), PoolAttrs((2, 2), (2, 2))),
        Layer("flatten", OpType.FLATTEN, ("pool",), ((1, 8, 2, 2),), (1, 32), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 32),), (1, 5), LinearAttrs()),
    ), ("fc",))


def test_propagate_concat_weights_by_size_and_pool_flatten_pass_through() -> None:
    out = propagate(concat_network(), {"ra": 0.5, "rb": 0.25}, input_sparsity=0.1)
    assert out["x"] == 0.1
    assert out["a"] == 0.0 and out["b"] == 0.0 and out["fc"] == 0.0  # conv/linear outputs not given are dense
    assert out["ra"] == 0.5 and out["rb"] == 0.25
    # sizes 2*16 = 32 and 6*16 = 96: (32*0.5 + 96*0.25) / 128 = (16 + 24) / 128 = 0.3125
    assert out["cat"] == pytest.approx(0.3125, rel=1e-15)
    assert out["pool"] == pytest.approx(0.3125, rel=1e-15)
    assert out["flatten"] == pytest.approx(0.3125, rel=1e-15)
    assert set(out) == {"x", "a", "ra", "b", "rb", "cat", "pool", "flatten", "fc"}


def test_propagate_fills_gaps_and_respects_given_values() -> None:
    out = propagate(small_network(), {"x": 0.3, "conv1": 0.2, "relu2": 0.75}, input_sparsity=0.1)
    assert out["x"] == 0.3  # a given input wins over input_sparsity
    assert out["conv1"] == 0.2  # a given conv output is kept
    assert out["relu1"] == 0.2 and out["pool"] == 0.2  # activations and pooling take their input's
    assert out["conv2"] == 0.0
    assert out["relu2"] == 0.75 and out["flatten"] == 0.75
    assert out["fc"] == 0.0
    assert propagate(small_network(), {})["x"] == 0.0  # default input sparsity


# --- 5. table_sparsity -----------------------------------------------------------------------------------------


def test_table_sparsity_lends_the_reference_alexnet_values(alexnet: Network) -> None:
    table = reference_network("alexnet")
    sparsity = table_sparsity(alexnet, table)
    assert sparsity["features.1"] == 0.5102  # C1's s_of goes to the ReLU after conv1
    assert sparsity["features.0"] == 0.0  # the conv output itself is not given: dense
    # conv2 reads the maxpool output, 27x27 padded by 2 to 31 (the table's H = 31 too):
    #   unpadded zeros = (0.387*31^2 - (31^2 - 27^2)) / 27^2 = (371.907 - 232) / 729 = 139.907 / 729
    assert sparsity["features.2"] == pytest.approx(139.907 / 729, rel=1e-12)
    # the table's H of C1 is 227, the zoo's 228: 0.0001*228^2 zeros are fewer than the 1808 padding zeros -> 0
    assert sparsity["x"] == 0.0
    # FC7 reads FC6's ReLU: FC6's s_of
    assert sparsity["classifier.2"] == 0.8312
    mapping = map_network(alexnet, sparsity)
    assert mapping.rows[1].ifmap_sparsity == pytest.approx(0.387, abs=1e-9)
    assert [row.ofmap_sparsity for row in mapping.rows] == [row.ofmap_sparsity for row in table]
    # FC6 reads the flatten output, which takes C6's s_if directly (no padding)
    assert mapping.rows[5].ifmap_sparsity == pytest.approx(0.7113, abs=1e-12)


def test_table_sparsity_needs_one_row_per_layer(alexnet: Network) -> None:
    table = reference_network("alexnet")
    with pytest.raises(AccelMappingError, match="8 conv/linear layers but the table has 7 rows"):
        table_sparsity(alexnet, table[:7])
    with pytest.raises(AccelMappingError, match="rows"):
        table_sparsity(small_network(), table)


# --- 6. read_sparsity ------------------------------------------------------------------------------------------


def test_read_sparsity_good_file(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("tensor, sparsity\nx,0.05\n relu1 , 0.5\nrelu2,0.625\n", encoding="utf-8")
    out = read_sparsity(path, small_network())
    assert out["x"] == 0.05 and out["relu1"] == 0.5 and out["relu2"] == 0.625
    assert out["pool"] == 0.5 and out["flatten"] == 0.625  # filled by propagate
    assert out["conv1"] == 0.0 and out["conv2"] == 0.0 and out["fc"] == 0.0


@pytest.mark.parametrize(("text", "match"), [
    ("tensor,sparsity\nrelu1,0.5\nnosuch,0.2\n", r"row 3: 'nosuch' is not a tensor of small"),
    ("tensor,sparsity\nrelu1,abc\n", r"row 2, column sparsity: 'abc' is not a number"),
    ("tensor,sparsity\nrelu1,1.0\n", r"row 2: sparsity must be in \[0, 1\), got 1.0"),
    ("tensor,sparsity\nrelu1,-0.1\n", r"row 2: sparsity must be in \[0, 1\)"),
    ("tensor,sparsity\nrelu1,nan\n", r"row 2: sparsity must be in \[0, 1\)"),
    ("relu1,0.5\n", r"expected a header 'tensor,sparsity'"),
    ("", r"expected a header 'tensor,sparsity'"),
])
def test_read_sparsity_errors(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "s.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AccelMappingError, match=match):
        read_sparsity(path, small_network())


def test_read_sparsity_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AccelMappingError, match="cannot read the sparsity file"):
        read_sparsity(tmp_path / "absent.csv", small_network())


# --- 7. map_network errors -------------------------------------------------------------------------------------


def test_map_network_lists_every_unmappable_layer() -> None:
    sq, wide = (1, 3, 8, 8), (1, 3, 8, 6)
    net = Network("bad", (TensorSpec("x", sq), TensorSpec("y", wide)), (
        Layer("dil", OpType.CONV, ("x",), (sq,), (1, 4, 8, 8), ConvAttrs((3, 3), padding=(2,) * 4, dilation=(2, 2))),
        Layer("wide1", OpType.CONV, ("y",), (wide,), (1, 4, 8, 6), ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("wide2", OpType.CONV, ("y",), (wide,), (1, 4, 8, 6), ConvAttrs((3, 3), padding=(1,) * 4)),
    ), ("dil", "wide1", "wide2"))
    with pytest.raises(AccelMappingError) as info:
        map_network(net, propagate(net, {}))
    message = str(info.value)
    assert message.startswith("bad: cannot map onto the accelerator")
    assert "dilated convolutions are not modelled (dil)" in message
    assert "square maps, filters and strides only (wide1, wide2)" in message


def test_map_network_needs_a_conv_or_linear() -> None:
    a = (1, 3, 8, 8)
    net = Network("noconv", (TensorSpec("x", a),), (
        Layer("relu", OpType.RELU, ("x",), (a,), a),
        Layer("pool", OpType.MAX_POOL, ("relu",), (a,), (1, 3, 4, 4), PoolAttrs((2, 2), (2, 2))),
    ), ("pool",))
    with pytest.raises(AccelMappingError, match="no convolution or fully connected layer"):
        map_network(net, {"x": 0.0, "relu": 0.0, "pool": 0.0})


def test_map_network_missing_or_bad_sparsity() -> None:
    net = small_network()
    sparsity = propagate(net, {})
    del sparsity["relu1"], sparsity["flatten"]
    with pytest.raises(AccelMappingError, match=r"no sparsity for tensor\(s\) relu1 \(conv1\)"):
        map_network(net, sparsity)
    with pytest.raises(AccelMappingError, match=r"no sparsity for tensor\(s\) flatten \(fc\)"):
        map_network(net, sparsity)
    with pytest.raises(AccelMappingError, match=r"sparsity s_of must be in \[0, 1\), got 1.0 \(conv2\)"):
        map_network(net, {**propagate(net, {}), "relu2": 1.0})


# --- 8. measure_sparsity and images ----------------------------------------------------------------------------


@pytest.fixture
def png(tmp_path: Path) -> Path:
    import cv2

    path = tmp_path / "img.png"
    image = np.random.default_rng(1234).integers(0, 256, size=(32, 32, 3), dtype=np.uint8)
    assert cv2.imwrite(str(path), image)
    return path


def test_measure_sparsity_on_the_small_network(png: Path) -> None:
    net = small_network()
    calls: list[tuple[int, int]] = []
    out = measure_sparsity(net, [png], progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 1)]
    assert set(out) == {"x"} | {layer.name for layer in net.layers}
    assert 0.0 <= out["x"] < 0.05  # normalised pixels are almost never exactly zero
    assert out["conv1"] == 0.0 and out["conv2"] == 0.0 and out["fc"] == 0.0  # continuous pre-activations
    assert 0.0 < out["relu1"] < 1.0
    assert 0.0 < out["relu2"] < 1.0
    assert out["flatten"] == out["relu2"]  # flatten moves no value
    # deterministic: seeded weights, same image
    assert measure_sparsity(net, [png]) == out
    # the mean of two identical images is the value of one
    calls.clear()
    assert measure_sparsity(net, [png, png], progress=lambda d, t: calls.append((d, t))) == out
    assert calls == [(1, 2), (2, 2)]
    # the measured values map onto rows
    mapping = map_network(net, out)
    assert mapping.rows[0].ofmap_sparsity == out["relu1"]


def test_measure_sparsity_needs_a_three_channel_input(png: Path) -> None:
    with pytest.raises(AccelMappingError, match="one 3-channel NCHW input"):
        measure_sparsity(small_network(channels=1), [png])


def test_image_files_and_load_image(tmp_path: Path, png: Path) -> None:
    (tmp_path / "notes.txt").write_text("not an image", encoding="utf-8")
    assert image_files([tmp_path]) == [png]
    assert image_files([png]) == [png]
    with pytest.raises(AccelMappingError, match="no such image file or folder"):
        image_files([tmp_path / "missing"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(AccelMappingError, match="no images"):
        image_files([empty])
    with pytest.raises(AccelMappingError, match="not an image"):
        load_image(tmp_path / "notes.txt", 8, 8)
    x = load_image(png, 5, 7)
    assert x.shape == (1, 3, 5, 7) and x.dtype == np.float32


# --- 9. sample_images ------------------------------------------------------------------------------------------


def test_sample_images_ships_grace_hopper() -> None:
    images = sample_images()
    assert len(images) == 1
    assert images[0].name == "grace_hopper.jpg" and images[0].is_file()
    assert load_image(images[0], 16, 16).shape == (1, 3, 16, 16)


# --- resizing, normalisation and attention ---------------------------------------------------------


def test_conv_transpose_is_a_stride_1_row_over_the_zero_inserted_input() -> None:
    from nnperf.ir import ConvTransposeAttrs

    # 2x2/2 up-convolution 8 -> 4 on a 5x5 map: 10x10 output
    net = Network("up", (TensorSpec("x", (1, 8, 5, 5)),), (
        Layer("up", OpType.CONV_TRANSPOSE, ("x",), ((1, 8, 5, 5),), (1, 4, 10, 10),
              ConvTransposeAttrs(kernel=(2, 2), stride=(2, 2))),), ("up",))
    (row,) = map_network(net, {"x": 0.5, "up": 0.0}).rows
    # zero-inserted input (5-1)*2 + 1 = 9, padded by kernel - 1 - pad = 1 on each side: H = 11; U = 1; E = 11 - 2 + 1
    assert (row.filter_size, row.filters, row.ifmap_size, row.channels, row.stride, row.ofmap_size) == \
        (2, 4, 11, 8, 1, 10)
    # the 11*11 - 5*5 inserted and padding zeros count as sparsity, with half of the 25 real values
    assert row.ifmap_sparsity == pytest.approx((0.5 * 5 * 5 + (11 * 11 - 5 * 5)) / (11 * 11), rel=1e-12)


def test_conv_transpose_cropping_more_than_the_kernel_is_refused() -> None:
    from nnperf.ir import ConvTransposeAttrs

    # 3x3/2 with padding 3 > kernel - 1: (4-1)*2 - 6 + 2 + 1 = 3
    net = Network("crop", (TensorSpec("x", (1, 2, 4, 4)),), (
        Layer("up", OpType.CONV_TRANSPOSE, ("x",), ((1, 2, 4, 4),), (1, 2, 3, 3),
              ConvTransposeAttrs(kernel=(3, 3), stride=(2, 2), padding=(3, 3, 3, 3))),), ("up",))
    with pytest.raises(AccelMappingError, match="cropping more than kernel - 1"):
        map_network(net, {"x": 0.0, "up": 0.0})
