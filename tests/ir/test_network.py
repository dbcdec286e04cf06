"""The IR's structure, its checks and its versioned JSON form."""

from __future__ import annotations

import json

import pytest

from nnperf.errors import FormatVersionError, InvalidNetworkError, ModelFileError
from nnperf.ir import (
    AxisAttrs,
    ConvAttrs,
    Layer,
    Network,
    OpType,
    PoolAttrs,
    TensorSpec,
    load_network_json,
    network_from_dict,
    network_to_dict,
    remove_noops,
    save_network,
)


def branching() -> Network:
    """x -> conv -> (relu_a, relu_b) -> add -> drop -> gap"""
    return Network(
        "branch",
        (TensorSpec("x", (1, 3, 8, 8)),),
        (
            Layer("conv", OpType.CONV, ("x",), ((1, 3, 8, 8),), (1, 4, 4, 4),
                  ConvAttrs(kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1))),
            Layer("relu_a", OpType.RELU, ("conv",), ((1, 4, 4, 4),), (1, 4, 4, 4)),
            Layer("relu_b", OpType.RELU, ("conv",), ((1, 4, 4, 4),), (1, 4, 4, 4)),
            Layer("add", OpType.ADD, ("relu_a", "relu_b"), ((1, 4, 4, 4),) * 2, (1, 4, 4, 4)),
            Layer("drop", OpType.DROPOUT, ("add",), ((1, 4, 4, 4),), (1, 4, 4, 4)),
            Layer("pool", OpType.MAX_POOL, ("drop",), ((1, 4, 4, 4),), (1, 4, 2, 2),
                  PoolAttrs(kernel=(2, 2), stride=(2, 2))),
        ),
        ("pool",),
    )


def test_producers_and_consumers():
    net = branching()
    assert net.producers("add") == ("relu_a", "relu_b")
    assert net.consumers("conv") == ("relu_a", "relu_b")
    assert net.consumers("x") == ("conv",)
    assert net.consumers("pool") == ()
    assert [layer.name for layer in net] == ["conv", "relu_a", "relu_b", "add", "drop", "pool"]
    assert net.op_counts()[OpType.RELU] == 2
    with pytest.raises(KeyError, match="no layer 'nope'"):
        net.layer("nope")


def test_remove_noops_rewires_readers():
    net = remove_noops(branching())
    assert "drop" not in [layer.name for layer in net]
    assert net.producers("pool") == ("add",)
    assert net.consumers("add") == ("pool",)


@pytest.mark.parametrize("bad", [(1, 0, 8, 8), (1, -3, 8, 8)])
def test_zero_or_negative_dimension_is_refused(bad):
    with pytest.raises(InvalidNetworkError, match="positive"):
        TensorSpec("x", bad)
    with pytest.raises(InvalidNetworkError, match="layer 'r'.*positive"):
        Layer("r", OpType.RELU, ("x",), (bad,), bad)


def test_dangling_producer_and_order():
    layers = list(branching().layers)
    with pytest.raises(InvalidNetworkError, match="reads 'ghost'"):
        Network("n", (TensorSpec("x", (1, 3, 8, 8)),),
                (Layer("r", OpType.RELU, ("ghost",), ((1, 3, 8, 8),), (1, 3, 8, 8)),), ("r",))
    with pytest.raises(InvalidNetworkError, match="topological"):
        Network("n", (TensorSpec("x", (1, 3, 8, 8)),), (layers[1], layers[0]), ("relu_a",))


def test_duplicate_names_and_unknown_output():
    conv = branching().layers[0]
    with pytest.raises(InvalidNetworkError, match="duplicate name 'conv'"):
        Network("n", (TensorSpec("x", (1, 3, 8, 8)),), (conv, conv), ("conv",))
    with pytest.raises(InvalidNetworkError, match="output 'y'"):
        Network("n", (TensorSpec("x", (1, 3, 8, 8)),), (conv,), ("y",))


def test_shape_mismatch_between_layers():
    with pytest.raises(InvalidNetworkError, match="expects 'x' of shape 1x3x9x9"):
        Network("n", (TensorSpec("x", (1, 3, 8, 8)),),
                (Layer("r", OpType.RELU, ("x",), ((1, 3, 9, 9),), (1, 3, 9, 9)),), ("r",))


