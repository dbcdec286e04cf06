"""A measurement store with hand-chosen times for the ``nnperf compare`` tests (every time is exact: each
measurement's times are one value repeated, so its median is that value)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from nnperf.measure import HostInfo, LayerMeasurement, Method, NetworkMeasurement, SystemSpec, fixed_timing
from nnperf.store import Store

MS = 1e-3

RUN_A = {"conv1": ("conv", 4 * MS), "relu1": ("relu", 1 * MS), "conv2": ("conv", 2 * MS), "fc": ("linear", 1 * MS)}
RUN_B = {"conv1": ("conv", 2 * MS), "relu1": ("relu", 1 * MS), "conv2": ("conv", 4 * MS), "pool": ("max_pool", 0.5 * MS)}
WHOLE_A, WHOLE_B = 8.5 * MS, 10.2 * MS
"""B is 10.2 / 8.5 - 1 = 20% slower than A."""


def spec(threads: str) -> SystemSpec:
    host = HostInfo("bench", "Test CPU", 4, "performance", "Linux", "3.11", (("numpy", "1.26"),), ())
    return SystemSpec("fake", "cpu", "Test CPU", (("threads", threads),), host)


def add_run(store: Store, system_id: int, model: str, layers: Mapping[str, tuple[str, float]], whole_s: float | None,
            method: Method = Method.ISOLATED, groups: Mapping[str, str] | None = None,
            extra: Mapping[str, float] | None = None, finish: bool = True) -> int:
    """One run of ``model`` holding ``layers`` ({name: (op, seconds)}) and the whole network; ``groups`` names the
    fused group of a layer (its members store the group's time, as the profiler does)."""
    run = store.start_run(system_id, f"{model}|{len(store.runs())}", model, "hash", method.value, {})
    groups = groups or {}
    sizes = {g: list(groups.values()).count(g) for g in groups.values()}
    store.add_layer_measurements(run.id, [
        LayerMeasurement(name, op, method, fixed_timing([seconds] * 3), groups.get(name, name),
                         sizes.get(groups.get(name, ""), 1)) for name, (op, seconds) in layers.items()])
    if whole_s is not None:
        store.add_network_measurement(run.id, NetworkMeasurement(fixed_timing([whole_s] * 3), extra=dict(extra or {})))
    if finish:
        store.finish_run(run.id)
    return run.id


def build_store(path: Path) -> Path:
    """System 1 (threads=1) ran 'net' as run 1 (RUN_A); system 2 (threads=2) ran 'net' as run 2 (an older
    profile), run 3 (RUN_B, the newest finished one) and run 4 (unfinished), and 'other' as run 5."""
    with Store(path) as store:
        one, two = store.add_system(spec("1")), store.add_system(spec("2"))
        add_run(store, one.id, "net", RUN_A, WHOLE_A)
        add_run(store, two.id, "net", RUN_A, 1.0)
        add_run(store, two.id, "net", RUN_B, WHOLE_B)
        add_run(store, two.id, "net", RUN_A, 5.0, finish=False)
        add_run(store, two.id, "other", RUN_A, 2.0)
    return path


@pytest.fixture(scope="session")
def built_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`build_store` once a session (writing it takes a fifth of a second)."""
    return build_store(tmp_path_factory.mktemp("compare") / "m.db")


def copy_store(built: Path, folder: Path) -> Path:
    """A test's own copy of the built store, free to write to."""
    return Path(shutil.copy(built, folder / "m.db"))
