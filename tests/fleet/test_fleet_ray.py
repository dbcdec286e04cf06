"""Campaigns on a local Ray cluster of two nodes started here (Ray's own ``Cluster``), bounded in time: the same
stored measurements as in one process, a worker killed in the middle of an item, an item nobody can measure, a
node of another system, an interrupted driver resuming, and the CLI's ``--fleet``."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from compare_fleet import stored_identities
from harness_presets import SHORT_HARNESS
from networks import tiny_network
from nnperf.campaign import ProfileConfig, profile_network, profiler_chunks, run_sweep
from nnperf.fleet import (
    Fleet,
    NoNodeForSystemError,
    RayRunner,
    SystemMismatchError,
    SystemSettings,
    node_environment,
    node_placements,
    node_resources,
)
from nnperf.measure.backends import create_backend
from nnperf.store import Store

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a Ray cluster of two nodes: about a minute in all
from ray.cluster_utils import Cluster

NODE = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
SETTINGS = (SystemSettings("fake"), SystemSettings("torch"), SystemSettings("primitives"))
"""What each node advertises: the fake backend (the harness's tests), torch at one thread (one real check) and the
primitive dataset's system."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    os.environ.update(node_environment())  # the nodes' workers measure in this process's environment
    resources = node_resources(SETTINGS)
    one = Cluster(initialize_head=True, head_node_args={**NODE, "resources": resources, "include_dashboard": False})
    try:
        one.add_node(**NODE, resources=resources)
        one.wait_for_nodes()
        ray.init(address=one.address, log_to_driver=False, logging_level="ERROR", namespace="nnperf-tests")
        yield one
    finally:
        ray.shutdown()
        one.shutdown()


@pytest.fixture(scope="module")
def fleet(cluster: Cluster) -> Iterator[Fleet]:
    with Fleet(cluster.address) as connected:
        yield connected


def _runner(fleet: Fleet, settings: SystemSettings = SETTINGS[0], **kw: object) -> RayRunner:
    runners = fleet.runners(settings, **kw)  # type: ignore[arg-type]
    assert len(runners) == 1
    return runners[0]


def test_both_nodes_advertise_the_system_and_the_fleet_finds_it(fleet: Fleet) -> None:
    nodes = [n for n in fleet.nodes() if n.alive]
    key = create_backend("fake").system().key
    assert len(nodes) == 2 and all(n.systems[key] == 1.0 for n in nodes)
    runner = _runner(fleet)
    assert runner.system().key == key and len(runner.nodes) == 2


def test_a_campaign_over_two_nodes_stores_what_one_process_stores(fleet: Fleet, tmp_path: Path) -> None:
    network = tiny_network()
    with Store(tmp_path / "one.db") as one, Store(tmp_path / "fleet.db") as spread:
        with create_backend("fake") as backend:
            for per_layer in ("isolated", "profiler"):
                profile_network(network, backend, one, ProfileConfig(per_layer, SHORT_HARNESS, profiler_runs=6))
        # fake layers sleep 4x their modelled time, so the 2 nodes share the items instead of one taking them all
        with _runner(fleet, SystemSettings("fake", wall_scale=4.0), store=spread) as runner:
            for per_layer in ("isolated", "profiler"):
                report = profile_network(network, runner, spread, ProfileConfig(per_layer, SHORT_HARNESS,
                                                                                profiler_runs=6))
                assert [m.layer for m in report.layers] == [layer.name for layer in network.layers]
            placements = dict(runner.placements)
        assert stored_identities(one) == stored_identities(spread)
        # layers, 2 wholes, the profiler's 6 passes in chunks of 5 and 1
        assert len(placements) == 2 and sum(placements.values()) == 12 + 2 + len(profiler_chunks(6, 0)) == 16
        assert node_placements(spread) == {spread.find_system(runner.system().key).id: placements}


def _measuring_workers() -> list[int]:
    """Process ids of the Ray workers measuring an item now (Ray titles them ``ray::_measure_task``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(b"ray::_measure_task"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_worker_killed_in_the_middle_of_an_item_loses_and_duplicates_nothing(fleet: Fleet,
                                                                                 tmp_path: Path) -> None:
    killed: list[int] = []

    def kill_one(node: str, label: str) -> None:
        if not killed:  # after the first result: the other node is in the middle of an item (or starts one)
            deadline = time.monotonic() + 2.0
            while not (workers := _measuring_workers()) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert workers, "no worker was measuring"
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])

    network = tiny_network()
    with Store(tmp_path / "s.db") as store:
        runner = _runner(fleet, SystemSettings("fake", wall_scale=4.0), on_result=kill_one)
        report = profile_network(network, runner, store, ProfileConfig("isolated", SHORT_HARNESS))
        assert killed and runner.requeued == 1
        rows = store.layer_measurements(run_id=report.run_id)
        assert sorted(r.layer for r in rows) == sorted(layer.name for layer in network.layers)
        assert len(store.network_measurements(run_id=report.run_id)) == 1
        assert store.run(report.run_id).status == "done"


def test_an_item_for_a_system_no_node_has_is_refused(fleet: Fleet) -> None:
    with pytest.raises(NoNodeForSystemError, match=r"no node of the fleet at .* measures fake/cpu\[threads=2\]: "
                                                   r".* advertises .*, and fake/cpu\[threads=2\] is system"):
        fleet.runners(SystemSettings("fake", threads=2))


def test_a_node_of_another_system_refuses_its_items(fleet: Fleet, tmp_path: Path) -> None:
    fake = _runner(fleet)  # the nodes' fake system, measured with settings that make another system there
    wrong = RayRunner(SystemSettings("fake", threads=2), fake.system(), fake.nodes)
    with Store(tmp_path / "s.db") as store, pytest.raises(SystemMismatchError, match="not the item's system"):
        profile_network(tiny_network(), wrong, store, ProfileConfig("isolated", SHORT_HARNESS))


def test_an_interrupted_driver_resumes_the_campaign(fleet: Fleet, tmp_path: Path) -> None:
    network = tiny_network()
    config = ProfileConfig("isolated", SHORT_HARNESS)
    names = {layer.name for layer in network.layers}
    seen: list[str] = []

    def interrupt(what: str, done: int, total: int) -> None:
        if what in names:  # a layer stored (the whole network may come back at any point)
            seen.append(what)
            if len(seen) == 4:
                raise KeyboardInterrupt

    with Store(tmp_path / "s.db") as store, create_backend("fake") as backend, Store(tmp_path / "one.db") as one:
        runner = _runner(fleet)
        with pytest.raises(KeyboardInterrupt):
            profile_network(network, runner, store, config, progress=interrupt)
        first = store.runs()[0]
        assert first.status == "failed" and len(store.layer_measurements(run_id=first.id)) == 4
        again = profile_network(network, runner, store, config)
        assert again.resumed and again.run_id == first.id and again.skipped == 4
        profile_network(network, backend, one, config)
        assert stored_identities(store) == stored_identities(one)


def test_a_sweep_and_a_real_backend_on_the_fleet(fleet: Fleet, tmp_path: Path) -> None:
    from nnperf.measure.sweep import LayerConfig, SweepSpec

    spec = SweepSpec(LayerConfig.of("conv2d", {"channels": 8, "filters": 8, "size": 8}), "filters", (8, 16, 24),
                     4, SHORT_HARNESS, 2)
    with Store(tmp_path / "s.db") as store, Store(tmp_path / "one.db") as one:
        runner = _runner(fleet, SystemSettings("torch"), store=store)
        sweep = run_sweep(runner, store, spec)
        with create_backend("torch") as backend:
            run_sweep(backend, one, spec)
            assert runner.system().key == backend.system().key  # Ray's OMP_NUM_THREADS is not the node's
        assert len(sweep.latency_s) == 3 and bool((sweep.latency_s > 0).all())
        assert stored_identities(store) == stored_identities(one)


def test_the_cli_profiles_on_the_fleet_and_systems_shows_the_nodes(cluster: Cluster, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from nnperf.cli._main import main

    db = str(tmp_path / "s.db")
    assert main(["profile", "resnet18", "--backend", "fake", "--budget-s", "0.01", "--fleet", cluster.address,
                 "--db", db, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert len(document["layers"]) == 69
    assert main(["fleet", "status", "--fleet", cluster.address, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert len([n for n in status["nodes"] if n["alive"]]) == 2
    assert main(["systems", "--db", db, "--json"]) == 0
    systems = json.loads(capsys.readouterr().out)["systems"]
    assert sum(systems[0]["fleet_nodes"].values()) == 69 + 1


def test_the_primitive_dataset_is_profiled_on_the_fleet_as_in_one_process(cluster: Cluster, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from nnperf.api import profile_primitives
    from nnperf.cli._main import main
    from nnperf.ir import save_network

    model = tmp_path / "tiny.json"
    save_network(tiny_network(), model)
    db = str(tmp_path / "fleet.db")
    assert main(["primitives", "profile", str(model), "--random", "1", "--only", "direct", "--fleet",
                 cluster.address, "--db", db, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    configs = document["measured"]
    assert configs >= 3 and document["remaining"] == 0 and document["failures"] == []
    assert document["samples"] == configs * (1 + 12)  # direct and the 12 layout transformations of each input
    with Store(tmp_path / "one.db") as one:
        profile_primitives([model], store=one, random=1, primitives=["direct"])
        with Store(db) as spread:
            assert stored_identities(spread) == stored_identities(one)
            system = spread.systems()[0]
            assert system.key == SystemSettings("primitives").system().key
            assert sum(node_placements(spread)[system.id].values()) == configs
    # the same command again measures nothing: every configuration is stored
    assert main(["primitives", "profile", str(model), "--random", "1", "--only", "direct", "--fleet",
                 cluster.address, "--db", db, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["measured"], again["reused"]) == (0, configs)


def test_adaptive_samples_are_measured_a_round_at_a_time_over_the_nodes(fleet: Fleet, tmp_path: Path) -> None:
    from nnperf.campaign import SENTINEL_PREFIX, sample_layers
    from nnperf.prediction.kernel import FIRST_ROUND, SAMPLED_KINDS, zoo_prior

    rng = np.random.default_rng(0)  # the first round sample_layers draws with its default seed, less repeats
    first_round = {zoo_prior().draw(kind, rng) for _ in range(FIRST_ROUND) for kind in SAMPLED_KINDS}
    with Store(tmp_path / "s.db") as store:
        runner = _runner(fleet, SystemSettings("fake", wall_scale=4.0))  # each sample sleeps: both nodes take some
        samples = sample_layers(runner, store, 0.5, SHORT_HARNESS, reference_s=1.0)  # no sentinel on a fleet
        # a fleet finishes the round it started, though the budget runs out before the first round ends
        assert len(samples) >= len(first_round) > len(SAMPLED_KINDS) and len(runner.placements) == 2
        run = store.runs()[0]
        stored = [m.layer for m in store.layer_measurements(run_id=run.id)]
        assert sorted(stored) == sorted(layer.name for layer, _ in samples)  # each once, no sentinel readings
        assert not any(name.startswith(SENTINEL_PREFIX) for name in stored)
        with create_backend("fake") as backend:  # read back in one process: the same samples, as measured
            again = sample_layers(backend, store, 0.5, SHORT_HARNESS)
        assert {layer.name: t for layer, t in again} == {layer.name: t for layer, t in samples}
