"""The Python functions behind ``nnperf evaluate``, ``sweep``, ``steps``, ``partition``, ``accel``, ``advise`` and
``compare``: real values on small inputs (the accelerator and partition formulas for real; the fake backend where a
measurement is needed), the same documents the CLI prints, and one clear error per bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import run_json
from compare_store import MS, WHOLE_A, WHOLE_B, add_run, built_store, copy_store
from networks import conv_net, tiny_network
from nnperf.accel import eyeriss_spec, network_energy, reference_network
from nnperf.api import (
    accel_energy,
    accel_spec,
    accel_sweep,
    advise,
    compare,
    evaluate,
    fit_steps,
    partition,
    predict_steps,
    sweep,
)
from nnperf.errors import NnperfError
from nnperf.ir import AxisAttrs, ConvAttrs, Layer, LinearAttrs, Network, OpType, TensorSpec, save_network
from nnperf.measure import System
from nnperf.measure.backends._fake import CostModel
from nnperf.measure.sweep import UNDER_TEST, LayerConfig, profiling_network
from nnperf.prediction import MeasuredNetwork, fit_system_model
from nnperf.store import Store

__all__ = ["built_store"]  # the session fixture

FAKE = System("fake")


def documents_equal(api: dict[str, Any], cli: dict[str, Any]) -> None:
    """The API's document is the CLI's, once both went through JSON (tuples become lists)."""
    assert json.loads(json.dumps(api)) == cli


# --- accel ----------------------------------------------------------------------------------------------------------


def test_accel_energy_is_the_cnnergy_total_and_the_cli_document(capsys: pytest.CaptureFixture[str]) -> None:
    result = accel_energy("alexnet")  # a reference network's name: its shipped table
    assert result.total_energy_j == network_energy(reference_network("alexnet"), eyeriss_spec(16)).total_j
    assert result.sparsity_source == "" and result.files == ()
    documents_equal(result.to_dict(), run_json(capsys, "accel", "energy", "alexnet"))
    eight = accel_energy(network="alexnet", bits=8, control=False)
    assert eight.energy.spec.bits == 8 and eight.energy.spec.clock_power_w == 0.0
    assert eight.total_energy_j < result.total_energy_j
    documents_equal(eight.to_dict(), run_json(capsys, "accel", "energy", "--network", "alexnet", "--bits", "8",
                                              "--no-control"))


def test_accel_energy_of_an_ir_network_with_borrowed_sparsity(capsys: pytest.CaptureFixture[str]) -> None:
    result = accel_energy("alexnet", sparsity="table")  # the zoo AlexNet, mapped through the IR
    assert result.sparsity_source == "sparsity borrowed from table alexnet"
    assert result.energy.macs == 714_188_480
    documents_equal(result.to_dict(), run_json(capsys, "accel", "energy", "alexnet", "--sparsity", "table"))


def test_accel_energy_plot(tmp_path: Path) -> None:
    result = accel_energy(network="squeezenet_v11", plot=tmp_path / "energy.png")
    assert result.files == (tmp_path / "energy.png",)
    assert result.to_dict()["files"] == [str(tmp_path / "energy.png")]
    assert (tmp_path / "energy.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({}, "name exactly one of model, network or table"),
    ({"model": "alexnet", "network": "alexnet"}, "name exactly one of model"),
    ({"network": "nosuch"}, "nosuch"),
    ({"network": "alexnet", "sparsity": "measure"}, "layer tables carry their own sparsities"),
    ({"model": "alexnet", "sparsity": "table", "images": ["x.png"]}, "images applies to sparsity measure only"),
    ({"model": "resnet18", "sparsity": "table"}, "no shipped table matches 'resnet18'"),
    ({"network": "alexnet", "spec": eyeriss_spec(8), "bits": 16}, "bits 16 contradicts eyeriss-like (bits: 8)"),
])
def test_accel_energy_bad_inputs(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(NnperfError) as info:
        accel_energy(**kwargs)
    assert needle in str(info.value)


def test_accel_sweep_finds_the_cli_optimum(capsys: pytest.CaptureFixture[str]) -> None:
    result = accel_sweep(network="alexnet", glb_kb=[16, 100, 512])
    assert [p.glb_kb for p in result.sweep.points] == [16, 100, 512]
    assert result.sweep.spec.bits == 8 and result.sweep.spec.glb_energy_law == "sqrt"  # NeuPart's design sweep
    cli = run_json(capsys, "accel", "sweep", "--network", "alexnet", "--glb", "16,100,512")
    documents_equal(result.to_dict(), cli)
    assert result.sweep.best.glb_kb == cli["best"]["glb_kb"]
    grid = accel_sweep(network="alexnet", glb_kb=[16, 100], pe_arrays=[(12, 14), (16, 16)], rf_scales=[0.5, 1])
    assert len(grid.sweep.points) == 2 * 2 * 2


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"glb_kb": [0, 4]}, "glb_kb: every value must be a finite number > 0, got [0, 4]"),
    ({"glb_kb": []}, "glb_kb"),
    ({"rf_scales": [math.nan]}, "rf_scales"),
    ({"pe_arrays": [(0, 14)]}, "pe_arrays: (0, 14)"),
    ({"glb_law": "cubic"}, "glb_law must be one of sqrt, constant, got 'cubic'"),
    ({"glb_kb": [0.5, 1]}, "alexnet: no configuration of the sweep can run the network"),
])
def test_accel_sweep_bad_inputs(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(NnperfError) as info:
        accel_sweep(network="alexnet", **kwargs)
    assert needle in str(info.value)


def test_accel_spec(tmp_path: Path) -> None:
    assert accel_spec() == eyeriss_spec(16) and accel_spec(bits=8) == eyeriss_spec(8)
    partial = tmp_path / "spec.yaml"
    partial.write_text("version: 1\nbits: 8\nglb_kb: 64\n")
    assert (accel_spec(partial).bits, accel_spec(partial).glb_kb) == (8, 64)
    with pytest.raises(NnperfError, match="bits must be 16 or 8, got 12"):
        accel_spec(bits=12)


# --- partition ------------------------------------------------------------------------------------------------------


def test_partition_alexnet_best_split_is_the_clis(capsys: pytest.CaptureFixture[str]) -> None:
    result = partition(network="alexnet", bitrate="100Mbps", tx_power="1W")
    assert result.best == "C2+pool"  # NeuPart Fig. 10: after the second conv and its pooling
    assert result.client == "CNNergy accelerator (eyeriss-like, 8-bit)"
    assert result.result.savings_vs_fcc > 0 and result.result.savings_vs_fisc > 0
    assert [row.input_sparsity for row in result.quartiles] == [0.5199, 0.6080, 0.6909]
    cli = run_json(capsys, "partition", "--network", "alexnet", "--bitrate", "100Mbps", "--tx-power", "1W")
    documents_equal(result.to_dict(), cli)
    # numbers in bit/s and W are the same channel as the text
    same = partition(network="alexnet", bitrate=100e6, tx_power=1.0)
    assert same.result.energy_cost_j == result.result.energy_cost_j


def test_partition_jpeg_input_has_no_quartiles(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    result = partition(network="alexnet", jpeg_bytes=20000, out=tmp_path, sweep_bitrates_bps=[20e6, 60e6])
    assert result.input == "JPEG of 20000 bytes" and result.quartiles == ()
    assert [f.name for f in result.files] == ["fig10_energy_cost.png", "fig12_savings.png", "fig13a_delay.png",
                                              "pareto.png"]
    cli = run_json(capsys, "partition", "--network", "alexnet", "--jpeg-bytes", "20000")
    assert {k: v for k, v in result.to_dict().items() if k != "files"} == {k: v for k, v in cli.items()
                                                                            if k != "files"}


def hand_calibrated(db: Path, system: System = FAKE) -> None:
    """A calibration of ``system``'s key fitted on made-up runs of four conv nets (1 ns per output element, 10 ns per
    conv output element), as a calibration would store it, without measuring."""
    with system.open() as backend:
        spec = backend.system()
    with Store(db) as store:
        record = store.add_system(spec)
        measured = []
        for net in (conv_net(f"cal{c}x{hw}", c, hw) for c, hw in ((4, 8), (8, 8), (8, 16), (4, 16))):
            times = {layer.name: (layer.op.value, math.prod(layer.output_shape) * (10e-9 if layer.op is OpType.CONV
                                                                                    else 1e-9)) for layer in net.layers}
            run_id = add_run(store, record.id, net.name, times, sum(t for _, t in times.values()))
            measured.append(MeasuredNetwork(net, store.run(run_id), tuple(store.layer_measurements(run_id=run_id)),
                                            store.network_measurements(run_id=run_id)[0], False))
        store.save_model(record.id, "previous", fit_system_model(measured, record.key, record.label).to_dict())


def test_partition_with_a_stored_system_as_the_client(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    hand_calibrated(db)
    net = tmp_path / "n3.json"
    save_network(conv_net("n3", 3, 16), net)
    sparsity = tmp_path / "sparsity.csv"
    sparsity.write_text("tensor,sparsity\nx,0.1\na,0.5\nr,0.5\nadd,0.4\n")
    result = partition(net, 1, db, sparsity=str(sparsity), client_power="15W")
    assert result.client == "fake/cpu[threads=1] (latency predicted per layer; energy = 15 W x predicted latency)"
    points = result.result.points
    assert points[-1].client_energy_j == pytest.approx(15.0 * points[-1].client_latency_s)
    assert result.sparsity_source == f"sparsity from {sparsity}"
    with pytest.raises(NnperfError, match="calibrated without a power meter"):
        partition(net, 1, db, sparsity=str(sparsity))
    with pytest.raises(NnperfError, match="no system with id 9"):
        partition(net, 9, db, sparsity=str(sparsity), client_power=15.0)


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"bitrate": "0Mbps"}, "bit rate must be > 0 bit/s, got '0Mbps'"),
    ({"bitrate": -5.0}, "bitrate_bps: bit rate must be a finite number > 0 bit/s, got -5.0"),
    ({"tx_power": "-1W"}, "power"),
    ({"input_sparsity": 1.0}, "[0, 1)"),
    ({"input_sparsity": 0.5, "jpeg_bytes": 100}, "not both"),
    ({"cloud_tops": 0}, "cloud throughput must be > 0 TOPS"),
    ({"send": "sideways"}, "send must be one of both, ofmap, next-input, got 'sideways'"),
    ({"system": 1}, "system partitions an IR network: name a model"),
])
def test_partition_bad_inputs(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(NnperfError) as info:
        partition(network="alexnet", **kwargs)
    assert needle in str(info.value)


def test_partition_reads_a_stored_system_without_creating_a_store(tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    with pytest.raises(NnperfError, match="no store at"):
        partition("alexnet", 1, db, sparsity="table", client_power=1.0)
    assert not db.exists()


# --- compare --------------------------------------------------------------------------------------------------------


def test_compare_two_runs_is_the_clis(capsys: pytest.CaptureFixture[str], built_store: Path, tmp_path: Path) -> None:
    db = copy_store(built_store, tmp_path)
    comparison = compare("run:1", "run:3", db)
    assert (comparison.a.network_s, comparison.b.network_s) == (WHOLE_A, WHOLE_B)
    assert comparison.slower_pct == pytest.approx(20.0)  # 10.2 / 8.5 - 1
    assert comparison.only_in_a == ("fc",) and comparison.only_in_b == ("pool",)
    documents_equal(comparison.to_dict(3), run_json(capsys, "compare", "run:1", "run:3", "--top", "3", "--db",
                                                    str(db)))
    by_system = compare("run:1", "system:2", db, model="net")
    assert by_system.b.network_s == WHOLE_B  # system 2's newest finished run of net is run 3


def test_compare_predicted_against_measured(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    hand_calibrated(db)
    net = conv_net("unseen", 12, 12)
    with Store(db) as store:
        add_run(store, 1, "unseen", {"a": ("conv", 3 * MS), "r": ("relu", 1 * MS), "add": ("add", 1 * MS)}, 4 * MS)
    comparison = compare("predicted:1", "system:1", db, model=net)  # a Network: its name names the runs
    assert comparison.b.network_s == 4 * MS
    assert [d.layer for d in comparison.layers] == ["a", "r", "add"]
    assert comparison.a.network_s == pytest.approx(sum(d.a_s or 0.0 for d in comparison.layers), rel=0.5)


@pytest.mark.parametrize(("sides", "needle"), [
    (("bogus", "run:1"), "cannot compare 'bogus'"),
    (("run:x", "run:1"), "a run is named by its number"),
    (("run:1", "system:2"), "system:2 needs --model"),
    (("run:1", "predicted:1"), "predicted:1 needs --model"),
    (("run:1", "run:99"), "99"),
])
def test_compare_bad_sides(built_store: Path, tmp_path: Path, sides: tuple[str, str], needle: str) -> None:
    with pytest.raises(NnperfError) as info:
        compare(*sides, copy_store(built_store, tmp_path))
    assert needle in str(info.value)


def test_compare_refuses_a_missing_store_and_creates_none(tmp_path: Path) -> None:
    with pytest.raises(NnperfError, match="no store at"):
        compare("run:1", "run:2", tmp_path / "none.db")
    assert not (tmp_path / "none.db").exists()


# --- sweep, steps, advise on the fake backend -----------------------------------------------------------------------


def fake_cost(kind: str, **values: int) -> float:
    """What the fake backend's cost model gives for the layer under test (no noise)."""
    return CostModel().layer_cost_s(profiling_network(LayerConfig.of(kind, values), 1).layer(UNDER_TEST))


