"""The fleet's pieces that need no cluster: settings, resources, the measuring environment, items in this process,
and the in-process path never importing Ray."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compare_fleet import stored_identities
from harness_presets import SHORT_HARNESS
from networks import tiny_network
from nnperf.campaign import LocalRunner, ProfileConfig, profile_network
from nnperf.fleet import (
    FleetError,
    SystemMismatchError,
    SystemSettings,
    measure_on_node,
    node_placements,
    node_resources,
    save_placement,
    system_resource,
)
from nnperf.fleet._settings import OMP_MARKER, measuring_environment
from nnperf.measure.backends import create_backend
from nnperf.primitives import get_primitive
from nnperf.store import Store

BLOCKED = str(get_primitive("ort-nchwc").input_layout)  # chw16c with AVX-512, chw8c with AVX2

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.slow
def test_the_in_process_path_never_imports_ray(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        from nnperf.cli._main import main
        code = main(["profile", "resnet18", "--backend", "fake", "--budget-s", "0.01", "--db", {str(tmp_path / "s.db")!r}])
        from nnperf.fleet import SystemSettings
        SystemSettings("fake").create().system()
        assert code == 0, code
        print("ray" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(SRC)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_a_node_advertises_one_slot_of_its_system_key_per_settings() -> None:
    key = create_backend("fake").system().key
    assert system_resource(key) == f"nnperf-system-{key}"
    assert node_resources([SystemSettings("fake")]) == {f"nnperf-system-{key}": 1.0}
    two = node_resources([SystemSettings("fake"), SystemSettings("fake", threads=2)], slots=2)
    assert len(two) == 2 and set(two.values()) == {2.0}
    with pytest.raises(FleetError, match="at least one measuring slot"):
        node_resources([SystemSettings("fake")], slots=0)
    with pytest.raises(FleetError, match="fake backend only"):
        SystemSettings("torch", wall_scale=1.0)


def test_the_measuring_environment_puts_the_users_omp_setting_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what Ray sets in a worker
    with measuring_environment({OMP_MARKER: ""}):  # the node's user had none
        assert "OMP_NUM_THREADS" not in os.environ
    assert os.environ["OMP_NUM_THREADS"] == "1"
    with measuring_environment({OMP_MARKER: "4"}):
        assert os.environ["OMP_NUM_THREADS"] == "4"
    with measuring_environment({}):  # not a node started by nnperf: left as it is
        assert os.environ["OMP_NUM_THREADS"] == "1"


def test_a_node_refuses_an_item_of_another_system() -> None:
    from nnperf.campaign import LayerItem

    item = LayerItem(tiny_network().layers[0], SHORT_HARNESS)
    key = create_backend("fake").system().key
    assert measure_on_node(SystemSettings("fake"), key, item, "here").layer == "conv1"
    with pytest.raises(SystemMismatchError, match=f"node here measures .* not the item's system {key}"):
        measure_on_node(SystemSettings("fake", threads=2), key, item, "here")


@pytest.mark.parametrize("per_layer", ["isolated", "profiler"])
def test_items_in_this_process_store_what_the_campaign_stores(tmp_path: Path, per_layer: str) -> None:
    config = ProfileConfig(per_layer=per_layer, harness=SHORT_HARNESS, profiler_runs=6)
    with Store(tmp_path / "a.db") as a, Store(tmp_path / "b.db") as b, create_backend("fake") as backend:
        one = profile_network(tiny_network(), backend, a, config)
        two = profile_network(tiny_network(), LocalRunner(backend), b, config)
        assert stored_identities(a) == stored_identities(b)
    assert [m.layer for m in one.layers] == [m.layer for m in two.layers]
    assert len(two.layers) == 12
    assert set(two.network.extra) == set(one.network.extra) >= {"sentinel_start_s", "sentinel_end_s", "drift"}
    if per_layer == "profiler":
        assert {len(m.timing.times_s) for m in two.layers} == {6}


def test_placements_add_up_over_sessions(tmp_path: Path) -> None:
    system = create_backend("fake").system()
    with Store(tmp_path / "s.db") as store:
        save_placement(store, system, {"a/1": 3, "b/2": 4}, requeued=1)
        save_placement(store, system, {"a/1": 2}, requeued=0)
        assert node_placements(store) == {store.find_system(system.key).id: {"a/1": 5, "b/2": 4}}


def test_the_primitive_system_has_no_backend_and_takes_only_primitive_items(tmp_path: Path) -> None:
    from nnperf.campaign import PrimitiveItem, primitive_system, profile_primitives
    from nnperf.errors import NnperfError
    from nnperf.primitives import ConvConfig

    settings = SystemSettings("primitives", threads=2)
    assert settings.system() == primitive_system(2)
    assert node_resources([settings]) == {system_resource(primitive_system(2).key): 1.0}
    with pytest.raises(FleetError, match="without a backend object"):
        settings.create()
    with pytest.raises(FleetError, match="on the CPU with no options"):
        SystemSettings("primitives", options=(("precision", "int8"),)).system()
    config = ConvConfig.make(1, 4, 4, 6, 3, 1, 1)
    item = PrimitiveItem(config, (get_primitive("direct"),), frozenset({"chw->hwc"}), 1, SHORT_HARNESS)
    outcomes = measure_on_node(SystemSettings("primitives"), primitive_system(1).key, item, "here")
    assert [o.name for o in outcomes] == [  # what the item's ``done`` holds (chw->hwc) is not timed again
        "direct", "chw->hcw", f"chw->{BLOCKED}", "hwc->chw", "hwc->hcw", f"hwc->{BLOCKED}", "hcw->chw", "hcw->hwc",
        f"hcw->{BLOCKED}", f"{BLOCKED}->chw", f"{BLOCKED}->hwc", f"{BLOCKED}->hcw", "machine-speed reference"]
    assert all(o.timing is not None and o.timing.stats.median_s > 0 for o in outcomes)
    with Store(tmp_path / "s.db") as store, pytest.raises(NnperfError, match="backend 'primitives', not on fake"):
        profile_primitives(store, [config], runner=LocalRunner(create_backend("fake")))


def test_a_nodes_slots_get_disjoint_core_sets() -> None:
    from nnperf.fleet import CoreSetError, core_sets
    from nnperf.fleet._cores import decode_core_sets, encode_core_sets

    assert core_sets(2, 2, [5, 0, 1, 2, 3]) == ((0, 1), (2, 3))
    assert core_sets(1, 1, [7]) == ((7,),)
    with pytest.raises(CoreSetError, match=r"3 slots of 2 thread\(s\) need 6 cores, and this machine gives 4"):
        core_sets(3, 2, [0, 1, 2, 3])
    assert decode_core_sets(encode_core_sets(((0, 1), (2, 3)))) == ((0, 1), (2, 3)) and decode_core_sets("") == ()
    with pytest.raises(CoreSetError, match="is not core sets"):
        decode_core_sets("0;x")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to pin two slots apart")
def test_two_items_at_once_measure_on_different_cores_and_every_thread_is_pinned() -> None:
    import threading

    from nnperf.fleet import CORES_MARKER, pinned_to_a_free_core_set

    original = os.sched_getaffinity(0)
    first, second = sorted(original)[:2]
    env = {CORES_MARKER: f"{first};{second}"}
    started, finish = threading.Event(), threading.Event()
    pool = threading.Thread(target=lambda: (started.set(), finish.wait(30)))  # a framework's thread, started before
    pool.start()
    started.wait(30)
    try:
        with pinned_to_a_free_core_set(env) as one:
            assert one == (first,) and os.sched_getaffinity(0) == {first}
            assert os.sched_getaffinity(pool.native_id) == {first}
            with pinned_to_a_free_core_set(env) as two:  # a second item while the first holds its set
                assert two == (second,) and os.sched_getaffinity(0) == {second}
            assert os.sched_getaffinity(0) == {first}
        assert os.sched_getaffinity(0) == original and os.sched_getaffinity(pool.native_id) == original
        with pinned_to_a_free_core_set({}) as none:  # a node of one slot: nothing pinned
            assert none is None and os.sched_getaffinity(0) == original
    finally:
        finish.set()
        pool.join()


def test_a_simulated_node_takes_an_items_duration_over_its_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    from nnperf.fleet import SimulatedItem
    from nnperf.fleet._simulate import SPEED_VARIABLE

    slept: list[float] = []
    monkeypatch.setattr("nnperf.fleet._simulate.time.sleep", slept.append)  # what it sleeps, not a clock
    monkeypatch.setenv(SPEED_VARIABLE, "4")
    measured = SimulatedItem("a", 0.2).measure(create_backend("fake"))
    assert slept == [pytest.approx(0.05)]
    assert measured.timing.stats.median_s == pytest.approx(0.05)
    monkeypatch.delenv(SPEED_VARIABLE)
    assert SimulatedItem("b", 0.01).measure(create_backend("fake")).timing.stats.median_s == pytest.approx(0.01)
