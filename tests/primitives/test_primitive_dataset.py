"""The dataset's configurations: from a network's convolutions, sampled around them, keyed, read back."""

from __future__ import annotations

import pytest

from networks import relu_network, tiny_network
from nnperf.ir import OpType
from nnperf.primitives import (
    IM_RANGE,
    MAX_CHANNELS,
    ConvConfig,
    ConvSample,
    PrimitiveDataset,
    PrimitiveError,
    TransformSample,
    config_from_dict,
    config_key,
    config_label,
    conv_configs,
    sample_configs,
)
from nnperf.zoo import zoo_network


def test_resnet18_has_eleven_distinct_convolutions_of_its_twenty() -> None:
    network = zoo_network("resnet18")
    assert sum(layer.op == OpType.CONV for layer in network.layers) == 20
    configs = conv_configs(network)
    assert len(configs) == 11  # the stem, 1 in stage 1, and 3 per later stage (strided 3x3, 3x3, 1x1 shortcut)
    assert configs[0] == ConvConfig.make(1, 3, 64, 224, 7, 2, 3)
    assert configs[1] == ConvConfig.make(1, 64, 64, 56, 3, 1, 1)
    assert ConvConfig.make(1, 256, 512, 14, 1, 2, 0) in configs


def test_a_depthwise_convolution_keeps_its_groups() -> None:
    configs = conv_configs(tiny_network())
    assert configs == [ConvConfig.make(1, 3, 8, 16, 3, 1, 1), ConvConfig.make(1, 8, 8, 16, 3, 1, 1),
                       ConvConfig.make(1, 8, 8, 8, 3, 1, 1, groups=8)]


def test_a_network_without_convolutions_is_a_clear_error() -> None:
    with pytest.raises(PrimitiveError, match="network 'mlp' has no 2-D convolution"):
        conv_configs(relu_network("mlp"))


def test_the_key_is_stable_and_the_label_readable() -> None:
    config = ConvConfig.make(1, 64, 128, 56, 3, 2, 1, groups=2)
    assert config_key(config) == config_key(ConvConfig.make(1, 64, 128, (56, 56), (3, 3), (2, 2), (1, 1, 1, 1), 2))
    assert config_key(config) != config_key(ConvConfig.make(1, 64, 128, 56, 3, 2, 1))
    assert len(config_key(config)) == 16
    assert config_label(config) == "c64 f128 56x56 k3x3 s2 p1 g2"
    assert config_label(ConvConfig.make(2, 3, 8, (20, 30), 3, 1, (0, 1, 1, 0), dilation=2)) == \
        "c3 f8 20x30 k3x3 s1 p0,1,1,0 d2x2 n2"


def test_a_configuration_survives_its_dictionary() -> None:
    config = ConvConfig.make(2, 6, 9, (20, 30), (3, 5), (1, 2), (0, 1, 2, 3), 3, (2, 1))
    assert config_from_dict(config.to_dict()) == config
    with pytest.raises(PrimitiveError, match="no 'groups'"):
        config_from_dict({k: v for k, v in config.to_dict().items() if k != "groups"})
    with pytest.raises(PrimitiveError, match="malformed"):
        config_from_dict({**config.to_dict(), "im": [20]})


def test_sampled_configurations_stay_in_range_keep_their_kind_and_repeat_with_the_seed() -> None:
    seeds = [ConvConfig.make(1, 64, 64, 56, 3, 1, 1), ConvConfig.make(1, 32, 32, 112, 3, 2, 1, groups=32),
             ConvConfig.make(1, 256, 1024, 14, 1, 1, 0)]
    sampled = sample_configs(seeds, 60, seed=3)
    assert len(sampled) == 60 and len(set(sampled)) == 60 and not set(sampled) & set(seeds)
    assert sampled == sample_configs(seeds, 60, seed=3) and sampled != sample_configs(seeds, 60, seed=4)
    for c in sampled:
        assert c.c <= MAX_CHANNELS and c.f <= MAX_CHANNELS and IM_RANGE[0] <= c.im[0] <= IM_RANGE[1]
        assert c.k in ((3, 3), (1, 1))
        if c.k == (1, 1):  # the 1x1 seed: dense, unpadded, stride 1
            assert (c.groups, c.padding, c.stride) == (1, (0, 0, 0, 0), (1, 1))
        elif c.groups > 1:  # the depthwise seed stays depthwise
            assert c.groups == c.c == c.f and c.stride == (2, 2)
        assert c.c <= 16 or c.c % 8 == 0
    with pytest.raises(PrimitiveError, match="at least one seed"):
        sample_configs([], 5)