@pytest.fixture
def swept(tmp_path: Path) -> Path:
    """A store with a fitted conv2d channels sweep 10..40 (size 8, surround 1) on the fake backend."""
    db = tmp_path / "steps.db"
    result = sweep("conv2d", "channels", "10:40", FAKE, db, fixed="size=8", surround=1)
    assert result.sweep.run_id == 1 and len(result.sweep.timings) == 31
    fit_steps(store=db)
    return db


def test_sweep_measures_every_point_and_reuses_the_stored_one(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    result = sweep("conv2d", "channels", [10, 12, 14], FAKE, db, fixed={"size": 8}, surround=1)
    assert list(result.sweep.x) == [10, 12, 14] and result.surround is None and result.store_path == db
    for value, seconds in zip(result.sweep.x, result.sweep.latency_s):
        assert seconds == pytest.approx(fake_cost("conv2d", channels=int(value), size=8), rel=0.15)
    cli = run_json(capsys, "sweep", "conv2d", "--param", "channels", "--range", "10,12,14", "--fixed", "size=8",
                   "--backend", "fake", "--surround", "1", "--db", str(db))
    assert cli["reused"] and cli["run_id"] == result.sweep.run_id
    documents_equal({**result.to_dict(), "reused": True}, cli)


def test_sweep_with_auto_surround_chooses_it_once(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = sweep("conv2d", "filters", "4:6", FAKE, db, fixed="size=8,channels=16")
    assert first.surround is not None and first.sweep.spec.surround == first.surround.chosen
    again = sweep("conv2d", "filters", "7:8", FAKE, db, fixed="size=8,channels=16")
    assert again.surround is None and again.sweep.spec.surround == first.surround.chosen  # the recorded choice


@pytest.mark.parametrize(("args", "kwargs", "needle"), [
    (("conv3d", "channels", "1:4"), {}, "unknown layer kind 'conv3d'"),
    (("conv2d", "depth", "1:4"), {}, "a conv2d layer has no parameter 'depth'"),
    (("conv2d", "channels", "530:10"), {}, "range '530:10' is reversed"),
    (("conv2d", "channels", []), {}, "the sweep range is empty"),
    (("conv2d", "channels", "1:4"), {"fixed": "channels=8"}, "fixed gives channels, the parameter being swept"),
    (("conv2d", "channels", "1:4"), {"surround": "wide"}, "surround must be auto or a positive integer, got 'wide'"),
    (("conv2d", "channels", "1:4"), {"surround": 0}, "surround must be auto or a positive integer, got 0"),
    (("conv2d", "channels", "1:4"), {"rounds": 0}, "rounds must be at least 1, got 0"),
])
def test_sweep_bad_inputs_measure_nothing(tmp_path: Path, args: tuple[Any, ...], kwargs: dict[str, Any],
                                          needle: str) -> None:
    db = tmp_path / "s.db"
    with pytest.raises(NnperfError) as info:
        sweep(*args, FAKE, db, **{"fixed": "size=8", **kwargs})
    assert needle in str(info.value)
    assert not db.exists()  # refused before the store is opened


def test_fit_steps_finds_the_fake_line(capsys: pytest.CaptureFixture[str], swept: Path, tmp_path: Path) -> None:
    fits = fit_steps([1], 1, swept, out=tmp_path / "plots")
    (fit,) = fits.fits
    assert fit.model.shape.describe().startswith("linear")  # the fake backend's time is linear in the MACs
    assert fit.mape < 0.05
    assert fits.files == (tmp_path / "plots" / "sweep-1.png",)
    cli = run_json(capsys, "steps", "fit", "1", "--db", str(swept))
    assert (cli["format"], cli["version"]) == ("nnperf-step-fits", 1)
    assert cli["fits"][0]["shape"] == fits.to_dict()["fits"][0]["shape"]
    assert fit_steps(system=1, store=swept).fits[0].sweep.run_id == 1


def test_fit_steps_without_a_sweep(swept: Path, tmp_path: Path) -> None:
    with pytest.raises(NnperfError, match="holds no sweep to fit"):
        fit_steps(store=tmp_path / "empty.db")
    with pytest.raises(NnperfError, match="run 7 is not a stored sweep"):
        fit_steps([7], store=swept)
    with pytest.raises(NnperfError, match="no system with id 3"):
        fit_steps(system=3, store=swept)
    with pytest.raises(NnperfError, match="a stored system is named by its id or key prefix"):
        fit_steps(system=FAKE, store=swept)  # type: ignore[arg-type]


def test_predict_steps_is_the_fake_cost_and_the_clis(capsys: pytest.CaptureFixture[str], swept: Path) -> None:
    config = {"channels": 30, "filters": 64, "size": 8}
    predicted = predict_steps("conv2d", FAKE, swept, config=config)
    assert predicted.prediction.latency_s == pytest.approx(fake_cost("conv2d", **config), rel=0.05)
    cli = run_json(capsys, "steps", "predict", "conv2d", "--config", "channels=30,filters=64,size=8", "--backend",
                   "fake", "--db", str(swept))
    documents_equal(predicted.to_dict(), cli)
    by_id = predict_steps("conv2d", store=swept, config="channels=30,filters=64,size=8", models_of=1)
    assert by_id.prediction.latency_s == predicted.prediction.latency_s
    along = predict_steps("conv2d", FAKE, swept, config={"size": 8}, parameter="channels", values="10:40:10",
                          verify=True)
    assert list(along.prediction.values) == [10, 20, 30, 40] and along.prediction.latency_s is None


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"parameter": "channels"}, "give parameter and values together"),
    ({"characterise": True}, "characterise and verify work along a range: give parameter and values"),
    ({"parameter": "size", "values": "4:16", "characterise": True}, "works along channels or filters"),
    ({"parameter": "channels", "values": "1:2", "characterise": True}, "need at least 4"),
    ({"models_of": 1, "system": System("fake", threads=2), "parameter": "channels", "values": "10:12",
      "verify": True}, "models_of 1 is fake/cpu[threads=1], but the system measured is fake/cpu[threads=2]"),
    ({"system": System("fake", threads=2)}, "has no sweeps of fake/cpu[threads=2]"),
])
def test_predict_steps_bad_inputs(swept: Path, kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(NnperfError) as info:
        predict_steps("conv2d", **{"system": FAKE, "store": swept, "config": "size=8", **kwargs})
    assert needle in str(info.value)


def residual_network() -> Network:
    """stem -> a -> b -> add(stem, b) -> gap -> flatten -> fc: only a's width is free to change."""
    s = (1, 8, 8, 8)
    conv = ConvAttrs((3, 3), padding=(1,) * 4)
    return Network("residual", (TensorSpec("x", (1, 3, 8, 8)),), (
        Layer("stem", OpType.CONV, ("x",), ((1, 3, 8, 8),), s, conv),
        Layer("a", OpType.CONV, ("stem",), (s,), s, conv),
        Layer("b", OpType.CONV, ("a",), (s,), s, conv),
        Layer("add", OpType.ADD, ("stem", "b"), (s, s), s),
        Layer("gap", OpType.GLOBAL_AVG_POOL, ("add",), (s,), (1, 8, 1, 1)),
        Layer("flatten", OpType.FLATTEN, ("gap",), ((1, 8, 1, 1),), (1, 8), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 8),), (1, 10), LinearAttrs()),
    ), ("fc",))


