"""Profiling the primitive dataset into a real store: stored as measured, read back, resumed, budgeted."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness_presets import SMOKE_HARNESS
from nnperf.campaign import (
    PRIMITIVE_BACKEND,
    load_primitive_dataset,
    primitive_system,
    primitive_systems,
    profile_primitives,
)
from nnperf.errors import NnperfError
from nnperf.measure.backends._fake import FakeBackend
from nnperf.primitives import Bound, ConvConfig, Primitive, get_primitive
from nnperf.store import Store

THREE_BY_THREE = ConvConfig.make(1, 8, 16, 12, 3, 1, 1)
ONE_BY_ONE = ConvConfig.make(1, 8, 16, 12, 1)
TRANSFORMS = 6  # chw, hwc, chw16c: 3 x 3 pairs less the identities


def chosen() -> list[Primitive]:
    return [get_primitive(name) for name in ("direct", "im2col-fhw", "winograd-2x3")]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "primitives.db") as opened:
        yield opened


def profile(store: Store, configs: list[ConvConfig], primitives: list[Primitive] | None = None, **kwargs):  # type: ignore[no-untyped-def]
    return profile_primitives(store, configs, harness=SMOKE_HARNESS,
                              primitives=chosen() if primitives is None else primitives, **kwargs)


def test_every_applicable_primitive_and_transformation_is_stored_and_read_back(store: Store) -> None:
    report = profile(store, [THREE_BY_THREE, ONE_BY_ONE, THREE_BY_THREE])
    assert (report.measured, report.reused, report.remaining, report.failures) == (2, 0, 0, ())
    assert report.samples == 3 + 2 + 2 * TRANSFORMS  # Winograd F(2,3) does not apply to the 1x1 layer
    dataset = load_primitive_dataset(store, report.system_id)
    assert dataset.system_key == primitive_system().key
    assert dataset.primitives == ("direct", "im2col-fhw", "winograd-2x3")
    assert set(dataset.transforms) == {"chw->hwc", "hwc->chw", "chw->chw16c", "chw16c->chw", "hwc->chw16c",
                                       "chw16c->hwc"}
    times = {s.config: s.times_s for s in dataset.conv}
    assert set(times) == {THREE_BY_THREE, ONE_BY_ONE} and set(times[ONE_BY_ONE]) == {"direct", "im2col-fhw"}
    assert all(0 < t < 1 for row in times.values() for t in row.values())
    assert len(dataset.layout) == 1  # both layers read the same 8 x 12 x 12 activation: one transformation row
    assert (dataset.layout[0].c, dataset.layout[0].im) == (8, (12, 12))
    assert [s.id for s in primitive_systems(store)] == [report.system_id]
    assert store.system(report.system_id).backend == PRIMITIVE_BACKEND


def test_profiled_configurations_are_read_back_not_measured_again(store: Store) -> None:
    profile(store, [THREE_BY_THREE])
    again = profile(store, [THREE_BY_THREE, ONE_BY_ONE])
    assert (again.measured, again.reused) == (1, 1)
    assert again.samples == 2 + TRANSFORMS


def test_a_profile_of_more_primitives_measures_only_the_new_ones(store: Store) -> None:
    profile(store, [THREE_BY_THREE], [get_primitive("direct")])
    more = profile(store, [THREE_BY_THREE])
    assert (more.measured, more.reused, more.samples) == (1, 0, 2)  # im2col-fhw and winograd-2x3; no transform
    dataset = load_primitive_dataset(store, more.system_id)
    assert len(dataset.conv) == 1 and set(dataset.conv[0].times_s) == {"direct", "im2col-fhw", "winograd-2x3"}
    assert profile(store, [THREE_BY_THREE]).reused == 1


@dataclass(frozen=True)
class Interrupting(Primitive):
    """Pressing Ctrl-C while it is timed."""

    def prepare(self, w, b, config, threads=1) -> Bound:  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt


@dataclass(frozen=True)
class Refusing(Primitive):
    """A library that refuses the shape."""

    def prepare(self, w, b, config, threads=1) -> Bound:  # type: ignore[no-untyped-def]
        raise RuntimeError("this library does not like the shape\nsecond line")


def _stand_in(kind: type[Primitive], name: str) -> Primitive:
    direct = get_primitive("direct")
    return kind(name, direct.family, direct.input_layout, direct.output_layout, "test", "any")


def test_an_interrupted_configuration_resumes_at_its_first_missing_primitive(store: Store) -> None:
    primitives = [*chosen(), _stand_in(Interrupting, "ctrl-c")]
    with pytest.raises(KeyboardInterrupt):
        profile(store, [THREE_BY_THREE], primitives)
    resumed = profile(store, [THREE_BY_THREE])
    assert (resumed.measured, resumed.samples) == (1, TRANSFORMS)  # the three primitives were kept
    assert len(load_primitive_dataset(store, resumed.system_id).conv[0].times_s) == 3


def test_a_primitive_that_fails_is_reported_and_the_rest_is_measured(store: Store) -> None:
    report = profile(store, [ONE_BY_ONE], [*chosen(), _stand_in(Refusing, "refuses")])
    assert report.failures == (("refuses", "c8 f16 12x12 k1x1 s1 p0", "this library does not like the shape"),)
    assert report.samples == 2 + TRANSFORMS


def test_the_budget_stops_between_configurations_and_the_next_call_goes_on(store: Store) -> None:
    first = profile(store, [THREE_BY_THREE, ONE_BY_ONE], budget_s=1e-9)
    assert (first.measured, first.remaining) == (0, 2)
    rest = profile(store, [THREE_BY_THREE, ONE_BY_ONE])
    assert (rest.measured, rest.remaining) == (2, 0)
    with pytest.raises(NnperfError, match="budget must be positive"):
        profile(store, [ONE_BY_ONE], budget_s=0)


def test_a_system_without_primitives_has_no_dataset(store: Store) -> None:
    other = store.add_system(FakeBackend().system())
    with pytest.raises(NnperfError, match="holds no profiled primitives"):
        load_primitive_dataset(store, other.id)
