"""Every layer type of every zoo network has a model after calibration: the calibration networks hold at
least one layer of each model key the zoo uses (new ops come with calibration layers)."""

from __future__ import annotations

from nnperf import zoo
from nnperf.prediction import model_key
from nnperf.zoo import zoo_network


def test_the_calibration_networks_cover_every_layer_type_of_the_zoo() -> None:
    calibrated = {model_key(layer) for name in zoo.calibration_names() for layer in zoo_network(name).layers}
    missing = {}
    for name in zoo.names():
        for layer in zoo_network(name).layers:
            if model_key(layer) not in calibrated:
                missing.setdefault(model_key(layer), []).append(f"{name}:{layer.name}")
    assert missing == {}
    # the keys the newest zoo networks brought, present by name
    assert {"hard_sigmoid", "channel_shuffle", "slice", "conv_transpose", "layer_norm", "matmul"} <= calibrated