def test_output_shape_must_follow_from_attributes():
    with pytest.raises(InvalidNetworkError, match="spatial output should be 8x8"):
        Layer("c", OpType.CONV, ("x",), ((1, 3, 8, 8),), (1, 4, 7, 7), ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))
    with pytest.raises(InvalidNetworkError, match="groups=2"):
        Layer("c", OpType.CONV, ("x",), ((1, 3, 8, 8),), (1, 4, 8, 8), ConvAttrs(kernel=(1, 1), groups=2))
    with pytest.raises(InvalidNetworkError, match="keep the channel count"):
        Layer("p", OpType.MAX_POOL, ("x",), ((1, 3, 8, 8),), (1, 4, 4, 4), PoolAttrs(kernel=(2, 2), stride=(2, 2)))
    with pytest.raises(InvalidNetworkError, match="keep the input shape"):
        Layer("r", OpType.RELU, ("x",), ((1, 3, 8, 8),), (1, 3, 8, 4))
    with pytest.raises(InvalidNetworkError, match="do not broadcast"):
        Layer("a", OpType.ADD, ("x", "y"), ((1, 3, 8, 8), (1, 2, 8, 8)), (1, 3, 8, 8))
    with pytest.raises(InvalidNetworkError, match="add up"):
        Layer("c", OpType.CONCAT, ("x", "y"), ((1, 3, 8, 8), (1, 2, 8, 8)), (1, 6, 8, 8), AxisAttrs(axis=1))
    with pytest.raises(InvalidNetworkError, match="number of elements"):
        Layer("f", OpType.FLATTEN, ("x",), ((1, 3, 8, 8),), (1, 100), AxisAttrs(axis=1))


def test_ceil_mode_pool_shape():
    # 56 -> 3x3 stride 2 ceil: ceil((56-3)/2)+1 = 28; floor would give 27
    Layer("p", OpType.MAX_POOL, ("x",), ((1, 8, 56, 56),), (1, 8, 28, 28),
          PoolAttrs(kernel=(3, 3), stride=(2, 2), ceil_mode=True))
    with pytest.raises(InvalidNetworkError):
        Layer("p", OpType.MAX_POOL, ("x",), ((1, 8, 56, 56),), (1, 8, 28, 28), PoolAttrs(kernel=(3, 3), stride=(2, 2)))


def test_wrong_attributes_are_refused():
    with pytest.raises(InvalidNetworkError, match="must be ConvAttrs"):
        Layer("c", OpType.CONV, ("x",), ((1, 3, 8, 8),), (1, 3, 8, 8), PoolAttrs(kernel=(1, 1), stride=(1, 1)))
    with pytest.raises(InvalidNetworkError, match="needs ConvAttrs"):
        Layer("c", OpType.CONV, ("x",), ((1, 3, 8, 8),), (1, 3, 8, 8))


def test_json_round_trip(tmp_path):
    net = branching()
    path = tmp_path / "net.json"
    save_network(net, path)
    data = json.loads(path.read_text())
    assert (data["format"], data["version"]) == ("nnperf-network", 1)
    assert load_network_json(path) == net


def test_json_newer_version_and_wrong_format_are_refused(tmp_path):
    data = network_to_dict(branching())
    with pytest.raises(FormatVersionError, match="version 99"):
        network_from_dict({**data, "version": 99}, source="x.json")
    with pytest.raises(ModelFileError, match="not an nnperf network"):
        network_from_dict({"layers": []}, source="x.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(ModelFileError, match="bad.json"):
        load_network_json(bad)
    with pytest.raises(ModelFileError, match="no such file"):
        load_network_json(tmp_path / "missing.json")


def test_json_with_zero_dimension_names_the_layer():
    data = network_to_dict(branching())
    data["layers"][1]["output_shape"] = [1, 0, 4, 4]
    with pytest.raises(InvalidNetworkError, match="relu_a.*positive"):
        network_from_dict(data, source="x.json")


# activations and data movement
def test_json_round_trip_of_the_newer_ops_attributes(tmp_path):
    from nnperf.ir import ClipAttrs, GatherAttrs, TensorSpec, TransposeAttrs

    layers = (
        Layer("clip", OpType.CLIP, ("x",), ((1, 3, 4, 5),), (1, 3, 4, 5), ClipAttrs(high=2.5)),
        Layer("gather", OpType.GATHER, ("clip",), ((1, 3, 4, 5),), (1, 4, 4, 5), GatherAttrs(1, (2, 0, 0, 1))),
        Layer("transpose", OpType.TRANSPOSE, ("gather",), ((1, 4, 4, 5),), (1, 5, 4, 4), TransposeAttrs((0, 3, 1, 2))),
    )
    net = Network("n", (TensorSpec("x", (1, 3, 4, 5)),), layers, ("transpose",))
    save_network(net, tmp_path / "net.json")
    assert load_network_json(tmp_path / "net.json") == net  # the open bound is written as -Infinity
