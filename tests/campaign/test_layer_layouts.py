"""Profiling the layers other than convolutions in each layout into a real store: stored, read back, not
measured again, shared between networks by their key."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_presets import SMOKE_HARNESS
from networks import tiny_network
from nnperf.campaign import LAYER_CAMPAIGN, layout_layers, load_layer_layouts, primitive_system, profile_layer_layouts
from nnperf.ir import Network
from nnperf.primitives import layer_key
from nnperf.store import Store

# tiny_network's layers that read or write a 4-D tensor and are not convolutions
LAYOUT_LAYERS = ("bn1", "relu1", "add", "pool", "cat", "gap", "flatten")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "layers.db") as opened:
        yield opened


def test_layout_layers_are_the_distinct_non_convolutions_with_two_layouts() -> None:
    network = tiny_network()
    found = layout_layers([network, network])
    by_name = {layer.name: layer for layer in network.layers}
    assert [layer.name for layer in found.values()] == list(LAYOUT_LAYERS)
    assert list(found) == [layer_key(by_name[name]) for name in LAYOUT_LAYERS]


def test_each_layer_is_timed_in_chw_and_hwc_stored_and_read_back(store: Store) -> None:
    report = profile_layer_layouts(store, [tiny_network()], harness=SMOKE_HARNESS)
    assert (report.measured, report.reused, report.samples, report.failures) == (7, 0, 14, ())
    assert set(report.times_s) == set(layout_layers([tiny_network()]))
    assert all(set(times) == {"chw", "hwc"} and min(times.values()) > 0 for times in report.times_s.values())
    assert load_layer_layouts(store, report.system_id) == report.times_s
    system = store.system(report.system_id)
    assert system.key == primitive_system().key
    runs = store.runs(system_id=system.id)
    assert len(runs) == 7 and all(run.campaign.startswith(LAYER_CAMPAIGN) for run in runs)


def test_what_the_store_holds_is_not_measured_again_and_networks_share_layers(store: Store) -> None:
    first = profile_layer_layouts(store, [tiny_network()], harness=SMOKE_HARNESS)
    again = profile_layer_layouts(store, [tiny_network()], harness=SMOKE_HARNESS)
    assert (again.measured, again.reused, again.samples) == (0, 7, 0)
    assert again.times_s == first.times_s
    # a network with the same layers under other names: nothing is new
    network = tiny_network()
    renamed = tuple(dataclasses.replace(layer, name=f"other.{layer.name}",
                                        inputs=tuple(i if i == "x" else f"other.{i}" for i in layer.inputs))
                    for layer in network.layers)
    other = Network("other", network.inputs, renamed, tuple(f"other.{o}" for o in network.outputs))
    shared = profile_layer_layouts(store, [other], harness=SMOKE_HARNESS)
    assert (shared.measured, shared.reused) == (0, 7)
    assert len(load_layer_layouts(store, first.system_id)) == 7
