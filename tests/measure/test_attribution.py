"""Framework profiler nodes mapped back to IR layers through fusions (ONNX Runtime and OpenCV naming)."""

from __future__ import annotations

from nnperf.ir import ConvAttrs, Layer, Network, OpType, PoolAttrs, TensorSpec
from nnperf.measure._attribution import attribute, match_node

S = (1, 4, 8, 8)


def conv(name: str, src: str) -> Layer:
    return Layer(name, OpType.CONV, (src,), (S,), S, ConvAttrs((3, 3), padding=(1,) * 4))


def unary(name: str, op: OpType, src: str) -> Layer:
    return Layer(name, op, (src,), (S,), S)


def residual_block() -> Network:
    """conv1 -> bn1 -> relu1 -> conv2 -> bn2 -> add(+relu1) -> relu2 -> pool."""
    return Network("block", (TensorSpec("x", S),), (
        conv("conv1", "x"), unary("bn1", OpType.BATCH_NORM, "conv1"), unary("relu1", OpType.RELU, "bn1"),
        conv("conv2", "relu1"), unary("bn2", OpType.BATCH_NORM, "conv2"),
        Layer("add", OpType.ADD, ("bn2", "relu1"), (S, S), S), unary("relu2", OpType.RELU, "add"),
        Layer("pool", OpType.MAX_POOL, ("relu2",), (S,), (1, 4, 4, 4), PoolAttrs((2, 2), (2, 2))),
    ), ("pool",))


def test_tail_named_fusions_like_onnx_runtime_nchwc() -> None:
    # ONNX Runtime names a fused NCHWc node after the tensor it outputs: 'relu1_nchwc' is conv1+bn1+relu1
    nodes = {"relu1_nchwc": "relu1", "bn2_nchwc": "bn2", "pool_nchwc": "pool", "ReorderOutput": None}
    groups = attribute(residual_block(), nodes)
    assert groups.owner == {"conv1": "conv1", "bn1": "conv1", "relu1": "conv1", "conv2": "conv2", "bn2": "conv2",
                            "add": "conv2", "relu2": "conv2", "pool": "pool"}
    assert groups.node_group == {"relu1_nchwc": "conv1", "bn2_nchwc": "conv2", "pool_nchwc": "pool"}
    assert groups.group_sizes == {"conv1": 3, "conv2": 4, "pool": 1}


def test_head_named_fusions_like_opencv() -> None:
    # OpenCV's new engine keeps the convolution's name and drops the layers it fused into it
    groups = attribute(residual_block(), {"conv1": "conv1", "conv2": "conv2", "pool": "pool", "trlayout.0": None})
    assert groups.members("conv1") == ["conv1", "bn1", "relu1"]
    assert groups.members("conv2") == ["conv2", "bn2", "add", "relu2"]
    assert groups.members("pool") == ["pool"]


def test_every_layer_run_alone_makes_singleton_groups() -> None:
    net = residual_block()
    groups = attribute(net, {layer.name: layer.name for layer in net.layers})
    assert all(size == 1 for size in groups.group_sizes.values()) and len(groups.group_sizes) == 8


def test_a_compute_layer_never_absorbs_what_runs_before_it() -> None:
    # 'pool' is named, but bn2/add/relu2 belong to conv2 (fusions append successors, never predecessors)
    groups = attribute(residual_block(), {"conv1": "conv1", "conv2": "conv2", "pool": "pool"})
    assert groups.owner["relu2"] == "conv2"


def test_framework_node_names_are_matched_to_layers() -> None:
    layer_of = {"layer1.0.relu1": "layer1.0.relu1", "fc/matmul": "fc", "fc": "fc"}
    assert match_node("layer1.0.relu1_nchwc", layer_of) == "layer1.0.relu1"
    assert match_node("onnx_node!fc/matmul", layer_of) == "fc"
    assert match_node("fc", layer_of) == "fc"
    assert match_node("ReorderOutput", layer_of) is None


def test_an_activation_run_alone_after_a_named_conv_claims_nothing() -> None:
    # OpenCV 5 on MobileNet v2: the conv (BN folded in) and the ReLU6 after it are separate nodes
    groups = attribute(residual_block(), {"conv1": "conv1", "relu1": "relu1", "conv2": "conv2", "pool": "pool"})
    assert groups.members("conv1") == ["conv1", "bn1"]
    assert groups.members("relu1") == ["relu1"]