def test_advise_considers_the_free_width_and_is_the_clis(capsys: pytest.CaptureFixture[str], swept: Path,
                                                         tmp_path: Path) -> None:
    result = advise(residual_network(), FAKE, swept)
    assert result.advice.considered == 1 and result.suggestions == ()  # a line has no step to land on
    assert result.advice.skipped == {"stem": "its width feeds add 'add' with other inputs",
                                     "b": "its width feeds add 'add' with other inputs",
                                     "fc": "its width reaches the network output"}
    path = tmp_path / "residual.json"
    save_network(residual_network(), path)
    documents_equal(result.to_dict(), run_json(capsys, "advise", str(path), "--backend", "fake", "--db", str(swept)))
    assert advise(residual_network(), "nosuch", swept, models_of=1).advice.considered == 1  # no backend opened


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"tolerance": 1.5}, "tolerance must be a fraction between 0 and 1, got 1.5"),
    ({"min_bonus": 0}, "min_bonus must be a fraction between 0 and 1, got 0"),
    ({"models_of": 1, "verify": True, "system": System("fake", threads=2)}, "verify measures on fake/cpu[threads=2]"),
    ({"system": System("fake", threads=2)}, "has no step models of fake/cpu[threads=2]"),
])
def test_advise_bad_inputs(swept: Path, kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(NnperfError) as info:
        advise(residual_network(), **{"system": FAKE, "store": swept, **kwargs})
    assert needle in str(info.value)


# --- evaluate -------------------------------------------------------------------------------------------------------


def test_evaluate_measures_and_compares_with_the_calibration(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    hand_calibrated(db)
    nets = [conv_net("n12", 12, 12), conv_net("n6", 6, 20)]
    report = evaluate(nets, FAKE, db, budget_s=0.02, protocol="none", out=tmp_path / "ev", csv=tmp_path / "l.csv")
    evaluation = report.evaluation
    assert [n.network for n in evaluation.networks] == ["n12", "n6"]
    for network in evaluation.networks:
        assert network.measured_layer_sum_s == pytest.approx(sum(c.measured_s for c in network.layers))
        assert network.adjusted_s is None  # protocol 'none': not timed beside the reference
    assert [p.name for p in report.files] == ["fig5_layers.png", "fig7_networks.png", "report.html", "l.csv"]
    assert len((tmp_path / "l.csv").read_text().splitlines()) == 1 + 2 * 3
    assert report.provenance.system.label == "fake/cpu[threads=1]"
    paths = [str(tmp_path / "n12.json"), str(tmp_path / "n6.json")]
    for net, path in zip(nets, paths):
        save_network(net, path)
    cli = run_json(capsys, "evaluate", *paths, "--backend", "fake", "--budget-s", "0.02", "--protocol", "none",
                   "--out", str(tmp_path / "ev2"), "--db", str(db))  # reuses the measurements taken above
    ours = json.loads(json.dumps(report.to_dict()))
    for document in (ours, cli):
        document.pop("files")
        for network in document["networks"]:
            network.pop("prediction_time_s")
    assert ours == cli


def test_evaluate_refuses_before_measuring(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with pytest.raises(NnperfError, match="^budget_s must be > 0, got 0$"):
        evaluate([conv_net("n", 4, 4)], FAKE, db, budget_s=0)
    with pytest.raises(NnperfError, match="nnperf calibrate --backend fake"):
        evaluate([conv_net("n", 4, 4)], FAKE, db)
    hand_calibrated(db)
    with pytest.raises(NnperfError, match="softmax"):
        evaluate([tiny_network()], FAKE, db)
    with Store(db) as store:
        assert not [run for run in store.runs() if run.model == "tiny"]  # nothing was measured