def test_dataset_counts_are_table_2() -> None:
    a, b = ConvConfig.make(1, 8, 8, 8, 3, 1, 1), ConvConfig.make(1, 8, 8, 8, 1)
    dataset = PrimitiveDataset("k", ("direct", "winograd-2x3"), ("chw->hwc",),
                               (ConvSample(a, {"direct": 1e-3, "winograd-2x3": 5e-4}), ConvSample(b, {"direct": 2e-4})),
                               (TransformSample(1, 8, (8, 8), {"chw->hwc": 1e-5}),))
    assert dataset.counts() == {"direct": 2, "winograd-2x3": 1, "chw->hwc": 1}
    assert dataset.n_samples == 4


# ---------------------------------------------------------------------------------------------- the paper's grid
def test_grid_shapes_hold_table7_networks_and_leave_the_held_out_ones_out():
    from nnperf.primitives import grid_shapes

    shapes = grid_shapes()
    by_shape = {(s.c, s.f, s.im, s.groups): s.architectures for s in shapes}
    assert len(by_shape) == len(shapes) == 208
    # ResNet-18's stem (3 -> 64 at 224) and MobileNet's first depthwise layer (32 channels at 112)
    assert "resnet18" in by_shape[(3, 64, 224, 1)]
    assert by_shape[(32, 32, 112, 32)] == ("mobilenet_v1",)
    # Inception v3 runs at 299, the largest input of Table 1
    assert max(s.im for s in shapes) == 299
    names = {name for s in shapes for name in s.architectures}
    assert not {n for n in names if n.startswith(("densenet", "resnext"))}
    assert len(names) == 19


def test_paper_grid_combines_every_shape_with_table1_kernels_and_strides():
    from nnperf.primitives import GRID_KERNELS, GRID_STRIDES, grid_shapes, paper_grid

    grid = paper_grid(seed=None)
    possible = sum(1 for s in grid_shapes() for k in GRID_KERNELS for _ in GRID_STRIDES if k <= s.im)
    assert len(grid) == possible == 3510
    assert all(c.k[0] <= c.im[0] and c.padding == (c.k[0] // 2,) * 4 and c.batch == 1 for c in grid)
    assert {c.k[0] for c in grid} == {1, 3, 5, 7, 9, 11} and {c.stride[0] for c in grid} == {1, 2, 4}
    # a 7x7 input allows kernels up to 7 only: 4 kernels x 3 strides for each 7x7 shape
    sevens = [s for s in grid_shapes() if s.im == 7]
    assert sum(1 for c in grid if c.im[0] == 7) == 12 * len(sevens)


def test_paper_grid_order_is_a_seeded_permutation_and_max_macs_filters():
    from nnperf.primitives import paper_grid

    plain = paper_grid(seed=None)
    assert sorted(map(str, paper_grid(seed=0))) == sorted(map(str, plain))
    assert paper_grid(seed=0) == paper_grid(seed=0) != paper_grid(seed=1)
    small = paper_grid(max_macs=10**9, seed=None)
    assert small == [c for c in plain if c.macs <= 10**9] and len(small) < len(plain)
    with pytest.raises(PrimitiveError, match="max_macs must be positive"):
        paper_grid(max_macs=0)
