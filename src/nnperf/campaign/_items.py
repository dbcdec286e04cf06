"""Measuring items: a campaign's work cut into pure functions of (system, item) that return measurements.

An item is a frozen, picklable description of one thing to measure (one layer alone, the whole network with the
drift sentinel around it, a network's profiler passes, one sweep point). ``item.measure(backend, meter)`` takes
the measurement on a backend built from the system's settings (and its energy, where the item measures energy and
a meter is given) and returns it; it stores nothing. The campaign that made the items stores each result as it
comes back, so the same items run in this process (:class:`LocalRunner`) or on a fleet of machines
(``nnperf.fleet``), and a result that never came back (a worker killed) is measured again without ever being
stored twice.

An :class:`ItemRunner` runs items on one system: it is the one measurement path of every campaign. A campaign
function takes a :data:`Measurer` (a backend, or a runner) and turns it into a runner at its door with
:func:`runner_for`; past that line there is one loop over items, whichever runner runs them.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self

from nnperf.campaign._measuring import (
    ENERGY_SAMPLES,
    measure_isolated_layer,
    measure_sentinel,
    measure_whole_with_sentinel,
)
from nnperf.errors import NnperfError
from nnperf.ir import Layer, Network
from nnperf.measure import HarnessConfig, LayerMeasurement, Method, NetworkMeasurement, SystemSpec
from nnperf.measure.backends import Backend, ProfileResult
from nnperf.measure.power import PowerMeter

ItemProgress = Callable[[str, int, int], None]
"""Called with (the item that came back, items done, items in all)."""


class Item(Protocol):
    """One thing to measure on a system: ``measure(backend, meter)`` returns its measurement and stores nothing
    (an item that measures no energy ignores ``meter``)."""

    @property
    def label(self) -> str: ...

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> Any: ...


@dataclass(frozen=True)
class LayerItem:
    """One layer timed alone on its real input shapes (PreVIous IV-C2); gives a :class:`LayerMeasurement`."""

    layer: Layer
    harness: HarnessConfig
    gap_s: float = 0.0
    energy_samples: int = ENERGY_SAMPLES

    @property
    def label(self) -> str:
        return self.layer.name

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> LayerMeasurement:
        return measure_isolated_layer(backend, self.layer, self.harness, meter, self.energy_samples, self.gap_s)


@dataclass(frozen=True)
class WholeItem:
    """The whole network between two drift-sentinel readings (and its energy, with a meter); gives a
    :class:`NetworkMeasurement` whose extras hold the sentinel times and the drift. Without ``sentinel_before``
    only the reading after it is taken (the campaign read the sentinel at its start)."""

    network: Network
    harness: HarnessConfig
    energy_samples: int = ENERGY_SAMPLES
    sentinel_before: bool = True

    @property
    def label(self) -> str:
        return "whole network"

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> NetworkMeasurement:
        return measure_whole_with_sentinel(backend, self.network, self.harness, meter, self.energy_samples,
                                           self.sentinel_before)


@dataclass(frozen=True)
class SentinelItem:
    """One reading of the drift sentinel (:func:`measure_sentinel`, seconds); ``warm`` when the backend has just
    been measuring."""

    harness: HarnessConfig
    warm: bool = False

    @property
    def label(self) -> str:
        return "drift sentinel"

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> float:
        return measure_sentinel(backend, self.harness, self.warm)


@dataclass(frozen=True)
class ProfilerItem:
    """``runs`` whole-network passes under the framework's profiler; gives a :class:`ProfileResult`."""

    network: Network
    runs: int

    @property
    def label(self) -> str:
        return f"profiler runs ({self.runs})"

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> ProfileResult:
        return backend.profile(self.network, self.runs)


@dataclass(frozen=True)
class SweepPointItem:
    """One sweep point: the layer under test timed inside its profiling network; gives a :class:`LayerMeasurement`
    named ``name`` (method 'profiler', group the layer under test)."""

    name: str
    kind: str
    network: Network
    harness: HarnessConfig

    @property
    def label(self) -> str:
        return self.name.replace("#", " round ")

    def measure(self, backend: Backend, meter: PowerMeter | None = None) -> LayerMeasurement:
        from nnperf.measure.sweep import UNDER_TEST, time_in_context

        return LayerMeasurement(self.name, self.kind, Method.PROFILER,
                                time_in_context(backend, self.network, self.harness), UNDER_TEST)


class ItemRunner(abc.ABC):
    """Runs measuring items on one system and hands their results back as each one ends.

    ``run`` yields (index in ``items``, result) in the order the items finish, each item exactly once; the
    caller stores a result as soon as it has it. An item that raises stops the run with its error.
    """

    one_machine: bool = False
    """True when every item runs on the same machine, one after the other in the order given (so readings of the
    drift sentinel between items speak of the machine the items ran on)."""

    lazy: bool = False
    """True when an item starts only as its result is asked for: a caller that stops iterating :meth:`run`
    measures nothing more. A runner that is not lazy starts items before (a fleet submits them all at once),
    so a caller stopping early throws started work away."""

    @abc.abstractmethod
    def system(self) -> SystemSpec:
        """The system every item is measured on."""

    def with_meter(self, meter: PowerMeter) -> ItemRunner:
        """This runner measuring energy with ``meter`` too (a meter reads the machine it is on: only a runner of
        this process can take one)."""
        raise NnperfError(f"energy is measured in this process only, not on {type(self).__name__}: measure "
                          "without a power meter (no --energy) on a fleet")

    @abc.abstractmethod
    def run(self, items: Sequence[Item], progress: ItemProgress | None = None) -> Iterator[tuple[int, Any]]:
        """Measures ``items``; yields (index, result) as each ends."""

    def run_one(self, item: Item) -> Any:
        """Measures one item and returns its result."""
        results = dict(self.run([item]))
        if 0 not in results:
            raise NnperfError(f"the item {item.label!r} gave no result")
        return results[0]

    def close(self) -> None:
        """Releases what the runner holds (its backend, its connection)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalRunner(ItemRunner):
    """Runs items one after the other in this process, on ``backend`` (and measures their energy with ``meter``
    where an item measures energy).

    Items are measured lazily, one per step of :meth:`run`'s iterator."""

    one_machine = True
    lazy = True

    def __init__(self, backend: Backend, meter: PowerMeter | None = None) -> None:
        self.backend, self.meter = backend, meter

    def system(self) -> SystemSpec:
        return self.backend.system()

    def with_meter(self, meter: PowerMeter) -> LocalRunner:
        return LocalRunner(self.backend, meter)

    def run(self, items: Sequence[Item], progress: ItemProgress | None = None) -> Iterator[tuple[int, Any]]:
        layers = [item.layer for item in items if isinstance(item, LayerItem)]
        if self.backend is not None and layers:  # a runner of primitives has no backend
            self.backend.prepare_layers(layers)
        for i, item in enumerate(items):
            result = item.measure(self.backend, self.meter)
            if progress is not None:
                progress(item.label, i + 1, len(items))
            yield i, result


Measurer = Backend | ItemRunner
"""What a campaign measures on: a backend (this process) or a runner (this process, or a fleet of one system)."""


def runner_for(measurer: Measurer, meter: PowerMeter | None = None) -> ItemRunner:
    """The runner a campaign measures through: ``measurer`` itself when it is one, else a :class:`LocalRunner`
    on the backend; with ``meter``, one that measures energy with it (refused by a fleet's runner)."""
    runner = measurer if isinstance(measurer, ItemRunner) else LocalRunner(measurer)
    return runner if meter is None else runner.with_meter(meter)
