"""The one campaign mechanism on a real SQLite store: reuse, resume, what is done, and how the run finishes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nnperf.campaign import Campaign, open_campaign
from nnperf.errors import NnperfError
from nnperf.measure import LayerMeasurement, Method, NetworkMeasurement, SystemSpec, Timing, fixed_timing
from nnperf.measure.backends._fake import FakeBackend
from nnperf.store import Store

CONFIG = {"what": "a test campaign"}


def make_spec() -> SystemSpec:
    return FakeBackend().system()


def make_timing(i: int) -> Timing:
    return fixed_timing((1e-3 + i * 1e-6, 2e-3, 1 / 3 * 1e-3))


def make_layer(i: int, method: Method = Method.ISOLATED) -> LayerMeasurement:
    return LayerMeasurement(f"conv{i}", "conv", method, make_timing(i))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "campaign.db") as opened:
        yield opened


def _open(store: Store, reuse: bool = False, method: str = Method.ISOLATED.value):  # type: ignore[no-untyped-def]
    return open_campaign(store, make_spec(), "test|key", "model", "hash", method, CONFIG, reuse=reuse)


def _status(store: Store, campaign: Campaign) -> str:
    return store.run(campaign.run.id).status


def test_a_new_campaign_stores_as_it_goes_and_finishes_done(store: Store) -> None:
    with _open(store) as campaign:
        assert (campaign.reused, campaign.resumed, dict(campaign.done)) == (False, False, {})
        campaign.add_layer(make_layer(0))
        assert [r.layer for r in store.layer_measurements(run_id=campaign.run.id)] == ["conv0"]  # committed at once
        assert _status(store, campaign) == "running"
        campaign.add_network(NetworkMeasurement(make_timing(9)))
    assert _status(store, campaign) == "done"
    assert campaign.system.key == make_spec().key
    assert (campaign.run.campaign, campaign.run.model, campaign.run.method, campaign.run.config) == (
        "test|key", "model", "isolated", CONFIG)
    assert store.network_measurements(run_id=campaign.run.id)[0].timing == make_timing(9)


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_an_exception_finishes_the_run_failed_and_a_resumed_run_knows_what_is_done(store: Store,
                                                                                    error: type[BaseException]) -> None:
    with pytest.raises(error), _open(store) as first:
        first.add_layer(make_layer(0))
        first.add_layer(make_layer(1, Method.PROFILER))  # another method: not done for an isolated campaign
        raise error
    assert _status(store, first) == "failed"
    with _open(store) as again:
        assert (again.run.id, again.resumed, again.reused) == (first.run.id, True, False)
        assert dict(again.done) == {"conv0": make_timing(0)}
        assert _status(store, again) == "running"
    assert _status(store, again) == "done"


def test_reuse_reads_a_finished_run_back_and_leaves_it_as_it_was(store: Store) -> None:
    with _open(store) as first:
        first.add_layer(make_layer(0))
    finished_at = store.run(first.run.id).finished_at
    with _open(store, reuse=True) as again:
        assert (again.run.id, again.reused, again.resumed) == (first.run.id, True, False)
        assert dict(again.done) == {"conv0": make_timing(0)}
        with pytest.raises(NnperfError, match="reused"):
            again.add_layer(make_layer(1))
    with pytest.raises(KeyboardInterrupt), _open(store, reuse=True):
        raise KeyboardInterrupt
    assert (store.run(first.run.id).status, store.run(first.run.id).finished_at) == ("done", finished_at)
    assert len(store.runs()) == 1


def test_without_reuse_a_finished_campaign_starts_a_new_run(store: Store) -> None:
    with _open(store) as first:
        first.add_layer(make_layer(0))
    with _open(store) as second:
        assert (second.run.id != first.run.id, second.reused, second.resumed, dict(second.done)) == (
            True, False, False, {})
    assert [r.status for r in store.runs()] == ["done", "done"]


def test_reuse_without_a_finished_run_resumes_an_interrupted_one(store: Store) -> None:
    with pytest.raises(RuntimeError), _open(store, reuse=True) as first:
        first.add_layer(make_layer(0))
        raise RuntimeError
    with _open(store, reuse=True) as again:
        assert (again.run.id, again.resumed, again.reused, list(again.done)) == (first.run.id, True, False, ["conv0"])
