"""Many networks predicted at once (the architecture-search oracle) give the numbers of one network at a time,
for every network predictor, and refuse what a single prediction refuses; the MobileNetV3-like search space
draws reproducibly and builds what it drew."""

from __future__ import annotations

import pytest

from harness_presets import SHORT_HARNESS
from networks import residual_conv_net, tiny_network
from nnperf.campaign import ProfileConfig, measure_networks
from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, OpType
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction import SystemModel, UncoveredLayersError, fit_system_model, layer_signature
from nnperf.store import Store
from nnperf.zoo.search_space import KERNELS, MobileNetV3Space, SpaceSample


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> SystemModel:
    backend = FakeBackend(model=CostModel(noise_sigma=0.0, network_factor=0.9))
    config = ProfileConfig(harness=SHORT_HARNESS)
    networks = [residual_conv_net(f"cal{c}x{hw}", c, hw) for c in (4, 8, 16) for hw in (8, 16)]
    with Store(tmp_path_factory.mktemp("many") / "m.db") as store:
        runs = measure_networks(backend, store, networks, config)
        profiled = measure_networks(backend, store, networks, ProfileConfig(per_layer="profiler", profiler_runs=2,
                                                                            harness=config.harness))
    system = backend.system()
    return fit_system_model(runs, system.key, system.label, profiled=profiled)


def test_predict_many_gives_the_numbers_of_predict_one_by_one_for_every_method(model: SystemModel) -> None:
    # networks that share layers (same channels and size) and differ (other sizes), twice the same network too
    networks = [residual_conv_net(f"n{c}x{hw}", c, hw) for c, hw in ((6, 10), (6, 10), (12, 10), (6, 14), (20, 6))]
    assert {"composed", "kernel", "macs", "previous"} <= set(model.predictors)  # the batched kernel one too
    for method in model.predictors:
        many = model.predict_many(networks, method)
        one = [model.predict(n).network_latency_s[method] for n in networks]
        assert many.shape == (5,) and many.tolist() == pytest.approx(one, rel=1e-12), method
    default = model.predict_many(networks)
    assert default.tolist() == pytest.approx([model.predict(n).latency_s for n in networks], rel=1e-12)
    assert default[0] == default[1] != default[2]  # same network, same number; another, another


def test_predict_many_refuses_what_predict_refuses(model: SystemModel) -> None:
    with pytest.raises(UncoveredLayersError, match="tiny"):
        model.predict_many([residual_conv_net("fine", 6, 10), tiny_network()])
    with pytest.raises(NnperfError, match="no network predictor 'nonsense'"):
        model.predict_many([residual_conv_net("fine", 6, 10)], "nonsense")


def test_layers_alike_share_a_signature_whatever_their_name() -> None:
    a, b = residual_conv_net("a", 6, 10), residual_conv_net("b", 6, 10)
    assert [layer_signature(x) for x in a.layers] == [layer_signature(x) for x in b.layers]
    c = residual_conv_net("c", 6, 12)
    assert layer_signature(a.layers[0]) != layer_signature(c.layers[0])  # other shapes


def test_the_space_draws_reproducibly_and_builds_what_it_drew() -> None:
    space = MobileNetV3Space()
    first, again = space.samples(6, seed=3), space.samples(6, seed=3)
    assert first == again and len({s.name for s in first}) == 6 and space.samples(6, seed=4) != first
    sample = SpaceSample(160, (24, 40, 80, 112, 160), (((3, 3), (5, 4)), ((7, 6), (3, 3)), ((5, 3), (5, 3)),
                                                        ((3, 6), (7, 4)), ((3, 3), (3, 3))))
    network = space.network(sample)
    depthwise = [layer for layer in network.layers if layer.op is OpType.CONV and isinstance(layer.attrs, ConvAttrs)
                 and layer.attrs.groups > 1 and layer.attrs.groups == layer.input_shapes[0][1]]
    assert len(depthwise) == 1 + 10  # the fixed first bottleneck, then 2 blocks in each of 5 stages
    assert [d.attrs.kernel[0] for d in depthwise] == [3, 3, 5, 7, 3, 5, 5, 3, 7, 3, 3]
    assert all(d.attrs.kernel[0] in KERNELS for d in depthwise)
    assert network.inputs[0].shape == (1, 3, 160, 160) and network.layers[-1].output_shape == (1, 1000)
    # stage widths: each stage's last block writes its width; expansion 6 of 24 channels is 144
    assert {layer.output_shape[1] for layer in network.layers if layer.op is OpType.CONV} >= {24, 40, 80, 112, 160, 144}


def test_the_api_predicts_a_list_with_the_model_read_once(model: SystemModel) -> None:
    import nnperf

    networks = [residual_conv_net(f"n{c}", c, 10) for c in (6, 12)]
    totals = nnperf.predict_many(networks, model)
    assert totals.tolist() == pytest.approx(model.predict_many(networks).tolist(), rel=1e-12)
    predictions = nnperf.predict(networks, model)
    assert isinstance(predictions, list) and [p.network for p in predictions] == ["n6", "n12"]
    assert [p.latency_s for p in predictions] == pytest.approx(totals.tolist(), rel=1e-12)
    assert nnperf.predict_many(networks, model, method="macs").tolist() == pytest.approx(
        [model.predict(n).network_latency_s["macs"] for n in networks], rel=1e-12)
